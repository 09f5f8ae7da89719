/**
 * The typed client (src/client/lock-client.ts) against a real peer in this process: a
 * one-peer cluster's runtime and HTTP API on 127.0.0.1, started by startPeerServer as the
 * binary starts it. What the peer answers is the contract of docs/design.md section 6; the
 * client must turn it into holds and LockErrors with the same codes. A minimal HTTP server
 * stands in for a peer that answers something that is not the API.
 */
import { createServer } from 'node:http';
import type { IncomingHttpHeaders, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { userInfo } from 'node:os';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LockClient, LockError } from '../../src/client/lock-client.js';
import type { ClusterConfig } from '../../src/config.js';
import { silentLogger } from '../../src/log.js';
import type { PeerServer } from '../../src/server.js';
import { startPeerServer } from '../../src/server.js';
import { waitFor } from '../support/wait.js';

const config: ClusterConfig = {
  cluster: 'client-test', secret: 'test-secret', peers: [{ id: 'a', ws: 'ws://127.0.0.1:0', http: '127.0.0.1:0' }],
  heartbeatMs: 1000, leaseMs: 5000, evictMs: 15000, tls: undefined,
};

let server: PeerServer;
let client: LockClient;

beforeAll(async () => {
  server = await startPeerServer({ config, id: 'a', logger: silentLogger() });
  client = new LockClient({ peer: server.httpUrl });
});

afterAll(async () => {
  client.close();
  await server.stop();
});

/** The rejection of `p`, which must be a LockError. */
async function refusal(p: Promise<unknown>): Promise<LockError> {
  const err = await p.then(() => null, (e: unknown) => e);
  if (!(err instanceof LockError)) throw new Error(`expected a LockError, got ${String(err)}`);
  return err;
}

async function holderIds(name: string): Promise<unknown[]> {
  const s = await client.status(name);
  return (s['holders'] as Array<Record<string, unknown>>).map((h) => h['id']);
}

describe('LockClient against a peer', () => {
  it('acquires a hold with a bigint token, shows it in status, and releases it', async () => {
    const hold = await client.acquire('c/plain lock', { owner: 'tester', meta: { job: 1 }, ttlMs: 30_000 });
    expect(hold).toMatchObject({ lock: 'c/plain lock', mode: 'exclusive', peer: 'a' });
    expect(typeof hold.token).toBe('bigint');
    expect(hold.token % 1024n).toBe(0n); // Peer index 0 in the low bits.
    expect(hold.expiresAt).toBe(hold.grantedAt + 30_000);
    const status = await client.status('c/plain lock');
    expect(status).toMatchObject({ name: 'c/plain lock', holders: [{ id: hold.id, owner: 'tester', meta: { job: 1 }, token: hold.token.toString() }], waiters: [] });
    expect(((await client.status())['locks'] as Array<Record<string, unknown>>).map((l) => l['name'])).toContain('c/plain lock');
    await client.release('c/plain lock', hold.id);
    expect(await holderIds('c/plain lock')).toEqual([]);
  });

  it('gives each later exclusive grant of one lock a larger token', async () => {
    const first = await client.acquire('c/tokens');
    await client.release('c/tokens', first.id);
    const second = await client.acquire('c/tokens');
    await client.release('c/tokens', second.id);
    expect(second.token).toBeGreaterThan(first.token);
  });

  it('turns a release of a hold that is not live into ERR_NOT_HELD with its reason', async () => {
    const hold = await client.acquire('c/twice');
    await client.release('c/twice', hold.id);
    const again = await refusal(client.release('c/twice', hold.id));
    expect(again).toMatchObject({ code: 'ERR_NOT_HELD', details: { status: 404, reason: 'released' } });
    const unknown = await refusal(client.refresh('c/twice', 'no-such-id'));
    expect(unknown).toMatchObject({ code: 'ERR_NOT_HELD', details: { status: 404, reason: 'unknown' } });
  });

  it('refreshes a hold to a new expiry, with its own TTL or a new one', async () => {
    const hold = await client.acquire('c/refresh', { ttlMs: 10_000 });
    const same = await client.refresh('c/refresh', hold.id);
    expect(same).toBeGreaterThanOrEqual(hold.grantedAt + 10_000);
    const longer = await client.refresh('c/refresh', hold.id, 20_000);
    expect(longer).toBeGreaterThanOrEqual(hold.grantedAt + 20_000);
    await client.release('c/refresh', hold.id);
  });

  it('reports a timeout behind a holder as ERR_TIMEOUT with the queue position', async () => {
    const hold = await client.acquire('c/busy');
    const timedOut = await refusal(client.acquire('c/busy', { timeoutMs: 50 }));
    expect(timedOut).toMatchObject({ code: 'ERR_TIMEOUT', details: { status: 423, queue_position: 1 } });
    expect(timedOut.details['holders']).toEqual([expect.objectContaining({ id: hold.id })]);
    await client.release('c/busy', hold.id);
  });

  it('passes the peer\'s validation errors on as ERR_BAD_REQUEST', async () => {
    const bad = await refusal(client.acquire('c/bad', { mode: 'shared', limit: 2 }));
    expect(bad).toMatchObject({ code: 'ERR_BAD_REQUEST', details: { status: 400 } });
    expect(bad.message).toContain('does not go with limit');
    const long = await refusal(client.acquire('x'.repeat(257)));
    expect(long).toMatchObject({ code: 'ERR_BAD_REQUEST', message: 'lock name must be 1 to 256 bytes of UTF-8, got 257' });
  });

  it('withdraws a waiting acquire when its signal aborts', async () => {
    const hold = await client.acquire('c/abort');
    const ctl = new AbortController();
    const waiting = refusal(client.acquire('c/abort', { timeoutMs: 60_000 }, ctl.signal));
    await waitFor('the waiter queued', async () => ((await client.status('c/abort'))['waiters'] as unknown[]).length === 1);
    ctl.abort();
    expect(await waiting).toMatchObject({ code: 'ERR_TIMEOUT', message: 'acquire aborted by the caller' });
    await waitFor('the peer withdrew the waiter', async () => ((await client.status('c/abort'))['waiters'] as unknown[]).length === 0);
    await client.release('c/abort', hold.id);
  });

  it('holds on a connection until it is closed, and tells the end of a hold released elsewhere', async () => {
    const closing = await client.acquireOnConnection('c/conn');
    expect(await holderIds('c/conn')).toEqual([closing.id]);
    closing.close();
    expect(await closing.ended).toBe('connection_closed');
    await waitFor('the peer released the closed connection\'s hold', async () => (await holderIds('c/conn')).length === 0);

    const released = await client.acquireOnConnection('c/conn');
    await client.release('c/conn', released.id);
    expect(await released.ended).toBe('released');
  });

  it('runs a function under withLock, releases after it, and aborts its signal when the hold is lost', async () => {
    const result = await client.withLock('c/with', async (hold) => {
      expect(await holderIds('c/with')).toEqual([hold.id]);
      return 42;
    });
    expect(result).toBe(42);
    await waitFor('the hold released after the function', async () => (await holderIds('c/with')).length === 0);

    let heard: unknown = null;
    const ended = await refusal(client.withLock('c/with', async (hold, signal) => {
      const lost = new Promise<unknown>((resolve) => signal.addEventListener('abort', () => resolve(signal.reason), { once: true }));
      await client.release('c/with', hold.id); // Someone else ends it: the function must hear.
      heard = await lost;
      return 'done anyway';
    }));
    expect(heard).toMatchObject({ code: 'ERR_NOT_HELD', details: { reason: 'released' } });
    // The function's result does not hide the loss: withLock rejects with it.
    expect(ended).toBe(heard);
  });

  it('acquires several locks as one hold with one token, keeps a single acquire out, and releases them together by id', async () => {
    const hold = await client.acquireAll(['c/multi-1', { name: 'c/multi-2', mode: 'shared' }], { ttlMs: 30_000, owner: 'multi' });
    expect(hold.locks).toEqual([{ lock: 'c/multi-1', mode: 'exclusive', token: hold.token }, { lock: 'c/multi-2', mode: 'shared', token: hold.token }]);
    expect(hold).toMatchObject({ peer: 'a', expiresAt: hold.grantedAt + 30_000 });
    expect(await holderIds('c/multi-1')).toEqual([hold.id]);
    expect(await holderIds('c/multi-2')).toEqual([hold.id]);
    expect(await refusal(client.acquire('c/multi-1', { timeoutMs: 0 }))).toMatchObject({ code: 'ERR_TIMEOUT', details: { status: 423 } });
    expect(await client.refreshHold(hold.id, 40_000)).toBeGreaterThanOrEqual(hold.grantedAt + 40_000);
    await client.releaseHold(hold.id);
    expect([await holderIds('c/multi-1'), await holderIds('c/multi-2')]).toEqual([[], []]);
    expect(await refusal(client.releaseHold(hold.id))).toMatchObject({ code: 'ERR_NOT_HELD', details: { status: 404, reason: 'released' } });
    expect(await refusal(client.refreshHold(hold.id))).toMatchObject({ code: 'ERR_NOT_HELD', details: { status: 404, reason: 'released' } });
  });

  it('passes the peer\'s refusal of a name given twice on as ERR_BAD_REQUEST, holding nothing', async () => {
    expect(await refusal(client.acquireAll(['c/dup', 'c/dup']))).toMatchObject({ code: 'ERR_BAD_REQUEST', details: { status: 400 } });
    expect(await holderIds('c/dup')).toEqual([]);
  });

  it('releases and refreshes a single lock\'s hold by its id alone too', async () => {
    const hold = await client.acquire('c/by-id', { ttlMs: 10_000 });
    expect(await client.refreshHold(hold.id, 20_000)).toBeGreaterThanOrEqual(hold.grantedAt + 20_000);
    await client.releaseHold(hold.id);
    expect(await holderIds('c/by-id')).toEqual([]);
  });

  it('runs a function under withLocks and aborts its signal when the hold is released elsewhere', async () => {
    const reason = await refusal(client.withLocks(['c/with-1', 'c/with-2'], async (hold, signal) => {
      expect([await holderIds('c/with-1'), await holderIds('c/with-2')]).toEqual([[hold.id], [hold.id]]);
      const lost = new Promise<unknown>((resolve) => signal.addEventListener('abort', () => resolve(signal.reason), { once: true }));
      await client.releaseHold(hold.id);
      return lost;
    }));
    expect(reason).toMatchObject({ code: 'ERR_NOT_HELD', details: { reason: 'released' } });
    await waitFor('both free after withLocks', async () => (await holderIds('c/with-1')).length === 0 && (await holderIds('c/with-2')).length === 0);
  });

  it('refuses an empty lock name as ERR_BAD_REQUEST with a sentence, not as a missing route', async () => {
    expect(await refusal(client.acquire(''))).toMatchObject({ code: 'ERR_BAD_REQUEST', message: 'a lock name must not be empty' });
    expect(await refusal(client.status(''))).toMatchObject({ code: 'ERR_BAD_REQUEST' });
  });

  it('reads the peer\'s view of the cluster', async () => {
    expect(await client.cluster()).toMatchObject({ id: 'a', cluster: 'client-test', synced: true, lease: { valid: true } });
  });

  it('reads the agreed view as typed members: epoch 0 from the config file, at the level the peer runs at', async () => {
    const cluster = await client.cluster();
    expect(await client.members()).toEqual({
      epoch: 0, level: cluster['protocol_level'], nextOrdinal: 1,
      members: [{
        id: 'a', ordinal: 0, state: 'voter', ws: 'ws://127.0.0.1:0', http: '127.0.0.1:0', self: true,
        connected: null, evicted: null, incarnation: cluster['incarnation'], newestLevel: (cluster['protocol_levels'] as Record<string, unknown>)['newest'],
      }],
    });
  });
});

describe('LockClient without a working peer', () => {
  let fake: Server | null = null;
  afterEach(async () => {
    const s = fake;
    fake = null;
    if (s !== null) {
      s.closeAllConnections();
      await new Promise((r) => s.close(r));
    }
  });

  /** A minimal HTTP server answering every request with `status` and `body`; records the headers. */
  async function serve(status: number, body: string): Promise<{ url: string; seen: IncomingHttpHeaders[] }> {
    const seen: IncomingHttpHeaders[] = [];
    const s = createServer((req, res) => {
      seen.push(req.headers);
      req.resume();
      res.writeHead(status, { 'content-type': 'text/plain' }).end(body);
    });
    fake = s;
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
    return { url: `http://127.0.0.1:${(s.address() as AddressInfo).port}`, seen };
  }

  it('refuses a peer address that is neither a URL nor an absolute unix socket path', () => {
    expect(() => new LockClient({ peer: 'not a url' })).toThrow(expect.objectContaining({ code: 'ERR_BAD_REQUEST' }));
    expect(() => new LockClient({ peer: 'unix:relative/peer.sock' })).toThrow(expect.objectContaining({ code: 'ERR_BAD_REQUEST' }));
  });

  it('reports a peer it cannot reach as ERR_UNREACHABLE', async () => {
    const { url } = await serve(200, '{}');
    const closed = fake as Server;
    fake = null;
    closed.closeAllConnections();
    await new Promise((r) => closed.close(r)); // Nothing listens on that port now.
    const c = new LockClient({ peer: url });
    const err = await refusal(c.acquire('x'));
    expect(err.code).toBe('ERR_UNREACHABLE');
    expect(err.message).toContain(url);
    c.close();
  });

  it('turns an answer that is not the API into ERR_PEER, and sends its token', async () => {
    const { url, seen } = await serve(502, '<html>bad gateway</html>');
    const c = new LockClient({ peer: url, token: 'a-token-of-sixteen-chars' });
    const err = await refusal(c.status());
    expect(err).toMatchObject({ code: 'ERR_PEER', details: { status: 502 } });
    expect(err.message).toContain('not JSON');
    expect(seen[0]?.['authorization']).toBe('Bearer a-token-of-sixteen-chars');
    c.close();
  });

  it('turns a members answer that is not a view into ERR_PEER', async () => {
    const { url } = await serve(200, '{"epoch": "zero", "members": []}');
    const c = new LockClient({ peer: url });
    expect(await refusal(c.members())).toMatchObject({ code: 'ERR_PEER', message: 'the peer\'s answer to GET /v1/members is not a list of members' });
    c.close();
  });
});

/**
 * What the client sends for an all-or-nothing acquire and how it reads the answers, against
 * a stand-in that records each request and answers as docs/design.md section 6 specifies
 * POST /v1/acquire, /v1/release and /v1/refresh. The real peer's side of it is in
 * test/integration/multi-lock.test.ts.
 */
describe('LockClient multi-lock requests, against a recording stand-in', () => {
  interface Seen {
    readonly method: string;
    readonly url: string;
    readonly body: Record<string, unknown>;
  }
  const token = '12345678901234567890123';
  const grant = {
    id: 'multi-1', locks: [{ lock: 'a', mode: 'exclusive', token }, { lock: 'b', mode: 'shared', token }],
    lock: 'a', token, mode: 'exclusive', peer: 'p', granted_at: 1_000, expires_at: 61_000,
  };
  let standIn: Server | null = null;
  let seen: Seen[] = [];
  /** The open connection-bound holds' responses, to end them as the peer would. */
  let bound: Array<(line: Record<string, unknown>) => void> = [];
  let stub: LockClient;

  beforeAll(async () => {
    const s = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Record<string, unknown>;
        seen.push({ method: req.method ?? '', url: req.url ?? '', body });
        if (req.url === '/v1/acquire' && body['hold'] === 'connection') {
          res.writeHead(200, { 'content-type': 'application/x-ndjson' }).write(`${JSON.stringify({ ...grant, expires_at: null })}\n`);
          bound.push((line) => res.end(`${JSON.stringify(line)}\n`));
        } else if (req.url === '/v1/acquire' && Array.isArray(body['locks']) && body['locks'].length > 16) {
          res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'ERR_BAD_REQUEST', message: 'at most 16 locks in one request' }));
        } else if (req.url === '/v1/acquire') {
          res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(grant));
        } else if (req.url === '/v1/refresh') {
          res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ expires_at: 99_000 }));
        } else if (req.url === '/v1/release' && body['id'] === 'gone') {
          res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'ERR_NOT_HELD', message: 'hold gone is not live', reason: 'expired' }));
        } else {
          res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ released: true }));
        }
      });
    });
    standIn = s;
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
    stub = new LockClient({ peer: `http://127.0.0.1:${(s.address() as AddressInfo).port}` });
  });

  afterEach(() => {
    seen = [];
    bound = [];
  });

  afterAll(async () => {
    stub.close();
    const s = standIn;
    if (s !== null) {
      s.closeAllConnections();
      await new Promise((r) => s.close(r));
    }
  });

  it('sends every lock with its own mode and the shared options once, and reads each lock\'s token as a bigint', async () => {
    const hold = await stub.acquireAll(['a', { name: 'b', mode: 'shared' }, { name: 'c', limit: 3, permits: 2 }, { name: 'd', mode: 'semaphore', limit: 2 }], { timeoutMs: 0, ttlMs: 5_000, owner: 'me', meta: { job: 1 }, expectedMs: 100 });
    expect(seen).toEqual([{
      method: 'POST', url: '/v1/acquire',
      body: {
        locks: [{ name: 'a' }, { name: 'b', mode: 'shared' }, { name: 'c', limit: 3, permits: 2 }, { name: 'd', mode: 'semaphore', limit: 2 }],
        timeout_ms: 0, ttl_ms: 5_000, owner: 'me', meta: { job: 1 }, expected_ms: 100,
      },
    }]);
    expect(hold).toEqual({
      id: 'multi-1', token: 12345678901234567890123n, peer: 'p', grantedAt: 1_000, expiresAt: 61_000,
      locks: [{ lock: 'a', mode: 'exclusive', token: 12345678901234567890123n }, { lock: 'b', mode: 'shared', token: 12345678901234567890123n }],
    });
  });

  it('passes a refusal of the request on as its LockError', async () => {
    const names = Array.from({ length: 17 }, (_, i) => `n${i}`);
    expect(await refusal(stub.acquireAll(names))).toMatchObject({ code: 'ERR_BAD_REQUEST', message: 'at most 16 locks in one request', details: { status: 400 } });
    expect(await refusal(stub.releaseHold('gone'))).toMatchObject({ code: 'ERR_NOT_HELD', details: { status: 404, reason: 'expired' } });
  });

  it('releases and refreshes a hold by its id alone', async () => {
    await stub.releaseHold('multi-1');
    expect(await stub.refreshHold('multi-1')).toBe(99_000);
    expect(await stub.refreshHold('multi-1', 7_000)).toBe(99_000);
    expect(seen.map((s) => [s.url, s.body])).toEqual([['/v1/release', { id: 'multi-1' }], ['/v1/refresh', { id: 'multi-1' }], ['/v1/refresh', { id: 'multi-1', ttl_ms: 7_000 }]]);
  });

  it('holds several locks on a connection and reports the end line the peer sends', async () => {
    const hold = await stub.acquireAllOnConnection(['a', 'b']);
    expect(seen[0]?.body).toEqual({ locks: [{ name: 'a' }, { name: 'b' }], hold: 'connection', ttl_ms: 0, owner: `${process.env['USER'] ?? userInfo().username}@pid${process.pid}` });
    expect(hold).toMatchObject({ id: 'multi-1', token: 12345678901234567890123n, expiresAt: null });
    bound[0]?.({ ended: 'lease_lost', id: 'multi-1' });
    expect(await hold.ended).toBe('lease_lost');
    hold.close();
  });

  it('runs a function under withLocks, refreshing by id, and aborts its signal with the end\'s reason', async () => {
    const reason = await refusal(stub.withLocks(['a', 'b'], async (hold, signal) => {
      expect(hold.locks.map((l) => l.lock)).toEqual(['a', 'b']);
      await waitFor('a refresh by id', () => seen.some((s) => s.url === '/v1/refresh'));
      const lost = new Promise<unknown>((resolve) => signal.addEventListener('abort', () => resolve(signal.reason), { once: true }));
      bound[0]?.({ ended: 'evicted', id: hold.id });
      return lost;
    }, { ttlMs: 300, owner: 'me' }));
    expect(seen[0]?.body).toEqual({ locks: [{ name: 'a' }, { name: 'b' }], ttl_ms: 300, owner: 'me', hold: 'connection' });
    expect(seen.find((s) => s.url === '/v1/refresh')?.body).toEqual({ id: 'multi-1', ttl_ms: 300 });
    expect(reason).toMatchObject({ code: 'ERR_NOT_HELD', message: 'lost the hold on "a", "b": evicted', details: { reason: 'evicted' } });
  });
});
