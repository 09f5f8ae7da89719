/**
 * The API's handler of plain requests (src/http/handler.ts), without sockets: the rules of an
 * acquire's exchange (a grant that finds its client gone is released; a client that leaves
 * withdraws its wait or ends its connection-bound hold, not its TTL hold), validation before
 * the runtime, admission, and the coded answers of a release. The simulator's clients go
 * through the same handler (test/sim/http.ts); these pin each rule on its own.
 */
import { describe, expect, it } from 'vitest';
import { ErrorCode, LockError } from '../../src/errors.js';
import { AccessPolicy } from '../../src/http/access.js';
import { ApiHandler } from '../../src/http/handler.js';
import type { PlainResponse } from '../../src/http/plain.js';
import { silentLogger } from '../../src/log.js';
import type { Grant, RequestCallbacks } from '../../src/runtime/holds.js';
import type { LockService } from '../../src/runtime/peer.js';

/** A runtime that keeps each request's callbacks and records what the handler asks of it. */
class StubPeer {
  readonly calls: string[] = [];
  cb: RequestCallbacks | null = null;
  notHeld = false;
  othersWait = false;

  service(): LockService {
    const stub: Partial<LockService> = {
      request: (lock, _opts, cb) => {
        this.calls.push(`request ${lock}`);
        this.cb = cb;
        return { id: 'h1', clientGone: () => this.calls.push('clientGone') };
      },
      release: (lock, id) => {
        this.calls.push(`release ${String(lock)} ${id}`);
        if (this.notHeld) throw new LockError(ErrorCode.NotHeld, 'no such hold', { reason: 'expired' });
        return this.othersWait;
      },
    };
    return stub as LockService;
  }
}

/** An answer as written, and a connection its client may close. */
class Recorder implements PlainResponse {
  readonly written: string[] = [];
  status: number | null = null;
  gone = false;
  ended = false;
  waited = false;
  readonly #onClose: (() => void)[] = [];

  get closed(): boolean {
    return this.gone || this.ended;
  }

  get headersSent(): boolean {
    return this.status !== null;
  }

  json(status: number, body: unknown): void {
    this.status = status;
    this.ended = true;
    this.written.push(JSON.stringify(body));
  }

  head(status: number): void {
    this.status = status;
  }

  write(text: string): void {
    this.written.push(text.trim());
  }

  end(text: string): void {
    this.ended = true;
    this.written.push(text.trim());
  }

  destroy(): void {
    this.gone = true;
  }

  onClose(fn: () => void): void {
    this.#onClose.push(fn);
  }

  waiting(): void {
    this.waited = true;
  }

  answered(): void {
    this.waited = false;
  }

  close(): void {
    this.gone = true;
    for (const fn of this.#onClose.splice(0)) fn();
  }
}

const grant: Grant = { lock: 'x', locks: [{ lock: 'x', mode: 'exclusive' }], id: 'h1', token: 1025n, mode: 'exclusive', peer: 'a', grantedAt: 1, expiresAt: null };

function setup(): { peer: StubPeer; later: (() => void)[]; post: (path: string, body: unknown, res?: Recorder, host?: string) => Recorder } {
  const peer = new StubPeer();
  const later: (() => void)[] = [];
  const access = new AccessPolicy({ unix: false, listenHost: '127.0.0.1', allowHosts: [], token: null, adminToken: null });
  const handler = new ApiHandler(peer.service(), silentLogger(), access, { soon: (fn) => later.push(fn) });
  const post = (path: string, body: unknown, res = new Recorder(), host = '127.0.0.1:80'): Recorder => {
    const text = JSON.stringify(body);
    handler.handle({ method: 'POST', target: path, headers: { host, 'content-type': 'application/json' }, localPort: 80, remote: undefined, readBody: (done) => done(null, text), native: null }, res);
    return res;
  };
  return { peer, later, post };
}

describe('an acquire through the plain handler', () => {
  it('answers its grant; its client leaving after a TTL grant leaves the hold alone', () => {
    const { peer, post } = setup();
    const res = post('/v1/locks/x/acquire', {});
    expect(res.waited).toBe(true);
    peer.cb?.granted(grant);
    expect(res.status).toBe(200);
    expect(JSON.parse(res.written[0] ?? '')).toMatchObject({ id: 'h1', token: '1025' });
    res.close();
    expect(peer.calls).toEqual(['request x']);
  });

  it('releases a grant that finds its client gone, and writes nothing', () => {
    const { peer, post } = setup();
    const res = new Recorder();
    res.gone = true;
    post('/v1/locks/x/acquire', {}, res);
    peer.cb?.granted(grant);
    expect(peer.calls).toEqual(['request x', 'release null h1']);
    expect(res.written).toEqual([]);
  });

  it('withdraws a waiting request whose client left', () => {
    const { peer, post } = setup();
    post('/v1/locks/x/acquire', {}).close();
    expect(peer.calls).toEqual(['request x', 'clientGone']);
  });

  it('ends a connection-bound hold whose client left, and not one that ended first', () => {
    const { peer, post } = setup();
    const res = post('/v1/locks/x/acquire', { hold: 'connection', ttl_ms: 0 });
    peer.cb?.granted(grant);
    res.close();
    expect(peer.calls).toEqual(['request x', 'clientGone']);
    const ended = post('/v1/locks/x/acquire', { hold: 'connection', ttl_ms: 0 });
    peer.cb?.granted(grant);
    peer.cb?.ended('expired');
    expect(ended.written[1]).toBe(JSON.stringify({ ended: 'expired', id: 'h1' }));
    ended.close();
    expect(peer.calls).toEqual(['request x', 'clientGone', 'request x']);
  });

  it('refuses a body that fails validation, or a Host not its own, before the runtime hears of it', () => {
    const { peer, post } = setup();
    expect(JSON.parse(post('/v1/locks/x/acquire', { ttl_ms: 0 }).written[0] ?? '')).toMatchObject({ error: ErrorCode.BadRequest });
    expect(post('/v1/locks/x/acquire', {}, new Recorder(), 'evil.example:80').status).toBe(421);
    expect(peer.calls).toEqual([]);
  });
});

describe('a release through the plain handler', () => {
  it('is answered 404 with the reason when the hold is gone', () => {
    const { peer, post } = setup();
    peer.notHeld = true;
    const res = post('/v1/locks/x/release', { id: 'h1' });
    expect(res.status).toBe(404);
    expect(JSON.parse(res.written[0] ?? '')).toMatchObject({ error: ErrorCode.NotHeld, reason: 'expired' });
  });

  it('is answered at the end of the turn when others wait, at once otherwise', () => {
    const { peer, later, post } = setup();
    expect(post('/v1/locks/x/release', { id: 'h1' }).status).toBe(200);
    peer.othersWait = true;
    const res = post('/v1/locks/x/release', { id: 'h1' });
    expect(res.status).toBe(null);
    for (const fn of later) fn();
    expect(res.status).toBe(200);
  });
});
