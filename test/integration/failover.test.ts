/**
 * Surviving a peer that goes away (docs/design.md section 5): majority-confirmed eviction, the
 * self-fencing lease of a paused peer, rejoin as a new incarnation, and the two-peer
 * cluster that never evicts. On testTimings: heartbeat 100 ms, lease 1000 ms, evict 3000 ms.
 */
import { performance } from 'node:perf_hooks';
import { afterEach, describe, expect, it } from 'vitest';
import { LockClient } from '../../src/client/lock-client.js';
import type { LocalCluster } from '../../src/tools/local-cluster.js';
import { waitFor } from '../support/wait.js';
import { acquire, call, release, startTestCluster, testTimings, waiters } from './helpers.js';

let cluster: LocalCluster | undefined;

afterEach(async () => {
  if (cluster !== undefined) for (const p of cluster.peers) cluster.signal(p.id, 'SIGCONT');
  await cluster?.stop();
  cluster = undefined;
});

async function clusterView(base: string): Promise<Array<Record<string, unknown>>> {
  return (await call(base, '/v1/cluster')).body['peers'] as Array<Record<string, unknown>>;
}

describe('eviction', () => {
  it('after kill -9 of a holder, the majority evicts it and grants the next waiter', async () => {
    cluster = await startTestCluster();
    const [a, b] = [cluster.url('a'), cluster.url('b')];
    const held = await acquire(a, 'k', { ttl_ms: 600_000 });
    const waiting = acquire(b, 'k', { timeout_ms: 30_000 });
    await waitFor('b queued', async () => (await waiters(b, 'k')).length === 1);
    const killedAt = performance.now();
    await cluster.stopPeer('a', 'SIGKILL');
    const got = await waiting;
    const elapsedMs = performance.now() - killedAt;
    expect(got.status).toBe(200);
    expect(BigInt(String(got.body['token']))).toBeGreaterThan(BigInt(String(held.body['token'])));
    // Silence counts from the last message heard, up to one heartbeat before the kill.
    expect(elapsedMs).toBeGreaterThanOrEqual(testTimings.evictMs - testTimings.heartbeatMs);
    process.stdout.write(`kill -9 to first grant on the majority side: ${elapsedMs.toFixed(0)} ms (evict_ms ${testTimings.evictMs})\n`);
    expect((await clusterView(b)).find((p) => p['id'] === 'a')).toMatchObject({ evicted: true });
    // The killed peer comes back as a new incarnation and takes part again.
    cluster.startPeer('a');
    await cluster.waitReady(30_000, ['a']);
    await waitFor('a back in b\'s view', async () => (await clusterView(b)).find((p) => p['id'] === 'a')?.['evicted'] === false);
    await release(b, 'k', got.body['id']);
    const again = await acquire(a, 'k', { timeout_ms: 10_000 });
    expect(again.status).toBe(200);
    expect(BigInt(String(again.body['token']))).toBeGreaterThan(BigInt(String(got.body['token'])));
  });

  it('a peer paused longer than evict_ms loses its lease, is evicted, tells its holder, and rejoins', async () => {
    cluster = await startTestCluster();
    const [a, b] = [cluster.url('a'), cluster.url('b')];
    const client = new LockClient({ peer: a });
    const hold = await client.acquireOnConnection('p', { ttlMs: 600_000 });
    const before = (await call(a, '/v1/cluster')).body['incarnation'];
    const waiting = acquire(b, 'p', { timeout_ms: 30_000 });
    await waitFor('b queued', async () => (await waiters(b, 'p')).length === 1);
    cluster.signal('a', 'SIGSTOP');
    const got = await waiting;
    expect(got.status).toBe(200);
    cluster.signal('a', 'SIGCONT');
    expect(['lease_lost', 'evicted']).toContain(await hold.ended);
    await waitFor('a rejoined as a new incarnation', async () => {
      const r = await call(a, '/v1/cluster').catch(() => null);
      return r !== null && r.body['incarnation'] !== before && r.body['synced'] === true;
    }, 20_000);
    await cluster.waitReady(20_000, ['a']);
    const blocked = await acquire(a, 'p', { timeout_ms: 200 });
    expect(blocked.status).toBe(423);
    await release(b, 'p', got.body['id']);
    expect((await acquire(a, 'p', { timeout_ms: 10_000 })).status).toBe(200);
    client.close();
  });
});

describe('two peers', () => {
  it('never evicts: with the other peer gone, requests answer 503 naming it, even after evict_ms', async () => {
    cluster = await startTestCluster({ peers: 2 });
    const a = cluster.url('a');
    await cluster.stopPeer('b', 'SIGKILL');
    // A waiter issued while a still held its lease fails when the lease lapses.
    const first = await acquire(a, 'two', { timeout_ms: testTimings.evictMs + 1500 });
    expect(first.status).toBe(503);
    expect(first.body).toMatchObject({ unreachable_peers: ['b'] });
    expect(['ERR_LEASE_LOST', 'ERR_UNREACHABLE']).toContain(first.body['error']);
    // Without a lease nothing is issued: the request waits its timeout and names the peer.
    const r = await acquire(a, 'two', { timeout_ms: testTimings.evictMs + 500 });
    expect(r.status).toBe(503);
    expect(r.body).toMatchObject({ error: 'ERR_UNREACHABLE', unreachable_peers: ['b'] });
    expect((await clusterView(a)).find((p) => p['id'] === 'b')).toMatchObject({ evicted: false });
    expect((await call(a, '/readyz')).status).toBe(503);
  });
});
