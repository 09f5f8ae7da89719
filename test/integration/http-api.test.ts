/**
 * Every status path of the local HTTP API (docs/design.md section 6), against a real 3-peer
 * cluster of lamport-peer processes on 127.0.0.1.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { LockClient } from '../../src/client/lock-client.js';
import { waitFor } from '../support/wait.js';
import { abortableAcquire, acquire, call, holders, release, useTestCluster, waiters } from './helpers.js';

const cluster = useTestCluster();
let a: string;
let b: string;
let c: string;

beforeAll(() => {
  [a, b, c] = ['a', 'b', 'c'].map((id) => cluster().url(id)) as [string, string, string];
});

describe('acquire and release', () => {
  it('grants with the documented fields and a decimal-string token', async () => {
    const r = await acquire(a, 'fields', { ttl_ms: 5000, owner: 'me', meta: { job: 7 } });
    expect(r.status).toBe(200);
    expect(Object.keys(r.body).sort()).toEqual(['expires_at', 'granted_at', 'id', 'lock', 'mode', 'peer', 'token']);
    expect(r.body).toMatchObject({ lock: 'fields', mode: 'exclusive', peer: 'a' });
    expect(r.body['token']).toMatch(/^\d+$/);
    expect(Number(r.body['expires_at']) - Number(r.body['granted_at'])).toBe(5000);
    const seen = await holders(b, 'fields');
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ peer: 'a', owner: 'me', meta: { job: 7 }, token: r.body['token'], local: false });
    expect(typeof seen[0]?.['since']).toBe('number');
    expect(await release(a, 'fields', r.body['id'])).toEqual({ status: 200, body: { released: true } });
    await waitFor('release seen on b', async () => (await holders(b, 'fields')).length === 0);
  });

  it('answers 404 with the reason for a release of a released hold and of an unknown id', async () => {
    const r = await acquire(a, 'twice');
    await release(a, 'twice', r.body['id']);
    const again = await release(a, 'twice', r.body['id']);
    expect(again.status).toBe(404);
    expect(again.body).toMatchObject({ error: 'ERR_NOT_HELD', reason: 'released' });
    const unknown = await release(a, 'twice', 'ffffffffffffffffffffffff');
    expect(unknown.status).toBe(404);
    expect(unknown.body).toMatchObject({ error: 'ERR_NOT_HELD', reason: 'unknown' });
  });

  it('answers 423 with queue position and holders when not granted in time', async () => {
    const held = await acquire(a, 'busy');
    const r = await acquire(b, 'busy', { timeout_ms: 300 });
    expect(r.status).toBe(423);
    expect(r.body).toMatchObject({ error: 'ERR_TIMEOUT', queue_position: 1 });
    expect((r.body['holders'] as unknown[])[0]).toMatchObject({ peer: 'a', token: held.body['token'], since: expect.any(Number), granted_at: null, local: false });
    expect(Object.keys((r.body['holders'] as Array<Record<string, unknown>>)[0] ?? {})).not.toContain('requestedAtMs');
    const now = await acquire(c, 'busy', { timeout_ms: 0 });
    expect(now.status).toBe(423);
    expect(now.body['error']).toBe('ERR_TIMEOUT');
    await release(a, 'busy', held.body['id']);
    const free = await acquire(c, 'busy', { timeout_ms: 0 });
    expect(free.status).toBe(200);
    await release(c, 'busy', free.body['id']);
  });

  it('hands the lock to the FIFO-next waiter on release, with a higher token', async () => {
    const first = await acquire(a, 'fifo');
    const second = acquire(b, 'fifo', { timeout_ms: 10_000 });
    await waitFor('b queued', async () => (await waiters(a, 'fifo')).length === 1);
    const third = acquire(c, 'fifo', { timeout_ms: 10_000 });
    await waitFor('c queued', async () => (await waiters(a, 'fifo')).length === 2);
    await release(a, 'fifo', first.body['id']);
    const s = await second;
    expect(s.status).toBe(200);
    expect(BigInt(String(s.body['token']))).toBeGreaterThan(BigInt(String(first.body['token'])));
    // Peer c learns of a's release on its own link, maybe after b answered: wait for it, then
    // c must show b holding and only itself waiting.
    await waitFor('a release reaches c', async () => !(await holders(c, 'fifo')).some((h) => h['peer'] === 'a'));
    expect((await holders(c, 'fifo')).map((h) => h['peer'])).toEqual(['b']);
    expect((await waiters(c, 'fifo')).map((w) => w['peer'])).toEqual(['c']);
    await release(b, 'fifo', s.body['id']);
    const t = await third;
    expect(t.status).toBe(200);
    expect(BigInt(String(t.body['token']))).toBeGreaterThan(BigInt(String(s.body['token'])));
    await release(c, 'fifo', t.body['id']);
  });

  it('refreshes a hold and reports expiry with reason expired', async () => {
    const r = await acquire(a, 'ttl', { ttl_ms: 300 });
    const refreshed = await call(a, '/v1/locks/ttl/refresh', { id: r.body['id'], ttl_ms: 400 });
    expect(refreshed.status).toBe(200);
    expect(Number(refreshed.body['expires_at'])).toBeGreaterThan(Number(r.body['expires_at']));
    const next = await acquire(b, 'ttl', { timeout_ms: 5000 });
    expect(next.status).toBe(200);
    const late = await call(a, '/v1/locks/ttl/refresh', { id: r.body['id'] });
    expect(late.status).toBe(404);
    expect(late.body).toMatchObject({ error: 'ERR_NOT_HELD', reason: 'expired' });
    await release(b, 'ttl', next.body['id']);
  });
});

describe('waiting clients and connection-bound holds', () => {
  it('cancels the request of a waiter whose client goes away', async () => {
    const held = await acquire(a, 'gone');
    const w = abortableAcquire(b, 'gone', { timeout_ms: 10_000 });
    await waitFor('b waiting', async () => (await waiters(c, 'gone')).length === 1);
    w.abort();
    expect(await w.answer).toBe('aborted');
    await waitFor('b withdrawn everywhere', async () => (await waiters(a, 'gone')).length === 0 && (await waiters(c, 'gone')).length === 0);
    await release(a, 'gone', held.body['id']);
  });

  it('holds a connection-bound lock until the connection closes', async () => {
    const client = new LockClient({ peer: a });
    const hold = await client.acquireOnConnection('conn', { ttlMs: 0 });
    expect(hold.expiresAt).toBeNull();
    const blocked = await acquire(b, 'conn', { timeout_ms: 200 });
    expect(blocked.status).toBe(423);
    hold.close();
    expect(await hold.ended).toBe('connection_closed');
    const next = await acquire(b, 'conn', { timeout_ms: 5000 });
    expect(next.status).toBe(200);
    await release(b, 'conn', next.body['id']);
    client.close();
  });

  it('tells a connection-bound holder that its hold was released', async () => {
    const client = new LockClient({ peer: a });
    const hold = await client.acquireOnConnection('conn2', { ttlMs: 10_000 });
    await client.release('conn2', hold.id);
    expect(await hold.ended).toBe('released');
    client.close();
  });
});

describe('modes across peers', () => {
  it('lets shared holders coexist and makes an exclusive request wait for them', async () => {
    const s1 = await acquire(a, 'rw', { mode: 'shared' });
    const s2 = await acquire(b, 'rw', { mode: 'shared' });
    expect([s1.status, s2.status]).toEqual([200, 200]);
    // A grant needs a later timestamp from c, not that c has seen the request yet: wait for it.
    await waitFor('c sees both shared holders', async () => (await holders(c, 'rw')).length === 2);
    const w = await acquire(c, 'rw', { timeout_ms: 200 });
    expect(w.status).toBe(423);
    await release(a, 'rw', s1.body['id']);
    await release(b, 'rw', s2.body['id']);
    const x = await acquire(c, 'rw', { timeout_ms: 5000 });
    expect(x.status).toBe(200);
    await release(c, 'rw', x.body['id']);
  });

  it('admits at most limit semaphore holders cluster-wide', async () => {
    const h1 = await acquire(a, 'sem', { limit: 2 });
    const h2 = await acquire(b, 'sem', { limit: 2 });
    expect([h1.status, h2.status]).toEqual([200, 200]);
    const h3 = await acquire(c, 'sem', { limit: 2, timeout_ms: 200 });
    expect(h3.status).toBe(423);
    const wide = await acquire(c, 'sem', { limit: 3, timeout_ms: 2000 });
    expect(wide.status).toBe(200);
    for (const [peer, h] of [[a, h1], [b, h2], [c, wide]] as const) await release(peer, 'sem', h.body['id']);
  });
});

describe('bad input and the other routes', () => {
  const bad: Array<[string, unknown]> = [
    ['body that is not JSON', '{nope'],
    ['body that is an array', '[1]'],
    ['unknown field', { colour: 'red' }],
    ['ttl 0 without hold', { ttl_ms: 0 }],
    ['negative timeout', { timeout_ms: -1 }],
    ['fractional ttl', { ttl_ms: 1.5 }],
    ['unknown mode', { mode: 'write' }],
    ['semaphore without limit', { mode: 'semaphore' }],
    ['permits above limit', { limit: 2, permits: 3 }],
    ['permits without limit', { permits: 1 }],
    ['meta that is not an object', { meta: [1, 2] }],
    ['owner that is not a string', { owner: 5 }],
    ['hold that is not connection', { hold: 'forever' }],
  ];
  it.each(bad)('answers 400 ERR_BAD_REQUEST to %s', async (_what, body) => {
    const r = await acquire(a, 'bad', body as Record<string, unknown>);
    expect(r.status).toBe(400);
    expect(r.body['error']).toBe('ERR_BAD_REQUEST');
    expect(typeof r.body['message']).toBe('string');
  });

  it('refuses lock names that are too long or hold control characters', async () => {
    expect((await acquire(a, 'x'.repeat(257))).status).toBe(400);
    expect((await acquire(a, 'é'.repeat(129))).status).toBe(400);
    expect((await acquire(a, 'tab\there')).body['error']).toBe('ERR_BAD_REQUEST');
    const ok = await acquire(a, 'x'.repeat(256));
    expect(ok.status).toBe(200);
    await release(a, 'x'.repeat(256), ok.body['id']);
    expect((await call(a, '/v1/locks/%E0%A4%A/acquire', {})).body['error']).toBe('ERR_BAD_REQUEST');
  });

  it('answers 404 ERR_NOT_FOUND for unknown routes and keeps serving', async () => {
    const r = await call(a, '/v2/nothing');
    expect(r.status).toBe(404);
    expect(r.body['error']).toBe('ERR_NOT_FOUND');
    expect((await call(a, '/healthz')).status).toBe(200);
  });

  it('serves cluster, readiness and Prometheus metrics', async () => {
    const cl = await call(a, '/v1/cluster');
    expect(cl.body).toMatchObject({ id: 'a', synced: true, lease: { valid: true } });
    expect((cl.body['peers'] as unknown[]).length).toBe(3);
    expect((cl.body['peers'] as Array<Record<string, unknown>>)[1]).toMatchObject({ id: 'b', connected: true, evicted: false });
    expect((await call(a, '/readyz')).status).toBe(200);
    const m = await fetch(`${a}/metrics`).then((r) => r.text());
    expect(m).toMatch(/^lamport_lock_grants_total\{mode="exclusive"\} \d+/m);
    expect(m).toMatch(/^lamport_peer_connected\{peer="b"\} 1/m);
  });
});
