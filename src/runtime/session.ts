/**
 * One incarnation of a peer in the cluster: the protocol core, the mesh of links, the
 * lease and the eviction logic, and the timers that drive them (DESIGN sections 4, 5).
 * When the incarnation must end (the majority evicted it, or a link overflowed), the
 * session asks the runtime to rejoin: the runtime ends its holds and starts a new session
 * with a new incarnation, whose clock starts above everything this one used.
 */
import { randomInt } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { assert } from '../assert.js';
import type { ClusterConfig } from '../config.js';
import { clockRateMargin, wsListenAddress } from '../config.js';
import { Machine } from '../core/machine.js';
import type { Effect, MachineEvent } from '../core/machine.js';
import { Membership, isMembershipMessage } from '../core/membership.js';
import type { MembershipEffect, MembershipMessage } from '../core/membership.js';
import type { Packet } from '../core/messages.js';
import { isPacket } from '../core/messages.js';
import type { Incarnation } from '../core/types.js';
import { formatIncarnation } from '../core/types.js';
import { isLockError } from '../errors.js';
import type { Logger } from '../log.js';
import { Mesh } from '../transport/mesh.js';
import { LeaseTracker } from './lease.js';

/** What travels between the runtimes of two peers: core packets and membership messages. */
export type Payload = Packet | MembershipMessage;

function isPayload(v: unknown): v is Payload {
  return isPacket(v) || isMembershipMessage(v);
}

/** The core effects the runtime handles itself (sends are the session's business). */
export type LocalEffect = Exclude<Effect, { type: 'send' }>;

/** How a session reports to its runtime. */
export interface SessionHooks {
  onEffect(effect: LocalEffect): void;
  /** This incarnation cannot go on (evicted, link overflow): end holds, start a new one. */
  onRejoin(reason: 'evicted' | 'link_overflow'): void;
  /** Something a viewer may care about changed (queues, membership). */
  onChanged(): void;
  onSent(messages: number): void;
  onRtt(peer: string, rttMs: number): void;
  /** The clock moved: persist the high-water mark. */
  onClock(clock: number): void;
}

/** Construction parameters of a session. */
export interface SessionOptions {
  readonly config: ClusterConfig;
  readonly index: number;
  readonly clockFloor: number;
  readonly logger: Logger;
  readonly wsPort?: number | undefined;
}

/** One incarnation: core + mesh + lease + membership. */
export class Session {
  readonly incarnation: Incarnation;
  readonly #config: ClusterConfig;
  readonly #index: number;
  readonly #log: Logger;
  readonly #hooks: SessionHooks;
  readonly #machine: Machine;
  readonly #lease: LeaseTracker;
  readonly #membership: Membership;
  readonly #mesh: Mesh<Payload>;
  /** When each remote request was first seen here, by `peer:ts`. */
  readonly #seenAt = new Map<string, number>();
  readonly #timers: NodeJS.Timeout[] = [];
  #closed = false;

  constructor(opts: SessionOptions, hooks: SessionHooks) {
    this.#config = opts.config;
    this.#index = opts.index;
    this.#log = opts.logger.child({ component: 'peer' });
    this.#hooks = hooks;
    this.incarnation = { startMs: Date.now(), nonce: randomInt(0, 2 ** 31) };
    const peerCount = opts.config.peers.length;
    this.#machine = new Machine({ self: opts.index, peerCount, clockFloor: opts.clockFloor });
    this.#lease = new LeaseTracker({ self: opts.index, peerCount, leaseMs: opts.config.leaseMs });
    this.#membership = new Membership({ self: opts.index, peerCount, evictMs: opts.config.evictMs, nowMs: performance.now(), clockRateMargin });
    this.#mesh = this.#createMesh(opts);
  }

  #createMesh(opts: SessionOptions): Mesh<Payload> {
    const peers = opts.config.peers.map((p, index) => ({ id: p.id, index, ws: p.ws }));
    const self = peers[this.#index];
    assert(self !== undefined, 'self is configured');
    const listen = wsListenAddress(self.ws);
    return new Mesh<Payload>(
      {
        cluster: opts.config.cluster, secret: opts.config.secret, self, peers: peers.filter((p) => p.index !== this.#index),
        listen: { host: listen.host, port: opts.wsPort ?? listen.port }, incarnation: this.incarnation,
        heartbeatMs: opts.config.heartbeatMs, isPayload, clock: () => this.#machine.clock,
        mayEcho: (peer, inc) => this.#membership.mayEcho(peer, inc, performance.now()),
        logger: opts.logger.child({ component: 'mesh' }), ...(opts.config.tls === undefined ? {} : { tls: opts.config.tls }),
      },
      {
        onPeerJoined: (peer, inc, clock, restarted) => this.#onPeerJoined(peer, inc, clock, restarted),
        onPayload: (from, inc, payload) => this.#onPayload(from, inc, payload),
        onHeartbeat: (from, inc, clock) => {
          this.#membership.heard(from, inc, performance.now());
          if (clock !== undefined) this.step({ type: 'packet', from, inc, packet: { c: clock, m: [] } });
        },
        onEcho: (peer, sentAtMs, rttMs) => {
          this.#lease.onEcho(peer, sentAtMs);
          this.#hooks.onRtt(this.peerId(peer), rttMs);
          this.#checkLease();
        },
        onConnection: (peer, connected) => this.#log.info({ remote: this.peerId(peer), connected }, connected ? 'link up' : 'link down'),
        onRefused: (peer, reason) => this.#onRefused(peer, reason),
      },
    );
  }

  /** Starts the mesh and the timers of leases and eviction. */
  async start(): Promise<void> {
    await this.#mesh.start();
    const leaseTickMs = Math.max(10, Math.min(100, Math.floor(this.#config.leaseMs / 20)));
    this.#timers.push(setInterval(() => this.#checkLease(), leaseTickMs));
    this.#timers.push(setInterval(() => this.#applyMembership(this.#membership.tick(performance.now())), this.#config.heartbeatMs));
    this.#checkLease();
    this.#log.info({ incarnation: formatIncarnation(this.incarnation), clock: this.#machine.clock }, 'incarnation started');
  }

  /** The id of the peer at `index`. */
  peerId(index: number): string {
    return this.#config.peers[index]?.id ?? `#${index}`;
  }

  #onPeerJoined(peer: number, inc: Incarnation, clock: number, restarted: boolean): void {
    this.#log.info({ remote: this.peerId(peer), incarnation: formatIncarnation(inc), clock, restarted }, restarted ? 'peer restarted: dropping its old requests' : 'peer joined');
    this.#membership.heard(peer, inc, performance.now());
    if (restarted) {
      this.#lease.forget(peer);
      this.#forgetSeen(peer);
    }
    this.step({ type: 'joined', peer, inc, clock });
    this.#applyMembership(this.#membership.evictions(peer));
  }

  #onPayload(from: number, inc: Incarnation, payload: Payload): void {
    this.#membership.heard(from, inc, performance.now());
    if ('t' in payload) {
      this.#applyMembership(this.#membership.onMessage(from, payload, performance.now()));
      return;
    }
    const now = Date.now();
    for (const m of payload.m) {
      const key = `${from}:${m.ts}`;
      if (m.t === 'req') {
        if (!this.#seenAt.has(key)) this.#seenAt.set(key, now);
      } else this.#seenAt.delete(key);
    }
    this.step({ type: 'packet', from, inc, packet: payload });
  }

  #onRefused(peer: number, reason: string): void {
    if (reason !== 'evicted' || this.#closed) return;
    this.#log.warn({ remote: this.peerId(peer) }, 'this incarnation was evicted by the majority: rejoining as a new one');
    this.#hooks.onRejoin('evicted');
  }

  #applyMembership(effects: readonly MembershipEffect[]): void {
    for (const e of effects) {
      if (e.type === 'send') {
        this.#send(e.to, e.msg);
        continue;
      }
      this.#log.warn({ remote: this.peerId(e.peer), incarnation: formatIncarnation(e.inc) }, 'peer evicted by a majority: dropping its requests');
      this.#mesh.refuseIncarnation(e.peer, e.inc);
      this.#lease.forget(e.peer);
      this.#forgetSeen(e.peer);
      this.step({ type: 'evicted', peer: e.peer, inc: e.inc });
      this.#hooks.onChanged();
    }
  }

  #forgetSeen(peer: number): void {
    const prefix = `${peer}:`;
    for (const key of this.#seenAt.keys()) if (key.startsWith(prefix)) this.#seenAt.delete(key);
  }

  #checkLease(): void {
    const valid = this.#lease.valid(performance.now());
    if (valid === this.#machine.leaseValid) return;
    const level = this.#machine.synced ? 'warn' : 'info';
    this.#log[level]({ valid }, valid ? 'lease held: a majority echoes our heartbeats' : 'no lease: a majority has not echoed a heartbeat within lease_ms; local holds end, nothing is granted');
    this.step({ type: 'lease', valid });
    this.#hooks.onChanged();
  }

  /** Feeds one event to the core and executes its effects, in order. */
  step(event: MachineEvent): void {
    if (this.#closed) return;
    // The lease is re-checked before every event, not only on its timer: a process resumed
    // after a pause must not grant on a stale lease before the timer fires.
    if (event.type !== 'lease') this.#checkLease();
    const effects = this.#machine.step(event);
    for (const effect of effects) {
      if (effect.type === 'send') {
        this.#send(effect.to, effect.packet);
        this.#hooks.onSent(Math.max(1, effect.packet.m.length));
      } else this.#hooks.onEffect(effect);
    }
    this.#hooks.onClock(this.#machine.clock);
    if (event.type !== 'packet' || event.packet.m.length > 0) this.#hooks.onChanged();
  }

  /**
   * Sends on a link. A link whose resend buffer is full cannot take the message, and
   * dropping it would break exactly-once delivery, so this incarnation ends instead.
   */
  #send(to: number, payload: Payload): void {
    try {
      this.#mesh.send(to, payload);
    } catch (err) {
      if (!isLockError(err)) throw err;
      this.#log.error({ remote: this.peerId(to), code: err.code }, `${err.message}: ending this incarnation rather than losing a message`);
      queueMicrotask(() => this.#hooks.onRejoin('link_overflow'));
    }
  }

  /** The protocol core, for read-only queries (views, explanations). */
  get machine(): Pick<Machine, 'clock' | 'synced' | 'leaseValid' | 'view' | 'lastTs' | 'queue' | 'lockNames' | 'explain' | 'stats'> {
    return this.#machine;
  }

  /** Milliseconds the lease still holds (0 when it does not). */
  leaseValidForMs(): number {
    const now = performance.now();
    return Math.max(0, Math.round(Math.min(this.#lease.validUntil() - now, 1e12)));
  }

  /** Ids of the peers whose heartbeat echoes no longer vouch for our lease. */
  leaseSilentPeers(): string[] {
    return this.#lease.silentPeers(performance.now()).map((p) => this.peerId(p));
  }

  /** When a remote request was first seen here (epoch ms), if known. */
  seenAt(peer: number, ts: number): number | null {
    return this.#seenAt.get(`${peer}:${ts}`) ?? null;
  }

  /** Link status lines. */
  meshStatus(): ReturnType<Mesh<Payload>['status']> {
    return this.#mesh.status();
  }

  /** Link counters. */
  meshStats(): ReturnType<Mesh<Payload>['stats']> {
    return this.#mesh.stats();
  }

  /** Waits (bounded) until every connected peer acknowledged what we sent, e.g. our releases. */
  async drain(boundMs: number): Promise<boolean> {
    const deadline = performance.now() + boundMs;
    await new Promise((r) => setImmediate(r));
    while (performance.now() < deadline) {
      if (this.#mesh.status().every((s) => !s.connected || s.unackedBytes === 0)) return true;
      await new Promise((r) => setTimeout(r, 5));
    }
    return false;
  }

  /** Stops timers and links; events arriving afterwards are ignored. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const t of this.#timers) clearInterval(t);
    await this.#mesh.close();
  }
}
