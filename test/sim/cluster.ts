/**
 * The simulated cluster: real protocol cores (`Machine`) inside a tiny simulated runtime
 * that owns incarnations, handshakes, heartbeats, crashes, restarts and pauses, executes
 * every effect, and reports grants to the client bookkeeping. Time is virtual.
 */
import type { Effect, MachineEvent } from '../../src/core/machine.js';
import { Machine } from '../../src/core/machine.js';
import type { MachineFaults } from '../../src/core/faults.js';
import type { Incarnation } from '../../src/core/types.js';
import type { Clients } from './clients.js';
import type { Delivery, PeerEvent, Schedule } from './events.js';
import type { SimNetwork } from './network.js';
import type { Prng } from './prng.js';
import type { Scenario } from './scenario.js';
import type { Transcript } from './transcript.js';
import { formatEffects, formatEvent } from './transcript.js';

/** Virtual time shared by everything in one run. */
export interface SimTime {
  nowMs: number;
}

/** Wall clocks start here, so incarnations and 'wall' floors look like epoch ms. */
const epochMs = 1_700_000_000_000;

interface SimPeer {
  readonly index: number;
  machine: Machine | null;
  /** Incarnation counter: bumped at each crash, so stale events are recognised. */
  life: number;
  inc: Incarnation;
  paused: boolean;
  backlog: PeerEvent[];
  /** Peers whose hello this core has processed ('joined'), and their life. */
  readonly joined: Map<number, number>;
  /** Streams this incarnation has opened (hello sent), by target peer, and the target's life. */
  readonly dialed: Map<number, number>;
  /** Packets the core sent before their stream was open: they follow the hello. */
  readonly held: Map<number, { life: number; packets: Delivery['packet'][] }>;
  /** Persisted clock high-water mark (the data dir of DESIGN section 4). */
  hwm: number;
}

/** What a cluster is built from. */
export interface ClusterOptions {
  readonly scenario: Scenario;
  readonly rng: Prng;
  readonly faults: Partial<MachineFaults>;
  readonly network: SimNetwork;
  readonly schedule: Schedule;
  readonly clients: Clients;
  readonly transcript: Transcript;
  readonly time: SimTime;
}

/** The peers of one run and the sim runtime around each core. */
export class Cluster {
  readonly #o: ClusterOptions;
  readonly #peers: SimPeer[];
  /** Off in the liveness phase: waiting requests must then be granted, not cancelled. */
  cancelsEnabled = true;

  constructor(o: ClusterOptions) {
    this.#o = o;
    this.#peers = Array.from({ length: o.scenario.peers }, (_, index) => ({
      index,
      machine: null,
      life: 0,
      inc: { startMs: 0, nonce: 0 },
      paused: false,
      backlog: [],
      joined: new Map<number, number>(),
      dialed: new Map<number, number>(),
      held: new Map<number, { life: number; packets: Delivery['packet'][] }>(),
      hwm: o.scenario.clockStyle === 'tiny' ? o.rng.int(0, 2) : 0,
    }));
  }

  /** Number of configured peers. */
  get size(): number {
    return this.#peers.length;
  }

  /** Starts every peer; handshakes follow after random delays. */
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

  /** True when every peer is up, unpaused and has joined every other's current life. */
  settled(): boolean {
    return this.#peers.every((p) => p.machine !== null && !p.paused && this.#peers.every((q) => q === p || p.joined.get(q.index) === q.life));
  }

  /** Runs one peer-bound event, or parks it while its peer is paused. */
  handle(ev: PeerEvent): void {
    const target = this.#targetOf(ev);
    if (target === null) return;
    if (target.paused) {
      target.backlog.push(ev);
      return;
    }
    switch (ev.k) {
      case 'deliver':
        return this.#onDeliver(ev.d);
      case 'dial':
        return this.#onDial(target, ev);
      case 'heartbeat':
        return this.#onHeartbeat(target);
      case 'acquire':
        return this.#onAcquire(target, ev);
      case 'release':
        return this.#onRelease(target, ev);
    }
  }

  /** The peer an event must run on, or null when it is aimed at a dead incarnation. */
  #targetOf(ev: PeerEvent): SimPeer | null {
    switch (ev.k) {
      case 'deliver': {
        const to = this.#peer(ev.d.to);
        const alive = to.life === ev.d.toLife && this.#peer(ev.d.from).life === ev.d.fromLife;
        return alive && to.machine !== null ? to : null;
      }
      case 'dial': {
        const from = this.#peer(ev.from);
        const to = this.#peer(ev.to);
        const alive = from.life === ev.fromLife && to.life === ev.toLife && from.machine !== null && to.machine !== null;
        return alive ? from : null;
      }
      case 'heartbeat': {
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

  #onDeliver(d: Delivery): void {
    if (!this.#o.network.arrive(this.#o.time.nowMs, d)) return;
    const to = this.#peer(d.to);
    if (d.hello === null) {
      this.#step(to, { type: 'packet', from: d.from, inc: this.#peer(d.from).inc, packet: d.packet });
      return;
    }
    // The handshake of DESIGN section 4, one stream at a time: the receiver learns the
    // opener's incarnation and its clock when it sent the hello; the stream's data follows.
    to.joined.set(d.from, d.fromLife);
    this.#step(to, { type: 'joined', peer: d.from, inc: d.hello.inc, clock: d.hello.clock });
  }

  /**
   * Peer `from` opens its stream to `to` (one socket per ordered pair): the hello carries its
   * clock now, which may already be past requests its core queued for this stream before it
   * was open; those follow the hello, in order.
   */
  #onDial(from: SimPeer, ev: Extract<PeerEvent, { k: 'dial' }>): void {
    const now = this.#o.time.nowMs;
    if (!this.#o.network.reachable(ev.from, ev.to, now)) {
      this.#o.schedule(this.#o.network.healsAtMs(ev.from, ev.to), ev);
      return;
    }
    from.dialed.set(ev.to, ev.toLife);
    const hello = { inc: from.inc, clock: this.#machineOf(from).clock };
    this.#o.network.send(now, { from: ev.from, to: ev.to, fromLife: ev.fromLife, toLife: ev.toLife, hello, packet: { c: hello.clock, m: [] } });
    const held = from.held.get(ev.to);
    from.held.delete(ev.to);
    if (held !== undefined && held.life === ev.toLife) for (const packet of held.packets) this.#send(from, ev.to, ev.toLife, packet);
  }

  /** An empty packet carrying the clock: an ACK in this design (DESIGN section 4). */
  #onHeartbeat(p: SimPeer): void {
    const clock = this.#machineOf(p).clock;
    for (const [q, life] of p.joined) if (p.dialed.get(q) === life) this.#send(p, q, life, { c: clock, m: [] });
    this.#o.schedule(this.#o.time.nowMs + this.#o.scenario.heartbeatMs, { k: 'heartbeat', peer: p.index, life: p.life });
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

  /** One core step, then its effects in order. */
  #step(p: SimPeer, event: MachineEvent): void {
    const machine = this.#machineOf(p);
    const effects = machine.step(event);
    if (machine.clock > p.hwm) p.hwm = machine.clock;
    if (this.#o.transcript.enabled) this.#o.transcript.add(this.#o.time.nowMs, p.index, formatEvent(event) + formatEffects(effects));
    for (const f of effects) this.#execute(p, f);
  }

  #execute(p: SimPeer, f: Effect): void {
    const now = this.#o.time.nowMs;
    switch (f.type) {
      case 'send': {
        const life = p.joined.get(f.to);
        if (life === undefined) throw new Error(`p${p.index} sent to p${f.to}, which it never joined`);
        return this.#send(p, f.to, life, f.packet);
      }
      case 'granted':
        return this.#o.clients.granted(p.index, f, now);
      case 'refused':
        return this.#o.clients.endedByCore(f.ref, 'refused');
      case 'ended':
        return this.#o.clients.endedByCore(f.ref, f.reason);
    }
  }

  #send(p: SimPeer, to: number, toLife: number, packet: Delivery['packet']): void {
    if (this.#peer(to).life !== toLife) return; // That incarnation is gone: so is its link.
    if (p.dialed.get(to) !== toLife) {
      // The core joined `to` (its hello arrived) before our own stream to it is open.
      const held = p.held.get(to);
      if (held === undefined || held.life !== toLife) p.held.set(to, { life: toLife, packets: [packet] });
      else held.packets.push(packet);
      return;
    }
    this.#o.network.send(this.#o.time.nowMs, { from: p.index, to, fromLife: p.life, toLife, hello: null, packet });
  }

  /** Crash: the core and everything in flight to or from it are lost; holds end now. */
  crash(peer: number): void {
    const p = this.#peer(peer);
    if (p.machine === null) return;
    p.machine = null;
    p.life += 1;
    p.paused = false;
    p.backlog = [];
    p.joined.clear();
    p.dialed.clear();
    p.held.clear();
    this.#o.clients.crashed(peer);
    this.#o.transcript.add(this.#o.time.nowMs, peer, 'CRASH');
  }

  /**
   * (Re)start with a new incarnation and the clock floor of DESIGN section 4: the wall
   * clock or the persisted high-water mark, whichever is higher; handshake clocks raise it
   * further inside the core. Handshakes with every running peer follow.
   */
  restart(peer: number): void {
    const p = this.#peer(peer);
    if (p.machine !== null) return;
    const now = this.#o.time.nowMs;
    const wallMs = epochMs + now + (this.#o.scenario.skewMs[peer] ?? 0);
    const floor = Math.max(this.#o.scenario.clockStyle === 'wall' ? wallMs : 0, p.hwm);
    // A real restart takes more than a millisecond: the new incarnation is strictly newer.
    p.inc = { startMs: Math.max(wallMs, p.inc.startMs + 1), nonce: this.#o.rng.u32() };
    p.machine = new Machine({ self: peer, peerCount: this.size, clockFloor: floor, faults: this.#o.faults });
    this.#o.transcript.add(now, peer, `START inc=${p.inc.startMs}.${p.inc.nonce} floor=${floor}`);
    // Each direction is its own stream, dialed at its own time (DESIGN section 4).
    for (const q of this.#peers) {
      if (q === p || q.machine === null) continue;
      const { rng, scenario } = this.#o;
      this.#o.schedule(now + rng.int(0, scenario.connectMaxMs), { k: 'dial', from: peer, to: q.index, fromLife: p.life, toLife: q.life });
      this.#o.schedule(now + rng.int(0, scenario.connectMaxMs), { k: 'dial', from: q.index, to: peer, fromLife: q.life, toLife: p.life });
    }
    this.#o.schedule(now + this.#o.rng.int(1, this.#o.scenario.heartbeatMs), { k: 'heartbeat', peer, life: p.life });
  }

  /** Stops a peer's processing: its events wait, nothing is lost. */
  pause(peer: number, forMs: number): void {
    const p = this.#peer(peer);
    if (p.machine === null || p.paused) return;
    p.paused = true;
    this.#o.transcript.add(this.#o.time.nowMs, peer, `PAUSE ${forMs}ms`);
    this.#o.schedule(this.#o.time.nowMs + forMs, { k: 'resume', peer, life: p.life });
  }

  /** Ends a pause: the peer runs its backlog in arrival order. */
  resume(peer: number, life: number): void {
    const p = this.#peer(peer);
    if (p.life !== life || !p.paused) return;
    p.paused = false;
    this.#o.transcript.add(this.#o.time.nowMs, peer, `RESUME (${p.backlog.length} events waited)`);
    const backlog = p.backlog;
    p.backlog = [];
    for (const ev of backlog) this.handle(ev);
  }

  #peer(index: number): SimPeer {
    const p = this.#peers[index];
    if (p === undefined) throw new Error(`no peer ${index}`);
    return p;
  }

  #machineOf(p: SimPeer): Machine {
    if (p.machine === null) throw new Error(`p${p.index} is down`);
    return p.machine;
  }
}
