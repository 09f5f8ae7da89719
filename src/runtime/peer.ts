/**
 * The peer runtime: local holds (TTLs, wait deadlines, connection-bound holds) on top of a
 * Session (core + mesh + lease + eviction for one incarnation). Owns every local timer,
 * answers the HTTP API, and rejoins as a new incarnation when the majority evicted it.
 * DESIGN sections 2, 5 and 6. The holds themselves are in local-holds.ts, the read-only
 * views in peer-views.ts.
 */
import { EventEmitter } from 'node:events';
import { assertNever } from '../assert.js';
import type { ClusterConfig } from '../config.js';
import type { EndReason, Incarnation } from '../core/types.js';
import { formatIncarnation } from '../core/types.js';
import { ErrorCode, LockError } from '../errors.js';
import type { Logger } from '../log.js';
import { ClockStore } from './clock-store.js';
import type { AcquireOptions, Grant, LocalRequest } from './holds.js';
import { LocalHolds } from './local-holds.js';
import { PeerMetrics } from './peer-metrics.js';
import type { QueueView } from './peer-views.js';
import { PeerViews } from './peer-views.js';
import { Session } from './session.js';
import type { LocalEffect } from './session.js';

export type { QueueView } from './peer-views.js';

/** How a peer process is started. */
export interface PeerOptions {
  readonly config: ClusterConfig;
  readonly id: string;
  readonly dataDir?: string | undefined;
  readonly logger: Logger;
  /** Override the ws listen port (tests use 0 with an explicit peer list). */
  readonly wsPort?: number;
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
  readonly #holds: LocalHolds;
  readonly #views: PeerViews;
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
    this.#holds = new LocalHolds({
      id: this.id,
      metrics: this.metrics,
      log: this.#log,
      session: () => this.#session,
      view: (e) => this.#views.entry(e),
      emitHold: (type, req, reason) => this.#emitHold(type, req, reason),
    });
    this.#views = new PeerViews({
      id: this.id,
      index: this.index,
      config: this.config,
      session: () => this.#session,
      localRequest: (ref) => this.#holds.byRef(ref),
    });
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
      this.#holds.endAll('evicted', new LockError(ErrorCode.Evicted, 'this peer was evicted by the majority of the cluster and is rejoining; try again'));
      await old.close();
      this.#session = this.#newSession(Math.max(Date.now(), old.machine.clock + 1, this.#clockStore?.load() ?? 0));
      await this.#session.start();
      this.events.emit('changed');
    })().finally(() => {
      this.#rejoining = null;
    });
    return this.#rejoining;
  }

  /** True while this peer is synced with its view and holds a lease (readyz). */
  leaseValid(): boolean {
    return this.#session.machine.leaseValid && this.#session.machine.synced;
  }

  #execute(effect: LocalEffect): void {
    switch (effect.type) {
      case 'granted':
        this.#holds.onGranted(effect.ref, effect.token);
        break;
      case 'refused':
        this.#holds.onRefused(effect.ref);
        break;
      case 'ended':
        this.#holds.endByCore(effect.ref, effect.reason);
        break;
      default:
        assertNever(effect, 'effect');
    }
  }

  /** Starts a request; resolves with the grant or rejects with a coded LockError. */
  acquire(lock: string, opts: AcquireOptions, signal?: AbortSignal): Promise<Grant> {
    if (this.#stopping) return Promise.reject(new LockError(ErrorCode.ShuttingDown, 'this peer is shutting down'));
    if (this.#rejoining !== null) return Promise.reject(new LockError(ErrorCode.Evicted, 'this peer is rejoining the cluster after an eviction; try again'));
    return this.#holds.acquire(lock, opts, signal);
  }

  #emitHold(type: HoldEvent['type'], req: LocalRequest, reason: EndReason | null): void {
    if (this.events.listenerCount('hold') === 0) return;
    const token = req.grant?.token.toString() ?? '';
    this.events.emit('hold', { type, lock: req.lock, id: req.id, owner: req.spec.owner, mode: req.spec.mode, token, peer: this.id, reason, at: Date.now() });
  }

  /** Releases a live hold; throws ERR_NOT_HELD (404) with the reason otherwise. */
  release(lock: string, id: string): void {
    this.#holds.release(lock, id);
  }

  /** Extends a live hold's TTL; returns the new expiry (epoch ms). */
  refresh(lock: string, id: string, ttlMs?: number): number | null {
    return this.#holds.refresh(lock, id, ttlMs);
  }

  /** Registers the callback told when hold `id` ends other than by its release. */
  onHoldEnd(id: string, cb: (reason: EndReason) => void): void {
    this.#holds.onHoldEnd(id, cb);
  }

  /** Holders and waiters of one lock, cluster-wide, as this peer knows them. */
  lock(name: string): { name: string; holders: QueueView[]; waiters: QueueView[] } {
    return this.#views.lock(name);
  }

  /** Every lock with a non-empty queue. */
  locks(): Array<ReturnType<PeerRuntime['lock']>> {
    return this.#session.machine.lockNames().sort().map((n) => this.lock(n));
  }

  /** This peer and its links, for GET /v1/cluster. */
  cluster(): Record<string, unknown> {
    return this.#views.cluster();
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
    this.#holds.endAll('shutdown', new LockError(ErrorCode.ShuttingDown, 'this peer is shutting down'));
    if (!(await this.#session.drain(2000))) this.#log.warn('stopping with releases not yet acknowledged by every peer');
    await this.#session.close();
    this.#clockStore?.reserve(this.#session.machine.clock);
    this.#log.info('peer stopped');
  }
}
