/**
 * The OpenAPI description (GET /v1/openapi.json, dist/openapi.json) against the answers of
 * real peer processes: every operation is called, and every answer (status, content type,
 * JSON body, NDJSON line, server-sent event) must be one the description lists, with a
 * body its schema admits (closed objects: a field added or renamed without the description
 * fails). Every operation's 200 is checked; bodies sent are checked against the
 * description's request schemas, and a field it does not list is refused by the peer.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openApiSpec } from '../../src/http/openapi.js';
import { OpenApiCheck, openStream } from '../support/openapi-check.js';
import { useTestCluster } from './helpers.js';

const adminDir = mkdtempSync(join(tmpdir(), 'openapi-admin-'));
const adminToken = 'admin-token-for-the-openapi-test';
writeFileSync(join(adminDir, 'admin'), `${adminToken}\n`, { mode: 0o600 });
afterAll(() => rmSync(adminDir, { recursive: true, force: true }));

const check = new OpenApiCheck(openApiSpec);

/**
 * The changes of the members: their 200 (the view made) is checked over a stub runtime in
 * test/http/member-routes.test.ts, since a peer refuses every valid change until it takes part
 * in them (docs/reconfiguration.md, "What is built"); their refusals are checked here.
 */
const changes: ReadonlySet<string> = new Set(['POST /v1/members', 'DELETE /v1/members/{id}', 'POST /v1/members/{id}/promote', 'POST /v1/members/{id}/retire', 'POST /v1/cluster/level']);

/** Sends a request, checks its body against the description (an object; a string is sent as it is, unchecked) and its answer; returns the answer. */
async function api(base: string, method: 'GET' | 'POST' | 'DELETE', template: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: Record<string, unknown> }> {
  if (body !== undefined && typeof body === 'object') expect(check.requestBody(method, template, body)).toEqual([]);
  const text = method === 'POST' ? (typeof body === 'string' ? body : JSON.stringify(body ?? {})) : undefined;
  // node:http, not fetch: a test sets the Host header as a browser's DNS-rebound page would.
  const res = await new Promise<{ status: number; text: string }>((resolve, reject) => {
    const req = request(`${base}${path}`, { method, headers: { ...(text === undefined ? {} : { 'content-type': 'application/json' }), ...headers } }, (r) => {
      let t = '';
      r.setEncoding('utf8');
      r.on('data', (c: string) => (t += c));
      r.on('end', () => resolve({ status: r.statusCode ?? 0, text: t }));
    });
    req.on('error', reject);
    req.end(text);
  });
  const parsed = JSON.parse(res.text) as Record<string, unknown>;
  expect(check.json(method, template, res.status, parsed), `${method} ${path} ${res.status} ${res.text}`).toEqual([]);
  return { status: res.status, body: parsed };
}

describe('OpenAPI description against real answers', () => {
  const cluster = useTestCluster({ peerArgs: ['--admin-token-file', join(adminDir, 'admin')] });
  const a = (): string => cluster().url('a');
  const b = (): string => cluster().url('b');

  it('is served by the peer and shipped as dist/openapi.json, the same document', async () => {
    const served = await api(a(), 'GET', '/v1/openapi.json', '/v1/openapi.json');
    expect(served.body).toEqual(openApiSpec);
    expect(JSON.parse(readFileSync('dist/openapi.json', 'utf8'))).toEqual(openApiSpec);
    expect(served.body['openapi']).toBe('3.1.0');
  });

  it('describes the health, cluster, members and metrics answers', async () => {
    expect((await api(a(), 'GET', '/healthz', '/healthz')).status).toBe(200);
    expect((await api(a(), 'GET', '/readyz', '/readyz')).status).toBe(200);
    expect((await api(a(), 'GET', '/v1/cluster', '/v1/cluster')).status).toBe(200);
    expect((await api(a(), 'GET', '/v1/members', '/v1/members')).status).toBe(200);
    const metrics = await fetch(`${a()}/metrics`);
    expect(metrics.status).toBe(200);
    expect(check.json('GET', '/metrics', 200, await metrics.text(), 'text/plain')).toEqual([]);
  });

  it('describes acquire, the lock views, refresh and release, with every body field', async () => {
    const full = { timeout_ms: 2000, ttl_ms: 30_000, mode: 'semaphore', limit: 3, permits: 2, owner: 'spec', meta: { job: 1 }, expected_ms: 500 };
    const g = await api(a(), 'POST', '/v1/locks/{name}/acquire', '/v1/locks/spec-one/acquire', full);
    expect(g.status).toBe(200);
    expect((await api(a(), 'GET', '/v1/locks', '/v1/locks')).body['locks']).not.toEqual([]);
    await api(a(), 'GET', '/v1/locks', '/v1/locks?prefix=spec-');
    await api(b(), 'GET', '/v1/locks/{name}', '/v1/locks/spec-one');
    expect((await api(a(), 'POST', '/v1/locks/{name}/refresh', '/v1/locks/spec-one/refresh', { id: g.body['id'], ttl_ms: 20_000 })).status).toBe(200);
    expect((await api(a(), 'POST', '/v1/refresh', '/v1/refresh', { id: g.body['id'] })).status).toBe(200);
    expect((await api(a(), 'POST', '/v1/locks/{name}/release', '/v1/locks/spec-one/release', { id: g.body['id'] })).status).toBe(200);
    const again = await api(a(), 'POST', '/v1/release', '/v1/release', { id: g.body['id'] });
    expect(again.body).toMatchObject({ error: 'ERR_NOT_HELD', reason: 'released' });
    expect((await api(a(), 'POST', '/v1/locks/{name}/refresh', '/v1/locks/spec-one/refresh', { id: g.body['id'] })).status).toBe(404);
  });

  it('describes an all-or-nothing acquire and a timeout\'s 423 with its holders', async () => {
    const body = { locks: [{ name: 'spec-m1' }, { name: 'spec-m2', mode: 'shared' }, { name: 'spec-m3', limit: 2, permits: 1 }], timeout_ms: 2000, ttl_ms: 10_000, owner: 'multi', meta: null, expected_ms: 100 };
    const g = await api(a(), 'POST', '/v1/acquire', '/v1/acquire', body);
    expect(g.status).toBe(200);
    const refused = await api(b(), 'POST', '/v1/locks/{name}/acquire', '/v1/locks/spec-m1/acquire', { timeout_ms: 0 });
    expect(refused.body).toMatchObject({ error: 'ERR_TIMEOUT' });
    expect(refused.body['holders']).toHaveLength(1);
    expect((await api(a(), 'POST', '/v1/release', '/v1/release', { id: g.body['id'] })).status).toBe(200);
  });

  it('describes a connection-bound hold (NDJSON) and the watch streams (SSE)', async () => {
    const lock = await openStream(`${a()}/v1/locks/spec-w/watch`);
    const prefix = await openStream(`${a()}/v1/watch?prefix=spec-`);
    const hold = await openStream(`${a()}/v1/locks/spec-w/acquire`, 'POST', { hold: 'connection', ttl_ms: 0 });
    expect(hold.contentType).toBe('application/x-ndjson');
    const grant = await hold.next('the grant line', () => true);
    expect((await api(a(), 'POST', '/v1/locks/{name}/release', '/v1/locks/spec-w/release', { id: grant.data['id'] })).status).toBe(200);
    await hold.next('the ended line', (i) => i.data['ended'] === 'released');
    for (const s of [lock, prefix]) await s.next('the release', (i) => i.event === 'released' && i.data['lock'] === 'spec-w');
    expect(check.stream('POST', '/v1/locks/{name}/acquire', hold)).toEqual([]);
    expect(check.stream('GET', '/v1/locks/{name}/watch', lock)).toEqual([]);
    expect(check.stream('GET', '/v1/watch', prefix)).toEqual([]);
    expect(lock.items.map((i) => i.event)).toEqual(['state', 'queued', 'granted', 'released']);
    for (const s of [lock, prefix, hold]) s.close();
  });

  it('describes an election: campaign, leader, observe, proclaim, resign', async () => {
    const observe = await openStream(`${b()}/v1/elections/spec-e/observe`);
    const campaign = await openStream(`${a()}/v1/elections/spec-e/campaign`, 'POST', { value: { addr: 'h:1' }, owner: 'me', ttl_ms: 0, timeout_ms: 2000 });
    expect(check.requestBody('POST', '/v1/elections/{name}/campaign', { value: { addr: 'h:1' }, owner: 'me', ttl_ms: 0, timeout_ms: 2000 })).toEqual([]);
    const grant = await campaign.next('leading', () => true);
    await observe.next('the leader on b', (i) => i.event === 'leader');
    expect((await api(b(), 'GET', '/v1/elections/{name}', '/v1/elections/spec-e')).body['leader']).not.toBeNull();
    expect((await api(a(), 'POST', '/v1/elections/{name}/proclaim', '/v1/elections/spec-e/proclaim', { id: grant.data['id'], value: 'next' })).status).toBe(200);
    expect((await api(a(), 'POST', '/v1/elections/{name}/resign', '/v1/elections/spec-e/resign', { id: grant.data['id'] })).status).toBe(200);
    await campaign.next('the end of leadership', (i) => 'ended' in i.data);
    await observe.next('vacant', (i) => i.event === 'vacant');
    expect((await api(a(), 'GET', '/v1/elections/{name}', '/v1/elections/spec-e')).body['leader']).toBeNull();
    expect(check.stream('POST', '/v1/elections/{name}/campaign', campaign)).toEqual([]);
    expect(check.stream('GET', '/v1/elections/{name}/observe', observe)).toEqual([]);
    expect(observe.items.map((i) => i.event)).toEqual(['vacant', 'leader', 'leader', 'vacant']);
    campaign.close();
    observe.close();
  });

  it('describes force-release, with and without the admin token', async () => {
    const g = await api(a(), 'POST', '/v1/locks/{name}/acquire', '/v1/locks/spec-f/acquire', {});
    expect((await api(a(), 'POST', '/v1/locks/{name}/force-release', '/v1/locks/spec-f/force-release', {})).body).toMatchObject({ error: 'ERR_ADMIN_REQUIRED' });
    const forced = await api(a(), 'POST', '/v1/locks/{name}/force-release', '/v1/locks/spec-f/force-release', {}, { authorization: `Bearer ${adminToken}` });
    expect(forced.body).toEqual({ released: [g.body['id']] });
  });

  it('describes the refusals of the member routes: not admin, a change that does not apply', async () => {
    const admin = { authorization: `Bearer ${adminToken}` };
    expect((await api(a(), 'POST', '/v1/members/{id}/promote', '/v1/members/x/promote', {})).body['error']).toBe('ERR_ADMIN_REQUIRED');
    const add = await api(a(), 'POST', '/v1/members', '/v1/members', { id: 'a', ws: 'ws://127.0.0.1:1', http: '127.0.0.1:2', timeout_ms: 1000 }, admin);
    expect(add.body).toMatchObject({ error: 'ERR_CHANGE_REFUSED', epoch: 0 });
    expect((await api(a(), 'POST', '/v1/members/{id}/promote', '/v1/members/x/promote', { timeout_ms: 1000 }, admin)).status).toBe(409);
    expect((await api(a(), 'DELETE', '/v1/members/{id}', '/v1/members/x', undefined, admin)).status).toBe(409);
    expect((await api(a(), 'POST', '/v1/members/{id}/retire', '/v1/members/a/retire', {}, admin)).status).toBe(409);
    expect((await api(a(), 'POST', '/v1/cluster/level', '/v1/cluster/level', { level: 1 }, admin)).status).toBe(409);
  });

  it('describes the refusals every route shares, and the peer refuses a body field the description does not list', async () => {
    expect((await api(a(), 'GET', '/v1/locks/{name}', `/v1/locks/${'x'.repeat(300)}`)).body['error']).toBe('ERR_BAD_REQUEST');
    expect((await api(a(), 'GET', '/v1/cluster', '/v1/cluster', undefined, { host: 'evil.example' })).body['error']).toBe('ERR_HOST_REFUSED');
    expect((await api(a(), 'GET', '/v1/cluster', '/v1/cluster', undefined, { origin: 'http://evil.example' })).body['error']).toBe('ERR_ORIGIN_REFUSED');
    const text = await fetch(`${a()}/v1/acquire`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: '{}' });
    expect(check.json('POST', '/v1/acquire', text.status, await text.json())).toEqual([]);
    const big = await fetch(`${a()}/v1/release`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ id: 'x'.repeat(70_000) }) });
    expect(check.json('POST', '/v1/release', big.status, await big.json())).toEqual([]);
    const posts = Object.entries(openApiSpec['paths'] as Record<string, Record<string, unknown>>).filter(([, item]) => 'post' in item).map(([template]) => template);
    for (const template of posts) {
      expect(check.requestBody('POST', template, { not_in_the_description: 1 })).not.toEqual([]);
      const admin = template.endsWith('/force-release') || changes.has(`POST ${template}`) ? { authorization: `Bearer ${adminToken}` } : {};
      const res = await api(a(), 'POST', template, template.replace('{name}', 'spec-x').replace('{id}', 'x'), '{"not_in_the_description": 1}', admin);
      expect(res.body['error'], template).toBe('ERR_BAD_REQUEST');
    }
  });

  it('had every operation\'s 200 checked above, but the changes of the members', () => {
    const ops = Object.entries(openApiSpec['paths'] as Record<string, Record<string, unknown>>).flatMap(([template, item]) => ['get', 'post', 'delete'].filter((m) => m in item).map((m) => `${m.toUpperCase()} ${template}`));
    expect(ops.filter((op) => !changes.has(op) && !check.checked.has(`${op} 200`))).toEqual([]);
  });
});
