/**
 * The member routes of the HTTP API (issue 40; docs/operations.md, "Changing the members"):
 * POST /v1/members, DELETE /v1/members/{id}, POST /v1/members/{id}/promote and /retire, POST
 * /v1/cluster/level. Over a stub runtime: each is administrative (checked before its body),
 * validates its input before the runtime hears of it, hands the runtime the one change it
 * names with its timeout, and answers the view the runtime returns, or the runtime's coded
 * refusal. On a real peer: the refusals of a change that does not apply to the view.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ClusterConfig } from '../../src/config.js';
import type { AgreedView, ViewChange } from '../../src/core/view.js';
import { ErrorCode, LockError } from '../../src/errors.js';
import { AccessPolicy } from '../../src/http/access.js';
import { HttpApi } from '../../src/http/api.js';
import { openApiSpec } from '../../src/http/openapi.js';
import { limits } from '../../src/limits.js';
import { silentLogger } from '../../src/log.js';
import type { LockService } from '../../src/runtime/peer.js';
import { decodeJoinTicket } from '../../src/runtime/view-store.js';
import type { ChangeOptions } from '../../src/runtime/view-change.js';
import type { PeerServer } from '../../src/server.js';
import { startPeerServer } from '../../src/server.js';
import { OpenApiCheck } from '../support/openapi-check.js';
import { waitFor } from '../support/wait.js';

type Json = Record<string, unknown>;

const clientToken = 'client-token-for-the-member-routes';
const adminToken = 'admin-token-for-the-member-routes';
const check = new OpenApiCheck(openApiSpec);

/** A view a stub change answers with: what the runtime resolves is what the client gets. */
const madeView: AgreedView = {
  epoch: 4, level: 9, nextOrdinal: 4,
  members: [
    { id: 'a', ordinal: 0, ws: 'ws://10.0.0.1:7100', http: '127.0.0.1:7001', state: 'voter' },
    { id: 'd', ordinal: 3, ws: 'ws://10.0.0.4:7100', http: '127.0.0.1:7001', state: 'learner' },
  ],
};

/** A runtime whose changeView records what it was asked and answers as `next` says. */
class StubPeer {
  readonly asked: Array<{ change: ViewChange; opts: ChangeOptions }> = [];
  next: 'view' | LockError | 'never' = 'view';

  service(): LockService {
    const stub: Partial<LockService> = {
      changeView: (change, opts) => {
        this.asked.push({ change, opts });
        const next = this.next;
        if (next === 'never') return new Promise<AgreedView>(() => undefined);
        return next === 'view' ? Promise.resolve(madeView) : Promise.reject(next);
      },
      joinTicket: () => ({ cluster: 'stub', founders: ['a', 'b', 'c'], view: madeView }),
    };
    return stub as LockService;
  }
}

interface Sent {
  readonly status: number;
  readonly body: Json;
}

async function send(base: string, method: string, path: string, body?: unknown, token: string | null = adminToken): Promise<Sent> {
  const headers: Record<string, string> = token === null ? {} : { authorization: `Bearer ${token}` };
  if (method === 'POST') headers['content-type'] = 'application/json';
  const res = await fetch(`${base}${path}`, { method, headers, ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }) });
  return { status: res.status, body: (await res.json()) as Json };
}

/** The five routes, each with a body (or query) that is valid, and the change it names. */
const routes: ReadonlyArray<{ method: string; template: string; path: string; body?: Json; change: ViewChange }> = [
  { method: 'POST', template: '/v1/members', path: '/v1/members', body: { id: 'd', ws: 'ws://10.0.0.4:7100', http: '127.0.0.1:7001' }, change: { op: 'add', id: 'd', ws: 'ws://10.0.0.4:7100', http: '127.0.0.1:7001' } },
  { method: 'POST', template: '/v1/members/{id}/promote', path: '/v1/members/d/promote', body: {}, change: { op: 'promote', id: 'd' } },
  { method: 'DELETE', template: '/v1/members/{id}', path: '/v1/members/c', change: { op: 'remove', id: 'c' } },
  { method: 'POST', template: '/v1/members/{id}/retire', path: '/v1/members/c/retire', body: {}, change: { op: 'retire', id: 'c' } },
  { method: 'POST', template: '/v1/cluster/level', path: '/v1/cluster/level', body: { level: 10 }, change: { op: 'level', level: 10 } },
];

describe('the member routes over a stub runtime', () => {
  const peer = new StubPeer();
  let api: HttpApi;
  let base: string;
  beforeAll(async () => {
    const access = new AccessPolicy({ unix: false, listenHost: null, allowHosts: [], token: clientToken, adminToken });
    api = new HttpApi(peer.service(), silentLogger(), access);
    const bound: AddressInfo = await api.listen('127.0.0.1', 0);
    base = `http://127.0.0.1:${bound.port}`;
  });
  afterAll(async () => {
    api.closeAll();
    await api.close();
  });
  beforeEach(() => {
    peer.asked.length = 0;
    peer.next = 'view';
  });

  it.each(routes)('$method $template hands the runtime its change with the default timeout, and answers the view it made', async (r) => {
    const res = await send(base, r.method, r.path, r.body);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(peer.asked.map((a) => [a.change, a.opts.timeoutMs])).toEqual([[r.change, 30_000]]);
    const { join, ...view } = res.body;
    expect(view).toEqual({
      epoch: 4, level: 9, next_ordinal: 4,
      members: [
        { id: 'a', ordinal: 0, state: 'voter', ws: 'ws://10.0.0.1:7100', http: '127.0.0.1:7001' },
        { id: 'd', ordinal: 3, state: 'learner', ws: 'ws://10.0.0.4:7100', http: '127.0.0.1:7001' },
      ],
    });
    // After an add only: the ticket of the host added, the cluster's founders and the view made.
    if (r.change.op === 'add') expect(decodeJoinTicket(String(join))).toEqual({ cluster: 'stub', founders: ['a', 'b', 'c'], view: madeView });
    else expect(join).toBeUndefined();
    expect(check.json(r.method, r.template, 200, res.body)).toEqual([]);
  });

  it('takes timeout_ms in a POST body, and in the query of a DELETE', async () => {
    await send(base, 'POST', '/v1/members', { id: 'd', ws: 'wss://h:1', http: '[::1]:7001', timeout_ms: 5000 });
    await send(base, 'POST', '/v1/members/d/promote', { timeout_ms: 1 });
    await send(base, 'DELETE', `/v1/members/c?timeout_ms=${limits.timeoutMsMax}`);
    await send(base, 'POST', '/v1/cluster/level', { level: 10, timeout_ms: 60_000 });
    expect(peer.asked.map((a) => a.opts.timeoutMs)).toEqual([5000, 1, limits.timeoutMsMax, 60_000]);
  });

  it.each(routes)('$method $template is refused without the admin token (403 ERR_ADMIN_REQUIRED), its body unread', async (r) => {
    const byClient = await send(base, r.method, r.path, r.method === 'POST' ? { not_a_field: 1 } : undefined, clientToken);
    expect(byClient).toMatchObject({ status: 403, body: { error: 'ERR_ADMIN_REQUIRED' } });
    expect(byClient.body['message']).toMatch(/^member (add|promote|remove|retire) is an administrative operation|^level raise is an administrative operation/);
    expect((await send(base, r.method, r.path, r.body, null)).body['error']).toBe('ERR_UNAUTHORIZED');
    expect(peer.asked).toEqual([]);
  });

  it.each([
    ['POST', '/v1/members', { ws: 'ws://h:1', http: 'h:2' }, 'id must be a peer id'],
    ['POST', '/v1/members', { id: 'has space', ws: 'ws://h:1', http: 'h:2' }, 'id must be a peer id'],
    ['POST', '/v1/members', { id: 'x'.repeat(limits.peerIdCharsMax + 1), ws: 'ws://h:1', http: 'h:2' }, 'id must be a peer id'],
    ['POST', '/v1/members', { id: 'd', ws: 'http://h:1', http: 'h:2' }, 'ws must be where'],
    ['POST', '/v1/members', { id: 'd', ws: 'ws://h:99999', http: 'h:2' }, 'ws must be where'],
    ['POST', '/v1/members', { id: 'd', ws: `ws://${'h'.repeat(limits.addressCharsMax)}:1`, http: 'h:2' }, 'ws must be where'],
    ['POST', '/v1/members', { id: 'd', ws: 'ws://h:1' }, 'http must be where'],
    ['POST', '/v1/members', { id: 'd', ws: 'ws://h:1', http: 'no-port' }, 'http must be where'],
    ['POST', '/v1/members', { id: 'd', ws: 'ws://h:1', http: `${'h'.repeat(limits.addressCharsMax)}:1` }, 'http must be where'],
    ['POST', '/v1/members', { id: 'd', ws: 'ws://h:1', http: 'h:2', state: 'voter' }, 'unknown field "state"'],
    ['POST', '/v1/members', { id: 'd', ws: 'ws://h:1', http: 'h:2', timeout_ms: 0 }, 'timeout_ms must be an integer from 1'],
    ['POST', '/v1/members', '[1]', 'body must be a JSON object'],
    ['POST', '/v1/members/d/promote', { timeout_ms: limits.timeoutMsMax + 1 }, 'timeout_ms must be an integer from 1'],
    ['POST', '/v1/members/d/retire', { id: 'd' }, 'unknown field "id"'],
    ['POST', '/v1/members/has%20space/promote', {}, 'the member id in the path must be a peer id'],
    ['POST', '/v1/members/%E0%A4%A/promote', {}, 'member id is not valid percent-encoded UTF-8'],
    ['DELETE', '/v1/members/d?timeout_ms=soon', undefined, 'timeout_ms must be an integer from 1'],
    ['DELETE', '/v1/members/d?timeout_ms=0', undefined, 'timeout_ms must be an integer from 1'],
    ['DELETE', '/v1/members/d?force=1', undefined, 'unknown query parameter "force"'],
    ['POST', '/v1/cluster/level', {}, 'level is required'],
    ['POST', '/v1/cluster/level', { level: '10' }, 'level must be an integer from 1'],
    ['POST', '/v1/cluster/level', { level: 0 }, 'level must be an integer from 1'],
  ] as const)('%s %s %j is a 400 with a sentence, never a change', async (method, path, body, sentence) => {
    const res = await send(base, method, path, body);
    expect(res).toMatchObject({ status: 400, body: { error: 'ERR_BAD_REQUEST' } });
    expect(res.body['message']).toContain(sentence);
    expect(peer.asked).toEqual([]);
  });

  it.each([
    [new LockError(ErrorCode.ChangeRefused, 'd is a member already (the view at epoch 4)', { epoch: 4 }), 409],
    [new LockError(ErrorCode.Timeout, 'the change was not made within 30000 ms'), 423],
    [new LockError(ErrorCode.NotReady, 'this peer is not ready'), 503],
    [new LockError(ErrorCode.ShuttingDown, 'this peer is shutting down'), 503],
  ] as const)('answers the runtime\'s refusal %s with its status and sentence', async (err, status) => {
    peer.next = err;
    const res = await send(base, 'POST', '/v1/members/d/promote', {});
    expect(res).toEqual({ status, body: { error: err.code, message: err.message, ...err.details } });
    expect(check.json('POST', '/v1/members/{id}/promote', status, res.body)).toEqual([]);
  });

  it('gives up the change\'s wait (its signal) when the client leaves', async () => {
    peer.next = 'never';
    const port = Number(new URL(base).port);
    const req = request({ host: '127.0.0.1', port, path: '/v1/members/c', method: 'DELETE', headers: { authorization: `Bearer ${adminToken}` } });
    req.on('error', () => undefined);
    req.end();
    await waitFor('the change asked', () => peer.asked.length === 1);
    const signal = peer.asked[0]?.opts.signal;
    expect(signal?.aborted).toBe(false);
    req.destroy();
    await waitFor('the change\'s signal aborted', () => signal?.aborted === true, 5000);
  });
});

describe('the member routes on a real peer', () => {
  const dir = mkdtempSync(join(tmpdir(), 'lamport-member-routes-'));
  writeFileSync(join(dir, 'admin'), `${adminToken}\n`, { mode: 0o600 });
  const config: ClusterConfig = {
    cluster: 'member-routes-test', secret: 'test-secret', heartbeatMs: 1000, leaseMs: 5000, evictMs: 15000, tls: undefined,
    peers: [{ id: 'a', ws: 'ws://127.0.0.1:0', http: '127.0.0.1:0' }],
  };
  let server: PeerServer;
  let sock: PeerServer;
  beforeAll(async () => {
    server = await startPeerServer({ config, id: 'a', logger: silentLogger(), access: { adminTokenFile: join(dir, 'admin') } });
    sock = await startPeerServer({ config: { ...config, cluster: 'member-routes-socket' }, id: 'a', http: `unix:${join(dir, 'peer.sock')}`, logger: silentLogger() });
  });
  afterAll(async () => {
    await server.stop();
    await sock.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it.each([
    ['POST', '/v1/members', { id: 'a', ws: 'ws://127.0.0.1:1', http: '127.0.0.1:2' }, 'a is a member already (the view at epoch 0)'],
    ['POST', '/v1/members/x/promote', {}, 'x is not a member (the view at epoch 0)'],
    ['POST', '/v1/members/a/promote', {}, 'a is a voter (the view at epoch 0)'],
    ['DELETE', '/v1/members/x', undefined, 'x is not a member (the view at epoch 0)'],
    ['DELETE', '/v1/members/a', undefined, 'a is the last voter: a cluster keeps one (the view at epoch 0)'],
    ['POST', '/v1/members/a/retire', {}, 'a is not leaving (the view at epoch 0)'],
  ] as const)('refuses %s %s %j: 409 ERR_CHANGE_REFUSED "%s"', async (method, path, body, sentence) => {
    const res = await send(server.httpUrl, method, path, body);
    expect(res).toEqual({ status: 409, body: { error: 'ERR_CHANGE_REFUSED', message: sentence, epoch: 0 } });
  });

  it('refuses a level the cluster runs at already, or one not every member speaks', async () => {
    const level = server.runtime.inspect.members().level;
    const same = await send(server.httpUrl, 'POST', '/v1/cluster/level', { level });
    expect(same.body).toEqual({ error: 'ERR_CHANGE_REFUSED', message: `the cluster runs at level ${level} already (the view at epoch 0)`, epoch: 0 });
    const next = await send(server.httpUrl, 'POST', '/v1/cluster/level', { level: level + 1 });
    expect(next).toMatchObject({ status: 409, body: { error: 'ERR_CHANGE_REFUSED' } });
    expect(next.body['message']).toContain(`level ${level + 1} is not spoken by every member yet`);
  });

  it('takes a change over the unix socket without a token (the socket\'s mode says who connects)', async () => {
    const res = await new Promise<Sent>((resolve, reject) => {
      const req = request({ socketPath: join(dir, 'peer.sock'), path: '/v1/members/x', method: 'DELETE' }, (r) => {
        let text = '';
        r.setEncoding('utf8');
        r.on('data', (c: string) => (text += c));
        r.on('end', () => resolve({ status: r.statusCode ?? 0, body: JSON.parse(text) as Json }));
      });
      req.on('error', reject);
      req.end();
    });
    expect(res).toEqual({ status: 409, body: { error: 'ERR_CHANGE_REFUSED', message: 'x is not a member (the view at epoch 0)', epoch: 0 } });
  });
});
