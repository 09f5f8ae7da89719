/**
 * All-or-nothing multi-lock (POST /v1/acquire, /v1/release, /v1/refresh; docs/design.md
 * section 6) against a real 3-peer cluster of lamport-peer processes on 127.0.0.1: one hold
 * of several names with one token, its exclusion of single holders, requests that cross
 * ({x, y} against {y, x}) and never deadlock, the 400s, connection-bound multi holds, the
 * typed client's `withLocks`, and `lamport-lock run NAME NAME -- CMD`.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { exitCodes } from '../../src/client/cli-support.js';
import { LockClient, LockError } from '../../src/client/lock-client.js';
import { delay, waitFor } from '../support/wait.js';
import type { JsonAnswer } from './helpers.js';
import { acquire, call, holders, release, useTestCluster, waiters } from './helpers.js';

const cluster = useTestCluster();
let a: string;
let b: string;
let c: string;

beforeAll(() => {
  [a, b, c] = ['a', 'b', 'c'].map((id) => cluster().url(id)) as [string, string, string];
});

/** POST /v1/acquire of `names` (a string is an exclusive lock) with the shared options `body`. */
function acquireAll(base: string, names: ReadonlyArray<string | Record<string, unknown>>, body: Record<string, unknown> = {}): Promise<JsonAnswer> {
  return call(base, '/v1/acquire', { locks: names.map((n) => (typeof n === 'string' ? { name: n } : n)), ...body });
}

function releaseHold(base: string, id: unknown): Promise<JsonAnswer> {
  return call(base, '/v1/release', { id });
}

/** The tokens of `name`'s holders as peer `base` sees them. */
async function holderTokens(base: string, name: string): Promise<unknown[]> {
  return (await holders(base, name)).map((h) => h['token']);
}

/** A connection-bound acquire on the wire: its status and content type, then its NDJSON lines one by one. */
interface OpenHold {
  readonly status: number;
  readonly contentType: string;
  /** The next line, or null once the answer has ended. */
  next(): Promise<Record<string, unknown> | null>;
  close(): void;
}

function openHold(base: string, path: string, body: Record<string, unknown>): Promise<OpenHold> {
  const text = JSON.stringify(body);
  return new Promise((resolveOpen, reject) => {
    const req = request(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) } }, (res) => {
      const lines: Array<Record<string, unknown> | null> = [];
      let wake: (() => void) | null = null;
      let buffer = '';
      const push = (line: Record<string, unknown> | null): void => {
        lines.push(line);
        wake?.();
        wake = null;
      };
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        buffer += chunk;
        let nl: number;
        while ((nl = buffer.indexOf('\n')) >= 0) {
          push(JSON.parse(buffer.slice(0, nl)) as Record<string, unknown>);
          buffer = buffer.slice(nl + 1);
        }
      });
      res.on('close', () => push(null));
      const next = async (): Promise<Record<string, unknown> | null> => {
        while (lines.length === 0) await new Promise<void>((r) => (wake = r));
        const line = lines.shift() ?? null;
        if (line === null) lines.unshift(null); // The end stays the end.
        return line;
      };
      resolveOpen({ status: res.statusCode ?? 0, contentType: String(res.headers['content-type'] ?? ''), next, close: () => req.destroy() });
    });
    req.on('error', reject);
    req.end(text);
  });
}

describe('a hold of several locks', () => {
  it('grants every name in one hold with one token, shows it on each name on every peer, and releases them together', async () => {
    const r = await acquireAll(b, ['m/fields-x', { name: 'm/fields-y', mode: 'shared' }, { name: 'm/fields-z', limit: 3, permits: 2 }], { ttl_ms: 5000, owner: 'multi', meta: { job: 9 } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(Object.keys(r.body).sort()).toEqual(['expires_at', 'granted_at', 'id', 'lock', 'locks', 'mode', 'peer', 'token']);
    const token = r.body['token'];
    expect(token).toMatch(/^\d+$/);
    expect(BigInt(String(token)) % 1024n).toBe(1n); // The request's (ts, peer) token: peer b is index 1.
    expect(r.body).toMatchObject({ lock: 'm/fields-x', mode: 'exclusive', peer: 'b' });
    expect(r.body['locks']).toEqual([
      { lock: 'm/fields-x', mode: 'exclusive', token },
      { lock: 'm/fields-y', mode: 'shared', token },
      { lock: 'm/fields-z', mode: 'semaphore', token },
    ]);
    expect(Number(r.body['expires_at']) - Number(r.body['granted_at'])).toBe(5000);

    for (const name of ['m/fields-x', 'm/fields-y', 'm/fields-z']) {
      expect((await holders(b, name)).map((h) => [h['id'], h['token'], h['owner'], h['local']]), name).toEqual([[r.body['id'], token, 'multi', true]]);
      for (const other of [a, c]) {
        await waitFor(`${other} sees the hold on ${name}`, async () => (await holderTokens(other, name)).length === 1);
        expect((await holders(other, name))[0], name).toMatchObject({ peer: 'b', owner: 'multi', meta: { job: 9 }, token, local: false });
      }
    }

    expect(await releaseHold(b, r.body['id'])).toEqual({ status: 200, body: { released: true } });
    for (const name of ['m/fields-x', 'm/fields-y', 'm/fields-z']) {
      await waitFor(`the release of ${name} seen on a and c`, async () => (await holderTokens(a, name)).length === 0 && (await holderTokens(c, name)).length === 0);
      expect(await holderTokens(b, name), name).toEqual([]);
    }
    const again = await releaseHold(b, r.body['id']);
    expect(again.status).toBe(404);
    expect(again.body).toMatchObject({ error: 'ERR_NOT_HELD', reason: 'released' });
  });

  it('keeps a single holder of one of its names out until it is released, and then fences it with a larger token', async () => {
    const multi = await acquireAll(a, ['m/ex-p', 'm/ex-q'], { ttl_ms: 10_000 });
    expect(multi.status, JSON.stringify(multi.body)).toBe(200);
    for (const [peer, name] of [[c, 'm/ex-q'], [b, 'm/ex-p'], [a, 'm/ex-q']] as const) {
      const blocked = await acquire(peer, name, { timeout_ms: 0 });
      expect(blocked.status, `${peer} ${name}`).toBe(423);
      expect(blocked.body['error']).toBe('ERR_TIMEOUT');
    }
    expect(await releaseHold(a, multi.body['id'])).toEqual({ status: 200, body: { released: true } });
    const single = await acquire(c, 'm/ex-q', { timeout_ms: 0 });
    expect(single.status, JSON.stringify(single.body)).toBe(200);
    expect(BigInt(String(single.body['token']))).toBeGreaterThan(BigInt(String(multi.body['token'])));
    await release(c, 'm/ex-q', single.body['id']);
  });

  it('takes none of its names while one of them is held elsewhere (all or nothing), and all of them once it is free', async () => {
    const single = await acquire(b, 'm/none-r');
    expect(single.status).toBe(200);
    const refused = await acquireAll(a, ['m/none-s', 'm/none-r'], { timeout_ms: 0 });
    expect(refused.status, JSON.stringify(refused.body)).toBe(423);
    expect(refused.body['error']).toBe('ERR_TIMEOUT');
    // Nothing is left of the refused request: m/none-s is free at once on every peer.
    const free = await acquire(c, 'm/none-s', { timeout_ms: 0 });
    expect(free.status, JSON.stringify(free.body)).toBe(200);
    await release(c, 'm/none-s', free.body['id']);

    const waiting = acquireAll(a, ['m/none-s', 'm/none-r'], { timeout_ms: 10_000 });
    await waitFor('the multi request queued on m/none-r', async () => (await waiters(b, 'm/none-r')).length === 1);
    await release(b, 'm/none-r', single.body['id']);
    const got = await waiting;
    expect(got.status, JSON.stringify(got.body)).toBe(200);
    expect(await releaseHold(a, got.body['id'])).toEqual({ status: 200, body: { released: true } });
  });

  it('refreshes by id on /v1/refresh and on any of its names, and ends as a whole when its TTL runs out', async () => {
    const r = await acquireAll(a, ['m/ttl-1', 'm/ttl-2'], { ttl_ms: 300 });
    expect(r.status).toBe(200);
    const byId = await call(a, '/v1/refresh', { id: r.body['id'], ttl_ms: 400 });
    expect(byId.status, JSON.stringify(byId.body)).toBe(200);
    expect(Number(byId.body['expires_at'])).toBeGreaterThan(Number(r.body['expires_at']));
    const byName = await call(a, '/v1/locks/m%2Fttl-2/refresh', { id: r.body['id'], ttl_ms: 500 });
    expect(byName.status, JSON.stringify(byName.body)).toBe(200);
    expect(Number(byName.body['expires_at'])).toBeGreaterThan(Number(byId.body['expires_at']));
    // Nobody refreshes it now: the next holders of both names get them once it expires.
    const next = await acquireAll(b, ['m/ttl-2', 'm/ttl-1'], { timeout_ms: 5000 });
    expect(next.status, JSON.stringify(next.body)).toBe(200);
    const late = await call(a, '/v1/refresh', { id: r.body['id'] });
    expect(late.status).toBe(404);
    expect(late.body).toMatchObject({ error: 'ERR_NOT_HELD', reason: 'expired' });
    await releaseHold(b, next.body['id']);
  });

  it('is released whole by the per-name release route with any one of its names', async () => {
    const r = await acquireAll(c, ['m/byname-1', 'm/byname-2', 'm/byname-3']);
    expect(r.status).toBe(200);
    expect(await release(c, 'm/byname-2', r.body['id'])).toEqual({ status: 200, body: { released: true } });
    for (const name of ['m/byname-1', 'm/byname-2', 'm/byname-3']) expect(await holderTokens(c, name), name).toEqual([]);
    expect((await releaseHold(c, r.body['id'])).body).toMatchObject({ error: 'ERR_NOT_HELD', reason: 'released' });
  });
});

describe('crossing multi-lock requests', () => {
  it('grants {x, y} and {y, x} from two peers, and y alone from a third, 20 rounds each, without deadlock or overlap', async () => {
    const rounds = 20;
    const inside = new Map<string, number>([['m/cross-x', 0], ['m/cross-y', 0]]);
    const lastToken = new Map<string, bigint>();
    const violations: string[] = [];
    /** One grant seen by the test: no other holder of its names may be inside, and its token must be the largest yet on each. */
    const enter = (who: string, names: readonly string[], token: bigint): void => {
      for (const name of names) {
        if (inside.get(name) !== 0) violations.push(`${who} granted ${name} while another holds it`);
        inside.set(name, (inside.get(name) ?? 0) + 1);
        if (token <= (lastToken.get(name) ?? -1n)) violations.push(`${who} got token ${token} on ${name}, not above ${String(lastToken.get(name))}`);
        lastToken.set(name, token);
      }
    };
    const leave = (names: readonly string[]): void => {
      for (const name of names) inside.set(name, (inside.get(name) ?? 0) - 1);
    };
    const worker = async (who: string, base: string, names: readonly string[]): Promise<number> => {
      let granted = 0;
      for (let i = 0; i < rounds; i++) {
        const r = names.length === 1 ? await acquire(base, names[0] ?? '', { timeout_ms: 20_000, ttl_ms: 30_000 }) : await acquireAll(base, names, { timeout_ms: 20_000, ttl_ms: 30_000 });
        if (r.status !== 200) throw new Error(`${who} round ${i}: HTTP ${r.status} ${JSON.stringify(r.body)}`);
        enter(who, names, BigInt(String(r.body['token'])));
        await delay(2); // A short hold (pacing), so the others queue behind it.
        leave(names); // Before the release is sent: a later grant elsewhere can only follow it.
        const rel = names.length === 1 ? await release(base, names[0] ?? '', r.body['id']) : await releaseHold(base, r.body['id']);
        if (rel.status !== 200) throw new Error(`${who} round ${i}: release HTTP ${rel.status} ${JSON.stringify(rel.body)}`);
        granted++;
      }
      return granted;
    };
    const done = await Promise.all([
      worker('a{x,y}', a, ['m/cross-x', 'm/cross-y']),
      worker('b{y,x}', b, ['m/cross-y', 'm/cross-x']),
      worker('c{y}', c, ['m/cross-y']),
    ]);
    expect(violations).toEqual([]);
    expect(done).toEqual([rounds, rounds, rounds]);
    for (const peer of [a, b, c]) {
      await waitFor(`both names free on ${peer}`, async () => (await holderTokens(peer, 'm/cross-x')).length === 0 && (await holderTokens(peer, 'm/cross-y')).length === 0);
    }
  });
});

describe('bad multi-lock requests', () => {
  const names16 = Array.from({ length: 16 }, (_, i) => `m/many-${i}`);
  const bad: Array<[string, unknown]> = [
    ['a name given twice', { locks: [{ name: 'm/dup' }, { name: 'm/other' }, { name: 'm/dup' }] }],
    ['17 names', { locks: [...names16, 'm/many-16'].map((name) => ({ name })) }],
    ['no names', { locks: [] }],
    ['no locks field', { timeout_ms: 0 }],
    ['a semaphore without limit', { locks: [{ name: 'm/sem', mode: 'semaphore' }] }],
    ['shared with limit', { locks: [{ name: 'm/sem', mode: 'shared', limit: 2 }] }],
    ['a lock name too long', { locks: [{ name: 'x'.repeat(257) }] }],
    ['a lock that is a bare string', { locks: ['m/dup'] }],
    ['an unknown field in a lock', { locks: [{ name: 'm/dup', colour: 'red' }] }],
    ['a mode given for every lock at once', { locks: [{ name: 'm/dup' }], mode: 'shared' }],
    ['a hold that is not connection', { locks: [{ name: 'm/h' }], hold: 'forever' }],
  ];
  it.each(bad)('answers 400 ERR_BAD_REQUEST with a sentence to %s, and takes nothing', async (_what, body) => {
    const r = await call(a, '/v1/acquire', body);
    expect(r.status, JSON.stringify(r.body)).toBe(400);
    expect(r.body['error']).toBe('ERR_BAD_REQUEST');
    expect(typeof r.body['message']).toBe('string');
    expect(await holderTokens(a, 'm/dup')).toEqual([]);
  });

  it('grants 16 names, the most one request may take', async () => {
    const r = await acquireAll(a, names16);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect((r.body['locks'] as unknown[]).length).toBe(16);
    expect(await releaseHold(a, r.body['id'])).toEqual({ status: 200, body: { released: true } });
  });
});

describe('connection-bound multi holds', () => {
  it('answers NDJSON: the grant line, then the line of its end when it is released', async () => {
    const hold = await openHold(a, '/v1/acquire', { locks: [{ name: 'm/conn-1' }, { name: 'm/conn-2' }], hold: 'connection', ttl_ms: 0 });
    expect(hold.status).toBe(200);
    expect(hold.contentType).toContain('application/x-ndjson');
    const grant = await hold.next();
    expect(grant).toMatchObject({ lock: 'm/conn-1', expires_at: null, locks: [{ lock: 'm/conn-1' }, { lock: 'm/conn-2' }] });
    const id = grant?.['id'];
    expect(await releaseHold(a, id)).toEqual({ status: 200, body: { released: true } });
    expect(await hold.next()).toEqual({ ended: 'released', id });
    expect(await hold.next()).toBeNull();
  });

  it('releases every name when its connection closes', async () => {
    const client = new LockClient({ peer: a });
    const hold = await client.acquireAllOnConnection(['m/close-1', 'm/close-2'], { ttlMs: 0 });
    expect(hold.expiresAt).toBeNull();
    expect(hold.locks.map((l) => l.token)).toEqual([hold.token, hold.token]);
    const blocked = await acquire(b, 'm/close-2', { timeout_ms: 0 });
    expect(blocked.status).toBe(423);
    hold.close();
    expect(await hold.ended).toBe('connection_closed');
    const next = await acquireAll(b, ['m/close-2', 'm/close-1'], { timeout_ms: 5000 });
    expect(next.status, JSON.stringify(next.body)).toBe(200);
    await releaseHold(b, next.body['id']);
    client.close();
  });
});

describe('the typed client\'s withLocks', () => {
  it('runs a function while every name is held, releases them after it, and aborts its signal when the hold is lost', async () => {
    const client = new LockClient({ peer: b });
    const seen = await client.withLocks(['m/with-1', { name: 'm/with-2', mode: 'shared' }], async (hold) => {
      expect(hold.locks).toEqual([{ lock: 'm/with-1', mode: 'exclusive', token: hold.token }, { lock: 'm/with-2', mode: 'shared', token: hold.token }]);
      return [await holderTokens(b, 'm/with-1'), await holderTokens(b, 'm/with-2')];
    });
    expect(seen).toEqual([[expect.stringMatching(/^\d+$/)], [expect.stringMatching(/^\d+$/)]]);
    await waitFor('both released after the function', async () => (await holderTokens(b, 'm/with-1')).length === 0 && (await holderTokens(b, 'm/with-2')).length === 0);

    const reason = await client.withLocks(['m/with-1', 'm/with-2'], async (hold, signal) => {
      const lost = new Promise<unknown>((r) => signal.addEventListener('abort', () => r(signal.reason), { once: true }));
      await client.release('m/with-2', hold.id); // Someone else ends it: the function must hear.
      return lost;
    }, { ttlMs: 5000 }).then(() => null, (err: unknown) => err); // ... and withLocks rejects with it.
    expect(reason).toBeInstanceOf(LockError);
    expect(reason).toMatchObject({ code: 'ERR_NOT_HELD', message: 'lost the hold on "m/with-1", "m/with-2": released', details: { reason: 'released' } });
    client.close();
  });
});

describe('lamport-lock run with several locks', () => {
  const lockBin = resolve('dist/bin/lamport-lock.js');

  function runCli(args: string[]): { done: Promise<{ code: number | null; stdout: string; stderr: string }> } {
    const child = spawn(process.execPath, [lockBin, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    return { done: new Promise((res) => child.on('close', (code) => res({ code, stdout, stderr }))) };
  }

  // Last in this file: it stops peer c.
  it('stops the command and exits 76 naming every lock when the hold is lost', async () => {
    const marker = join(mkdtempSync(join(tmpdir(), 'lamport-multi-run-')), 'running');
    const run = runCli(['--peer', c, 'run', 'm/lost-1', 'm/lost-2', '--grace', '2s', '--', 'sh', '-c', `touch ${marker}; exec sleep 30`]);
    await waitFor('run holds both locks and runs its command', () => existsSync(marker));
    await cluster().stopPeer('c', 'SIGTERM');
    const r = await run.done;
    expect(r.code, r.stderr).toBe(exitCodes.lockLost);
    expect(r.stderr).toContain('lost the locks "m/lost-1", "m/lost-2" (shutdown)');
  });
});
