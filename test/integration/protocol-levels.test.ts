/**
 * Protocol levels on real processes (docs/operations.md, "Protocol levels"): what a peer
 * shows of them (GET /v1/cluster, `lamport-lock status`, /metrics, `lamport-peer
 * --check-config`), and that a peer runs at the level its data dir records: a data dir at a
 * level this binary does not speak refuses the start (exit 2) with a sentence, even with
 * --accept-config-change; one at the build's level starts without it. And a rolling upgrade
 * across a level while 12 clients contend: every host restarted in turn on the next release
 * (test/integration/fixtures/next-release-peer.ts), `lamport-lock level raise`, no hold of a
 * peer not restarted ends, tokens keep increasing, and this release refuses the raised data dir.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { clusterMemoryPath } from '../../src/cluster-memory.js';
import { admin, adminTokenFile, Contenders } from '../fault/member-changes.js';
import type { LocalCluster } from '../../src/tools/local-cluster.js';
import { protocolLevels } from '../../src/transport/codec.js';
import { waitFor } from '../support/wait.js';
import { acquire, call, runBin, startTestCluster } from './helpers.js';

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

describe('a rolling upgrade across a protocol level', () => {
  const nextRelease = resolve('dist/test/integration/fixtures/next-release-peer.js');
  const next = newest + 1;
  const tokenFile = adminTokenFile('rolling-upgrade');
  const levelAt = async (c: LocalCluster, id: string): Promise<unknown> => (await call(c.url(id), '/v1/cluster')).body['protocol_level'];
  // The operator's pace (docs/operations.md, "Upgrades"): the next host only once this one echoes again.
  const upgraded = async (c: LocalCluster, id: string): Promise<void> => {
    await c.waitReady();
    await c.waitConnected();
    await waitFor(`${id} echoes heartbeats again`, async () => (await call(c.url(id), '/v1/cluster')).body['echoes_held_for_ms'] === 0, 20_000);
  };
  const held = async (c: LocalCluster, at: string, lock: string, id: unknown): Promise<boolean> =>
    ((await call(c.url(at), `/v1/locks/${lock}`)).body['holders'] as Array<Record<string, unknown>>).some((h) => h['id'] === id);

  it('host by host while 12 clients contend, then the raise: no other peer\'s hold ends, tokens keep increasing', async () => {
    cluster = await startTestCluster({ peerArgs: ['--admin-token-file', tokenFile] });
    const c = cluster;
    const ids = ['a', 'b', 'c'];
    let live = [...ids];
    const contenders = new Contenders(c, 'contended', 5);
    contenders.start(12, (i) => live[i % live.length] ?? 'a');
    await waitFor('grants on every peer', () => new Set(contenders.grants.map((g) => g.peer)).size === 3, 10_000);
    const refused = await admin(c, 'a', tokenFile, 'level', 'raise', String(next));
    expect(refused.code, refused.stdout).not.toBe(0);
    expect(refused.stderr).toContain(`level ${next} is not spoken by every member yet: a (speaks up to ${newest}), b (speaks up to ${newest}), c (speaks up to ${newest})`);

    for (const id of ids) {
      // A hold on another peer lives through this host's restart on the next release.
      const keeper = ids.find((x) => x !== id) ?? 'a';
      const kept = await acquire(c.url(keeper), `kept-${id}`, { ttl_ms: 120_000 });
      expect(kept.status).toBe(200);
      live = ids.filter((x) => x !== id);
      await waitFor(`no client turn on ${id}`, () => contenders.idle(id), 10_000); // Drained, as a host is before its restart.
      await c.stopPeer(id);
      c.startPeer(id, { bin: nextRelease });
      await upgraded(c, id);
      live = [...ids];
      await waitFor(`${id} advertises ${next} to a`, async () => {
        const peers = (await call(c.url(id === 'a' ? 'b' : 'a'), '/v1/cluster')).body['peers'] as Array<Record<string, unknown>>;
        return peers.some((p) => p['id'] === id && p['newest_level'] === next);
      });
      expect(await levelAt(c, id)).toBe(newest); // The next release runs at the data dir's level until the raise.
      expect(await held(c, keeper, `kept-${id}`, kept.body['id'])).toBe(true);
    }
    const kept = await acquire(c.url('b'), 'kept-raise', { ttl_ms: 120_000 });
    const raised = await admin(c, 'a', tokenFile, 'level', 'raise', String(next));
    expect(raised.code, raised.stderr).toBe(0);
    for (const id of ids) await waitFor(`${id} runs at ${next}`, async () => (await levelAt(c, id)) === next);
    expect(await held(c, 'b', 'kept-raise', kept.body['id'])).toBe(true);

    // This release no longer runs on a raised data dir; the next release does, and links again.
    live = ['a', 'b'];
    await waitFor('no client turn on c', () => contenders.idle('c'), 10_000);
    await c.stopPeer('c');
    expect(await startToExit(c, 'c', [])).toBe(2);
    expect(readFileSync(join(c.dir, 'c.log'), 'utf8')).toContain(`this peer's data dir runs protocol level ${next}; this binary speaks levels ${oldest} to ${newest}`);
    c.startPeer('c', { bin: nextRelease });
    await upgraded(c, 'c');
    live = [...ids];
    await waitFor('grants on c after its restart', () => contenders.grants.filter((g) => g.peer === 'c').length > 5, 20_000);
    await contenders.stop();
    expect(contenders.violations()).toEqual([]);
    expect(await held(c, 'b', 'kept-raise', kept.body['id'])).toBe(true);
  }, 180_000);
});
