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

    const reason = await client.withLock('c/with', async (hold, signal) => {
      const lost = new Promise<unknown>((resolve) => signal.addEventListener('abort', () => resolve(signal.reason), { once: true }));
      await client.release('c/with', hold.id); // Someone else ends it: the function must hear.
      return lost;
    });
    expect(reason).toMatchObject({ code: 'ERR_NOT_HELD', details: { reason: 'released' } });
  });

  it('reads the peer\'s view of the cluster', async () => {
    expect(await client.cluster()).toMatchObject({ id: 'a', cluster: 'client-test', synced: true, lease: { valid: true } });
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
});
