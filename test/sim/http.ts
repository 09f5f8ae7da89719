/**
 * The simulated clients' HTTP: each process's API handler (src/http/handler.ts, the very one
 * a peer serves over node:http) called with plain requests in virtual time, synchronously,
 * as a loopback client would call it. Beneath the handler, a tap on the runtime's request
 * callbacks lets the checker hear what the runtime promised (a grant the handler released
 * because its client had left is still a grant), while the client acts on the answers alone.
 */
import type { EndReason } from '../../src/core/types.js';
import type { LockError } from '../../src/errors.js';
import { AccessPolicy } from '../../src/http/access.js';
import { ApiHandler } from '../../src/http/handler.js';
import type { PlainResponse } from '../../src/http/plain.js';
import type { AcquireOptions, Grant, HoldOptions, LockAsk, RequestCallbacks, RequestHandle } from '../../src/runtime/holds.js';
import type { LockService } from '../../src/runtime/peer.js';
import type { SimPeerProcess } from './cluster.js';

/** The port each simulated peer's API listens on, on loopback (what its clients' Host names). */
const httpPort = 7070;

/** One of the runtime's callbacks of a request. */
export type Told = { readonly granted: Grant } | { readonly failed: LockError } | { readonly ended: EndReason };

/**
 * What the tap tells of one acquire: the request as it reached the runtime; each callback of
 * the runtime, before the API's own runs (`heard`) and after it (`answered`: what the client
 * must have been answered by then).
 */
export interface AcquireObserver {
  took(handle: RequestHandle, asks: readonly LockAsk[], opts: HoldOptions): void;
  heard(told: Told): void;
  answered(told: Told): void;
}

function observed(o: AcquireObserver, cb: RequestCallbacks): RequestCallbacks {
  const relay = (told: Told, api: () => void): void => {
    o.heard(told);
    api();
    o.answered(told);
  };
  return {
    granted: (g) => relay({ granted: g }, () => cb.granted(g)),
    failed: (e) => relay({ failed: e }, () => cb.failed(e)),
    ended: (r) => relay({ ended: r }, () => cb.ended(r)),
  };
}

/**
 * One exchange of a client with the API: the answer as the client reads it (JSON parsed from
 * the text the handler wrote) and the client's connection, which it may close.
 */
export class SimExchange implements PlainResponse {
  status: number | null = null;
  /** The answer's body, or its first line; and its last line. */
  first: Record<string, unknown> | null = null;
  last: Record<string, unknown> | null = null;
  /** True once the client closed the connection. */
  left: boolean;
  #ended = false;
  #gone: boolean;
  readonly #onClose: (() => void)[] = [];
  readonly #onAnswer: (status: number, body: Record<string, unknown>) => void;

  /** `gone`: the client closed its connection before the peer noticed (a grant then finds nobody). */
  constructor(onAnswer: (status: number, body: Record<string, unknown>) => void, gone = false) {
    this.#onAnswer = onAnswer;
    this.#gone = gone;
    this.left = gone;
  }

  get closed(): boolean {
    return this.#ended || this.#gone;
  }

  get headersSent(): boolean {
    return this.status !== null;
  }

  json(status: number, body: unknown): void {
    if (this.closed) return;
    this.status = status;
    this.#ended = true;
    this.#line(JSON.stringify(body));
  }

  #line(text: string): void {
    const body = JSON.parse(text) as Record<string, unknown>;
    this.last = body;
    if (this.first !== null) return;
    this.first = body;
    this.#onAnswer(this.status ?? 0, body);
  }

  head(status: number): void {
    if (!this.closed) this.status = status;
  }

  /** A line of a streamed answer: its first line is the answer the client acts on. */
  write(text: string): void {
    if (!this.closed && this.status !== null) this.#line(text);
  }

  /** The last line of a streamed answer (a connection-bound hold's end). */
  end(text: string): void {
    if (this.closed) return;
    this.#ended = true;
    this.#line(text);
  }

  destroy(): void {
    this.#gone = true;
  }

  onClose(fn: () => void): void {
    this.#onClose.push(fn);
  }

  waiting(): void {
    // Parking is the Node adapter's: a simulated connection costs nothing to keep.
  }

  answered(): void {
    // As `waiting`.
  }

  /** The client closes its connection: the peer notices at once. */
  leave(): void {
    this.#gone = true;
    this.left = true;
    for (const fn of this.#onClose.splice(0)) fn();
  }
}

/** One process's API, as its clients reach it. */
export class SimHttp {
  readonly #handler: ApiHandler<null>;
  #observer: AcquireObserver | null = null;

  constructor(p: SimPeerProcess) {
    const access = new AccessPolicy({ unix: false, listenHost: '127.0.0.1', allowHosts: [], token: null, adminToken: null });
    this.#handler = new ApiHandler(this.#tap(p), p.logger, access, { soon: (fn) => p.proc.env.soon(fn) });
  }

  /** The runtime, as the handler sees it; the acquire of the request being sent is observed. */
  #tap(p: SimPeerProcess): LockService {
    const r = p.runtime;
    const start = (asks: readonly LockAsk[], opts: HoldOptions, cb: RequestCallbacks, begin: (cb: RequestCallbacks) => RequestHandle): RequestHandle => {
      const o = this.#observer;
      this.#observer = null;
      const handle = begin(o === null ? cb : observed(o, cb));
      o?.took(handle, asks, opts);
      return handle;
    };
    return {
      ready: () => r.ready(),
      notReadyError: () => r.notReadyError(),
      request: (lock: string, opts: AcquireOptions, cb: RequestCallbacks) => start([{ lock, mode: opts.mode, limit: opts.limit, permits: opts.permits }], opts, cb, (c) => r.request(lock, opts, c)),
      requestAll: (asks, opts, cb) => start(asks, opts, cb, (c) => r.requestAll(asks, opts, c)),
      release: (lock, id) => r.release(lock, id),
      refresh: (lock, id, ttlMs) => r.refresh(lock, id, ttlMs),
      setMeta: (lock, id, meta) => r.setMeta(lock, id, meta),
      changeView: (change, opts) => r.changeView(change, opts),
      joinTicket: () => r.joinTicket(),
      inspect: r.inspect,
    };
  }

  /** POSTs `body` to `path`; the acquire it starts, if any, is observed by `observer`. */
  post(path: string, body: unknown, res: SimExchange, observer: AcquireObserver | null = null): void {
    const text = JSON.stringify(body);
    this.#observer = observer;
    try {
      this.#handler.handle({
        method: 'POST', target: path, headers: { host: `127.0.0.1:${httpPort}`, 'content-type': 'application/json' }, localPort: httpPort, remote: '127.0.0.1',
        readBody: (done) => done(null, text), native: null,
      }, res);
    } finally {
      this.#observer = null;
    }
  }
}

/** The path and body of an acquire of `asks` held as `opts` says (docs/design.md section 6). */
export function acquireRequest(asks: readonly LockAsk[], opts: HoldOptions): { path: string; body: Record<string, unknown> } {
  const hold = {
    timeout_ms: opts.timeoutMs, ttl_ms: opts.ttlMs, owner: opts.owner,
    ...(opts.meta === null ? {} : { meta: opts.meta }), ...(opts.hold === 'connection' ? { hold: 'connection' } : {}), ...(opts.expectedMs === null ? {} : { expected_ms: opts.expectedMs }),
  };
  const ask = (a: LockAsk): Record<string, unknown> => (a.mode === 'semaphore' ? { mode: a.mode, limit: a.limit, permits: a.permits } : { mode: a.mode });
  const [only, ...more] = asks;
  if (only !== undefined && more.length === 0) return { path: `/v1/locks/${encodeURIComponent(only.lock)}/acquire`, body: { ...ask(only), ...hold } };
  return { path: '/v1/acquire', body: { locks: asks.map((a) => ({ name: a.lock, ...ask(a) })), ...hold } };
}

/** The path of a holder's call on one of its locks (`/v1/locks/{lock}/release`, `/v1/elections/{lock}/proclaim`). */
export function lockPath(kind: 'locks' | 'elections', lock: string, what: string): string {
  return `/v1/${kind}/${encodeURIComponent(lock)}/${what}`;
}
