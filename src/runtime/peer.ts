/**
 * The peer runtime: local holds (TTLs, wait deadlines, connection-bound holds) on top of a
 * Session (core + mesh + lease + eviction for one incarnation). Answers the HTTP API, and
 * rejoins as a new incarnation when the majority evicted it. docs/design.md sections 2, 5 and 6.
 * The holds themselves are in local-holds.ts; everything read of the peer is read through its
 * inspector (inspector.ts).
 *
 * Everything outside comes in through `PeerWorld` (clocks, timers, randomness, sockets,
 * the clock store): server.ts passes the real ones, the simulator virtual ones, so the
 * simulator runs this very runtime.
 */
import { EventEmitter } from 'node:events';
import { assert, assertNever } from '../assert.js';
import type { ClusterConfig } from '../config.js';
import { clockRateMargin } from '../config.js';
import type { EchoPromise } from '../core/membership.js';
import { QueueLog } from '../core/queue-log.js';

import type { EndReason, Meta } from '../core/types.js';
import { formatIncarnation } from '../core/types.js';
import type { AgreedView, ViewChange } from '../core/view.js';
import type { Env } from '../env.js';
import { ErrorCode, LockError } from '../errors.js';
import { limits } from '../limits.js';
import type { Logger } from '../log.js';
import type { Bound } from './clock-store.js';
import { ClockReservation } from './clock-store.js';
import { PersistedBounds } from './bounds.js';
import { CurrentSession } from './current-session.js';
import type { AcquireOptions, Grant, HoldOptions, LockAsk, RequestCallbacks, RequestHandle } from './holds.js';
import { LocalRequests } from './holds.js';
import { LocalHolds } from './local-holds.js';
import type { HoldsHost } from './local-holds.js';
import { PeerMetrics } from './peer-metrics.js';
import { PeerInspector } from './inspector.js';
import { Session } from './session.js';
import { ViewKeeper } from './view-keeper.js';
import type { JoinTicket } from './view-store.js';
import type { ChangeOptions } from './view-change.js';
import { startChange } from './view-change.js';
import type { ProtocolLevels } from '../transport/codec.js';
import { protocolLevels } from '../transport/codec.js';
import type { LockService, PeerEvents, PeerOptions, PeerWorld } from './peer-options.js';
import type { LocalEffect, RejoinReason } from '../core/protocol-io.js';

export type { ClusterView, DegradedView, LockView, MembersView, MemberView, PeerLinkView, QueueView, WaitedPeer } from './status-views.js';

export type { HoldEvent, LockService, PeerEvents, PeerOptions, PeerWorld } from './peer-options.js';

/** One peer: core + mesh + local holds. */
export class PeerRuntime implements LockService {
  readonly id: string;
  readonly index: number;
  readonly config: ClusterConfig;
  readonly metrics: PeerMetrics;
  /** Everything read of this peer (views, metrics, the simulator's checker): the one read-only inspector. */
  readonly inspect: PeerInspector;
  /** `changed` after every step; `hold` when a local hold begins or ends. */
  readonly events = new EventEmitter<PeerEvents>();
  /** What entered and left the queues, across incarnations, while a watch follows them (src/http/watch.ts). */
  readonly queueLog = new QueueLog();
  readonly #log: Logger;
  readonly #rootLog: Logger;
  readonly #world: PeerWorld;
  readonly #env: Env;
  readonly #linkUnackedBytesMax: number | undefined;
  readonly #frameBytesMax: number | undefined;
  readonly #protocolLevel: number;
  readonly #levels: ProtocolLevels;
  readonly #reservation: ClockReservation;
  /** The bounds of the promises and echoes this process gives, on disk (bounds.ts). */
  readonly #bounds: PersistedBounds;
  readonly #sessions: CurrentSession;
  readonly #holds: LocalHolds;
  /** The agreed view and the acceptor's state, as the view store keeps them (view-keeper.ts). */
  readonly #views: ViewKeeper;
  #stopping = false;
  #rejoining = false;
  /**
   * When this process last started above a newer incarnation of its id. Another such start
   * waits evict_ms: two processes with one id would otherwise leapfrog each other at once.
   */
  #startedAboveStaleMs: number | null = null;

  constructor(opts: PeerOptions) {
    if (!opts.config.peers.some((p) => p.id === opts.id)) throw new LockError(ErrorCode.ConfigInvalid, `peer id ${JSON.stringify(opts.id)} is not in the config`);
    this.#levels = opts.levels ?? protocolLevels;
    this.#protocolLevel = opts.protocolLevel ?? this.#levels.newest;
    // The agreed view (docs/reconfiguration.md): the store's, else the one the config file seeds.
    this.#views = new ViewKeeper({ config: opts.config, level: this.#protocolLevel, store: opts.world.viewStore, log: opts.logger.child({ component: 'runtime' }) });
    const view = this.view;
    const me = view.members.find((m) => m.id === opts.id);
    if (me === undefined || me.state === 'leaving') {
      throw new LockError(ErrorCode.Removed, `the agreed view of this peer's data dir (epoch ${view.epoch}) ${me === undefined ? 'no longer has' : 'removes'} ${opts.id}: it was removed from the cluster. To bring this host back, empty its data dir and add it again as a new member (docs/operations.md, "Changing the members")`);
    }
    this.id = opts.id;
    this.index = me.ordinal;
    this.config = opts.config;
    this.#rootLog = opts.logger;
    this.#log = opts.logger.child({ component: 'runtime' });
    this.#world = opts.world;
    this.#env = opts.world.env;
    this.#linkUnackedBytesMax = opts.linkUnackedBytesMax;
    this.#frameBytesMax = opts.frameBytesMax;
    this.#reservation = new ClockReservation({ store: opts.world.clockStore, env: this.#env, log: this.#log });
    this.#bounds = new PersistedBounds({
      store: opts.world.clockStore, env: this.#env, log: this.#log, aheadMs: (kind) => this.#boundAheadMs(kind),
    });
    // Each part gets what it reads as finished objects, built in this order (issue 13: none
    // is handed the half-built runtime): the current session (empty until start), the
    // registry of local requests, the inspector over both, the metrics over it, the holds.
    const sessions = new CurrentSession();
    const requests = new LocalRequests(limits.endedIdsMax);
    const inspect = new PeerInspector({ id: this.id, index: this.index, config: this.config, sessions, requests, view: () => this.view });
    const metrics = new PeerMetrics(inspect, opts.processMetrics ?? true);
    this.#sessions = sessions;
    this.inspect = inspect;
    this.metrics = metrics;
    this.#holds = new LocalHolds(holdsHost({ id: this.id, env: this.#env, log: this.#log, sessions, requests, inspect, metrics, events: this.events }));
  }

  /** The agreed view as this peer holds it now. */
  get view(): AgreedView {
    return this.#views.view;
  }

  /**
   * The lease is re-checked before anything a client or a holds timer does, as the session
   * does before every event (docs/design.md section 4): a process resumed after a pause must
   * not release, refresh or count a hold on a lease that lapsed meanwhile.
   */
  #checkLease(): void {
    this.#sessions.checkLease();
  }

  /** Loads the clock floor and starts the first incarnation. Throws ERR_CONFIG_INVALID on a corrupt clock file. */
  start(): void {
    assert(!this.#sessions.started, 'a runtime starts once');
    const wallMs = this.#env.wallMs();
    if (wallMs > limits.clockValueMax) {
      // Started, this peer would push every clock of the cluster near 2^53 (issue 37).
      throw new LockError(ErrorCode.ClockAhead, `this host's wall clock reads ${wallMs} ms since 1970, past the largest clock a peer uses (${limits.clockValueMax}, the year 37,600): set the wall clock right (NTP), then start the peer again`);
    }
    const floor = this.#reservation.load();
    // A confirmation the previous process gave binds it for evict_ms: it may have crashed
    // right after. Its bound is on disk (bounds.ts); we echo nothing until then, at
    // most 2 * evict_ms (a wall clock stepped back must not silence us for long).
    const store = this.#world.clockStore;
    const quietForMs = this.#boundLeftMs(store.loadBound('promise'), 'promise');
    // Likewise a heartbeat it echoed may still vouch for a lease of an incarnation this
    // process never meets: no peer joins before that bound passes (docs/design.md section 5,
    // "Successors").
    this.#vouchedUntilMono = this.#env.monoMs() + this.#boundLeftMs(store.loadBound('echo'), 'echo');
    // The incarnation starts above every one before it on this data dir, whatever the wall
    // clock did meanwhile: the mark is above every clock a previous process used, and each
    // clock starts at or above its incarnation (seed 1043577: a wall clock stepped back
    // across restarts made an incarnation sort below a dead one, whose eviction then
    // covered it while it held its lease).
    this.#sessions.set(this.#newSession(Math.max(this.#env.wallMs(), floor), floor, undefined, quietForMs));
    this.#startSession();
  }

  /**
   * Starts the new session once the mark on disk is above its clock, hence above its
   * incarnation: the next process starts above it. A failing write does not stop the start
   * (ERR_STORAGE, logged; the reservation retries): that process then orders its
   * incarnation by the wall clock alone, and the others refuse one that sorts too low.
   */
  #startSession(): void {
    const session = this.#sessions.get();
    this.#reservation.reserve(session.protocol.machine.clock);
    session.start();
  }

  /** How far ahead of the need each bound is written, so that it is rewritten once per half of it. */
  #boundAheadMs(kind: Bound): number {
    if (kind === 'promise') return 2 * this.config.evictMs;
    return 2 * clockRateMargin * this.config.leaseMs;
  }

  /** What is left of a bound on disk, at most how far ahead it is written (a wall clock stepped back must not hold us long). */
  #boundLeftMs(untilWallMs: number, kind: Bound): number {
    return Math.min(Math.max(0, untilWallMs - this.#env.wallMs()), this.#boundAheadMs(kind));
  }

  /** Until when (this process's monotonic ms) a heartbeat it echoed may vouch for a lease. */
  #vouchedUntilMono = 0;

  #onEchoing(): boolean {
    if (!this.#bounds.ensure('echo')) return false;
    this.#vouchedUntilMono = this.#env.monoMs() + clockRateMargin * this.config.leaseMs;
    return true;
  }

  /** How long the next incarnation holds joins: until the echoes of this process stop vouching. */
  #joinsHeldForMs(): number {
    return Math.max(0, this.#vouchedUntilMono - this.#env.monoMs());
  }

  /** Whether `start` ran. */
  get started(): boolean {
    return this.#sessions.started;
  }

  #newSession(clockFloor: number, startFloorMs: number, promises?: readonly EchoPromise[], quietForMs = 0): Session {
    const joinsHeldForMs = this.#joinsHeldForMs();
    return new Session({
      config: this.config, index: this.index, view: this.view, ...this.#views.forSession(),
      clockFloor, startFloorMs, logger: this.#rootLog, world: this.#world,
      protocolLevel: this.#protocolLevel, levels: this.#levels,
      linkUnackedBytesMax: this.#linkUnackedBytesMax, frameBytesMax: this.#frameBytesMax, promises, quietForMs, joinsHeldForMs, queueLog: this.queueLog,
    }, {
      onEffect: (effect) => this.#execute(effect),
      onRejoin: (reason, floorMs) => this.#rejoinSoon(reason, floorMs),
      onChanged: () => this.events.emit('changed'),
      onSent: (n) => this.metrics.messagesSent.inc(n),
      onRtt: (peer, rttMs) => this.metrics.observeRtt(peer, rttMs),
      onLinkFailure: (reason) => this.metrics.linkRefusals.inc({ reason }),
      onClock: (clock) => this.#reservation.reserve(clock),
      onPromise: () => this.#bounds.ensure('promise'),
      onEchoing: () => this.#onEchoing(),
      onView: (view) => this.#views.saveView(view),
      onAcceptor: (state) => this.#views.saveAcceptor(state),
      onAcceptorId: (ordinal, aid) => this.#views.acceptorIdOf(ordinal, aid),
    });
  }

  /** Rejoins at the end of this turn, outside the socket handler that found it necessary. */
  #rejoinSoon(reason: RejoinReason, startFloorMs: number): void {
    if (this.#rejoining || this.#stopping) return;
    if (reason === 'stale_incarnation') {
      const now = this.#env.monoMs();
      const last = this.#startedAboveStaleMs;
      if (last !== null && now - last < this.config.evictMs) return;
      if (last !== null) this.#log.error({ code: ErrorCode.HandshakeRefused }, 'refused again as older than an incarnation of this peer id: another process may run with this id; stop one of them');
      this.#startedAboveStaleMs = now;
    }
    this.#rejoining = true;
    this.#env.soon(() => {
      this.#rejoining = false;
      if (!this.#stopping) this.#rejoin(reason, startFloorMs);
    });
  }

  /**
   * Ends this incarnation and starts a new one (docs/design.md section 5): every local hold and
   * waiter ends with reason `evicted`, and the new incarnation's clock starts above the
   * old one's, so its requests sort after everything it has seen and tokens keep growing.
   */
  #rejoin(reason: RejoinReason, startFloorMs: number): void {
    const old = this.#sessions.get();
    this.#log.warn({ reason, incarnation: formatIncarnation(old.incarnation) }, 'rejoining as a new incarnation');
    this.#holds.endAll('evicted', new LockError(ErrorCode.Evicted, 'this peer was evicted by the majority of the cluster and is rejoining; try again'));
    old.close();
    this.queueLog.reset();
    const floor = Math.max(this.#env.wallMs(), old.protocol.machine.clock + 1, this.#reservation.load());
    // The quiet a restart began (start) binds the process, not the incarnation: a rejoin
    // within it would echo a peer the previous process promised to leave silent (seed 906566).
    const { promises, quietForMs } = old.handover();
    this.#sessions.set(this.#newSession(floor, Math.max(startFloorMs, old.incarnation.startMs + 1), promises, quietForMs));
    this.#startSession();
    this.events.emit('changed');
  }

  /** True while this peer holds a lease AND is synced with its view: it can grant (readyz). */
  ready(): boolean {
    return this.inspect.ready();
  }

  notReadyError(): LockError {
    return this.inspect.superseded() ?? this.inspect.configMismatch() ?? new LockError(ErrorCode.NotReady, 'this peer holds no lease or has not synced with every peer yet');
  }

  #execute(effect: LocalEffect): void {
    switch (effect.type) {
      case 'granted':
        this.#holds.onGranted(effect.ref, effect.token);
        break;
      case 'refused':
        this.#holds.onRefused(effect.ref, effect.ahead);
        break;
      case 'full':
        this.#holds.onQueueFull(effect.ref, effect.lock);
        break;
      case 'ended':
        this.#holds.endByCore(effect.ref, effect.reason);
        break;
      default:
        assertNever(effect, 'effect');
    }
  }

  /**
   * Starts a request; `cb` hears its grant or failure, then, once held, how the hold ended
   * (`released` after a release call too). The entry point of the HTTP API and the simulator.
   */
  request(lock: string, opts: AcquireOptions, cb: RequestCallbacks): RequestHandle {
    return this.requestAll([{ lock, mode: opts.mode, limit: opts.limit, permits: opts.permits }], opts, cb);
  }

  /** Starts an all-or-nothing request for the locks `asks` names (distinct); as `request`. */
  requestAll(asks: readonly LockAsk[], opts: HoldOptions, cb: RequestCallbacks): RequestHandle {
    const refusal = this.#refusal();
    if (refusal !== null) {
      cb.failed(refusal);
      return { id: '', clientGone: () => undefined };
    }
    const handle = this.#holds.request(asks, opts, cb);
    return {
      id: handle.id,
      clientGone: () => {
        this.#checkLease();
        handle.clientGone();
      },
    };
  }

  #refusal(): LockError | null {
    if (this.#stopping) return new LockError(ErrorCode.ShuttingDown, 'this peer is shutting down');
    this.#checkLease();
    if (this.#rejoining) return new LockError(ErrorCode.Evicted, 'this peer is rejoining the cluster after an eviction; try again');
    const superseded = this.inspect.superseded();
    if (superseded !== null) return superseded;
    // A failed high-water-mark write stops new requests; each one retries the write first.
    this.#reservation.reserve(this.inspect.protocol.machine.clock);
    return this.#reservation.failure;
  }

  /**
   * Starts a request; resolves with the grant or rejects with a coded LockError. `onEnd`,
   * given here so it can never miss an end, hears how the hold ended (`released` included).
   */
  acquire(lock: string, opts: AcquireOptions, signal?: AbortSignal, onEnd?: (reason: EndReason) => void): Promise<Grant> {
    return new Promise<Grant>((resolve, reject) => {
      const handle = this.request(lock, opts, { granted: resolve, failed: reject, ended: (reason) => onEnd?.(reason) });
      signal?.addEventListener('abort', () => handle.clientGone(), { once: true });
    });
  }

  /** Releases a live hold (`lock`: one it names, or null); throws ERR_NOT_HELD (404) with the reason otherwise. */
  release(lock: string | null, id: string): boolean {
    this.#checkLease();
    const machine = this.inspect.protocol.machine;
    for (const part of this.#holds.release(lock, id)) if (machine.queueSize(part.lock) > 0) return true;
    return false;
  }

  /** Announces new meta for a live hold on every peer (a leader's new value); ERR_NOT_HELD otherwise. */
  setMeta(lock: string | null, id: string, meta: Meta | null): void {
    this.#checkLease();
    this.#holds.setMeta(lock, id, meta);
  }

  /** Extends a live hold's TTL; returns the new expiry (epoch ms). */
  refresh(lock: string | null, id: string, ttlMs?: number): number | null {
    this.#checkLease();
    return this.#holds.refresh(lock, id, ttlMs);
  }

  changeView(change: ViewChange, opts: ChangeOptions): Promise<AgreedView> {
    return new Promise((resolve, reject) => this.startChange(change, opts, (result) => (result instanceof LockError ? reject(result) : resolve(result))));
  }

  /** `changeView` by callback, as the simulator drives it (runtime/view-change.ts `startChange`). */
  startChange(change: ViewChange, opts: ChangeOptions, done: (result: AgreedView | LockError) => void): void {
    startChange({
      env: this.#env, log: this.#log,
      view: () => this.view,
      memberLevels: () => this.inspect.members().members,
      silent: (id) => {
        const m = this.view.members.find((x) => x.id === id);
        const session = this.#sessions.get();
        return m !== undefined && !session.protocol.leaseEchoedBy(m.ordinal, session.nowMs());
      },
      refusal: () => this.#views.refusal() ?? this.#refusal() ?? this.#stallOf(change),
      machine: () => this.inspect.protocol.machine,
      request: (lock, o, cb) => this.request(lock, o, cb),
      release: (lock, id) => void this.release(lock, id),
      step: (event) => this.#sessions.get().step(event),
      onChanged: (fn) => {
        this.events.on('changed', fn);
        return () => void this.events.off('changed', fn);
      },
    }, change, opts, done);
  }

  /** What a host added to the cluster starts from (`lamport-peer --join`): the cluster's name and founders, and the view now. */
  joinTicket(): JoinTicket {
    return this.#views.joinTicket();
  }

  /**
   * Why `change` would stall the cluster, if it would: a learner promoted before it runs and
   * met this peer would be a voter every request waits for (etcd#6420, the reason for learners).
   */
  #stallOf(change: ViewChange): LockError | null {
    if (change.op !== 'promote') return null;
    const m = this.view.members.find((x) => x.id === change.id);
    if (m === undefined || m.state !== 'learner' || this.inspect.protocol.machine.incarnation(m.ordinal) !== undefined) return null;
    return new LockError(ErrorCode.ChangeRefused, `${change.id} has not joined yet: start it with the ticket \`member add\` printed (lamport-peer --join), and promote it once \`member list\` shows it connected`);
  }

  /**
   * Graceful stop (docs/design.md section 7): refuse new requests, end local holds with reason
   * `shutdown`, fail waiters, send the releases, give the links a moment to deliver them.
   * The listener is the caller's to close.
   */
  async stop(): Promise<void> {
    if (this.#stopping || !this.#sessions.started) return;
    this.#stopping = true;
    const session = this.#sessions.get();
    this.#holds.endAll('shutdown', new LockError(ErrorCode.ShuttingDown, 'this peer is shutting down'));
    if (!(await session.drain(limits.stopDrainMs))) this.#log.warn('stopping with releases not yet acknowledged by every peer');
    session.close();
    this.#reservation.reserve(session.protocol.machine.clock);
    this.#log.info('peer stopped');
  }
}

/** What the runtime hands its local holds: the current session's protocol, reached only through it. */
function holdsHost(parts: {
  id: string; env: Env; log: Logger; sessions: CurrentSession; requests: LocalRequests; inspect: PeerInspector; metrics: PeerMetrics;
  events: EventEmitter<PeerEvents>;
}): HoldsHost {
  const { id, env, sessions, events } = parts;
  // The holds' timers (TTL, wait deadlines) re-check the lease first, like every event.
  const checked = (fn: () => void) => (): void => {
    sessions.checkLease();
    fn();
  };
  return {
    id,
    env: { ...env, after: (ms, fn) => env.after(ms, checked(fn)), every: (ms, fn) => env.every(ms, checked(fn)) },
    metrics: parts.metrics,
    log: parts.log,
    requests: parts.requests,
    // The current session's step: a closed one (a rejoin under way) ignores it.
    step: (event) => sessions.get().step(event),
    inspect: parts.inspect,
    emitHold: (type, req, reason) => {
      if (events.listenerCount('hold') === 0) return;
      const token = req.grant?.token.toString() ?? '';
      for (const { lock, spec } of req.parts) {
        events.emit('hold', { type, lock, id: req.id, owner: spec.owner, mode: spec.mode, token, peer: id, reason, at: env.wallMs() });
      }
    },
  };
}
