/**
 * Protocol levels on real processes (docs/operations.md, "Protocol levels"): what a peer
 * shows of them (GET /v1/cluster, `lamport-lock status`, /metrics, `lamport-peer
 * --check-config`), and that a peer runs at the level its data dir records: a data dir at a
 * level this binary does not speak refuses the start (exit 2) with a sentence, even with
 * --accept-config-change; one at the build's level starts without it.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { clusterMemoryPath } from '../../src/cluster-memory.js';
import type { LocalCluster } from '../../src/tools/local-cluster.js';
import { protocolLevels } from '../../src/transport/codec.js';
import { waitFor } from '../support/wait.js';
import { call, runBin, startTestCluster } from './helpers.js';

let cluster: LocalCluster | undefined;
afterEach(async () => {
  await cluster?.stop();
  cluster = undefined;
});

const { oldest, newest } = protocolLevels;

/** Rewrites the level recorded in `id`'s data dir (the peer is stopped). */
function recordLevel(c: LocalCluster, id: string, level: number): void {
  const path = clusterMemoryPath(c.peer(id).dataDir);
  const memory = JSON.parse(readFileSync(path, 'utf8')) as { shape: Record<string, unknown> };
  writeFileSync(path, JSON.stringify({ ...memory, shape: { ...memory.shape, protocol: level } }));
}

/** Starts `id` and waits for its exit code; 'running' if it still runs after 15 s. */
async function startToExit(c: LocalCluster, id: string, args: readonly string[]): Promise<number | null | 'running'> {
  c.startPeer(id, { args });
  const proc = c.peer(id).proc;
  let timer: NodeJS.Timeout | undefined;
  const running = new Promise<'running'>((res) => (timer = setTimeout(() => res('running'), 15_000)));
  const exited = new Promise<number | null>((res) => proc?.once('exit', (code) => res(code)));
  try {
    return await Promise.race([exited, running]);
  } finally {
    clearTimeout(timer);
  }
}

describe('protocol levels', () => {
  it('each peer shows the level it runs at, the levels its binary speaks, and what each peer advertised', async () => {
    cluster = await startTestCluster();
    const c = cluster;
    await waitFor('a heard b and c advertise', async () => {
      const peers = (await call(c.url('a'), '/v1/cluster')).body['peers'] as Array<Record<string, unknown>>;
      return peers.filter((p) => p['self'] !== true).every((p) => p['newest_level'] === newest);
    });
    const body = (await call(c.url('a'), '/v1/cluster')).body;
    expect(body['protocol_level']).toBe(newest);
    expect(body['protocol_levels']).toEqual({ oldest, newest });
    const status = await runBin(resolve('dist/bin/lamport-lock.js'), ['--peer', c.url('a'), 'status']).done;
    expect(status.stdout).toContain(`protocol level ${newest} (this binary speaks ${oldest} to ${newest}); newest level each peer's binary speaks: b ${newest}, c ${newest}`);
    const metrics = await (await fetch(`${c.url('a')}/metrics`)).text();
    expect(metrics).toMatch(new RegExp(`^lamport_protocol_level ${newest}$`, 'm'));
    expect(metrics).toMatch(new RegExp(`^lamport_peer_newest_protocol_level\\{peer="b"\\} ${newest}$`, 'm'));
    const check = await runBin(resolve('dist/bin/lamport-peer.js'), ['--check-config', c.configPath]).done;
    expect(check.stdout).toContain(`protocol levels this binary speaks: ${oldest} to ${newest}`);
  });

  it('a data dir at a level this binary does not speak refuses the start; one at its level starts without --accept-config-change', async () => {
    cluster = await startTestCluster();
    await cluster.stopPeer('c');
    for (const level of [oldest - 1, newest + 1]) {
      recordLevel(cluster, 'c', level);
      expect(await startToExit(cluster, 'c', ['--accept-config-change'])).toBe(2);
      const log = readFileSync(join(cluster.dir, 'c.log'), 'utf8');
      expect(log).toContain(`this peer's data dir runs protocol level ${level}; this binary speaks levels ${oldest} to ${newest}. Run a binary that speaks level ${level} on this host`);
    }
    recordLevel(cluster, 'c', newest);
    cluster.startPeer('c');
    await cluster.waitReady();
    expect((await call(cluster.url('c'), '/v1/cluster')).body['protocol_level']).toBe(newest);
  });
});
