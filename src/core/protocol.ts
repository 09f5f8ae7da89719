/**
 * One incarnation of a peer, as a protocol: every decision a peer makes, in one pure object
 * (docs/design.md sections 3 to 5; docs/architecture.md, "One acquire, top to bottom"). It
 * owns the Lamport core (Machine), the eviction logic (Membership), the lease (LeaseTracker),
 * the watch on processes of its own id (ZombieWatch) and the rules that join them: when a new incarnation of a peer may join (successors, held
 * joins), what a superseded incarnation (a zombie) may still do, when a heartbeat may carry
 * the clock, when an echo may leave, and which clock another peer may not push us to.
 *
 * Each input (a peer joined, a payload, a heartbeat, an echo, a refusal, a tick, a local
 * client's event, a lease check) takes the lease clock's now and returns what to do, in the
 * order to do it, as raft's `Ready` does: messages to send (a confirmation only once its
 * promise is on disk), effects for local clients, the clock to persist, incarnations the
 * links must refuse, a rejoin, and log lines. The runtime (runtime/session.ts) is the I/O
 * loop around it: it reads, steps this, and carries out the outputs; the simulator drives
 * the same object through that loop.
 */
import type { LockError } from '../errors.js';
import type { EchoPromise, MembershipEffect } from './membership.js';
import { Membership } from './membership.js';
import type { Effect, MachineEvent } from './effects.js';
import type { IncarnationBook } from './incarnations.js';
import { LeaseTracker } from './lease.js';
import { Machine } from './machine.js';
import { Members } from './members.js';
import { membersOf, ordinalsIn } from './view.js';
import type { Decided, LogLevel, Payload, ProtocolOptions, ProtocolOutput } from './protocol-io.js';
import { highestClockOf, mayWait } from './protocol-io.js';
import type { Incarnation } from './types.js';
import { WaitingRoom } from './waiting-room.js';
import { ZombieWatch } from './zombie-watch.js';
import { compareIncarnation, formatIncarnation } from './types.js';

/** What most inputs answer (a lease check that changed nothing, a heartbeat): shared, not allocated. */
const noOutputs: readonly ProtocolOutput[] = Object.freeze([]);

/**
 * What views, metrics and the simulator's checker may read of a protocol (src/runtime/inspector.ts):
 * its queries, none of its inputs.
 */
export type ProtocolReader = Pick<PeerProtocol, 'incarnation' | 'machine' | 'supersededError' | 'peerId' | 'leaseValidUntilMs' | 'leaseSilentPeers'
  | 'joinsHeldLeftMs' | 'quietLeftMs' | 'leaseEchoedBy' | 'isEvicted' | 'membershipDecided' | 'waiting' | 'silence'>;

/** One incarnation's whole protocol: inputs in, outputs out. */
export class PeerProtocol {
  readonly incarnation: Incarnation;
  readonly #peerIds: readonly string[];
  readonly #machine: Machine;
  readonly #lease: LeaseTracker;
  readonly #membership: Membership;
  readonly #incarnations: IncarnationBook;
  /** The waiting stage: new incarnations kept out of the core, and the hold on joins (core/waiting-room.ts). */
  readonly #waiting: WaitingRoom;
  /** Echoes wait until then (ProtocolOptions.quietForMs). */
  readonly #quietUntilMs: number;
  /** How long an echo of ours may vouch for a lease (clock-rate margin times lease_ms). */
  readonly #vouchMs: number;
  /** Whether a newer process of our id runs or ran, and what a refusal of our links tells us (core/zombie-watch.ts). */
  readonly #zombie: ZombieWatch;
  #out: ProtocolOutput[] = [];
  /** Heartbeats this incarnation let be echoed (mayEcho said yes), for the simulator's checker. */
  #echoesAllowed = 0;

  constructor(opts: ProtocolOptions) {
    const members = opts.view === undefined ? Members.first(opts.self, opts.peerIds.length) : membersOf(opts.view, opts.self);
    this.incarnation = opts.incarnation;
    this.#peerIds = opts.peerIds;
    this.#incarnations = opts.incarnations;
    this.#machine = new Machine({ members, view: opts.view, speaks: opts.speaks, acceptor: opts.acceptor, clockFloor: Math.max(opts.clockFloor, opts.incarnation.startMs), queueLog: opts.queueLog });
    this.#lease = new LeaseTracker({ members, leaseMs: opts.leaseMs });
    this.#membership = new Membership({
      members, epoch: opts.view?.epoch, leaving: opts.view === undefined ? [] : ordinalsIn(opts.view, 'leaving'), evictMs: opts.evictMs, nowMs: opts.nowMs, clockRateMargin: opts.clockRateMargin,
      promises: opts.promises, incarnations: opts.incarnations,
    });
    this.#quietUntilMs = opts.nowMs + (opts.quietForMs ?? 0);
    this.#waiting = new WaitingRoom(opts.nowMs + (opts.joinsHeldForMs ?? 0));
    this.#vouchMs = opts.clockRateMargin * opts.leaseMs;
    if (this.#machine.removed) this.#waiting.left(opts.nowMs, this.#vouchMs);
    this.#zombie = new ZombieWatch({
      incarnation: opts.incarnation, incarnations: opts.incarnations,
      peerId: (p) => this.peerId(p),
      log: (level, fields, msg) => this.#log(level, fields, msg),
      push: (output) => this.#out.push(output),
      superseded: (nowMs) => this.#superseded(nowMs),
    });
  }

  // ---- inputs ----------------------------------------------------------------------------

  /** A local client's event (acquire, release, meta) or the runtime's own (fence), after a lease check. */
  local(event: MachineEvent, nowMs: number): readonly ProtocolOutput[] {
    this.#step(event, nowMs);
    return this.#take();
  }

  /** Re-checks the lease now: the runtime does before every event that enters this incarnation. */
  checkLease(nowMs: number): readonly ProtocolOutput[] {
    this.#refreshLease(nowMs);
    return this.#take();
  }

  /**
   * `peer`'s handshake told an acceptor id; `trusted` when it is the one recorded for `peer`
   * first (the runtime keeps them in view.json). A member whose data dir was lost or replaced
   * keeps its links and its locks, but none of its votes on a view counts (F70, F76).
   */
  acceptorTrusted(peer: number, trusted: boolean): void {
    this.#machine.trustAcceptor(peer, trusted);
  }

  /** The membership's heartbeat tick: suspicions, evictions, and joins no longer held. */
  tick(nowMs: number): readonly ProtocolOutput[] {
    if (this.#actsOnMembership()) this.#applyMembership(this.#membership.tick(nowMs), nowMs);
    this.#releaseHeldJoins(nowMs);
    this.#out.push(...this.#waiting.leaveNotices(nowMs, this.#machine.clock, (p) => this.peerId(p)));
    return this.#take();
  }

  /** The links admitted `inc` of `peer` (a handshake), whose clock was `clock`; `restarted`: it replaced an older one. */
  peerJoined(peer: number, inc: Incarnation, clock: number, restarted: boolean, nowMs: number): readonly ProtocolOutput[] {
    this.#membership.heard(peer, inc, nowMs);
    const predecessor = this.#membership.predecessorOf(peer, inc);
    if (predecessor !== null) {
      this.#log('warn', { remote: this.peerId(peer), incarnation: formatIncarnation(inc), predecessor: formatIncarnation(predecessor) },
        'a new incarnation of this peer waits until the majority evicts its predecessor, which may still hold a lease');
      this.#waiting.enter(peer, inc, clock, false);
      this.#step({ type: 'superseded', peer }, nowMs);
      this.#out.push(...this.#waiting.leaveNotices(nowMs, this.#machine.clock, (p) => this.peerId(p)));
    } else if (this.#waiting.joinsHeld(nowMs)) {
      this.#log('info', { remote: this.peerId(peer), incarnation: formatIncarnation(inc) }, 'peer waits: no peer joins while a heartbeat this peer echoed before may vouch for a lease');
      this.#waiting.enter(peer, inc, clock, restarted);
    } else {
      this.#join(peer, inc, clock, restarted, nowMs);
    }
    return this.#take();
  }

  /** A payload of `inc` of `from` arrived. */
  payload(from: number, inc: Incarnation, payload: Payload, nowMs: number): readonly ProtocolOutput[] {
    this.#onPayload(from, inc, payload, nowMs);
    return this.#take();
  }

  /**
   * A heartbeat of `inc` of `from`, sent at `sentAtMs` on its clock, arrived, carrying its
   * clock when it may count as an ack (rule 3a): its echo first, if one may leave
   * (`#mayEcho`), then an empty packet for the core. One of an incarnation that waits here is
   * not kept back as its packets are: the core ignores a packet of an incarnation it has not
   * met (PeerView.isLive), and a later heartbeat carries the clock again.
   */
  heartbeat(from: number, inc: Incarnation, clock: number | undefined, sentAtMs: number, nowMs: number): readonly ProtocolOutput[] {
    if (this.#mayEcho(from, inc, nowMs)) this.#out.push({ type: 'echo', to: from, inc, sentAtMs });
    if (!this.#refusedAhead(from, inc, clock ?? 0)) {
      this.#membership.heard(from, inc, nowMs);
      if (clock !== undefined) this.#step({ type: 'packet', from, inc, packet: { c: clock, m: [] } }, nowMs);
    }
    return this.#take();
  }

  /**
   * `peer` echoed our heartbeat sent at `sentAtMs` (lease clock): the lease extends from that
   * send time, never from the echo's arrival. A zombie's lease is not renewed: it lapses on
   * its own, and its holds end with it. Not earlier: a lease this peer reported (GET
   * /v1/cluster) must hold as long as it said (F-id under "Zombies" in docs/findings.md).
   */
  echo(peer: number, sentAtMs: number, nowMs: number): readonly ProtocolOutput[] {
    if (this.#actsOnMembership()) this.#lease.onEcho(peer, sentAtMs);
    this.#refreshLease(nowMs);
    return this.#take();
  }

  /** A peer refused this incarnation's link: `known` is the newest incarnation of our id it knows. */
  refused(peer: number, reason: string, known: Incarnation | undefined, knownEvicted: boolean, nowMs: number): readonly ProtocolOutput[] {
    this.#zombie.refused(peer, reason, known, knownEvicted, nowMs);
    return this.#take();
  }

  /**
   * Our heartbeat to `peer` is due. Rule 3a for heartbeats (docs/design.md section 3): it
   * carries our clock, which the peer takes as an ack, only when every earlier data frame for
   * it is on the socket ahead of it (`allSent`: by FIFO the peer then has them all), when that
   * peer's incarnation has joined our core, and when our core may ack at all. None from a zombie.
   */
  heartbeatDue(peer: number, allSent: boolean): readonly ProtocolOutput[] {
    if (!this.#zombie.speaks) return noOutputs;
    const clock = allSent && !this.#waiting.has(peer) && this.#machine.ackReady ? this.#machine.clock : undefined;
    return [{ type: 'heartbeat', to: peer, clock }];
  }

  // ---- what views, the next incarnation and the simulator's checker read -------------------

  /** The Lamport core, for read-only queries. */
  get machine(): Pick<Machine, 'clock' | 'synced' | 'ackReady' | 'leaseValid' | 'view' | 'clusterView' | 'viewAcked' | 'proposal' | 'removed' | 'lastTs' | 'incarnation' | 'queue' | 'queueSize' | 'head' | 'ownRef' | 'lockNames' | 'explain' | 'stats'> {
    return this.#machine;
  }

  /** ERR_SUPERSEDED once this incarnation is a zombie, else null. */
  get supersededError(): LockError | null {
    return this.#zombie.supersededError;
  }

  peerId(index: number): string {
    return this.#peerIds[index] ?? `#${index}`;
  }

  /** The lease end on the lease clock (-Infinity when none). */
  leaseValidUntilMs(): number {
    return this.#lease.validUntil();
  }

  /** Peers whose echoes no longer vouch for our lease. */
  leaseSilentPeers(nowMs: number): number[] {
    return this.#lease.silentPeers(nowMs);
  }

  /** Whether an echo of `peer`, voter or learner, would vouch for our lease at `nowMs` (a promotion waits for one). */
  leaseEchoedBy(peer: number, nowMs: number): boolean {
    return this.#lease.echoedBy(peer, nowMs);
  }

  quietLeftMs(nowMs: number): number {
    return Math.max(0, this.#quietUntilMs - nowMs);
  }

  joinsHeldLeftMs(nowMs: number): number {
    return this.#waiting.joinsHeldLeftMs(nowMs);
  }

  promises(nowMs: number): EchoPromise[] {
    return this.#membership.promises(nowMs);
  }

  isEvicted(peer: number, inc: Incarnation): boolean {
    return this.#membership.isEvicted(peer, inc);
  }

  membershipDecided(): Decided {
    return { ...this.#membership.decided, echoes: this.#echoesAllowed };
  }

  /** Peers whose new incarnation waits for its predecessor's eviction (or while joins are held). */
  waiting(): number[] {
    return this.#waiting.peers();
  }

  silence(peer: number, nowMs: number): ReturnType<Membership['silence']> {
    return this.#membership.silence(peer, nowMs);
  }

  // ---- the rules -----------------------------------------------------------------------------

  /**
   * Whether a heartbeat of `inc` of `peer` may be echoed now (its echo bound on disk aside,
   * which the runtime checks): not by a zombie, not while a previous process's promise may
   * bind, and not against a promise of this incarnation (Membership.mayEcho).
   */
  #mayEcho(peer: number, inc: Incarnation, nowMs: number): boolean {
    const may = this.#votes() && nowMs >= this.#quietUntilMs && this.#membership.mayEcho(peer, inc, nowMs);
    if (may) this.#echoesAllowed++;
    return may;
  }

  #take(): readonly ProtocolOutput[] {
    if (this.#out.length === 0) return noOutputs;
    const out = this.#zombie.speaks ? this.#out : this.#out.filter((o) => o.type !== 'send' && o.type !== 'sent');
    this.#out = [];
    return out;
  }

  #log(level: LogLevel, fields: Readonly<Record<string, unknown>>, msg: string): void {
    this.#out.push({ type: 'log', level, fields, msg });
  }

  /** Once joins are no longer held: every waiting peer with no live predecessor joins, then its packets. */
  #releaseHeldJoins(nowMs: number): void {
    if (this.#waiting.size === 0 || this.#waiting.joinsHeld(nowMs)) return;
    for (const [peer, waiting] of this.#waiting.entries()) {
      if (this.#membership.predecessorOf(peer, waiting.inc) !== null || this.#waiting.get(peer) !== waiting) continue;
      this.#waiting.leave(peer);
      this.#join(peer, waiting.inc, waiting.clock, waiting.restarted, nowMs);
      for (const packet of waiting.packets) this.#onPayload(peer, waiting.inc, packet, nowMs);
    }
  }

  #join(peer: number, inc: Incarnation, clock: number, restarted: boolean, nowMs: number): void {
    this.#log('info', { remote: this.peerId(peer), incarnation: formatIncarnation(inc), clock, restarted }, restarted ? 'peer restarted: dropping its old requests' : 'peer joined');
    if (restarted) this.#lease.forget(peer);
    this.#step({ type: 'joined', peer, inc, clock }, nowMs);
    this.#applyMembership(this.#membership.evictions(peer), nowMs);
  }

  #onPayload(from: number, inc: Incarnation, payload: Payload, nowMs: number): void {
    if (this.#refusedAhead(from, inc, highestClockOf(payload))) return;
    this.#membership.heard(from, inc, nowMs);
    if ('t' in payload) {
      // A zombie counts no confirmation (it decides no eviction); notices it still applies.
      if (payload.t === 'confirm' && !this.#actsOnMembership()) return;
      // Nor does it confirm a suspicion: the newer process of our id may have echoed the
      // suspect, and one id would vote on both sides of its eviction.
      if (payload.t === 'suspect' && !this.#actsOnMembership()) return;
      this.#applyMembership(this.#membership.onMessage(from, payload, nowMs), nowMs);
      return;
    }
    const waiting = this.#waiting.get(from);
    if (waiting === undefined) {
      this.#step({ type: 'packet', from, inc, packet: payload }, nowMs);
      return;
    }
    if (!this.#waiting.keep(waiting, payload)) this.#log('warn', { remote: this.peerId(from) }, 'dropping a packet of a waiting incarnation: too many');
    // Its VIEW is taken at once (F85): a peer that missed a view may have no other way to it, and
    // counts no eviction with peers at another. Not by a zombie or a removed member: a view with
    // fewer voters would count a zombie's old echoes anew (simulator seed 626 --changes).
    if (this.#actsOnMembership()) for (const msg of payload.m) if (msg.t === 'view') this.#step({ type: 'heldView', view: msg.view }, nowMs);
  }

  /** Whether `inc` of `from` is refused for a clock too far ahead (IncarnationBook.refusedAhead); the links cut it now, the first time. */
  #refusedAhead(from: number, inc: Incarnation, clock: number): boolean {
    const refused = this.#incarnations.refusedAhead(from, inc, clock);
    if (refused === 'now') this.#out.push({ type: 'refuse_ahead', peer: from, inc, clock });
    return refused !== null;
  }

  /** A newer process of our id runs or ran (ZombieWatch): its waiters end now, its holds with the lease. */
  #superseded(nowMs: number): void {
    // It grants nothing more: an old request of it granted now would sort below grants the
    // others made meanwhile.
    if (!this.#actsOnMembership()) this.#step({ type: 'fence' }, nowMs);
    this.#refreshLease(nowMs);
  }

  #applyMembership(effects: readonly MembershipEffect[], nowMs: number): void {
    for (const e of effects) {
      if (e.type === 'send') {
        // A confirmation is a promise: on disk before it leaves, or it does not leave.
        this.#out.push({ type: 'send', to: e.to, payload: e.msg, lazy: false, promise: e.msg.t === 'confirm' });
        continue;
      }
      this.#log('warn', { remote: this.peerId(e.peer), incarnation: formatIncarnation(e.inc) }, 'peer evicted by a majority: dropping its requests');
      // Membership recorded the eviction in the book already (stage 5); the links follow now (stage 6).
      this.#out.push({ type: 'refuse', peer: e.peer, inc: e.inc });
      this.#evicted(e, nowMs);
    }
  }

  /** A majority evicted `e.inc` of `e.peer`: the core drops it, or a successor waiting for it joins in its place. */
  #evicted(e: Extract<MembershipEffect, { type: 'evict' }>, nowMs: number): void {
    const waiting = this.#waiting.get(e.peer);
    // The waiting one itself was evicted (it died too): it rejoins as a newer one, if ever.
    // We met it (or an older one it replaced while joins were held), and the core drops it
    // from its view as it would a met one.
    const metHeld = waiting !== undefined && compareIncarnation(waiting.inc, e.inc) <= 0;
    if (metHeld) this.#waiting.leave(e.peer);
    // It joins once the membership tracks no live predecessor of it: the eviction of an
    // incarnation older than that predecessor (a notice passed on) frees nothing. While joins
    // are held, it waits on (#releaseHeldJoins), and the eviction is a step of its own: no
    // peer has joined the core yet, so no request of ours can go without it.
    const freed = waiting !== undefined && compareIncarnation(waiting.inc, e.inc) > 0 && !this.#waiting.joinsHeld(nowMs) &&
      this.#membership.predecessorOf(e.peer, waiting.inc) === null;
    if (waiting !== undefined && freed) {
      // Its predecessor's lease has lapsed: the waiting incarnation joins, replacing it in
      // one step (the core drops the predecessor's requests as for a restart), then its
      // packets. The successor requests nothing until our state transfer has synced it, so
      // nothing of it sorts before a request of ours granted between the two steps.
      this.#waiting.leave(e.peer);
      this.#join(e.peer, waiting.inc, waiting.clock, false, nowMs);
      this.#step({ type: 'evicted', peer: e.peer, inc: e.inc, last: e.last }, nowMs);
      for (const packet of waiting.packets) this.#onPayload(e.peer, waiting.inc, packet, nowMs);
      return;
    }
    this.#lease.forget(e.peer);
    this.#step({ type: 'evicted', peer: e.peer, inc: e.inc, last: e.last, metHeld }, nowMs);
    this.#out.push({ type: 'changed' });
  }

  /** Tells the core when the lease changed. */
  #refreshLease(nowMs: number): void {
    const valid = this.#lease.valid(nowMs);
    if (valid === this.#machine.leaseValid) return;
    this.#log(this.#machine.synced ? 'warn' : 'info', { valid }, valid ? 'lease held: a majority echoes our heartbeats' : 'no lease: a majority has not echoed a heartbeat within lease_ms; local holds end, nothing is granted');
    this.#stepCore({ type: 'lease', valid }, nowMs);
  }

  /**
   * A view the core applied is written to disk before the packets of its step leave (rule P3),
   * and the lease and the eviction count its majorities from now on; a removed peer that left
   * is tracked no more (rule P6).
   */
  #viewChanged(effects: readonly Effect[], nowMs: number): void {
    for (const effect of effects) {
      if (effect.type === 'view') {
        this.#out.push({ type: 'view', view: effect.view });
        this.#log('warn', { epoch: effect.view.epoch, members: effect.view.members.map((m) => m.id), level: effect.view.level },
          this.#machine.removed ? 'this peer was removed from the cluster: its requests end, it grants nothing more' : 'the view of the cluster changed');
        if (this.#machine.removed) {
          this.#waiting.left(nowMs, this.#vouchMs);
          continue;
        }
        this.#lease.setMembers(this.#machine.members);
        this.#membership.setMembers(this.#machine.members, nowMs, effect.view.epoch);
      } else if (effect.type === 'acceptor') {
        this.#out.push({ type: 'acceptor', state: effect.state });
      } else if (effect.type === 'left') {
        this.#membership.forget(effect.peer);
      }
    }
  }

  /** Whether this incarnation still echoes heartbeats: not once it is a zombie (its echoes would vote for its id beside the newer process's confirmations). */
  #votes(): boolean {
    return this.#actsOnMembership();
  }

  /** False once this incarnation is known to be superseded (a zombie). */
  #actsOnMembership(): boolean {
    return this.#zombie.supersededError === null && !this.#machine.removed;
  }

  /** Feeds one event to the core after re-checking the lease: a process resumed after a pause must not grant on a stale lease. */
  #step(event: MachineEvent, nowMs: number): void {
    this.#refreshLease(nowMs);
    this.#stepCore(event, nowMs);
  }

  #stepCore(event: MachineEvent, nowMs: number): void {
    const effects = this.#machine.step(event);
    this.#viewChanged(effects, nowMs);
    for (const effect of effects) {
      if (effect.type !== 'send') continue;
      // Core packets for a peer whose new incarnation waits were meant for the predecessor,
      // which the links can no longer reach; the new one gets the state transfer when it joins.
      if (!this.#waiting.has(effect.to)) this.#out.push({ type: 'send', to: effect.to, payload: effect.packet, lazy: mayWait(effect.packet, this.#machine), promise: false });
      this.#out.push({ type: 'sent', messages: Math.max(1, effect.packet.m.length) });
    }
    let local = false;
    for (const effect of effects) {
      if (effect.type === 'send' || effect.type === 'view' || effect.type === 'acceptor' || effect.type === 'left') continue;
      local = true;
      this.#out.push({ type: 'local', effect });
    }
    this.#out.push({ type: 'clock', clock: this.#machine.clock });
    if (this.#machine.synced) this.#zombie.synced();
    // A packet of acks only changes no queue, unless it let a request of ours be granted (the
    // watches compare the queues at each change: docs/design.md section 6, "Watches").
    if (event.type !== 'packet' || event.packet.m.length > 0 || local) this.#out.push({ type: 'changed' });
    // A view applied counts the lease by its voters: one that lapses with it fences now, after
    // this step's packets (no hold outlives its event without a lease).
    if (effects.some((e) => e.type === 'view')) this.#refreshLease(nowMs);
  }
}
