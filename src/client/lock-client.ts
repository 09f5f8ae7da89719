/**
 * The typed client for Node applications, exported as `lamport-lock/client`. It speaks the
 * local HTTP API of docs/design.md section 6 over keep-alive connections, by TCP or by the
 * peer's unix socket (`unix:/path`, through node:http's socketPath), with the peer's token
 * when it requires one. `withLock` holds a lock
 * for the duration of a function, refreshes it, and hands the function an AbortSignal
 * that fires the moment the hold is lost (TTL, lease lost, eviction, peer shutdown).
 * `acquireAll` and `withLocks` do the same for several locks taken all or nothing in one
 * request (POST /v1/acquire): one hold, one id, one token for every name.
 */
import { Agent, request } from 'node:http';
import type { IncomingMessage, RequestOptions } from 'node:http';
import { LockError } from '../errors.js';
import { limits } from '../limits.js';
import { readTokenFile } from '../token-file.js';
import type {
  AcquireAllRequest, AcquireRequest, Answer, BoundToConnection, ChangeRequest, ConnectionHold, ConnectionMultiHold, Hold, LockClientOptions, LockSpec, Members, MultiHold,
  SignalOptions, Target, View, WatchEvent,
} from './wire.js';
import { acquireAllBody, acquireBody, lockNames, parseJson, readAll, signalOf, sseParser, targetOf, toError, toHold, toMembers, toMultiHold, toView } from './wire.js';

export { LockError } from '../errors.js';
export type { ErrorCode } from '../errors.js';
export type {
  AcquireAllRequest, AcquireRequest, ChangeRequest, ConnectionHold, ConnectionMultiHold, Hold, LockClientOptions, LockSpec, Member, Members, MultiHold, SignalOptions, View,
  ViewMember, WatchEvent,
} from './wire.js';

/** The caller's abort of a wait, as every acquire (or change of the members) rejects with it. */
function aborted(what = 'acquire'): LockError {
  return new LockError('ERR_TIMEOUT', `${what} aborted by the caller`, { reason: 'aborted' });
}
/** A client of one local peer. */
export class LockClient {
  readonly #target: Target;
  readonly #where: string;
  readonly #authorization: string | null;
  readonly #agent = new Agent({ keepAlive: true, maxSockets: limits.clientSocketsMax });

  constructor(opts: LockClientOptions = {}) {
    const peer = opts.peer ?? process.env['LAMPORT_PEER'] ?? 'http://127.0.0.1:7001';
    this.#target = targetOf(peer);
    this.#where = this.#target.base === null ? peer : this.#target.base.origin;
    const tokenFile = opts.tokenFile ?? process.env['LAMPORT_TOKEN_FILE'];
    const token = opts.token ?? (tokenFile === undefined || tokenFile === '' ? null : readTokenFile(tokenFile, 'token file', { private: false }));
    this.#authorization = token === null ? null : `Bearer ${token}`;
  }

  #open(method: string, path: string, body: unknown, onResponse: (res: IncomingMessage) => void, onError: (e: Error) => void): () => void {
    const text = body === undefined ? '' : JSON.stringify(body);
    const headers: Record<string, string | number> = { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) };
    if (this.#authorization !== null) headers['authorization'] = this.#authorization;
    const options: RequestOptions = { method, agent: this.#agent, headers };
    const { base, socketPath } = this.#target;
    const req = base === null ? request({ ...options, socketPath, path }, onResponse) : request(new URL(path, base), options, onResponse);
    req.on('error', (e) => onError(new LockError('ERR_UNREACHABLE', `cannot reach the local peer at ${this.#where}: ${e.message}`)));
    req.end(text);
    return () => req.destroy();
  }

  #call(method: string, path: string, body?: unknown, signal?: AbortSignal, what?: string): Promise<Answer> {
    return new Promise((resolve, reject) => {
      const cancel = this.#open(method, path, body, (res) => {
        readAll(res).then((t) => resolve({ status: res.statusCode ?? 0, body: parseJson(t) }), reject);
      }, reject);
      if (signal?.aborted === true) {
        cancel();
        reject(aborted(what));
        return;
      }
      signal?.addEventListener('abort', () => {
        cancel();
        reject(aborted(what));
      }, { once: true });
    });
  }

  static #path(name: string, action?: string): string {
    if (name === '') throw new LockError('ERR_BAD_REQUEST', 'a lock name must not be empty');
    return `/v1/locks/${encodeURIComponent(name)}${action === undefined ? '' : `/${action}`}`;
  }

  /**
   * Acquires `name`; rejects with a LockError (ERR_TIMEOUT 423, ERR_UNREACHABLE 503, ...).
   * `opts.signal` stops the wait (ERR_TIMEOUT, reason `aborted`); a signal as third argument is
   * the older form of it.
   */
  async acquire(name: string, opts: AcquireRequest = {}, signal?: AbortSignal | SignalOptions): Promise<Hold> {
    const a = await this.#call('POST', LockClient.#path(name, 'acquire'), acquireBody(opts), opts.signal ?? signalOf(signal));
    if (a.status !== 200) throw toError(a);
    return toHold(a.body);
  }

  /** Acquires `name` as a hold bound to this connection: it ends when `close()` is called. */
  acquireOnConnection(name: string, opts: AcquireRequest = {}): Promise<ConnectionHold> {
    const body = { ...acquireBody(opts), hold: 'connection', ttl_ms: opts.ttlMs ?? 0 };
    return this.#acquireBound(LockClient.#path(name, 'acquire'), body, toHold, opts.signal);
  }

  /**
   * Acquires every lock of `locks` or none (POST /v1/acquire), waiting up to `timeoutMs` for
   * all of them together; rejects as `acquire` does (ERR_BAD_REQUEST for a name given twice
   * or too many names, ERR_TIMEOUT 423, ...). Release the hold with `releaseHold`.
   */
  async acquireAll(locks: readonly LockSpec[], opts: AcquireAllRequest = {}, signal?: AbortSignal | SignalOptions): Promise<MultiHold> {
    const a = await this.#call('POST', '/v1/acquire', acquireAllBody(locks, opts), opts.signal ?? signalOf(signal));
    if (a.status !== 200) throw toError(a);
    return toMultiHold(a.body);
  }

  /** Acquires every lock of `locks` or none, as a hold bound to this connection: it ends when `close()` is called. */
  acquireAllOnConnection(locks: readonly LockSpec[], opts: AcquireAllRequest = {}): Promise<ConnectionMultiHold> {
    const body = { ...acquireAllBody(locks, opts), hold: 'connection', ttl_ms: opts.ttlMs ?? 0 };
    return this.#acquireBound('/v1/acquire', body, toMultiHold, opts.signal);
  }

  /** An acquire with hold "connection": the grant line, then the line of its end (or the connection's end). */
  #acquireBound<H>(path: string, body: Record<string, unknown>, toGrant: (line: Record<string, unknown>) => H, signal: AbortSignal | undefined): Promise<H & BoundToConnection> {
    return new Promise((resolve, reject) => {
      let endedResolve: (r: string) => void = () => undefined;
      const ended = new Promise<string>((r) => (endedResolve = r));
      let granted = false;
      const onAbort = (): void => {
        if (granted) return;
        cancel();
        reject(aborted());
      };
      const cancel = this.#open('POST', path, body, (res) => {
        if (res.statusCode !== 200) {
          readAll(res).then((t) => reject(toError({ status: res.statusCode ?? 0, body: parseJson(t) })), reject);
          return;
        }
        this.#watchConnectionHold(res, (line) => {
          granted = true;
          signal?.removeEventListener('abort', onAbort);
          resolve({ ...toGrant(line), ended, close: cancel });
        }, endedResolve);
      }, reject);
      if (signal?.aborted === true) onAbort();
      else signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  #watchConnectionHold(res: IncomingMessage, onGrant: (line: Record<string, unknown>) => void, onEnd: (reason: string) => void): void {
    let buffer = '';
    let granted = false;
    res.setEncoding('utf8');
    res.on('data', (chunk: string) => {
      buffer += chunk;
      let nl: number;
      while ((nl = buffer.indexOf('\n')) >= 0) {
        const line = parseJson(buffer.slice(0, nl));
        buffer = buffer.slice(nl + 1);
        if (!granted) {
          granted = true;
          onGrant(line);
        } else if (typeof line['ended'] === 'string') onEnd(line['ended']);
      }
    });
    const closed = (): void => onEnd('connection_closed');
    res.on('end', closed);
    res.on('close', closed);
    res.on('error', closed);
  }

  /** Releases a hold; throws ERR_NOT_HELD (with `reason`) when it is not live. */
  async release(name: string, id: string): Promise<void> {
    const a = await this.#call('POST', LockClient.#path(name, 'release'), { id });
    if (a.status !== 200) throw toError(a);
  }

  /** Extends a hold's TTL; returns the new expiry (epoch ms, null for none). */
  async refresh(name: string, id: string, ttlMs?: number): Promise<number | null> {
    const a = await this.#call('POST', LockClient.#path(name, 'refresh'), ttlMs === undefined ? { id } : { id, ttl_ms: ttlMs });
    if (a.status !== 200) throw toError(a);
    return a.body['expires_at'] === null ? null : Number(a.body['expires_at']);
  }

  /** Releases a hold by its id alone (POST /v1/release): any hold, of one lock or of several; ERR_NOT_HELD as `release`. */
  async releaseHold(id: string): Promise<void> {
    const a = await this.#call('POST', '/v1/release', { id });
    if (a.status !== 200) throw toError(a);
  }

  /** Extends any hold's TTL by its id alone (POST /v1/refresh); returns the new expiry as `refresh` does. */
  async refreshHold(id: string, ttlMs?: number): Promise<number | null> {
    const a = await this.#call('POST', '/v1/refresh', ttlMs === undefined ? { id } : { id, ttl_ms: ttlMs });
    if (a.status !== 200) throw toError(a);
    return a.body['expires_at'] === null ? null : Number(a.body['expires_at']);
  }

  /** Holders and waiters of one lock, or of every lock. */
  async status(name?: string): Promise<Record<string, unknown>> {
    const a = await this.#call('GET', name === undefined ? '/v1/locks' : LockClient.#path(name));
    if (a.status !== 200) throw toError(a);
    return a.body;
  }

  /**
   * Ends every hold of `name` that this peer's clients have (an administrative operation: the
   * client needs the admin token as its `token`, or the peer's unix socket); returns their ids.
   */
  async forceRelease(name: string): Promise<string[]> {
    const a = await this.#call('POST', LockClient.#path(name, 'force-release'), {});
    if (a.status !== 200) throw toError(a);
    const ids = a.body['released'];
    return Array.isArray(ids) ? ids.map(String) : [];
  }

  /** This peer's view of the cluster. */
  async cluster(): Promise<Record<string, unknown>> {
    const a = await this.#call('GET', '/v1/cluster');
    if (a.status !== 200) throw toError(a);
    return a.body;
  }

  /** The agreed view of the cluster as this peer holds it: its epoch, level and members, each with its link as this peer sees it. */
  async members(): Promise<Members> {
    const a = await this.#call('GET', '/v1/members');
    if (a.status !== 200) throw toError(a);
    return toMembers(a.body);
  }

  /**
   * Adds a member to the agreed view, as a learner (docs/operations.md, "Changing the
   * members"). Each change is administrative: the client needs the admin token as its `token`,
   * or the peer's unix socket. Each resolves with the view that has the change, or rejects
   * with ERR_CHANGE_REFUSED (409: it does not apply to the view, the sentence says why),
   * ERR_TIMEOUT, ERR_NOT_READY, ERR_SHUTTING_DOWN, ERR_ADMIN_REQUIRED.
   */
  async addMember(member: { readonly id: string; readonly ws: string; readonly http: string }, opts: ChangeRequest = {}): Promise<View> {
    return this.#change('POST', '/v1/members', { id: member.id, ws: member.ws, http: member.http }, opts);
  }

  /** Makes a learner a voter (as `addMember`). */
  async promoteMember(id: string, opts: ChangeRequest = {}): Promise<View> {
    return this.#change('POST', `${LockClient.#memberPath(id)}/promote`, {}, opts);
  }

  /** Removes a member: a learner goes, a voter becomes leaving (as `addMember`). */
  async removeMember(id: string, opts: ChangeRequest = {}): Promise<View> {
    const query = opts.timeoutMs === undefined ? '' : `?timeout_ms=${opts.timeoutMs}`;
    return this.#change('DELETE', `${LockClient.#memberPath(id)}${query}`, undefined, { ...opts, timeoutMs: undefined });
  }

  /** Takes out a leaving member that left or was evicted (as `addMember`). */
  async retireMember(id: string, opts: ChangeRequest = {}): Promise<View> {
    return this.#change('POST', `${LockClient.#memberPath(id)}/retire`, {}, opts);
  }

  /** Raises the protocol level the cluster runs at, once every member speaks it (as `addMember`). */
  async raiseLevel(level: number, opts: ChangeRequest = {}): Promise<View> {
    return this.#change('POST', '/v1/cluster/level', { level }, opts);
  }

  static #memberPath(id: string): string {
    if (id === '') throw new LockError('ERR_BAD_REQUEST', 'a member id must not be empty');
    return `/v1/members/${encodeURIComponent(id)}`;
  }

  async #change(method: string, path: string, body: Record<string, unknown> | undefined, opts: { readonly timeoutMs?: number | undefined; readonly signal?: AbortSignal | undefined }): Promise<View> {
    const sent = body === undefined || opts.timeoutMs === undefined ? body : { ...body, timeout_ms: opts.timeoutMs };
    const a = await this.#call(method, path, sent, opts.signal, 'the change of the members');
    if (a.status !== 200) throw toError(a);
    return toView(a.body);
  }

  /**
   * Runs `fn` while holding `name`. The hold is bound to a connection (so it ends if this
   * process dies) and has a TTL refreshed every third of it. `signal` fires with the reason
   * when the hold is lost before `fn` settles (an administrator's force-release included), and
   * withLock then rejects with that reason whatever `fn` returned: its work was not all done
   * under the lock. The hold is released when `fn` settles. `opts.signal` stops the wait for
   * the grant and, once held, fires `fn`'s signal too.
   */
  async withLock<T>(name: string, fn: (hold: Hold, signal: AbortSignal) => Promise<T>, opts: AcquireRequest = {}): Promise<T> {
    const ttlMs = opts.ttlMs ?? 60_000;
    const hold = await this.acquireOnConnection(name, { ...opts, ttlMs });
    return this.#whileHeld(hold, `the hold on ${name}`, () => this.refresh(name, hold.id, ttlMs), { ttlMs, signal: opts.signal }, fn);
  }

  /**
   * Runs `fn` while holding every lock of `locks`, taken all or nothing in one request, as
   * `withLock` runs it under one: bound to a connection, its TTL refreshed every third of it,
   * `signal` fired with the reason when the hold (of all of them: it ends as a whole) is lost
   * before `fn` settles (withLocks then rejects with it), and released when `fn` settles.
   */
  async withLocks<T>(locks: readonly LockSpec[], fn: (hold: MultiHold, signal: AbortSignal) => Promise<T>, opts: AcquireAllRequest = {}): Promise<T> {
    const ttlMs = opts.ttlMs ?? 60_000;
    const hold = await this.acquireAllOnConnection(locks, { ...opts, ttlMs });
    return this.#whileHeld(hold, `the hold on ${lockNames(locks)}`, () => this.refreshHold(hold.id, ttlMs), { ttlMs, signal: opts.signal }, fn);
  }

  /** Runs `fn` under `hold`; rejects with the loss when the hold ended before `fn` settled. */
  async #whileHeld<H extends BoundToConnection, T>(
    hold: H,
    what: string,
    refresh: () => Promise<unknown>,
    opts: { ttlMs: number; signal: AbortSignal | undefined },
    fn: (hold: H, signal: AbortSignal) => Promise<T>,
  ): Promise<T> {
    const lost = new AbortController();
    let done = false;
    void hold.ended.then((reason) => {
      if (!done) lost.abort(new LockError('ERR_NOT_HELD', `lost ${what}: ${reason}`, { reason }));
    });
    const timer = setInterval(() => {
      refresh().catch((err: unknown) => {
        if (!done) lost.abort(err);
      });
    }, Math.max(100, Math.floor(opts.ttlMs / 3)));
    const signal = opts.signal === undefined ? lost.signal : AbortSignal.any([lost.signal, opts.signal]);
    try {
      const result = await fn(hold, signal);
      if (lost.signal.aborted) throw lost.signal.reason;
      return result;
    } finally {
      done = true;
      clearInterval(timer);
      hold.close();
    }
  }

  /**
   * Follows one lock (`name`) or every lock whose name starts with `prefix`: the current state,
   * then every change, until `signal` (or `{ signal }`) aborts or the loop breaks. Rejects with a LockError when
   * the peer refuses the stream (ERR_LIMIT_EXCEEDED) or ends it (ERR_WATCH_BEHIND: the loop
   * was too slow; watch again), and with ERR_UNREACHABLE when the peer goes away.
   */
  watch(what: string | { readonly prefix: string }, signal?: AbortSignal | SignalOptions): AsyncGenerator<WatchEvent, void, undefined> {
    const path = typeof what === 'string' ? LockClient.#path(what, 'watch') : `/v1/watch?prefix=${encodeURIComponent(what.prefix)}`;
    return this.#events(path, ['state', 'queued', 'granted', 'released', 'left'], signalOf(signal));
  }

  /**
   * Runs `fn` while this process leads election `name`, announcing `value` (docs/design.md
   * section 6, "Elections"): a campaign waits like an acquire of the lock `name` (exclusive,
   * bound to this connection, its TTL refreshed), then `fn` gets the term (the grant's
   * fencing token: pass it to what the leader writes), a signal that fires the moment
   * leadership is lost, and `proclaim`, which announces a new value while it leads. It
   * resigns when `fn` settles.
   */
  campaign<T>(name: string, value: unknown, fn: (term: bigint, signal: AbortSignal, proclaim: (value: unknown) => Promise<void>) => Promise<T>, opts: Omit<AcquireRequest, 'meta' | 'mode' | 'limit' | 'permits'> = {}): Promise<T> {
    return this.withLock(name, (hold, signal) => fn(hold.token, signal, async (v) => {
      const a = await this.#call('POST', `/v1/elections/${encodeURIComponent(name)}/proclaim`, { id: hold.id, value: v });
      if (a.status !== 200) throw toError(a);
    }), { ...opts, meta: { value } });
  }

  /** Who leads election `name` now: `{peer, owner, value, term, requested_at, granted_at, local}`, or null. */
  async leader(name: string): Promise<Record<string, unknown> | null> {
    const a = await this.#call('GET', `/v1/elections/${encodeURIComponent(name)}`);
    if (a.status !== 200) throw toError(a);
    const l = a.body['leader'];
    return typeof l === 'object' && l !== null ? (l as Record<string, unknown>) : null;
  }

  /**
   * Every change of leader of election `name`: first who leads now (`leader`, or `vacant`
   * when nobody does), then each change, until `signal` (or `{ signal }`) aborts or the loop breaks.
   */
  observe(name: string, signal?: AbortSignal | SignalOptions): AsyncGenerator<{ readonly type: 'leader' | 'vacant'; readonly data: Record<string, unknown> }, void, undefined> {
    return this.#events(`/v1/elections/${encodeURIComponent(name)}/observe`, ['leader', 'vacant'], signalOf(signal));
  }

  async *#events<T extends string>(path: string, types: readonly T[], signal?: AbortSignal): AsyncGenerator<{ readonly type: T; readonly data: Record<string, unknown> }, void, undefined> {
    const queue: Array<{ readonly type: T; readonly data: Record<string, unknown> } | LockError | null> = [];
    let wake: (() => void) | null = null;
    const push = (item: { readonly type: T; readonly data: Record<string, unknown> } | LockError | null): void => {
      queue.push(item);
      wake?.();
      wake = null;
    };
    const cancel = this.#open('GET', path, undefined, (res) => {
      if (res.statusCode !== 200) {
        readAll(res).then((t) => push(toError({ status: res.statusCode ?? 0, body: parseJson(t) })), () => push(null));
        return;
      }
      res.setEncoding('utf8');
      const parse = sseParser((event, data) => {
        const body = parseJson(data);
        if (event === 'error') push(toError({ status: 503, body }));
        else if ((types as readonly string[]).includes(event)) push({ type: event as T, data: body });
      });
      res.on('data', parse);
      res.on('end', () => push(new LockError('ERR_UNREACHABLE', `the peer at ${this.#where} ended the watch stream`)));
      res.on('error', () => push(new LockError('ERR_UNREACHABLE', `the watch stream from ${this.#where} broke`)));
    }, (err) => push(err instanceof LockError ? err : new LockError('ERR_UNREACHABLE', err.message)));
    const onAbort = (): void => push(null);
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      for (;;) {
        if (signal?.aborted === true) return;
        const item = queue.shift();
        if (item === undefined) {
          await new Promise<void>((r) => (wake = r));
          continue;
        }
        if (item === null) return;
        if (item instanceof LockError) throw item;
        yield item;
      }
    } finally {
      signal?.removeEventListener('abort', onAbort);
      cancel();
    }
  }

  /** Closes idle keep-alive sockets. */
  close(): void {
    this.#agent.destroy();
  }
}
