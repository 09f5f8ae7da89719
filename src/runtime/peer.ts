/**
 * The peer runtime: wires the pure protocol core to the mesh of links, executes the
 * core's effects in order, and owns every timer (TTLs, wait deadlines, leases, the clock
 * high-water mark). DESIGN sections 2 and 5.
 */
import { randomBytes, randomInt } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { performance } from 'node:perf_hooks';
import { assert, assertNever } from '../assert.js';
import type { ClusterConfig } from '../config.js';
import { wsListenAddress } from '../config.js';
import { Machine } from '../core/machine.js';
import type { Effect, MachineEvent, QueueEntry } from '../core/machine.js';
import type { Packet } from '../core/messages.js';
import { isPacket } from '../core/messages.js';
import type { EndReason, Incarnation } from '../core/types.js';
import { formatIncarnation } from '../core/types.js';
import { ErrorCode, LockError } from '../errors.js';
import { limits } from '../limits.js';
import type { Logger } from '../log.js';
import { Mesh } from '../transport/mesh.js';
import { ClockStore } from './clock-store.js';
import type { AcquireOptions, Grant, LocalRequest } from './holds.js';
import { EndedLog } from './holds.js';
import { LeaseTracker } from './lease.js';
import { PeerMetrics } from './peer-metrics.js';

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
  readonly incarnation: Incarnation;
  readonly config: ClusterConfig;
  readonly metrics: PeerMetrics;
  /** `changed` after every step; `hold` when a local hold begins or ends. */
  readonly events = new EventEmitter<PeerEvents>();
  readonly #log: Logger;
  readonly #machine: Machine;
  readonly #mesh: Mesh<Packet>;
  readonly #lease: LeaseTracker;
  readonly #clockStore: ClockStore | null;
  readonly #requests = new Map<string, LocalRequest>();
  readonly #byRef = new Map<number, LocalRequest>();
  readonly #ended = new EndedLog(10_000);
  /** When each remote request was first seen here, by `peer:ts`. */
  readonly #seenAt = new Map<string, number>();
  #nextRef = 1;
  #leaseTimer: NodeJS.Timeout | null = null;
  #stopping = false;

  constructor(opts: PeerOptions) {
    const index = opts.config.peers.findIndex((p) => p.id === opts.id);
    if (index < 0) throw new LockError(ErrorCode.ConfigInvalid, `peer id ${JSON.stringify(opts.id)} is not in the config`);
    this.id = opts.id;
    this.index = index;
    this.config = opts.config;
    this.#log = opts.logger.child({ component: 'peer' });
    this.#clockStore = opts.dataDir === undefined ? null : new ClockStore(opts.dataDir);
    const floor = Math.max(Date.now(), this.#clockStore?.load() ?? 0);
    this.incarnation = { startMs: Date.now(), nonce: randomInt(0, 2 ** 31) };
    this.#machine = new Machine({ self: index, peerCount: opts.config.peers.length, clockFloor: floor });
    this.#lease = new LeaseTracker({ self: index, peerCount: opts.config.peers.length, leaseMs: opts.config.leaseMs });
    this.metrics = new PeerMetrics(this);
    this.#mesh = this.#createMesh(opts);
  }

  #createMesh(opts: PeerOptions): Mesh<Packet> {
    const peers = opts.config.peers.map((p, index) => ({ id: p.id, index, ws: p.ws }));
    const self = peers[this.index];
    assert(self !== undefined, 'self is configured');
    const listen = wsListenAddress(self.ws);
    return new Mesh<Packet>(
      {
        cluster: opts.config.cluster,
        secret: opts.config.secret,
        self,
        peers: peers.filter((p) => p.index !== this.index),
        listen: { host: listen.host, port: opts.wsPort ?? listen.port },
        incarnation: this.incarnation,
        heartbeatMs: opts.config.heartbeatMs,
        isPayload: isPacket,
        clock: () => this.#machine.clock,
        logger: opts.logger.child({ component: 'mesh' }),
        ...(opts.config.tls === undefined ? {} : { tls: opts.config.tls }),
      },
      {
        onPeerJoined: (peer, inc, clock, restarted) => this.#onPeerJoined(peer, inc, clock, restarted),
        onPayload: (from, inc, packet) => this.#onPacket(from, inc, packet),
        onHeartbeat: (from, inc, clock) => {
          if (clock !== undefined) this.#step({ type: 'packet', from, inc, packet: { c: clock, m: [] } });
        },
        onEcho: (peer, sentAtMs, rttMs) => {
          this.#lease.onEcho(peer, sentAtMs);
          this.metrics.observeRtt(this.#peerId(peer), rttMs);
          this.#checkLease();
        },
        onConnection: (peer, connected) => {
          this.#log.info({ remote: this.#peerId(peer), connected }, connected ? 'link up' : 'link down');
        },
      },
    );
  }

  /** Starts the mesh and the lease clock. */
  async start(): Promise<void> {
    await this.#mesh.start();
    const tickMs = Math.max(10, Math.min(100, Math.floor(this.config.leaseMs / 20)));
    this.#leaseTimer = setInterval(() => this.#checkLease(), tickMs);
    this.#checkLease();
    this.#log.info({ incarnation: formatIncarnation(this.incarnation), clock: this.#machine.clock }, 'peer started');
  }

  /** The ws port actually bound (tests bind port 0). */
  wsPort(): number {
    return this.#mesh.port();
  }

  #peerId(index: number): string {
    return this.config.peers[index]?.id ?? `#${index}`;
  }

  #onPeerJoined(peer: number, inc: Incarnation, clock: number, restarted: boolean): void {
    this.#log.info({ remote: this.#peerId(peer), incarnation: formatIncarnation(inc), clock, restarted }, restarted ? 'peer restarted: dropping its old requests' : 'peer joined');
    if (restarted) {
      this.#lease.forget(peer);
      this.#forgetSeen(peer);
    }
    this.#step({ type: 'joined', peer, inc, clock });
  }

  #onPacket(from: number, inc: Incarnation, packet: Packet): void {
    const now = Date.now();
    for (const m of packet.m) {
      const key = `${from}:${m.ts}`;
      if (m.t === 'req') {
        if (!this.#seenAt.has(key)) this.#seenAt.set(key, now);
      } else this.#seenAt.delete(key);
    }
    this.#step({ type: 'packet', from, inc, packet });
  }

  #forgetSeen(peer: number): void {
    const prefix = `${peer}:`;
    for (const key of this.#seenAt.keys()) if (key.startsWith(prefix)) this.#seenAt.delete(key);
  }

  #checkLease(): void {
    const valid = this.#lease.valid(performance.now());
    if (valid !== this.#machine.leaseValid) {
      const level = this.#machine.synced ? 'warn' : 'info';
      this.#log[level]({ valid }, valid ? 'lease held: a majority echoes our heartbeats' : 'no lease: a majority has not echoed a heartbeat within lease_ms; local holds end, nothing is granted');
      this.#step({ type: 'lease', valid });
    }
  }

  /** True while this peer holds a lease (readyz). */
  leaseValid(): boolean {
    return this.#machine.leaseValid && this.#machine.synced;
  }

  /** Feeds one event to the core and executes its effects, in order. */
  #step(event: MachineEvent): void {
    const effects = this.#machine.step(event);
    for (const effect of effects) this.#execute(effect);
    this.#clockStore?.reserve(this.#machine.clock);
    if (event.type !== 'packet' || event.packet.m.length > 0) this.events.emit('changed');
  }

  #execute(effect: Effect): void {
    switch (effect.type) {
      case 'send':
        this.#mesh.send(effect.to, effect.packet);
        this.metrics.messagesSent.inc(Math.max(1, effect.packet.m.length));
        break;
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
    if (this.#requests.size >= limits.localRequestsMax) {
      return Promise.reject(new LockError(ErrorCode.LimitExceeded, `this peer already has ${limits.localRequestsMax} live requests`));
    }
    const ref = this.#nextRef++;
    const spec = { mode: opts.mode, limit: opts.limit, permits: opts.permits, owner: opts.owner, meta: opts.meta };
    const req: LocalRequest = {
      ref, id: randomBytes(12).toString('hex'), lock, spec, opts, requestedAt: performance.now(),
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
    const why = this.#machine.explain(req.ref);
    const missing = why?.missingPeers ?? [];
    const err = missing.length > 0
      ? new LockError(ErrorCode.Unreachable, `not decidable in time: no answer from peer(s) ${missing.map((p) => this.#peerId(p)).join(', ')}`, {
          unreachable_peers: missing.map((p) => this.#peerId(p)),
        })
      : this.#timeoutError(req, `not granted within ${req.opts.timeoutMs} ms: others hold or wait ahead`);
    this.#fail(req, err, 'timeout', true);
  }

  #timeoutError(req: LocalRequest, message: string): LockError {
    const position = this.#machine.explain(req.ref)?.position ?? 0;
    const holders = this.#machine.queue(req.lock).filter((e) => e.held).map((e) => this.#view(e));
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

  /** The core already dropped the request (lease lost): record it and tell the holder. */
  #endByCore(ref: number, reason: EndReason): void {
    const req = this.#byRef.get(ref);
    if (req === undefined || req.state !== 'held') return;
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
    const since = local ? (req?.grant?.grantedAt ?? null) : (this.#seenAt.get(`${e.peer}:${e.ts}`) ?? null);
    return {
      peer: this.#peerId(e.peer), owner: e.owner, meta: e.meta, token: e.token.toString(), mode: e.mode,
      limit: e.limit, permits: e.permits, since, local, ...(req === undefined ? {} : { id: req.id }),
    };
  }

  /** Holders and waiters of one lock, cluster-wide, as this peer knows them. */
  lock(name: string): { name: string; holders: QueueView[]; waiters: QueueView[] } {
    const entries = this.#machine.queue(name);
    return {
      name,
      holders: entries.filter((e) => e.held).map((e) => this.#view(e)),
      waiters: entries.filter((e) => !e.held).map((e) => this.#view(e)),
    };
  }

  /** Every lock with a non-empty queue. */
  locks(): Array<ReturnType<PeerRuntime['lock']>> {
    return this.#machine.lockNames().sort().map((n) => this.lock(n));
  }

  /** This peer and its links, for GET /v1/cluster. */
  cluster(): Record<string, unknown> {
    const now = performance.now();
    const view = new Set(this.#machine.view());
    const links = new Map(this.#mesh.status().map((s) => [s.peer, s]));
    return {
      id: this.id, cluster: this.config.cluster, incarnation: formatIncarnation(this.incarnation), clock: this.#machine.clock,
      synced: this.#machine.synced,
      lease: { valid: this.#machine.leaseValid, valid_for_ms: Math.max(0, Math.round(this.#lease.validUntil(now) - now)) },
      stats: this.#machine.stats(),
      peers: this.config.peers.map((p, i) => {
        const s = links.get(i);
        return i === this.index
          ? { id: p.id, self: true }
          : { id: p.id, connected: s?.connected ?? false, last_heard_ms_ago: s?.lastHeardMs == null ? null : Math.round(now - s.lastHeardMs),
              rtt_ms: s?.rttMs ?? null, incarnation: s?.incarnation == null ? null : formatIncarnation(s.incarnation), evicted: !view.has(i),
              last_ts: this.#machine.lastTs(i) };
      }),
    };
  }

  /** Link statistics for metrics. */
  meshStats(): ReturnType<Mesh<Packet>['stats']> {
    return this.#mesh.stats();
  }

  /** Mesh link status for metrics. */
  meshStatus(): ReturnType<Mesh<Packet>['status']> {
    return this.#mesh.status();
  }

  /** The core's counts, for metrics. */
  coreStats(): ReturnType<Machine['stats']> & { clock: number } {
    return { ...this.#machine.stats(), clock: this.#machine.clock };
  }

  /** Waits (bounded) until every connected peer acknowledged what we sent, e.g. our releases. */
  async #drainLinks(boundMs: number): Promise<void> {
    const deadline = performance.now() + boundMs;
    await new Promise((r) => setImmediate(r));
    while (performance.now() < deadline) {
      if (this.#mesh.status().every((s) => !s.connected || s.unackedBytes === 0)) return;
      await new Promise((r) => setTimeout(r, 5));
    }
    this.#log.warn('stopping with releases not yet acknowledged by every peer');
  }

  /**
   * Graceful stop (DESIGN section 7): refuse new requests, end local holds with reason
   * `shutdown`, fail waiters, send the releases, give the links a moment to deliver them.
   */
  async stop(): Promise<void> {
    if (this.#stopping) return;
    this.#stopping = true;
    for (const req of [...this.#requests.values()]) {
      if (req.state === 'held') this.#end(req, 'shutdown');
      else this.#fail(req, new LockError(ErrorCode.ShuttingDown, 'this peer is shutting down'), 'shutdown', true);
    }
    if (this.#leaseTimer !== null) clearInterval(this.#leaseTimer);
    await this.#drainLinks(2000);
    await this.#mesh.close();
    this.#clockStore?.reserve(this.#machine.clock);
    this.#log.info('peer stopped');
  }
}
