/**
 * The simulated cluster: for every peer, the real protocol core (`Machine`), the real lease
 * (`LeaseTracker`) and the real eviction logic (`Membership`), wired as src/runtime/
 * session.ts wires them, over a simulated mesh (`SimMesh`) that behaves like the real one.
 * The cluster owns incarnations: crashes, restarts, pauses and rejoins after an eviction.
 * Time is virtual; each peer reads it through its own drifting monotonic clock.
 */
import type { Effect, MachineEvent } from '../../src/core/machine.js';
import { Machine } from '../../src/core/machine.js';
import type { MachineFaults } from '../../src/core/faults.js';
import type { MembershipEffect, MembershipFaults } from '../../src/core/membership.js';
import { Membership } from '../../src/core/membership.js';
import { LeaseTracker } from '../../src/runtime/lease.js';
import { clockRateMargin } from '../../src/config.js';
import type { Checker, Hold } from './checker.js';
import type { Clients } from './clients.js';
import { PeerClock } from './clock.js';
import type { Payload, PeerEvent, Schedule } from './events.js';
import type { Wire } from './network.js';
import type { Prng } from './prng.js';
import type { Scenario } from './scenario.js';
import { SimMesh } from './sim-mesh.js';
import type { MeshHost } from './sim-mesh.js';
import type { Transcript } from './transcript.js';
import { formatEffects, formatEvent, formatMembership } from './transcript.js';

/** Virtual time shared by everything in one run. */
export interface SimTime {
  nowMs: number;
}

/** Wall clocks start here, so incarnations and 'wall' floors look like epoch ms. */
const epochMs = 1_700_000_000_000;

/** One peer process: its current incarnation's parts, and what survives incarnations. */
interface SimPeer {
  readonly index: number;
  readonly clock: PeerClock;
  /** Incarnation counter: bumped at each crash or rejoin, so stale events are recognised. */
  life: number;
  machine: Machine | null;
  lease: LeaseTracker;
  membership: Membership;
  mesh: SimMesh;
  paused: boolean;
  backlog: PeerEvent[];
  /** Persisted clock high-water mark (the data dir of DESIGN section 4). */
  hwm: number;
  /** The lease as the checker sees it, in virtual ms: valid on [since, until) without a gap. */
  leaseSinceMs: number;
  leaseUntilMs: number;
}

/** What a cluster is built from. */
export interface ClusterOptions {
  readonly scenario: Scenario;
  readonly rng: Prng;
  readonly faults: Partial<MachineFaults>;
  readonly membershipFaults: Partial<MembershipFaults>;
  /** False only for the accept-evicted mutant: the mesh never refuses an evicted incarnation. */
  readonly refuseEvicted: boolean;
  readonly wire: Wire;
  readonly schedule: Schedule;
  readonly clients: Clients;
  readonly checker: Checker;
  readonly transcript: Transcript;
  readonly time: SimTime;
}

/** The peers of one run and the sim runtime around each core. */
export class Cluster {
  readonly #o: ClusterOptions;
  readonly #peers: SimPeer[];
  readonly #host: MeshHost;
  readonly #leaseTickMs: number;
  /** Off in the liveness phase: waiting requests must then be granted, not cancelled. */
  cancelsEnabled = true;

  constructor(o: ClusterOptions) {
    this.#o = o;
    const s = o.scenario;
    // The session's lease timer period (src/runtime/session.ts).
    this.#leaseTickMs = Math.max(10, Math.min(100, Math.floor(s.leaseMs / 20)));
    this.#host = this.#meshHost();
    this.#peers = Array.from({ length: s.peers }, (_, index) => {
      const clock = new PeerClock({ rate: s.clockRates[index] ?? 1, offsetMs: s.clockOffsetsMs[index] ?? 0 });
      const p: SimPeer = {
        index,
        clock,
        life: 0,
        machine: null,
        lease: new LeaseTracker({ self: index, peerCount: s.peers, leaseMs: s.leaseMs }),
        membership: new Membership({ self: index, peerCount: s.peers, evictMs: s.evictMs, nowMs: 0, clockRateMargin }),
        mesh: new SimMesh({ self: index, peers: s.peers, life: 0, inc: { startMs: 0, nonce: 0 }, host: this.#host }),
        paused: false,
        backlog: [],
        hwm: s.clockStyle === 'tiny' ? o.rng.int(0, 2) : 0,
        leaseSinceMs: Number.POSITIVE_INFINITY,
        leaseUntilMs: Number.NEGATIVE_INFINITY,
      };
      return p;
    });
    o.checker.validity = (h, nowMs) => this.#holdValid(h, nowMs);
  }

  /** Number of configured peers. */
  get size(): number {
    return this.#peers.length;
  }

  /** Starts every peer; handshakes follow from their first heartbeat ticks. */
  start(): void {
    for (const p of this.#peers) this.restart(p.index);
  }

  /** True when the peer runs (maybe paused). */
  isUp(peer: number): boolean {
    return this.#peer(peer).machine !== null;
  }

  /** True when the peer is paused. */
  isPaused(peer: number): boolean {
    return this.#peer(peer).paused;
  }

  /** The current life of a peer (for events aimed at it). */
  lifeOf(peer: number): number {
    return this.#peer(peer).life;
  }

  /**
   * True when some other running peer has met the current incarnation of `peer`: only then
   * can it be evicted if it dies now (nobody suspects an incarnation nobody has heard).
   */
  isKnown(peer: number): boolean {
    const d = this.#peer(peer);
    return this.#peers.some((q) => q !== d && q.machine !== null && q.mesh.knownInc(peer) === d.mesh.inc);
  }

  /**
   * True when `peer` can never sync because of the dead peer: its current incarnation never
   * met any incarnation of `dead`, so by design (Machine.#onEvicted) it keeps waiting for
   * it, even after the others evicted it. Its requests never leave; nobody waits for them.
   */
  cannotSync(peer: number, dead: number | null): boolean {
    const p = this.#peer(peer);
    const m = p.machine;
    if (dead === null || m === null || m.synced || p.mesh.knownInc(dead) !== null) return false;
    // Synced with everyone else: the dead peer is the only one it waits for.
    return m.view().every((q) => q === dead || m.lastTs(q) > 0);
  }

  /** Why a request of a peer is not granted yet, as its core explains it (liveness reports). */
  explain(peer: number, ref: number): string {
    const p = this.#peer(peer);
    const m = p.machine;
    if (m === null) return 'peer down';
    const e = m.explain(ref);
    const lease = m.leaseValid ? 'lease' : 'no lease';
    const view = m.view().map((q) => `p${q}`).join(',');
    if (e === undefined) return `unknown to the core; ${lease}; view ${view}`;
    return `${e.state} at ${e.position}, missing [${e.missingPeers.map((q) => `p${q}`).join(',')}]; ${lease}; synced ${m.synced}; view ${view}`;
  }

  /** Runs one peer-bound event, or parks it while its peer is paused. */
  handle(ev: PeerEvent): void {
    const target = this.#targetOf(ev);
    if (target === null) {
      // A frame for a process that is gone: its TCP stack answers with a reset, so the
      // sender's socket closes (a dial to a dead peer fails fast, as in the real mesh).
      if (ev.k === 'frame') ev.conn.state = 'closed';
      return;
    }
    if (target.paused) {
      target.backlog.push(ev);
      return;
    }
    // The lease is checked before every event of a peer, as session.ts does in step().
    this.#checkLease(target);
    switch (ev.k) {
      case 'frame':
        target.mesh.onFrame(ev.conn, ev.f);
        break;
      case 'tick':
        this.#onTick(target);
        break;
      case 'leaseTick':
        this.#o.schedule(this.#afterLocal(target, this.#leaseTickMs), { k: 'leaseTick', peer: target.index, life: target.life });
        break;
      case 'acquire':
        this.#onAcquire(target, ev);
        break;
      case 'release':
        this.#onRelease(target, ev);
        break;
    }
    this.#checkSelfFence(target);
  }

  /** The peer an event must run on, or null when it is aimed at a dead incarnation. */
  #targetOf(ev: PeerEvent): SimPeer | null {
    switch (ev.k) {
      case 'frame': {
        const to = this.#peer(ev.to);
        return to.life === ev.toLife && to.machine !== null && ev.conn.state !== 'closed' ? to : null;
      }
      case 'tick':
      case 'leaseTick': {
        const p = this.#peer(ev.peer);
        return p.life === ev.life && p.machine !== null ? p : null;
      }
      case 'acquire':
      case 'release': {
        const p = this.#peer(ev.peer);
        const req = this.#o.clients.get(ev.ref);
        return req !== undefined && req.life === p.life && p.machine !== null ? p : null;
      }
    }
  }

  /** The session's heartbeat-period timer: the mesh's heartbeats and watchdogs, then eviction. */
  #onTick(p: SimPeer): void {
    const localMs = p.clock.local(this.#o.time.nowMs);
    p.mesh.onTick(localMs);
    if (p.machine !== null && p.life === p.mesh.life) this.#applyMembership(p, p.membership.tick(localMs));
    if (p.machine !== null) this.#o.schedule(this.#afterLocal(p, this.#o.scenario.heartbeatMs), { k: 'tick', peer: p.index, life: p.life });
  }

  #onAcquire(p: SimPeer, ev: Extract<PeerEvent, { k: 'acquire' }>): void {
    const req = this.#o.clients.get(ev.ref);
    if (req === undefined || req.state !== 'queued') return;
    this.#o.clients.submitted(req);
    this.#step(p, { type: 'acquire', ref: ev.ref, lock: ev.lock, spec: ev.spec, noWait: ev.noWait });
  }

  #onRelease(p: SimPeer, ev: Extract<PeerEvent, { k: 'release' }>): void {
    const req = this.#o.clients.get(ev.ref);
    if (req === undefined) return;
    if (ev.end === 'cancelled' ? req.state === 'held' || !this.cancelsEnabled : req.state !== 'held') return;
    this.#o.clients.finish(req, ev.end);
    this.#o.transcript.add(this.#o.time.nowMs, p.index, `client ${ev.end} ref=${ev.ref}`);
    this.#step(p, { type: 'release', ref: ev.ref });
  }

  /** Session.step: the lease check first, then one core step and its effects in order. */
  #step(p: SimPeer, event: MachineEvent): void {
    const machine = p.machine;
    if (machine === null) return;
    if (event.type !== 'lease') this.#checkLease(p);
    const effects = machine.step(event);
    if (machine.clock > p.hwm) p.hwm = machine.clock;
    if (this.#o.transcript.enabled) this.#o.transcript.add(this.#o.time.nowMs, p.index, formatEvent(event) + formatEffects(effects));
    for (const f of effects) this.#execute(p, f);
  }

  #execute(p: SimPeer, f: Effect): void {
    const now = this.#o.time.nowMs;
    switch (f.type) {
      case 'send':
        return p.mesh.send(f.to, f.packet);
      case 'granted':
        return this.#o.clients.granted(p.index, f, now);
      case 'refused':
        return this.#o.clients.endedByCore(f.ref, 'refused');
      case 'ended':
        return this.#o.clients.endedByCore(f.ref, f.reason);
    }
  }

  /** Session.#checkLease: tell the core when the lease changed. */
  #checkLease(p: SimPeer): void {
    if (p.machine === null) return;
    const valid = p.lease.valid(p.clock.local(this.#o.time.nowMs));
    if (valid !== p.machine.leaseValid) this.#step(p, { type: 'lease', valid });
  }

  /** Session.#applyMembership: sends, or an eviction applied everywhere it matters. */
  #applyMembership(p: SimPeer, effects: readonly MembershipEffect[]): void {
    for (const e of effects) {
      if (e.type === 'send') {
        if (this.#o.transcript.enabled) this.#o.transcript.add(this.#o.time.nowMs, p.index, `send p${e.to} ${formatMembership(e.msg)}`);
        p.mesh.send(e.to, e.msg);
        continue;
      }
      this.#o.transcript.add(this.#o.time.nowMs, p.index, `EVICT p${e.peer} inc=${e.inc.startMs}.${e.inc.nonce}`);
      if (this.#o.refuseEvicted) p.mesh.refuseIncarnation(e.peer, e.inc);
      p.lease.forget(e.peer);
      this.#leaseChanged(p);
      this.#step(p, { type: 'evicted', peer: e.peer, inc: e.inc });
    }
  }

  /** What the simulated mesh of each peer reports to its runtime (Session's mesh events). */
  #meshHost(): MeshHost {
    const live = (peer: number, life: number): SimPeer | null => {
      const p = this.#peer(peer);
      return p.life === life && p.machine !== null ? p : null;
    };
    return {
      wire: this.#o.wire,
      rng: this.#o.rng,
      schedule: this.#o.schedule,
      nowMs: () => this.#o.time.nowMs,
      localMs: (peer) => this.#peer(peer).clock.local(this.#o.time.nowMs),
      heartbeatMs: this.#o.scenario.heartbeatMs,
      lifeOf: (peer) => this.#peer(peer).life,
      isUp: (peer) => this.#peer(peer).machine !== null,
      clockOf: (peer) => this.#peer(peer).machine?.clock ?? 0,
      onPeerJoined: (self, life, peer, inc, clock, restarted) => {
        const p = live(self, life);
        if (p === null) return;
        p.membership.heard(peer, inc, p.clock.local(this.#o.time.nowMs));
        if (restarted) {
          p.lease.forget(peer);
          this.#leaseChanged(p);
        }
        this.#step(p, { type: 'joined', peer, inc, clock });
        this.#applyMembership(p, p.membership.evictions(peer));
      },
      onPayload: (self, life, from, inc, payload: Payload) => {
        const p = live(self, life);
        if (p === null) return;
        const localMs = p.clock.local(this.#o.time.nowMs);
        p.membership.heard(from, inc, localMs);
        if ('t' in payload) {
          if (this.#o.transcript.enabled) this.#o.transcript.add(this.#o.time.nowMs, self, `recv p${from} ${formatMembership(payload)}`);
          this.#applyMembership(p, p.membership.onMessage(from, payload, localMs));
        }
        else this.#step(p, { type: 'packet', from, inc, packet: payload });
      },
      onHeartbeat: (self, life, from, inc, clock) => {
        const p = live(self, life);
        if (p === null) return;
        p.membership.heard(from, inc, p.clock.local(this.#o.time.nowMs));
        this.#step(p, { type: 'packet', from, inc, packet: { c: clock, m: [] } });
      },
      onEcho: (self, life, peer, sentAtMs) => {
        const p = live(self, life);
        if (p === null) return;
        p.lease.onEcho(peer, sentAtMs);
        if (this.#o.transcript.enabled) this.#o.transcript.add(this.#o.time.nowMs, self, `echo from p${peer} sent@${sentAtMs.toFixed(1)} lease until ${p.clock.global(p.lease.validUntil()).toFixed(1)}`);
        this.#leaseChanged(p);
        this.#checkLease(p);
      },
      mayEcho: (self, peer, inc) => {
        const p = this.#peer(self);
        return p.membership.mayEcho(peer, inc, p.clock.local(this.#o.time.nowMs));
      },
      onEvicted: (self, life) => {
        const p = live(self, life);
        if (p !== null) this.#rejoin(p);
      },
      log: (peer, what) => this.#o.transcript.add(this.#o.time.nowMs, peer, what),
    };
  }

  /**
   * Tracks the lease for the checker: the virtual time until which it holds, and since when
   * it has held without a gap (a lapse between two events counts even if nobody looked).
   */
  #leaseChanged(p: SimPeer): void {
    const now = this.#o.time.nowMs;
    const untilLocal = p.lease.validUntil();
    const until = Number.isFinite(untilLocal) ? p.clock.global(untilLocal) : untilLocal;
    if (until > now && !(p.leaseUntilMs > now)) p.leaseSinceMs = now;
    p.leaseUntilMs = until;
  }

  /**
   * A hold is valid while its peer's lease has held without a gap since the grant (and the
   * hold is not ended: the checker forgets ended holds). A tiny margin absorbs the rounding
   * of clock conversions.
   */
  #holdValid(h: Hold, nowMs: number): boolean {
    const p = this.#peer(h.peer);
    return p.life === h.life && p.leaseSinceMs <= h.grantedMs && p.leaseUntilMs > nowMs + 1e-6;
  }

  /** The self-fencing rule: a running peer without a lease has no holds after its event. */
  #checkSelfFence(p: SimPeer): void {
    if (p.machine === null || p.paused) return;
    if (p.lease.valid(p.clock.local(this.#o.time.nowMs))) return;
    const held = this.#o.clients.heldOf(p.index);
    if (held > 0) this.#o.checker.selfFence(this.#o.time.nowMs, `p${p.index} has no lease but ${held} hold(s) still granted after its event`);
  }

  #afterLocal(p: SimPeer, ms: number): number {
    const now = this.#o.time.nowMs;
    return Math.max(now, p.clock.global(p.clock.local(now) + ms));
  }

  /** Crash: the core, its links and everything in flight to or from it are lost. */
  crash(peer: number): void {
    const p = this.#peer(peer);
    if (p.machine === null) return;
    p.machine = null;
    p.mesh.closeAll();
    // Sockets whose frames wait unread in a paused process are reset too (a dial among them).
    for (const ev of p.backlog) if (ev.k === 'frame') ev.conn.state = 'closed';
    p.life += 1;
    p.paused = false;
    p.backlog = [];
    this.#o.clients.endAll(peer, 'crashed');
    this.#o.transcript.add(this.#o.time.nowMs, peer, 'CRASH');
  }

  /**
   * Peer.#rejoin: the majority evicted this incarnation. Its clients' holds and waiters end
   * with reason `evicted`, and a new incarnation starts at once, its clock above the old one's.
   */
  #rejoin(p: SimPeer): void {
    const old = p.machine;
    if (old === null) return;
    this.#o.transcript.add(this.#o.time.nowMs, p.index, 'REJOIN: this incarnation was evicted');
    this.#o.clients.endAll(p.index, 'evicted');
    p.mesh.closeAll();
    p.machine = null;
    p.life += 1;
    this.#startIncarnation(p, Math.max(this.#wallFloor(p), old.clock + 1, p.hwm));
  }

  /**
   * (Re)start with a new incarnation and the clock floor of DESIGN section 4: the wall
   * clock or the persisted high-water mark, whichever is higher; handshake clocks raise it
   * further inside the core.
   */
  restart(peer: number): void {
    const p = this.#peer(peer);
    if (p.machine !== null) return;
    this.#startIncarnation(p, Math.max(this.#wallFloor(p), p.hwm));
  }

  #wallFloor(p: SimPeer): number {
    return this.#o.scenario.clockStyle === 'wall' ? this.#wallMs(p) : 0;
  }

  #wallMs(p: SimPeer): number {
    return Math.floor(epochMs + this.#o.time.nowMs + (this.#o.scenario.skewMs[p.index] ?? 0));
  }

  #startIncarnation(p: SimPeer, floor: number): void {
    const { scenario: s, rng, time } = this.#o;
    const now = time.nowMs;
    const localMs = p.clock.local(now);
    // A real restart takes more than a millisecond: the new incarnation is strictly newer.
    const inc = { startMs: Math.max(this.#wallMs(p), p.mesh.inc.startMs + 1), nonce: rng.u32() };
    p.machine = new Machine({ self: p.index, peerCount: s.peers, clockFloor: floor, faults: this.#o.faults });
    p.lease = new LeaseTracker({ self: p.index, peerCount: s.peers, leaseMs: s.leaseMs });
    p.membership = new Membership({ self: p.index, peerCount: s.peers, evictMs: s.evictMs, nowMs: localMs, clockRateMargin, faults: this.#o.membershipFaults });
    p.mesh = new SimMesh({ self: p.index, peers: s.peers, life: p.life, inc, host: this.#host });
    p.paused = false;
    p.backlog = [];
    p.leaseUntilMs = Number.NEGATIVE_INFINITY;
    this.#leaseChanged(p);
    this.#o.transcript.add(now, p.index, `START inc=${inc.startMs}.${inc.nonce} floor=${floor}`);
    this.#checkLease(p); // Session.start: a new incarnation holds no lease until echoes come.
    this.#o.schedule(now + rng.int(0, Math.min(s.connectMaxMs, s.heartbeatMs)), { k: 'tick', peer: p.index, life: p.life });
    this.#o.schedule(this.#afterLocal(p, this.#leaseTickMs), { k: 'leaseTick', peer: p.index, life: p.life });
  }

  /** Stops a peer's processing: its events and timers wait, nothing is lost. */
  pause(peer: number, forMs: number): void {
    const p = this.#peer(peer);
    if (p.machine === null || p.paused) return;
    p.paused = true;
    this.#o.transcript.add(this.#o.time.nowMs, peer, `PAUSE ${forMs}ms`);
    this.#o.schedule(this.#o.time.nowMs + forMs, { k: 'resume', peer, life: p.life });
  }

  /** Ends a pause: the lease check runs first (as in the runtime), then the backlog in order. */
  resume(peer: number, life: number): void {
    const p = this.#peer(peer);
    if (p.life !== life || !p.paused) return;
    p.paused = false;
    this.#o.transcript.add(this.#o.time.nowMs, peer, `RESUME (${p.backlog.length} events waited)`);
    this.#checkLease(p);
    this.#checkSelfFence(p);
    const backlog = p.backlog;
    p.backlog = [];
    for (const ev of backlog) this.handle(ev);
  }

  #peer(index: number): SimPeer {
    const p = this.#peers[index];
    if (p === undefined) throw new Error(`no peer ${index}`);
    return p;
  }
}
