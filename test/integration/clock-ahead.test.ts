/**
 * One host with an absurd wall clock (issue 37, point 4), on real peer processes: its
 * clocks and incarnations are refused (`clock_ahead`), never adopted, so the others' clocks,
 * high-water marks and tokens stay near their wall clocks, and they restart as before. A
 * wall clock past `limits.clockValueMax` does not even start. The peer's wall clock is
 * moved by a preload that shifts Date.now (its monotonic clock is untouched).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { limits } from '../../src/limits.js';
import { waitFor } from '../support/wait.js';
import { acquire, call, release, useTestCluster } from './helpers.js';

const cluster = useTestCluster();

/** Environment that starts a peer with its wall clock `aheadMs` ahead. */
function wallAhead(aheadMs: number): Record<string, string> {
  const preload = join(cluster().dir, `wall-ahead-${aheadMs}.mjs`);
  writeFileSync(preload, `const now = Date.now; Date.now = () => now() + ${aheadMs};\n`);
  return { NODE_OPTIONS: `--import=${preload}` };
}

async function clockOf(id: string): Promise<number> {
  return Number((await call(cluster().url(id), '/v1/cluster')).body['clock']);
}

function logOf(id: string): string {
  return readFileSync(join(cluster().dir, `${id}.log`), 'utf8');
}

const yearMs = 365 * 24 * 3600 * 1000;

describe('a peer whose wall clock is far ahead', () => {
  it('is refused (clock_ahead): the others keep their clocks, grant, and restart as before', async () => {
    const c = cluster();
    await c.stopPeer('c');
    c.startPeer('c', { env: wallAhead(1000 * yearMs) });
    await waitFor('c is refused for its clock', () => /"reason":"clock_ahead"/.test(logOf('c')), 20_000);
    for (const id of ['a', 'b']) expect(await clockOf(id)).toBeLessThan(Date.now() + limits.clockAheadMsMax);
    // The majority evicts c's previous process and grants without the refused one.
    const held = await acquire(c.url('a'), 'clock-ahead', { timeout_ms: 20_000 });
    expect(held.status).toBe(200);
    expect(BigInt(String(held.body['token']))).toBeLessThan(BigInt(Date.now() + limits.clockAheadMsMax) * 1024n);
    expect((await release(c.url('a'), 'clock-ahead', held.body['id'])).status).toBe(200);
    // Their high-water marks stayed sane: a restart starts (it exited 2 on a clock past 2^53).
    await c.stopPeer('c');
    await c.stopPeer('a');
    c.startPeer('a');
    await waitFor('a serves again', async () => (await fetch(`${c.url('a')}/healthz`).catch(() => null))?.status === 200, 20_000);
    expect(await clockOf('a')).toBeLessThan(Date.now() + limits.clockAheadMsMax);
    const hwm = (JSON.parse(readFileSync(join(c.peer('a').dataDir, 'clock.json'), 'utf8')) as { hwm: number }).hwm;
    expect(hwm).toBeLessThan(Date.now() + limits.clockAheadMsMax);
  }, 60_000);

  it('does not start with a wall clock past the largest clock (2^50): exit 75 and a sentence', async () => {
    const c = cluster();
    await c.stopPeer('c');
    c.startPeer('c', { env: wallAhead(2 ** 53 - 2 ** 33 - Date.now()) });
    const proc = c.peer('c').proc;
    const code = await new Promise<number | null>((res) => (proc === null || proc.exitCode !== null ? res(proc?.exitCode ?? null) : proc.once('exit', (n) => res(n))));
    expect(code).toBe(75);
    expect(logOf('c')).toMatch(/this host's wall clock reads \d+ ms since 1970, past the largest clock a peer uses/);
    expect(await clockOf('b')).toBeLessThan(Date.now() + limits.clockAheadMsMax);
  }, 30_000);
});
