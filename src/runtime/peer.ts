/**
 * The peer runtime: local holds (TTLs, wait deadlines, connection-bound holds) on top of a
 * Session (core + mesh + lease + eviction for one incarnation). Owns every local timer,
 * answers the HTTP API, and rejoins as a new incarnation when the majority evicted it.
 * DESIGN sections 2, 5 and 6.
 */
import { randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { performance } from 'node:perf_hooks';
import { assert, assertNever } from '../assert.js';
import type { ClusterConfig } from '../config.js';
import type { MachineEvent, QueueEntry } from '../core/machine.js';
import type { EndReason, Incarnation } from '../core/types.js';
import { formatIncarnation } from '../core/types.js';
import { ErrorCode, LockError } from '../errors.js';
import { limits } from '../limits.js';
import type { Logger } from '../log.js';
import { ClockStore } from './clock-store.js';
import type { AcquireOptions, Grant, LocalRequest } from './holds.js';
import { EndedLog } from './holds.js';
import { PeerMetrics } from './peer-metrics.js';
import { Session } from './session.js';
import type { LocalEffect } from './session.js';

/** How a peer process is started. */
export interface PeerOptions {
  readonly config: ClusterConfig;
  readonly id: string;
  readonly dataDir?: string | undefined;
  readonly logger: Logger;
  /** Override the ws listen port (tests use 0 with an explicit peer list). */
  readonly wsPort?: number;
}

/** A holder or waiter as the HTTP API shows it. */
export interface QueueView {
  readonly peer: string;
  readonly owner: string;
  readonly meta: unknown;
  readonly token: string;
  readonly mode: string;
  readonly limit: number;
  readonly permits: number;
  readonly since: number | null;
  readonly local: boolean;
  readonly id?: string;
}

/** A local hold began or ended: what the dashboard's "recent grants and ends" shows. */
export interface HoldEvent {
  readonly type: 'granted' | 'ended';
  readonly lock: string;
  readonly id: string;
  readonly owner: string;
  readonly mode: string;
  readonly token: string;
  readonly peer: string;
  readonly reason: EndReason | null;
  readonly at: number;
}

/** Events a runtime emits: `changed` after any step (queues or links may differ), `hold`. */
export interface PeerEvents {
  changed: [];
  hold: [HoldEvent];
}

/** Bounded wait for acks of a no-wait (timeout_ms 0) request before answering 503. */
const noWaitAckBoundMs = 2000;

/** One peer: core + mesh + local holds. */
export class PeerRuntime {
  readonly id: string;
  readonly index: number;
  readonly config: ClusterConfig;
  readonly metrics: PeerMetrics;
  /** `changed` after every step; `hold` when a local hold begins or ends. */
  readonly events = new EventEmitter<PeerEvents>();
  readonly #log: Logger;
  readonly #rootLog: Logger;
  readonly #clockStore: ClockStore | null;
  readonly #requests = new Map<string, LocalRequest>();
  readonly #byRef = new Map<number, LocalRequest>();
  readonly #ended = new EndedLog(10_000);
  #nextRef = 1;
  /** Hold ids are this random prefix plus the request's ref: unique, and cheap to make. */
  readonly #idPrefix = randomBytes(8).toString('hex');
  #session: Session;
  #stopping = false;
  #rejoining: Promise<void> | null = null;
  readonly #wsPort: number | undefined;

  constructor(opts: PeerOptions) {
    const index = opts.config.peers.findIndex((p) => p.id === opts.id);
    if (index < 0) throw new LockError(ErrorCode.ConfigInvalid, `peer id ${JSON.stringify(opts.id)} is not in the config`);
    this.id = opts.id;
    this.index = index;
    this.config = opts.config;
    this.#rootLog = opts.logger;
    this.#log = opts.logger.child({ component: 'peer' });
    this.#wsPort = opts.wsPort;
    this.#clockStore = opts.dataDir === undefined ? null : new ClockStore(opts.dataDir);
    this.metrics = new PeerMetrics(this);
    this.#session = this.#newSession(Math.max(Date.now(), this.#clockStore?.load() ?? 0));
  }

  #newSession(clockFloor: number): Session {
    return new Session({ config: this.config, index: this.index, clockFloor, logger: this.#rootLog, wsPort: this.#wsPort }, {
      onEffect: (effect) => this.#execute(effect),
      onRejoin: (reason) => void this.#rejoin(reason),
      onChanged: () => this.events.emit('changed'),
      onSent: (n) => this.metrics.messagesSent.inc(n),
      onRtt: (peer, rttMs) => this.metrics.observeRtt(peer, rttMs),
      onClock: (clock) => this.#clockStore?.reserve(clock),
    });
  }

  /** Starts the links and the timers. */
  async start(): Promise<void> {
    await this.#session.start();
  }

  /** This incarnation (it changes when the peer rejoins after an eviction). */
  get incarnation(): Incarnation {
    return this.#session.incarnation;
  }

  /**
   * Ends this incarnation and starts a new one (DESIGN section 5): every local hold and
   * waiter ends with reason `evicted`, and the new incarnation's clock starts above the
   * old one's, so its requests sort after everything it has seen and tokens keep growing.
   */
  async #rejoin(reason: 'evicted' | 'link_overflow'): Promise<void> {
    if (this.#rejoining !== null || this.#stopping) return;
    const old = this.#session;
    this.#rejoining = (async () => {
      this.#log.warn({ reason, incarnation: formatIncarnation(old.incarnation) }, 'rejoining as a new incarnation');
      this.#endAll('evicted', new LockError(ErrorCode.Evicted, 'this peer was evicted by the majority of the cluster and is rejoining; try again'));
      await old.close();
      this.#session = this.#newSession(Math.max(Date.now(), old.machine.clock + 1, this.#clockStore?.load() ?? 0));
      await this.#session.start();
      this.events.emit('changed');
    })().finally(() => {
      this.#rejoining = null;
    });
    return this.#rejoining;
  }

  /** Ends every local hold (told `reason`) and fails every waiter with `error`. */
  #endAll(reason: EndReason, error: LockError): void {
    for (const req of [...this.#requests.values()]) {
      if (req.state === 'held') this.#end(req, reason);
      else this.#fail(req, error, reason, true);
    }
  }

  #peerId(index: number): string {
    return this.config.peers[index]?.id ?? `#${index}`;
  }

  /** True while this peer is synced with its view and holds a lease (readyz). */
  leaseValid(): boolean {
    return this.#session.machine.leaseValid && this.#session.machine.synced;
  }

  #step(event: MachineEvent): void {
    this.#session.step(event);
  }

  #execute(effect: LocalEffect): void {
    switch (effect.type) {
      case 'granted':
        this.#onGranted(effect.ref, effect.token);
        break;
      case 'refused':
        this.#onRefused(effect.ref);
        break;
      case 'ended':
        this.#endByCore(effect.ref, effect.reason);
        break;
      default:
        assertNever(effect, 'effect');
    }
  }

  /** Starts a request; resolves with the grant or rejects with a coded LockError. */
  acquire(lock: string, opts: AcquireOptions, signal?: AbortSignal): Promise<Grant> {
    if (this.#stopping) return Promise.reject(new LockError(ErrorCode.ShuttingDown, 'this peer is shutting down'));
    if (this.#rejoining !== null) return Promise.reject(new LockError(ErrorCode.Evicted, 'this peer is rejoining the cluster after an eviction; try again'));
    if (this.#requests.size >= limits.localRequestsMax) {
      return Promise.reject(new LockError(ErrorCode.LimitExceeded, `this peer already has ${limits.localRequestsMax} live requests`));
    }
    const ref = this.#nextRef++;
    const spec = { mode: opts.mode, limit: opts.limit, permits: opts.permits, owner: opts.owner, meta: opts.meta };
    const req: LocalRequest = {
      ref, id: `${this.#idPrefix}${ref.toString(16).padStart(8, '0')}`, lock, spec, opts, requestedAt: performance.now(), requestedAtWall: Date.now(),
      state: 'waiting', grant: null, ttlTimer: null, waitTimer: null, expectedTimer: null, settle: null, onEnd: null,
    };
    const promise = new Promise<Grant>((resolve, reject) => {
      req.settle = (r) => ('grant' in r ? resolve(r.grant) : reject(r.error));
    });
    this.#requests.set(req.id, req);
    this.#byRef.set(ref, req);
    const waitMs = opts.timeoutMs === 0 ? noWaitAckBoundMs : opts.timeoutMs;
    req.waitTimer = setTimeout(() => this.#onWaitTimeout(req), waitMs);
    signal?.addEventListener('abort', () => this.#onClientGone(req), { once: true });
    this.#step({ type: 'acquire', ref, lock, spec, noWait: opts.timeoutMs === 0 });
    return promise;
  }

  #onGranted(ref: number, token: bigint): void {
    const req = this.#byRef.get(ref);
    assert(req !== undefined && req.state === 'waiting', 'granted request is a local waiter');
    const now = Date.now();
    const ttlMs = req.opts.ttlMs;
    req.state = 'held';
    req.grant = {
      lock: req.lock, id: req.id, token, mode: req.spec.mode, peer: this.id,
      grantedAt: now, expiresAt: ttlMs > 0 ? now + ttlMs : null,
    };
    this.#clearTimer(req, 'waitTimer');
    if (ttlMs > 0) req.ttlTimer = setTimeout(() => this.#end(req, 'expired'), ttlMs);
    if (req.opts.expectedMs !== null) {
      req.expectedTimer = setTimeout(() => this.#onOverdue(req), req.opts.expectedMs);
    }
    this.metrics.onGranted(req);
    this.#emitHold('granted', req, null);
    const settle = req.settle;
    req.settle = null;
    settle?.({ grant: req.grant });
  }

  #emitHold(type: HoldEvent['type'], req: LocalRequest, reason: EndReason | null): void {
    if (this.events.listenerCount('hold') === 0) return;
    const token = req.grant?.token.toString() ?? '';
    this.events.emit('hold', { type, lock: req.lock, id: req.id, owner: req.spec.owner, mode: req.spec.mode, token, peer: this.id, reason, at: Date.now() });
  }

  #onOverdue(req: LocalRequest): void {
    req.expectedTimer = null;
    this.metrics.overdueHolds.inc();
    this.#log.warn({ lock: req.lock, id: req.id, owner: req.spec.owner, expectedMs: req.opts.expectedMs }, 'hold kept longer than its expected_ms');
  }

  #onRefused(ref: number): void {
    const req = this.#byRef.get(ref);
    assert(req !== undefined, 'refused request is local');
    this.#fail(req, this.#timeoutError(req, 'the lock is held or requested by others (timeout_ms 0 does not wait)'), 'timeout', false);
  }

  #onWaitTimeout(req: LocalRequest): void {
    req.waitTimer = null;
    if (req.state !== 'waiting') return;
    const why = this.#session.machine.explain(req.ref);
    const missing = why?.missingPeers ?? [];
    const err = missing.length > 0
      ? new LockError(ErrorCode.Unreachable, `not decidable in time: no answer from peer(s) ${missing.map((p) => this.#peerId(p)).join(', ')}`, {
          unreachable_peers: missing.map((p) => this.#peerId(p)),
        })
      : this.#timeoutError(req, `not granted within ${req.opts.timeoutMs} ms: others hold or wait ahead`);
    this.#fail(req, err, 'timeout', true);
  }

  #timeoutError(req: LocalRequest, message: string): LockError {
    const position = this.#session.machine.explain(req.ref)?.position ?? 0;
    const holders = this.#session.machine.queue(req.lock).filter((e) => e.held).map((e) => this.#view(e));
    return new LockError(ErrorCode.Timeout, message, { queue_position: position, holders });
  }

  #onClientGone(req: LocalRequest): void {
    if (req.state === 'waiting') this.#fail(req, new LockError(ErrorCode.Timeout, 'client went away'), 'cancelled', true);
  }

  /** Ends a waiting request with an error; `cancel` tells the core to withdraw it. */
  #fail(req: LocalRequest, error: Error, reason: EndReason, cancel: boolean): void {
    this.#finish(req, reason);
    this.metrics.onWaitFailed(req, reason);
    const settle = req.settle;
    req.settle = null;
    settle?.({ error });
    if (cancel) this.#step({ type: 'release', ref: req.ref });
  }

  #finish(req: LocalRequest, reason: EndReason): void {
    req.state = 'ended';
    this.#clearTimer(req, 'waitTimer');
    this.#clearTimer(req, 'ttlTimer');
    this.#clearTimer(req, 'expectedTimer');
    this.#requests.delete(req.id);
    this.#byRef.delete(req.ref);
    this.#ended.record(req.id, reason);
  }

  #clearTimer(req: LocalRequest, which: 'waitTimer' | 'ttlTimer' | 'expectedTimer'): void {
    const t = req[which];
    if (t !== null) clearTimeout(t);
    req[which] = null;
  }

  /** Ends a held hold for `reason`, releases it in the cluster, and tells its holder. */
  #end(req: LocalRequest, reason: EndReason): void {
    if (req.state !== 'held') return;
    this.#finish(req, reason);
    this.metrics.onHoldEnded(req, reason);
    this.#emitHold('ended', req, reason);
    if (reason !== 'released') this.#log.info({ lock: req.lock, id: req.id, owner: req.spec.owner, reason }, 'hold ended');
    this.#step({ type: 'release', ref: req.ref });
    req.onEnd?.(reason);
  }

  /**
   * The core already dropped the request (lease lost): record it and tell the holder, or
   * fail the waiter (its request might otherwise be granted out of order after an eviction).
   */
  #endByCore(ref: number, reason: EndReason): void {
    const req = this.#byRef.get(ref);
    if (req === undefined || req.state === 'ended') return;
    if (req.state === 'waiting') {
      const silent = this.#session.leaseSilentPeers();
      const message = `this peer lost its lease while the request waited: no answer from peer(s) ${silent.join(', ')}; try again`;
      this.#fail(req, new LockError(ErrorCode.LeaseLost, message, { unreachable_peers: silent }), reason, false);
      return;
    }
    this.#finish(req, reason);
    this.metrics.onHoldEnded(req, reason);
    this.#emitHold('ended', req, reason);
    this.#log.warn({ lock: req.lock, id: req.id, owner: req.spec.owner, reason }, 'hold ended by the peer');
    req.onEnd?.(reason);
  }

  #liveHold(lock: string, id: string): LocalRequest {
    const req = this.#requests.get(id);
    if (req === undefined || req.lock !== lock || req.state !== 'held') {
      const reason = req === undefined ? this.#ended.reasonOf(id) : req.state === 'waiting' ? 'waiting' : undefined;
      throw new LockError(ErrorCode.NotHeld, reason === undefined ? `no live hold ${id} on lock ${JSON.stringify(lock)}` : `hold ${id} is not live: ${reason}`, {
        reason: reason ?? 'unknown',
      });
    }
    return req;
  }

  /** Releases a live hold; throws ERR_NOT_HELD (404) with the reason otherwise. */
  release(lock: string, id: string): void {
    this.#end(this.#liveHold(lock, id), 'released');
  }

  /** Extends a live hold's TTL; returns the new expiry (epoch ms). */
  refresh(lock: string, id: string, ttlMs?: number): number | null {
    const req = this.#liveHold(lock, id);
    const ttl = ttlMs ?? req.opts.ttlMs;
    this.#clearTimer(req, 'ttlTimer');
    const expiresAt = ttl > 0 ? Date.now() + ttl : null;
    if (ttl > 0) req.ttlTimer = setTimeout(() => this.#end(req, 'expired'), ttl);
    assert(req.grant !== null, 'a held request has a grant');
    req.grant = { ...req.grant, expiresAt };
    return expiresAt;
  }

  /** Registers the callback told when hold `id` ends other than by its release. */
  onHoldEnd(id: string, cb: (reason: EndReason) => void): void {
    const req = this.#requests.get(id);
    if (req !== undefined) req.onEnd = cb;
  }

  #view(e: QueueEntry): QueueView {
    const local = e.peer === this.index;
    const req = local && e.ref !== undefined ? this.#byRef.get(e.ref) : undefined;
    const since = local ? (req?.grant?.grantedAt ?? req?.requestedAtWall ?? null) : this.#session.seenAt(e.peer, e.ts);
    return {
      peer: this.#peerId(e.peer), owner: e.owner, meta: e.meta, token: e.token.toString(), mode: e.mode,
      limit: e.limit, permits: e.permits, since, local, ...(req === undefined ? {} : { id: req.id }),
    };
  }

  /** Holders and waiters of one lock, cluster-wide, as this peer knows them. */
  lock(name: string): { name: string; holders: QueueView[]; waiters: QueueView[] } {
    const entries = this.#session.machine.queue(name);
    return {
      name,
      holders: entries.filter((e) => e.held).map((e) => this.#view(e)),
      waiters: entries.filter((e) => !e.held).map((e) => this.#view(e)),
    };
  }

  /** Every lock with a non-empty queue. */
  locks(): Array<ReturnType<PeerRuntime['lock']>> {
    return this.#session.machine.lockNames().sort().map((n) => this.lock(n));
  }

  /** This peer and its links, for GET /v1/cluster. */
  cluster(): Record<string, unknown> {
    const now = performance.now();
    const machine = this.#session.machine;
    const view = new Set(machine.view());
    const links = new Map(this.#session.meshStatus().map((s) => [s.peer, s]));
    return {
      id: this.id, cluster: this.config.cluster, incarnation: formatIncarnation(this.incarnation), clock: machine.clock,
      synced: machine.synced,
      lease: { valid: machine.leaseValid, valid_for_ms: machine.leaseValid ? this.#session.leaseValidForMs() : 0 },
      stats: machine.stats(),
      peers: this.config.peers.map((p, i) => {
        const s = links.get(i);
        return i === this.index
          ? { id: p.id, self: true }
          : { id: p.id, connected: s?.connected ?? false, last_heard_ms_ago: s?.lastHeardMs == null ? null : Math.round(now - s.lastHeardMs),
              rtt_ms: s?.rttMs ?? null, incarnation: s?.incarnation == null ? null : formatIncarnation(s.incarnation), evicted: !view.has(i),
              last_ts: machine.lastTs(i) };
      }),
    };
  }

  /** Link statistics for metrics. */
  meshStats(): ReturnType<Session['meshStats']> {
    return this.#session.meshStats();
  }

  /** Mesh link status for metrics. */
  meshStatus(): ReturnType<Session['meshStatus']> {
    return this.#session.meshStatus();
  }

  /** The core's counts, for metrics. */
  coreStats(): ReturnType<Session['machine']['stats']> & { clock: number } {
    return { ...this.#session.machine.stats(), clock: this.#session.machine.clock };
  }

  /**
   * Graceful stop (DESIGN section 7): refuse new requests, end local holds with reason
   * `shutdown`, fail waiters, send the releases, give the links a moment to deliver them.
   */
  async stop(): Promise<void> {
    if (this.#stopping) return;
    this.#stopping = true;
    await this.#rejoining;
    this.#endAll('shutdown', new LockError(ErrorCode.ShuttingDown, 'this peer is shutting down'));
    if (!(await this.#session.drain(2000))) this.#log.warn('stopping with releases not yet acknowledged by every peer');
    await this.#session.close();
    this.#clockStore?.reserve(this.#session.machine.clock);
    this.#log.info('peer stopped');
  }
}
