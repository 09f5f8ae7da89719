/**
 * The local holds of one peer, from acquire until they end (docs/design.md sections 2 and 6): the
 * wait deadline of each waiting request, the TTL of each hold, releases and refreshes, and
 * the end of every hold for its reason, told to its holder exactly once. Owns those
 * timers; the protocol itself is the core's, reached through the runtime's `step`.
 */
import { assert } from '../assert.js';
import type { MachineEvent } from '../core/machine.js';
import type { EndReason, Meta, RequestPart } from '../core/types.js';
import type { Env, Timer } from '../env.js';
import { ErrorCode, LockError } from '../errors.js';
import { limits } from '../limits.js';
import type { Logger } from '../log.js';
import type { HoldOptions, LocalRequest, LockAsk, RequestCallbacks, RequestHandle } from './holds.js';
import type { LocalRequests } from './holds.js';
import type { PeerMetrics } from './peer-metrics.js';
import type { PeerInspector } from './inspector.js';

/** What local holds use of their peer runtime. */
export interface HoldsHost {
  /** This peer's id, on every grant. */
  readonly id: string;
  readonly env: Env;
  readonly metrics: PeerMetrics;
  readonly log: Logger;
  /** The registry of live requests this peer's views read too. */
  readonly requests: LocalRequests;
  /** Feeds an event to the current incarnation's core (through the runtime's guards). */
  step(event: MachineEvent): void;
  /**
   * What the holds' error sentences read (the peer's inspector): why a request is not granted
   * yet, the holders a timeout names, peer ids, the peers whose echoes no longer vouch for our
   * lease, and whether this incarnation is a zombie.
   */
  readonly inspect: Pick<PeerInspector, 'explain' | 'lock' | 'peerId' | 'leaseSilentPeers' | 'superseded'>;
  /** A local hold began or ended. */
  emitHold(type: 'granted' | 'ended', req: LocalRequest, reason: EndReason | null): void;
}

/** Every live local request of one peer, by hold id and by core ref. */
export class LocalHolds {
  readonly #host: HoldsHost;
  readonly #env: Env;
  readonly #log: Logger;
  readonly #requests: LocalRequests;
  #nextRef = 1;
  /** Hold ids are this random prefix plus the request's ref: unique, and cheap to make. */
  readonly #idPrefix: string;

  constructor(host: HoldsHost) {
    this.#host = host;
    this.#env = host.env;
    this.#log = host.log;
    this.#requests = host.requests;
    this.#idPrefix = Buffer.from(host.env.randomBytes(8)).toString('hex');
  }

  /** The state of request `id`: waiting or held while live, else why it ended (if remembered). */
  stateOf(id: string): 'waiting' | 'held' | EndReason | undefined {
    const req = this.#requests.byId(id);
    if (req !== undefined && req.state !== 'ended') return req.state;
    return this.#requests.endedReason(id);
  }

  /** The core ref of live request `id`. */
  refOf(id: string): number | undefined {
    return this.#requests.byId(id)?.ref;
  }


  /**
   * Starts a request for the locks `asks` names (one, or several all-or-nothing, names
   * distinct); `cb` hears its outcome and, once held, its end. Refusals that need no core
   * step (a full table) are told through `cb.failed` at once.
   */
  request(asks: readonly LockAsk[], opts: HoldOptions, cb: RequestCallbacks): RequestHandle {
    const ref = this.#nextRef++;
    const id = `${this.#idPrefix}${ref.toString(16).padStart(8, '0')}`;
    if (this.#requests.size >= limits.localRequestsMax) {
      cb.failed(new LockError(ErrorCode.LimitExceeded, `this peer already has ${limits.localRequestsMax} live requests`));
      return { id, clientGone: () => undefined };
    }
    const requestedAtMs = this.#env.wallMs();
    const parts = asks.map(({ lock, mode, limit, permits }) => ({ lock, spec: { mode, limit, permits, owner: opts.owner, meta: opts.meta, requestedAtMs } }));
    const first = parts[0];
    assert(first !== undefined && (asks.length === 1 || new Set(asks.map((a) => a.lock)).size === asks.length), 'a request names distinct locks, at least one');
    const req: LocalRequest = {
      ref, id, lock: first.lock, spec: first.spec, parts, opts, requestedAtMonoMs: this.#env.monoMs(),
      state: 'waiting', grant: null, ttlTimer: null, waitTimer: null, expectedTimer: null, callbacks: cb,
    };
    this.#requests.add(req);
    const waitMs = opts.timeoutMs === 0 ? limits.noWaitAckBoundMs : opts.timeoutMs;
    req.waitTimer = this.#env.after(waitMs, () => this.#onWaitTimeout(req));
    this.#host.step({ type: 'acquire', ref, parts, noWait: opts.timeoutMs === 0 });
    return { id, clientGone: () => this.#onClientGone(req) };
  }

  /**
   * The core refused request `ref` at once: its lock's queue already holds
   * limits.queuedPerLockMax requests. Nothing was queued or sent; like a full table, the
   * refusal leaves no trace (no ended id, no acquire outcome).
   */
  onQueueFull(ref: number, lock: string): void {
    if (this.#withdrawn.has(ref)) return;
    const req = this.#requests.byRef(ref);
    assert(req !== undefined && req.state === 'waiting', 'a request refused for a full queue is a local waiter');
    req.state = 'ended';
    this.#clearTimer(req, 'waitTimer');
    this.#requests.forget(req);
    req.callbacks.failed(new LockError(ErrorCode.LimitExceeded, `lock ${JSON.stringify(lock)} already has ${limits.queuedPerLockMax} requests queued; try again later`));
  }

  /** The core granted request `ref`: it becomes a hold, with its TTL. */
  onGranted(ref: number, token: bigint): void {
    if (this.#withdrawn.has(ref)) return; // Its client left; the pending release ends it in the core.
    const req = this.#requests.byRef(ref);
    assert(req !== undefined && req.state === 'waiting', 'granted request is a local waiter');
    const now = this.#env.wallMs();
    const ttlMs = req.opts.ttlMs;
    req.state = 'held';
    req.grant = {
      lock: req.lock, locks: req.parts.map((p) => ({ lock: p.lock, mode: p.spec.mode })), id: req.id, token, mode: req.spec.mode, peer: this.#host.id,
      grantedAt: now, expiresAt: ttlMs > 0 ? now + ttlMs : null,
    };
    this.#clearTimer(req, 'waitTimer');
    if (ttlMs > 0) req.ttlTimer = this.#env.after(ttlMs, () => this.#end(req, 'expired'));
    if (req.opts.expectedMs !== null) {
      req.expectedTimer = this.#env.after(req.opts.expectedMs, () => this.#onOverdue(req));
    }
    this.#host.metrics.onGranted(req, this.#env.monoMs());
    this.#host.emitHold('granted', req, null);
    req.callbacks.granted(req.grant);
  }

  #onOverdue(req: LocalRequest): void {
    req.expectedTimer = null;
    this.#host.metrics.overdueHolds.inc();
    this.#log.warn({ lock: req.lock, id: req.id, owner: req.spec.owner, expectedMs: req.opts.expectedMs }, 'hold kept longer than its expected_ms');
  }

  /** The core refused no-wait request `ref`: `ahead` others held or waited ahead of it. */
  onRefused(ref: number, ahead: number): void {
    if (this.#withdrawn.has(ref)) return;
    const req = this.#requests.byRef(ref);
    assert(req !== undefined, 'refused request is local');
    this.#fail(req, this.#timeoutError(req, 'the lock is held or requested by others (timeout_ms 0 does not wait)', ahead), 'timeout', false);
  }

  #onWaitTimeout(req: LocalRequest): void {
    req.waitTimer = null;
    if (req.state !== 'waiting') return;
    const missing = this.#host.inspect.explain(req.ref)?.missingPeers ?? [];
    const ids = missing.map((p) => this.#host.inspect.peerId(p));
    const err = missing.length > 0
      ? new LockError(ErrorCode.Unreachable, `not decidable in time: no answer from peer(s) ${ids.join(', ')}`, { unreachablePeers: ids })
      : this.#timeoutError(req, `not granted within ${req.opts.timeoutMs} ms: others hold or wait ahead`);
    this.#fail(req, err, 'timeout', true);
  }

  /** A 423: `position` defaults to the request's place in the queue now (it is still there). */
  /**
   * A 423 naming the holders in its way: of its lock, or for an all-or-nothing request, of
   * each lock it names that others hold (the message names those locks).
   */
  #timeoutError(req: LocalRequest, message: string, position = this.#host.inspect.explain(req.ref)?.position ?? 0): LockError {
    if (req.parts.length === 1) return new LockError(ErrorCode.Timeout, message, { queuePosition: position, holders: this.#host.inspect.lock(req.lock).holders });
    const held = req.parts.map((p) => ({ lock: p.lock, holders: this.#host.inspect.lock(p.lock).holders })).filter((h) => h.holders.length > 0);
    const where = held.length === 0 ? '' : ` (held: ${held.map((h) => JSON.stringify(h.lock)).join(', ')})`;
    return new LockError(ErrorCode.Timeout, `${message}${where}`, { queuePosition: position, holders: held.flatMap((h) => h.holders) });
  }

  #onClientGone(req: LocalRequest): void {
    if (this.#untold.delete(req)) return; // Ended, not told yet: nobody is left to tell.
    if (req.state === 'waiting') {
      this.#finish(req, 'cancelled');
      this.#host.metrics.onWaitFailed(req, 'cancelled', this.#env.monoMs());
      this.#withdrawSoon(req.ref);
    } else if (req.state === 'held' && req.opts.hold === 'connection') {
      this.#end(req, 'released', false, true);
    }
  }

  /** Refs whose clients left: ended here at once, released in the core in batches. */
  readonly #withdrawing: number[] = [];
  readonly #withdrawn = new Set<number>();
  #withdrawTimer: Timer | null = null;

  /**
   * Releases `ref` in the core at the end of the turn, at most limits.clientsGonePerTurnMax
   * per turn (issue 15): when 57,000 waiting clients closed their connections at once, a
   * core step per close in the turn that delivered them stalled the event loop for most of a
   * second; no heartbeat left, no echo was read, and every peer lost its lease. Between
   * batches the loop runs its timers and reads the links. The request is ended here at once:
   * its callbacks hear nothing more, and a grant the core makes meanwhile goes to nobody and
   * is released by the pending step.
   */
  #withdrawSoon(ref: number): void {
    this.#withdrawn.add(ref);
    this.#withdrawing.push(ref);
    this.#withdrawTimer ??= this.#env.soon(() => this.#withdrawBatch());
  }

  #withdrawBatch(): void {
    this.#withdrawTimer = null;
    for (const ref of this.#withdrawing.splice(0, limits.clientsGonePerTurnMax)) {
      this.#withdrawn.delete(ref);
      this.#host.step({ type: 'release', ref });
    }
    if (this.#withdrawing.length > 0) this.#withdrawTimer = this.#env.soon(() => this.#withdrawBatch());
  }

  /** Ends a waiting request with an error; `cancel` tells the core to withdraw it. */
  #fail(req: LocalRequest, error: LockError, reason: EndReason, cancel: boolean): void {
    this.#finish(req, reason);
    this.#host.metrics.onWaitFailed(req, reason, this.#env.monoMs());
    req.callbacks.failed(error);
    if (cancel) this.#host.step({ type: 'release', ref: req.ref });
  }

  #finish(req: LocalRequest, reason: EndReason): void {
    req.state = 'ended';
    this.#clearTimer(req, 'waitTimer');
    this.#clearTimer(req, 'ttlTimer');
    this.#clearTimer(req, 'expectedTimer');
    this.#requests.finish(req, reason);
  }

  #clearTimer(req: LocalRequest, which: 'waitTimer' | 'ttlTimer' | 'expectedTimer'): void {
    const t: Timer | null = req[which];
    this.#env.clear(t);
    req[which] = null;
  }

  /** Ends a held hold for `reason`, releases it in the cluster, and tells its holder (unless it left). */
  #end(req: LocalRequest, reason: EndReason, tell = true, later = false): void {
    if (req.state !== 'held') return;
    this.#finish(req, reason);
    this.#host.metrics.onHoldEnded(req, reason, this.#env.wallMs());
    this.#host.emitHold('ended', req, reason);
    if (reason !== 'released') this.#log.info({ lock: req.lock, id: req.id, owner: req.spec.owner, reason }, 'hold ended');
    if (later) this.#withdrawSoon(req.ref);
    else this.#host.step({ type: 'release', ref: req.ref });
    if (tell) req.callbacks.ended(reason);
  }

  /**
   * The core already dropped the request (lease lost): record it and tell the holder, or
   * fail the waiter (its request might otherwise be granted out of order after an eviction).
   */
  endByCore(ref: number, reason: EndReason): void {
    const req = this.#requests.byRef(ref);
    if (req === undefined || req.state === 'ended') return;
    if (req.state === 'waiting') {
      // Ended here at once (nothing may grant or withdraw it: the core dropped it); the rest
      // of its end, like its answer, waits for its batch.
      req.state = 'ended';
      // A zombie's fence ends its waiters while its lease may still hold: the client hears why.
      this.#tellSoon(req, reason, this.#host.inspect.superseded() ?? this.#leaseLostError());
      return;
    }
    this.#finish(req, reason);
    this.#host.metrics.onHoldEnded(req, reason, this.#env.wallMs());
    this.#host.emitHold('ended', req, reason);
    this.#log.warn({ lock: req.lock, id: req.id, owner: req.spec.owner, reason }, 'hold ended by the peer');
    req.callbacks.ended(reason);
  }

  /**
   * The error of every waiter that a lease loss ends in this turn: one object, built once
   * (issue 15: a LockError with its stack trace per waiter was a tenth of the stall when a
   * lease lapsed under 19,000 local waiters). The peers named are those silent now.
   */
  #leaseLostError(): LockError {
    if (this.#lostError === null) {
      const silent = this.#host.inspect.leaseSilentPeers();
      const message = `this peer lost its lease while the request waited: no answer from peer(s) ${silent.join(', ')}; try again`;
      this.#lostError = new LockError(ErrorCode.LeaseLost, message, { unreachablePeers: silent });
    }
    return this.#lostError;
  }

  /** Waiters ended here already, whose clients are told at the end of the turn, in batches. */
  readonly #telling: Array<{ readonly req: LocalRequest; readonly reason: EndReason; readonly error: LockError }> = [];
  /** The requests of `#telling` whose clients are still there. */
  readonly #untold = new Set<LocalRequest>();
  #tellTimer: Timer | null = null;
  #lostError: LockError | null = null;

  /**
   * Tells `req`'s client `error` at the end of the turn, at most limits.waitersFailedPerTurnMax
   * per turn (issue 15): a lease that lapses under 19,000 local waiters ends them all in one
   * core step, and answering each (a 503 written and its connection ended) in that turn
   * stalled the loop for seconds, so long that the others evicted this peer. The request is
   * ended already in the core and marked ended here: its timers, the registry, the metrics
   * and the answer wait for its batch, and a client that leaves meanwhile is not answered
   * (`clientGone` promises that `failed` is not called).
   */
  #tellSoon(req: LocalRequest, reason: EndReason, error: LockError): void {
    this.#telling.push({ req, reason, error });
    this.#untold.add(req);
    this.#tellTimer ??= this.#env.soon(() => this.#tellBatch());
  }

  #tellBatch(): void {
    this.#tellTimer = null;
    this.#lostError = null;
    for (const { req, reason, error } of this.#telling.splice(0, limits.waitersFailedPerTurnMax)) {
      this.#finish(req, reason);
      this.#host.metrics.onWaitFailed(req, reason, this.#env.monoMs());
      if (this.#untold.delete(req)) req.callbacks.failed(error);
    }
    if (this.#telling.length > 0) this.#tellTimer = this.#env.soon(() => this.#tellBatch());
  }

  /** Ends every local hold (told `reason`) and fails every waiter with `error`. */
  endAll(reason: EndReason, error: LockError): void {
    // Withdrawals still pending go first, in full: a stopping peer sends its releases now.
    while (this.#withdrawing.length > 0) this.#withdrawBatch();
    this.#env.clear(this.#withdrawTimer);
    this.#withdrawTimer = null;
    // Waiters the core ended already are told now, in full: nothing after this turn would.
    while (this.#telling.length > 0) this.#tellBatch();
    this.#env.clear(this.#tellTimer);
    this.#tellTimer = null;
    // Waiters first, the latest first: ending a hold first would release its lock to the
    // next local waiter, granted only to be ended at once (a TTL client would get its 200,
    // then a 404). Failing a waiter can grant none behind it: those are failed already.
    const all = this.#requests.all();
    for (const req of all.reverse()) if (req.state === 'waiting') this.#fail(req, error, reason, true);
    for (const req of this.#requests.all()) {
      if (req.state === 'held') this.#end(req, reason);
      else this.#fail(req, error, reason, true);
    }
  }

  /** The live hold `id`, which must name `lock` unless that is null (a hold named by its id alone). */
  #liveHold(lock: string | null, id: string): LocalRequest {
    const req = this.#requests.byId(id);
    if (req === undefined || (lock !== null && !req.parts.some((p) => p.lock === lock)) || req.state !== 'held') {
      const reason = req === undefined ? this.#requests.endedReason(id) : req.state === 'waiting' ? 'waiting' : undefined;
      const where = lock === null ? '' : ` on lock ${JSON.stringify(lock)}`;
      throw new LockError(ErrorCode.NotHeld, reason === undefined ? `no live hold ${id}${where}` : `hold ${id} is not live: ${reason}`, {
        reason: reason ?? 'unknown',
      });
    }
    return req;
  }

  /**
   * Releases a live hold, every lock it names (`lock`: one of them, or null), and returns
   * those; throws ERR_NOT_HELD (404) with the reason otherwise.
   */
  release(lock: string | null, id: string): readonly RequestPart[] {
    const req = this.#liveHold(lock, id);
    this.#end(req, 'released');
    return req.parts;
  }

  /** Announces new meta for a live hold, on every peer (a leader's new value). */
  setMeta(lock: string | null, id: string, meta: Meta | null): void {
    const req = this.#liveHold(lock, id);
    this.#host.step({ type: 'meta', ref: req.ref, meta });
  }

  /** Extends a live hold's TTL; returns the new expiry (epoch ms). */
  refresh(lock: string | null, id: string, ttlMs?: number): number | null {
    const req = this.#liveHold(lock, id);
    const ttl = ttlMs ?? req.opts.ttlMs;
    this.#clearTimer(req, 'ttlTimer');
    const expiresAt = ttl > 0 ? this.#env.wallMs() + ttl : null;
    if (ttl > 0) req.ttlTimer = this.#env.after(ttl, () => this.#end(req, 'expired'));
    assert(req.grant !== null, 'a held request has a grant');
    req.grant = { ...req.grant, expiresAt };
    return expiresAt;
  }
}
