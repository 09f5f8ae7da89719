/**
 * Real peer processes under contention and restarts: overlapping holds and token order are
 * checked on the whole recorded history (docs/design.md section 9, invariants 1 and 2).
 */
import { performance } from 'node:perf_hooks';
import { afterEach, describe, expect, it } from 'vitest';
import { LockClient, LockError } from '../../src/client/lock-client.js';
import { checkHistory } from '../../src/tools/history-check.js';
import type { HoldRecord } from '../../src/tools/history-check.js';
import { LocalCluster } from '../../src/tools/local-cluster.js';
import { waitFor } from '../support/wait.js';
import { acquire, call, holders, release, startTestCluster, waiters } from './helpers.js';

let cluster: LocalCluster | undefined;

afterEach(async () => {
  await cluster?.stop();
  cluster = undefined;
});

async function contend(c: LocalCluster, opts: { workers: number; rounds: number; locks: string[] }): Promise<HoldRecord[]> {
  const history: HoldRecord[] = [];
  await Promise.all(Array.from({ length: opts.workers }, async (_, n) => {
    const peer = c.peers[n % c.peers.length];
    if (peer === undefined) throw new Error('no peer');
    const client = new LockClient({ peer: c.url(peer.id) });
    for (let i = 0; i < opts.rounds; i++) {
      const lock = opts.locks[(n + i) % opts.locks.length] ?? 'x';
      const hold = await client.acquire(lock, { timeoutMs: 20_000, owner: `w${n}` });
      const start = performance.now();
      await new Promise((r) => setImmediate(r));
      const end = performance.now();
      await client.release(lock, hold.id);
      history.push({ lock, token: hold.token, mode: 'exclusive', limit: 1, permits: 1, start, end, who: `w${n}@${peer.id}` });
    }
    client.close();
  }));
  return history;
}

describe('contention across peers', () => {
  for (const peers of [3, 5]) {
    it(`keeps ${peers} peers mutually exclusive with increasing tokens`, async () => {
      cluster = await startTestCluster({ peers });
      const history = await contend(cluster, { workers: 2 * peers, rounds: 40, locks: ['hot', 'warm'] });
      expect(history).toHaveLength(2 * peers * 40);
      expect(checkHistory(history)).toEqual([]);
    });
  }

  it('detects a planted overlap (the checker can fail)', () => {
    const h = (who: string, token: bigint, start: number, end: number): HoldRecord => ({ lock: 'x', token, mode: 'exclusive', limit: 1, permits: 1, start, end, who });
    expect(checkHistory([h('a', 1n, 0, 10), h('b', 2n, 5, 15)])).toHaveLength(1);
    expect(checkHistory([h('a', 2n, 0, 10), h('b', 1n, 11, 15)])).toHaveLength(1);
    expect(checkHistory([h('a', 1n, 0, 10), h('b', 2n, 11, 15)])).toEqual([]);
  });
});

describe('peer failures', () => {
  it('after kill -9 and restart of a holder, its holds end, others proceed, and it grants again', async () => {
    cluster = await startTestCluster();
    const [a, b] = [cluster.url('a'), cluster.url('b')];
    const held = await acquire(a, 'k', { ttl_ms: 600_000 });
    const waiting = acquire(b, 'k', { timeout_ms: 30_000 });
    await waitFor('b queued', async () => (await waiters(b, 'k')).length === 1);
    await cluster.stopPeer('a', 'SIGKILL');
    const unreachable = await acquire(b, 'other', { timeout_ms: 300 });
    expect(unreachable.status).toBe(503);
    expect(unreachable.body).toMatchObject({ error: 'ERR_UNREACHABLE', unreachable_peers: ['a'] });
    cluster.startPeer('a');
    const got = await waiting;
    expect(got.status).toBe(200);
    expect(BigInt(String(got.body['token']))).toBeGreaterThan(BigInt(String(held.body['token'])));
    await cluster.waitReady(30_000, ['a']);
    await release(b, 'k', got.body['id']);
    const again = await acquire(a, 'k', { timeout_ms: 10_000 });
    expect(again.status).toBe(200);
    expect(BigInt(String(again.body['token']))).toBeGreaterThan(BigInt(String(got.body['token'])));
    const stale = await release(a, 'k', held.body['id']);
    expect(stale.status).toBe(404);
  });

  it('a restarted peer shows a hold and a waiter with the same since as the peers that saw their requests', async () => {
    cluster = await startTestCluster();
    const [a, b, c] = [cluster.url('a'), cluster.url('b'), cluster.url('c')];
    const asked = Date.now();
    const held = await acquire(a, 'since', { ttl_ms: 600_000, owner: 'holder' });
    expect(held.status).toBe(200);
    const waiting = acquire(b, 'since', { timeout_ms: 30_000, owner: 'waiter' });
    await waitFor('every peer sees the holder and the waiter', async () => {
      for (const url of [a, b, c]) if ((await holders(url, 'since')).length !== 1 || (await waiters(url, 'since')).length !== 1) return false;
      return true;
    });
    const sinceOf = async (url: string): Promise<unknown[]> => [(await holders(url, 'since'))[0]?.['since'], (await waiters(url, 'since'))[0]?.['since']];
    const before = await sinceOf(a);
    const [holdSince] = before as [number, number];
    // The time a's client asked, on a's clock: not when a granted it, nor when another peer first saw it.
    expect(holdSince).toBeGreaterThanOrEqual(asked);
    expect(holdSince).toBeLessThanOrEqual(Number(held.body['granted_at']));
    expect((await holders(a, 'since'))[0]).toMatchObject({ granted_at: held.body['granted_at'], local: true });
    expect((await holders(b, 'since'))[0]).toMatchObject({ granted_at: null, local: false });
    expect(await sinceOf(b)).toEqual(before);
    expect(await sinceOf(c)).toEqual(before);
    // c restarts: it learns both requests again from the state transfer, seconds later.
    const incarnationBefore = (await call(c, '/v1/cluster')).body['incarnation'];
    await cluster.stopPeer('c', 'SIGTERM');
    cluster.startPeer('c');
    await cluster.waitReady(30_000, ['c']);
    await waitFor('c, a new incarnation, sees the holder and the waiter', async () =>
      (await call(c, '/v1/cluster')).body['incarnation'] !== incarnationBefore && (await holders(c, 'since')).length === 1 && (await waiters(c, 'since')).length === 1, 15_000);
    expect(Date.now() - holdSince).toBeGreaterThan(1000);
    expect(await sinceOf(c)).toEqual(before);
    expect(await sinceOf(a)).toEqual(before);
    await release(a, 'since', held.body['id']);
    const got = await waiting;
    expect(got.status).toBe(200);
    await release(b, 'since', got.body['id']);
  });

  it('a whole-cluster restart keeps tokens above the ones granted before (persisted clock floor)', async () => {
    cluster = await startTestCluster();
    const before = await acquire(cluster.url('c'), 'floor');
    await release(cluster.url('c'), 'floor', before.body['id']);
    await Promise.all(cluster.peers.map((p) => cluster?.stopPeer(p.id, 'SIGKILL')));
    for (const p of cluster.peers) cluster.startPeer(p.id);
    await cluster.waitReady();
    const after = await acquire(cluster.url('a'), 'floor');
    expect(after.status).toBe(200);
    expect(BigInt(String(after.body['token']))).toBeGreaterThan(BigInt(String(before.body['token'])));
  });

  it('on SIGTERM a peer ends its holds with reason shutdown, releases them and exits 0', async () => {
    cluster = await startTestCluster();
    const client = new LockClient({ peer: cluster.url('a') });
    const hold = await client.acquireOnConnection('bye', { ttlMs: 60_000 });
    const next = acquire(cluster.url('b'), 'bye', { timeout_ms: 30_000 });
    await waitFor('b queued', async () => (await waiters(cluster?.url('b') ?? '', 'bye')).length === 1);
    expect(await cluster.stopPeer('a', 'SIGTERM')).toBe(0);
    expect(await hold.ended).toBe('shutdown');
    expect((await next).status).toBe(200);
    // Peer c learns that a's hold ended on its own link, maybe after b answered.
    await waitFor('c sees b holding', async () => (await holders(cluster?.url('c') ?? '', 'bye')).map((h) => h['peer']).join() === 'b');
    await expect(client.refresh('bye', hold.id)).rejects.toBeInstanceOf(LockError);
    client.close();
  });
});

describe('a single peer', () => {
  it('is ready alone and grants without waiting for anyone', async () => {
    cluster = await LocalCluster.start({ peers: 1 });
    expect((await call(cluster.url('a'), '/readyz')).status).toBe(200);
    const r = await acquire(cluster.url('a'), 'solo', { timeout_ms: 0 });
    expect(r.status).toBe(200);
  });
});
