/**
 * A second process started with a live peer's id (a rollout that starts the new copy before
 * stopping the old one, a copied config), against real peer processes on 127.0.0.1: the old
 * process becomes a zombie (docs/design.md section 5), and its clients are told so with 503
 * `ERR_SUPERSEDED`, its waiters at once, not `ERR_LEASE_LOST` once its lease has run out.
 */
import { describe, expect, it } from 'vitest';
import { TwinPeer } from '../fault/twin-peer.js';
import { waitFor } from '../support/wait.js';
import { acquire, call, useTestCluster, waiters } from './helpers.js';

const cluster = useTestCluster();

describe('a second process with the id of a live peer', () => {
  it('supersedes the old one: its waiter, its /readyz and a new acquire answer 503 ERR_SUPERSEDED', async () => {
    const a = cluster().url('a');
    const b = cluster().url('b');
    const held = await acquire(b, 'twin-held', { ttl_ms: 60_000 });
    expect(held.status).toBe(200);
    const waiter = acquire(a, 'twin-held', { timeout_ms: 30_000 });
    await waitFor('a waits for twin-held', async () => (await waiters(a, 'twin-held')).length === 1);
    const startedMs = performance.now();
    const twin = await TwinPeer.start(cluster(), 'a');
    try {
      const answered = await waiter;
      // Well before the wait's 30 s and the old process's lease: the waiter hears why at once.
      expect(performance.now() - startedMs).toBeLessThan(10_000);
      expect(answered.status).toBe(503);
      expect(answered.body['error']).toBe('ERR_SUPERSEDED');
      expect(String(answered.body['message'])).toMatch(/another process runs or ran with this peer id \(incarnation \d+\.\d+, newer than this one\)/);
      const ready = await call(a, '/readyz');
      expect(ready.status).toBe(503);
      expect(ready.body['error']).toBe('ERR_SUPERSEDED');
      const cluster = await call(a, '/v1/cluster');
      expect(String(cluster.body['superseded'])).toMatch(/another process runs or ran with this peer id/);
      const metrics = await (await fetch(`${a}/metrics`)).text();
      expect(metrics).toMatch(/^lamport_superseded 1$/m);
      const asked = await acquire(a, 'twin-new');
      expect(asked.status).toBe(503);
      expect(asked.body['error']).toBe('ERR_SUPERSEDED');
    } finally {
      await twin.stop();
    }
  });
});
