/**
 * `lamport-peer` refusing a start that can never work with the config exit code (2), which
 * the systemd unit does not retry: an unusable --data-dir, and an HTTP port equal to the
 * peer-link port. Real processes of the built binary.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { peerExitCodes } from '../../src/peer-exit-codes.js';
import { freePort } from '../../src/tools/local-cluster.js';
import { runBin } from './helpers.js';
import type { BinRun } from './helpers.js';

const peerBin = resolve('dist/bin/lamport-peer.js');

/** Runs the peer; a peer still running after 10 s (it started instead of refusing) is killed, and its code is null. */
async function start(config: Record<string, unknown>, extra: readonly string[]): Promise<BinRun> {
  const dir = mkdtempSync(join(tmpdir(), 'lamport-start-'));
  const path = join(dir, 'cluster.json');
  writeFileSync(path, JSON.stringify(config));
  const run = runBin(peerBin, ['--config', path, '--id', 'a', '--no-log-pretty', ...extra]);
  const timer = setTimeout(() => process.kill(run.pid ?? 0, 'SIGKILL'), 10_000);
  const r = await run.done;
  clearTimeout(timer);
  return r;
}

async function soloConfig(http?: string): Promise<Record<string, unknown>> {
  const ws = await freePort();
  return { cluster: 'start', secret: 'start-test-secret-0123456789abcdef', peers: [{ id: 'a', ws: `ws://127.0.0.1:${ws}`, http: http ?? `127.0.0.1:${ws}` }] };
}

describe('lamport-peer refuses at start, with exit 2', () => {
  it('a --data-dir that is a file, under /sys, or under /proc/1', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'lamport-start-')), 'a-file');
    writeFileSync(file, 'not a directory');
    for (const dir of [file, '/sys', '/proc/1/nope']) {
      const r = await start(await soloConfig(`127.0.0.1:${await freePort()}`), ['--data-dir', dir]);
      expect(r.code, `${dir}: ${r.stderr}`).toBe(peerExitCodes.invalidConfig);
      expect(r.stderr).toContain(`--data-dir ${JSON.stringify(dir)} cannot hold the peer's state`);
    }
  }, 40_000);

  it('an HTTP port equal to its ws port, from the config or from --http', async () => {
    const same = await soloConfig();
    const r = await start(same, []);
    expect(r.code, r.stderr).toBe(peerExitCodes.invalidConfig);
    expect(r.stderr).toContain('cannot share port');
    const port = new URL(((same['peers'] as Array<{ ws: string }>)[0]?.ws ?? '')).port;
    const flag = await start(await soloConfig(`127.0.0.1:${await freePort()}`), ['--http', `0.0.0.0:${port}`]);
    expect(flag.code, flag.stderr).toBe(peerExitCodes.invalidConfig);
  }, 30_000);
});
