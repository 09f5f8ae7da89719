/**
 * Who may talk to a peer (issue 14), against real lamport-peer processes: requests a web
 * page could make are refused with a coded error and a log line while the peer keeps
 * serving; an oversized body gets 413; a token, when configured, is required, and
 * force-release needs the admin token.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LockClient } from '../../src/client/lock-client.js';
import { limits } from '../../src/limits.js';
import type { LocalCluster } from '../../src/tools/local-cluster.js';
import { waitFor } from '../support/wait.js';
import { call, holders, release, startTestCluster } from './helpers.js';

/** An answer read whole, whatever its content type. */
interface Raw {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: Record<string, unknown>;
}

/** A request with exactly the headers given (fetch would not let a test set Host). */
export function raw(base: string, path: string, opts: { method?: string; headers?: Record<string, string>; body?: string | Buffer; ownConnection?: boolean } = {}): Promise<Raw> {
  return new Promise((resolve, reject) => {
    // ownConnection: a socket of its own, not kept for later requests (one the peer may cut).
    const req = request(`${base}${path}`, { method: opts.method ?? 'GET', headers: opts.headers ?? {}, ...(opts.ownConnection === true ? { agent: false } : {}) }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let body: Record<string, unknown>;
        try {
          body = JSON.parse(text) as Record<string, unknown>;
        } catch {
          body = { raw: text };
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body });
      });
    });
    req.on('error', reject);
    req.end(opts.body);
  });
}

const json = { 'content-type': 'application/json' };

/** The status and content type of an answer, read as soon as its head arrives (a stream never ends); the connection is then cut. */
function headersOf(base: string, path: string, headers: Record<string, string>): Promise<{ status: number; contentType: string }> {
  return new Promise((resolve, reject) => {
    const req = request(`${base}${path}`, { headers, agent: false }, (res) => {
      resolve({ status: res.statusCode ?? 0, contentType: String(res.headers['content-type'] ?? '') });
      req.destroy();
    });
    req.on('error', (err) => (req.destroyed ? undefined : reject(err)));
    req.end();
  });
}

/** Lines of a peer's log that carry `code`. */
function logLinesWith(cluster: LocalCluster, id: string, code: string): string[] {
  return readFileSync(join(cluster.dir, `${id}.log`), 'utf8').split('\n').filter((l) => l.includes(`"code":"${code}"`));
}

describe('a peer without a token, on loopback', () => {
  let cluster: LocalCluster;
  let a: string;
  let port: number;

  beforeAll(async () => {
    cluster = await startTestCluster({ peers: 1, peerArgs: ['--http-allow-host', 'peer-a', '--http-allow-host', 'localhost:9999'] });
    a = cluster.url('a');
    port = Number(new URL(a).port);
  });

  afterAll(async () => {
    await cluster?.stop();
  });

  it('answers 415 to a POST that is not application/json, logs it once, and keeps serving', async () => {
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', undefined]) {
      const r = await raw(a, '/v1/locks/form/acquire', { method: 'POST', headers: type === undefined ? {} : { 'content-type': type }, body: '{"ttl_ms": 600000}' });
      expect(r.status, String(type)).toBe(415);
      expect(r.body['error']).toBe('ERR_UNSUPPORTED_MEDIA_TYPE');
    }
    expect(await holders(a, 'form')).toEqual([]);
    await waitFor('four log lines', () => logLinesWith(cluster, 'a', 'ERR_UNSUPPORTED_MEDIA_TYPE').length === 4, 2000);
    const ok = await raw(a, '/v1/locks/form/acquire', { method: 'POST', headers: { 'content-type': 'Application/JSON; charset=utf-8' }, body: '{"ttl_ms": 5000}' });
    expect(ok.status).toBe(200);
    expect((await release(a, 'form', ok.body['id'])).status).toBe(200);
  });

  it('answers 421 to a Host that is not a name of this peer, and serves loopback names and allowed ones', async () => {
    for (const host of ['evil.example', `evil.example:${port}`, `127.0.0.1:${port + 1}`, '127.0.0.1', `localhost.evil.example:${port}`, `peer-b:${port}`]) {
      const r = await raw(a, '/v1/locks', { headers: { host } });
      expect(r.status, host).toBe(421);
      expect(r.body['error']).toBe('ERR_HOST_REFUSED');
    }
    for (const host of [`127.0.0.1:${port}`, `127.1.2.3:${port}`, `localhost:${port}`, `LOCALHOST:${port}`, `[::1]:${port}`, `peer-a:${port}`, 'localhost:9999']) {
      expect((await raw(a, '/v1/locks', { headers: { host } })).status, host).toBe(200);
    }
    // HTTP/1.0 allows a request without Host; this API does not.
    const bare = await new Promise<string>((resolve, reject) => {
      const socket = connect(port, '127.0.0.1', () => socket.end('GET /v1/locks HTTP/1.0\r\n\r\n'));
      let text = '';
      socket.on('data', (d: Buffer) => (text += d.toString()));
      socket.on('end', () => resolve(text));
      socket.on('error', reject);
    });
    expect(bare).toMatch(/^HTTP\/1\.1 421 /);
    expect(bare).toContain('ERR_HOST_REFUSED');
    await waitFor('a log line per refusal', () => logLinesWith(cluster, 'a', 'ERR_HOST_REFUSED').length === 7, 2000);
  });

  it('answers 403 to a request from another web origin and serves the peer\'s own', async () => {
    const own = { host: `127.0.0.1:${port}`, origin: `http://127.0.0.1:${port}` };
    for (const origin of ['http://127.0.0.2:8765', 'null', `http://localhost:${port}`, `https://127.0.0.1:${port}`]) {
      const r = await raw(a, '/v1/locks/o/acquire', { method: 'POST', headers: { ...json, host: own.host, origin }, body: '{}' });
      expect(r.status, origin).toBe(403);
      expect(r.body['error']).toBe('ERR_ORIGIN_REFUSED');
    }
    const cross = await raw(a, '/v1/locks', { headers: { 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'no-cors' } });
    expect(cross.status).toBe(403);
    expect((await raw(a, '/v1/events', { headers: { 'sec-fetch-site': 'same-site', 'sec-fetch-mode': 'cors' } })).status).toBe(403);
    expect(await holders(a, 'o')).toEqual([]);
    // A link from another site to the dashboard opens it; the page's own requests are same-origin.
    expect((await raw(a, '/', { headers: { 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'navigate' } })).status).toBe(200);
    const mine = await raw(a, '/v1/locks/o/acquire', { method: 'POST', headers: { ...json, ...own, 'sec-fetch-site': 'same-origin' }, body: '{"ttl_ms": 5000}' });
    expect(mine.status).toBe(200);
    expect((await release(a, 'o', mine.body['id'])).status).toBe(200);
  });

  it('refuses a page of another site that loads a stream or a page in a frame, and opens the dashboard in a window', async () => {
    // What Chromium sends for <iframe src> on a page of another site, and for a link it follows.
    const frame = { 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'navigate', 'sec-fetch-dest': 'iframe' };
    const window = { 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'navigate', 'sec-fetch-dest': 'document' };
    for (const [headers, path] of [[frame, '/v1/watch?prefix='], [frame, '/v1/locks/o/watch'], [frame, '/v1/events'], [frame, '/'], [window, '/v1/watch?prefix='], [window, '/v1/events'], [window, '/v1/elections/e/observe']] as const) {
      const r = await headersOf(a, path, headers);
      expect(r.status, `${headers['sec-fetch-dest']} ${path}`).toBe(403);
      expect(r.contentType).toContain('application/json');
    }
    expect((await raw(a, '/', { headers: window })).status).toBe(200);
    const watch = await headersOf(a, '/v1/watch?prefix=', { 'sec-fetch-site': 'same-origin', 'sec-fetch-mode': 'cors', 'sec-fetch-dest': 'empty' });
    expect(watch).toMatchObject({ status: 200, contentType: expect.stringContaining('text/event-stream') });
  });

  it(`answers 413 with a coded error to a body over ${limits.httpBodyBytesMax} bytes, and keeps serving`, async () => {
    const big = JSON.stringify({ owner: 'x'.repeat(limits.httpBodyBytesMax) });
    // Each on a connection of its own: the peer may close one after a 413, and a kept-alive
    // socket it cut would fail whichever later request of the test's pool drew it.
    const r = await raw(a, '/v1/locks/big/acquire', { method: 'POST', headers: json, body: big, ownConnection: true });
    expect(r.status).toBe(413);
    expect(r.body).toMatchObject({ error: 'ERR_BODY_TOO_LARGE', limit_bytes: limits.httpBodyBytesMax });
    // Past the drain bound the connection is cut, but the answer may already be read; either way the peer serves on.
    const huge = await raw(a, '/v1/locks/big/acquire', { method: 'POST', headers: json, body: 'x'.repeat(limits.httpBodyDrainBytesMax * 2), ownConnection: true }).catch((err: unknown) => String(err));
    if (typeof huge !== 'string') expect(huge.status).toBe(413);
    expect(await holders(a, 'big')).toEqual([]);
    await waitFor('a log line per refusal', () => logLinesWith(cluster, 'a', 'ERR_BODY_TOO_LARGE').length >= 1, 2000);
    expect((await call(a, '/healthz')).status).toBe(200);
  });

  it('refuses force-release to a TCP client without the admin token', async () => {
    const r = await raw(a, '/v1/locks/any/force-release', { method: 'POST', headers: json, body: '{}' });
    expect(r.status).toBe(403);
    expect(r.body['error']).toBe('ERR_ADMIN_REQUIRED');
  });
});

describe('a peer with a token and an admin token', () => {
  const token = 'client-token-0123456789abcdef';
  const adminToken = 'admin-token-0123456789abcdef';
  let cluster: LocalCluster;
  let a: string;

  beforeAll(async () => {
    const adminFile = join(mkdtempSync(join(tmpdir(), 'lamport-admin-')), 'admin-token');
    writeFileSync(adminFile, `${adminToken}\n`, { mode: 0o600 });
    cluster = await startTestCluster({ peers: 1, token, peerArgs: ['--admin-token-file', adminFile] });
    a = cluster.url('a');
  });

  afterAll(async () => {
    await cluster?.stop();
  });

  it('answers 401 without the token or with a wrong one, and serves the probes without it', async () => {
    const none = await raw(a, '/v1/locks');
    expect(none.status).toBe(401);
    expect(none.body['error']).toBe('ERR_UNAUTHORIZED');
    expect(none.headers['www-authenticate']).toMatch(/^Basic /);
    const wrong = await raw(a, '/v1/locks', { headers: { authorization: `Bearer ${token}x` } });
    expect(wrong.status).toBe(401);
    expect((await raw(a, '/v1/events')).status).toBe(401);
    expect((await raw(a, '/metrics')).status).toBe(401);
    expect((await raw(a, '/healthz')).status).toBe(200);
    expect((await raw(a, '/readyz')).status).toBe(200);
    expect((await raw(a, '/v1/locks', { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
    const basic = Buffer.from(`anyone:${token}`).toString('base64');
    expect((await raw(a, '/v1/cluster', { headers: { authorization: `Basic ${basic}` } })).status).toBe(200);
    await waitFor('a log line per refusal', () => logLinesWith(cluster, 'a', 'ERR_UNAUTHORIZED').length >= 4, 2000);
  });

  it('guards GET /v1/members as GET /v1/cluster: the client token is enough, none is not', async () => {
    for (const path of ['/v1/cluster', '/v1/members']) {
      expect((await raw(a, path)).status, path).toBe(401);
      expect((await raw(a, path, { headers: { authorization: `Bearer ${token}` } })).status, path).toBe(200);
    }
  });

  it('lets the typed client in with its token file, and refuses it without', async () => {
    const client = new LockClient({ peer: a, tokenFile: join(cluster.dir, 'api-token') });
    const hold = await client.acquire('with-token', { ttlMs: 5000 });
    expect((await client.status('with-token'))['holders']).toHaveLength(1);
    await client.release('with-token', hold.id);
    client.close();
    const stranger = new LockClient({ peer: a });
    await expect(stranger.acquire('with-token')).rejects.toMatchObject({ code: 'ERR_UNAUTHORIZED' });
    stranger.close();
  });

  it('force-releases every local hold of a name with the admin token, never with the client token', async () => {
    const client = new LockClient({ peer: a, token });
    const bound = await client.acquireOnConnection('stuck', { ttlMs: 60_000 });
    const byClient = await raw(a, '/v1/locks/stuck/force-release', { method: 'POST', headers: { ...json, authorization: `Bearer ${token}` }, body: '{}' });
    expect(byClient.status).toBe(403);
    expect(byClient.body['error']).toBe('ERR_ADMIN_REQUIRED');
    const byAdmin = await raw(a, '/v1/locks/stuck/force-release', { method: 'POST', headers: { ...json, authorization: `Bearer ${adminToken}` }, body: '{}' });
    expect(byAdmin.status).toBe(200);
    expect(byAdmin.body).toEqual({ released: [bound.id] });
    expect(await bound.ended).toBe('released');
    expect((await raw(a, '/v1/locks/stuck', { headers: { authorization: `Bearer ${token}` } })).body['holders']).toEqual([]);
    client.close();
  });
});
