/**
 * The protocol core: Lamport's mutual exclusion (docs/design.md section 3) as a pure state machine,
 * `step(event) -> effects` (the etcd-io/raft pattern). No sockets, timers, clocks or
 * randomness: the runtime feeds events and executes effects, and the simulator drives the
 * very same code under any interleaving it draws from a seed.
 */
import { assert, assertNever } from '../assert.js';
import { limits } from '../limits.js';
import type { Effect, Explanation, MachineEvent } from './effects.js';
import { EffectBuffer } from './effects.js';
import type { OwnRequest, QueueEntry } from './lock-table.js';
import type { QueueLog } from './queue-log.js';
import { LockTable, addStamp } from './lock-table.js';
import { removeOneByOneMax } from './request-queue.js';
import type { Packet, PeerMessage, ReleaseMessage } from './messages.js';
import { fromRequestMessage, toRequestMessage, viewLock } from './messages.js';
import type { Members } from './members.js';
import { PeerView } from './peer-view.js';
import type { Proposal } from './view-changes.js';
import { ViewChanges } from './view-changes.js';
import { ViewSteps } from './view-steps.js';
import type { Incarnation, Meta, RequestPart } from './types.js';
import { tokenOf } from './types.js';
import type { AcceptorState } from './acceptor.js';
import type { AgreedView } from './view.js';
import { ordinalsIn } from './view.js';

export type { Effect, Explanation, MachineEvent } from './effects.js';
export type { QueueEntry } from './lock-table.js';

/** Construction parameters of one peer's machine. */
export interface MachineOptions {
  /** The members of the view, this peer among them (core/members.ts). */
  readonly members: Members;
  /**
   * The view they come from, for a machine that takes part in changes of it
   * (docs/reconfiguration.md): none, and it ignores every message about views.
   */
  readonly view?: AgreedView | undefined;
  /** The newest protocol level this binary speaks, told in head acks (rule P9). */
  readonly speaks?: number | undefined;
  /** The acceptor state kept on disk for the epoch after the view's (rule P2): promises survive restarts. */
  readonly acceptor?: AcceptorState | undefined;
  /** Lowest clock this incarnation may use: wall-clock ms or a persisted high-water mark. */
  readonly clockFloor: number;
  /** Where the changes of the queues are told (the watches), if anywhere. */
  readonly queueLog?: QueueLog | undefined;
}

/** One peer's protocol state: clock, queues, lastTs, view and its own requests. */
export class Machine {
  readonly self: number;
  #members: Members;
  #clock: number;
  /** The changes of the view: head acks, views, leaving (core/view-changes.ts), and their steps (core/view-steps.ts). */
  readonly #changes: ViewChanges;
  readonly #viewSteps: ViewSteps;
  readonly #locks: LockTable;
  /** The view, the incarnations met and refused, and lastTs per peer. */
  readonly #peers: PeerView;
  #leaseValid = true;
  /** What the current step produces, emptied at its end. */
  readonly #out = new EffectBuffer();

  constructor(opts: MachineOptions) {
    this.self = opts.members.self;
    this.#members = opts.members;
    this.#clock = opts.clockFloor;
    this.#locks = new LockTable(opts.members.self, (p) => p, opts.queueLog);
    this.#peers = new PeerView(opts.members, opts.view === undefined ? [] : ordinalsIn(opts.view, 'leaving'));
    this.#changes = new ViewChanges(opts.view ?? null, opts.speaks ?? 0, opts.acceptor);
    this.#viewSteps = new ViewSteps({
      self: this.self, changes: this.#changes, locks: this.#locks, peers: this.#peers, out: this.#out,
      members: () => this.#members,
      setMembers: (m) => (this.#members = m),
      tick: () => ++this.#clock,
      synced: () => this.synced,
      issuePending: () => this.#issuePending(),
      dropPeerRequests: (p) => this.#dropPeerRequests(p),
      fence: () => (this.#fenced = true),
      announceRelease: (own) => this.#announceRelease(own),
    });
    // A new incarnation of a member its view removes (a rejoin after its removal): removed from
    // the start, it issues and grants nothing (rule P6), whatever its clients ask.
    const me = opts.view?.members.find((m) => m.ordinal === this.self);
    if (opts.view !== undefined && (me === undefined || me.state === 'leaving')) {
      this.#changes.remove();
      this.#fenced = true;
    }
  }

  /** Whether `peer`'s acceptor id is the one recorded for it first: a member whose data dir was replaced casts no vote that counts (F70, F76). */
  trustAcceptor(peer: number, trusted: boolean): void {
    this.#changes.trustAcceptor(peer, trusted);
  }

  /** The members of the view, this peer among them. */
  get members(): Members {
    return this.#members;
  }

  /** The view this machine counts, if it takes part in changes. */
  get clusterView(): AgreedView | null {
    return this.#changes.view;
  }

  /**
   * True once every peer of the ack set passed our view on to us (it applied it): the holder may
   * release the view lock (rule P3 i). Not a later clock from each: that says our earlier
   * messages' replies came, not that our VIEW arrived (finding F77).
   */
  get viewAcked(): boolean {
    return this.#changes.sentAt !== null && this.#changes.heardFromAll(this.#peers.members());
  }

  /** What our proposal on the view lock came to (rule P2): null before one, or when too few voters promised. */
  get proposal(): Proposal | null {
    return this.#changes.proposal;
  }

  /** True once this peer applied its own removal (rule P6): it issues and grants nothing more. */
  get removed(): boolean {
    return this.#changes.removed;
  }

  /** The Lamport clock. */
  get clock(): number {
    return this.#clock;
  }

  /**
   * True once every peer of the view has handshaked AND sent us a packet since: only then may
   * requests leave. The handshake clock is not enough: a peer that had us out of its view
   * (evicted) may have granted requests above it before it admitted this incarnation; its
   * first packet is sent after it did (from inside its join), so its clock bounds them all
   * and our requests sort after them. (Found by the simulator, seed 1371.)
   */
  get synced(): boolean {
    return this.#peers.synced;
  }

  /**
   * Whether this incarnation may acknowledge requests: every peer it met has let it join, and so have enough of the others that
   * any majority that could still lease a predecessor of ours meets them
   * (PeerView.joinedByQuorum). A new incarnation whose predecessor may still hold a lease is
   * refused by the peers that knew the predecessor until the majority evicted it; its acks
   * meanwhile would let a third peer, which never knew the predecessor, grant a lock the
   * predecessor still holds (a restarted peer met first, simulator seed 101577).
   */
  get ackReady(): boolean {
    return this.#peers.joinedByMet && this.#peers.joinedByQuorum;
  }

  /** Whether this peer currently holds a lease (the runtime decides, the core obeys). */
  get leaseValid(): boolean {
    return this.#leaseValid;
  }

  /** Peers whose requests count (configured, not evicted), this one excluded. */
  view(): readonly number[] {
    return this.#peers.members();
  }

  /** The only way state changes: apply one event, return the effects to execute in order. */
  step(event: MachineEvent): readonly Effect[] {
    const wasReady = this.ackReady;
    switch (event.type) {
      case 'acquire':
        this.#onAcquire(event.ref, event.parts, event.noWait);
        break;
      case 'release':
        this.#onLocalRelease(event.ref);
        break;
      case 'meta':
        this.#onLocalMeta(event.ref, event.meta);
        break;
      case 'packet':
        this.#onPacket(event.from, event.inc, event.packet);
        break;
      case 'joined':
        this.#onJoined(event.peer, event.inc, event.clock);
        break;
      case 'evicted':
        this.#onEvicted(event.peer, event.inc, event.last === true, event.metHeld === true);
        break;
      case 'lease':
        this.#onLease(event.valid);
        break;
      case 'superseded':
        this.#peers.supersede(event.peer);
        break;
      case 'fence':
        this.#onFence();
        break;
      case 'propose':
        this.#viewSteps.propose(event.view);
        break;
      default:
        assertNever(event, 'machine event');
    }
    const ready = this.ackReady;
    // Our packets so far were marked unready: their clock acked and synced nothing. Now it
    // may: every peer we met gets a packet, so none waits a heartbeat for our clock.
    if (ready && !wasReady) for (const p of this.#peers.met()) this.#out.ack(p);
    this.#viewSteps.headAck();
    return this.#out.flush(this.#clock, !ready);
  }

  #onAcquire(ref: number, parts: readonly RequestPart[], noWait: boolean): void {
    // A limit on every queue (docs/style.md convention 9): a new request of ours is refused
    // when one of its locks already has this many here. Other peers' requests are always
    // queued: refusing one would break the agreement on the order.
    const full = parts.find((p) => this.#locks.queued(p.lock) >= limits.queuedPerLockMax);
    if (full !== undefined) {
      this.#out.push({ type: 'full', ref, lock: full.lock });
      return;
    }
    const own: OwnRequest = { ref, parts: [...parts], noWait, ts: 0, state: 'pending' };
    this.#locks.addOwn(own);
    // A request leaves only while we are synced AND hold a lease: a request issued without
    // a lease could outlive an eviction we were never told of and be granted, on acks heard
    // before it, below grants the majority made meanwhile (simulator seed 276422).
    if (this.#fenced) {
      this.#out.push({ type: 'ended', ref, lock: firstLock(own), reason: 'lease_lost' });
      this.#locks.dropOwn(own);
      return;
    }
    if (this.synced && this.#leaseValid && this.#mayRequest()) this.#issue(own);
  }

  /**
   * Rule 1: clock++, queue (ts, self), send REQUEST to every peer in the view: one REQUEST
   * per lock the request names, all at the one timestamp.
   */
  #issue(own: OwnRequest): void {
    this.#clock += 1;
    own.ts = this.#clock;
    own.state = 'waiting';
    for (const request of this.#locks.enqueueOwn(own)) this.#broadcast(toRequestMessage(request, own.noWait));
    this.#recheckParts(own);
  }

  /** Rules 4 and 5: a release, or the cancel of a waiting request, which is the same. */
  #onLocalRelease(ref: number): void {
    const own = this.#locks.own(ref);
    if (own === undefined) return; // Already ended by the core (lease lost): nothing to do.
    this.#dropOwn(own);
    this.#recheckParts(own);
  }

  /** Rule 3 on every lock `own` names (it was issued, or it left their queues). */
  #recheckParts(own: OwnRequest): void {
    for (const { lock } of own.parts) this.#recheck(lock);
  }

  /**
   * New meta for a request of ours: every queue that holds it takes it (META); one not
   * issued yet carries it in its REQUEST. No rule reads meta, so nothing is re-checked.
   */
  #onLocalMeta(ref: number, meta: Meta | null): void {
    const own = this.#locks.own(ref);
    if (own === undefined) return;
    if (own.state === 'pending') {
      own.parts.forEach((part, i) => (own.parts[i] = { lock: part.lock, spec: { ...part.spec, meta } }));
      return;
    }
    this.#clock += 1;
    for (const { lock } of own.parts) {
      this.#locks.setMeta(lock, own.ts, this.self, meta);
      this.#broadcast({ t: 'meta', lock, ts: own.ts, meta });
    }
  }

  #dropOwn(own: OwnRequest): void {
    this.#locks.dropOwn(own);
    this.#announceRelease(own);
  }

  /** Rule 4's RELEASE of a request of ours that left our queues, for every lock it names (none for one never issued). */
  #announceRelease(own: OwnRequest): void {
    if (own.state === 'pending') return;
    this.#clock += 1;
    for (const { lock } of own.parts) this.#broadcast({ t: 'rel', lock, ts: own.ts });
  }

  #onPacket(from: number, inc: Incarnation, packet: Packet): void {
    if (!this.#peers.isLive(from, inc)) return;
    this.#clock = Math.max(this.#clock, packet.c) + 1;
    const minBefore = this.#peers.minLastTs();
    const wasSynced = this.synced;
    // A packet marked unready lets us in, no more: its sender's clock may be below grants a
    // predecessor of its made, which we never saw (docs/design.md section 5, "Successors").
    this.#peers.heard(from, packet.c, packet.u !== true);
    if (!wasSynced && this.synced) this.#issuePending();
    const touched = new Set<string>();
    // A run of RELEASEs is removed at once, before the next REQUEST or META and at the end:
    // every other message sees the queues as one removal at a time would have left them.
    const released: ReleaseMessage[] = [];
    for (const msg of packet.m) {
      if (!('lock' in msg)) {
        this.#removeReleased(from, released);
        this.#viewSteps.onMessage(from, msg, touched);
        continue;
      }
      touched.add(msg.lock);
      if (msg.t === 'rel') {
        released.push(msg);
        continue;
      }
      this.#removeReleased(from, released);
      if (msg.t === 'req') {
        const request = fromRequestMessage(msg, from);
        this.#locks.insert(request);
        // Rule 2: j must see a later timestamp from us; an empty packet is such an ack. Not
        // before every peer we met let us join (ackReady): a later heartbeat's clock acks then.
        // Not needed while requests of ours ahead of it keep it out: the RELEASE that first
        // lets it in is later than it, and reaches j first (docs/design.md section 3, rule 2);
        // unless it is a no-wait one, which j decides on the acks.
        if (this.ackReady && (msg.nw === true || !this.#locks.blockedBy(request, this.self, limits.ackSkipScanMax))) this.#out.ack(from);
      } else {
        this.#locks.setMeta(msg.lock, msg.ts, from, msg.meta);
      }
    }
    this.#removeReleased(from, released);
    // Condition (a) depends on the smallest lastTs only: when it moved, every waiting lock
    // may now pass; otherwise only the locks this packet touched can change.
    if (this.#peers.minLastTs() > minBefore) for (const lock of this.#locks.waitingLocks()) touched.add(lock);
    for (const lock of touched) this.#recheck(lock);
  }

  /** Removes the requests of `from` that `released` names, and empties it: one by one when they are few. */
  #removeReleased(from: number, released: ReleaseMessage[]): void {
    if (released.length < removeOneByOneMax) {
      for (const { lock, ts } of released) this.#locks.remove(lock, ts, from);
    } else {
      const stamps = new Map<string, Set<number>>();
      for (const { lock, ts } of released) addStamp(stamps, lock, ts);
      this.#locks.removeStamps(from, stamps);
    }
    released.length = 0;
  }

  #onJoined(peer: number, inc: Incarnation, clock: number): void {
    assert(peer !== this.self, 'a joined peer is another');
    // A peer our view removed (a learner removed before its host started, a member that comes
    // back from an older view): the links may still admit it; it counts for nothing here.
    if (!this.#changes.inView(peer, this.#members)) return;
    // A leaving member that left holds nothing and is out for good (rule P6), though its
    // process may still live and link (simulator seed 177 --changes).
    if (this.#changes.leftPeers().includes(peer)) return;
    if (!this.#peers.isNew(peer, inc)) return;
    const restarted = this.#peers.incarnation(peer) !== undefined;
    const wasSynced = this.synced;
    // The handshake clock only raises our clock; it is NOT an ack: the peer's earlier
    // requests (its state transfer) may still be in flight on its own stream to us. Its
    // first packet, sent from inside its join, brings lastTs up. Reset before the old
    // incarnation's requests are dropped, so its old acks cannot grant anything.
    this.#peers.resetLastTs(peer);
    if (restarted) this.#dropPeerRequests(peer); // A restart: its clients died with it.
    this.#peers.admit(peer, inc);
    this.#clock = Math.max(this.#clock, clock) + 1;
    this.#transferState(peer);
    if (!wasSynced && this.synced) this.#issuePending();
    for (const lock of [...this.#locks.waitingLocks()]) this.#recheck(lock);
  }

  /** State transfer: the joining peer learns our outstanding requests before anything else. */
  #transferState(peer: number): void {
    const requests = this.#locks.issuedRequests().map(({ request, noWait }) => toRequestMessage(request, noWait));
    // A view changed since the config file's comes first, and the leaving members that left:
    // the joiner counts by it (rules P5, P6).
    const view = this.#changes.view;
    const left: PeerMessage[] = this.#changes.leftPeers().map((p) => ({ t: 'left', peer: p }));
    this.#out.prepend(peer, view !== null && view.epoch > 0 ? [{ t: 'view', view }, ...left, ...requests] : requests);
  }

  #issuePending(): void {
    // A learner requests nothing until it is promoted (docs/reconfiguration.md, rule P5).
    if (!this.#leaseValid || this.#fenced || !this.#mayRequest()) return;
    const pending = this.#locks.ownRequests().filter((o) => o.state === 'pending');
    for (const own of pending) this.#issue(own);
  }

  #onEvicted(peer: number, inc: Incarnation, last: boolean, metHeld: boolean): void {
    if (peer === this.self) return; // The runtime handles its own eviction by restarting.
    const wasSynced = this.synced;
    if (last) this.#peers.gone(peer, inc);
    // An eviction of an incarnation we never met (a notice passed on at our join) refuses that
    // incarnation, but must not take the peer out of our view: a newer incarnation we have
    // not met yet may be alive, with requests older than ours (simulator seed 150336). We
    // wait to meet the peer, as for any peer we have not met. One the runtime met but held
    // out of the core (`metHeld`: joins held after a restart) leaves as a met one would: a
    // peer that died meanwhile must not keep us waiting (simulator seed 2).
    if (!this.#peers.evict(peer, inc, metHeld)) return;
    this.#out.drop(peer);
    this.#dropPeerRequests(peer);
    if (!wasSynced && this.synced) this.#issuePending();
    for (const lock of [...this.#locks.waitingLocks()]) this.#recheck(lock);
  }

  /** A learner requests nothing; a voter promoted while it ran waits for every member to count it (docs/reconfiguration.md P3 ii, P5). */
  #mayRequest(): boolean {
    return this.#members.voter && this.#changes.mayRequest(this.#peers.members());
  }

  #dropPeerRequests(peer: number): void {
    this.#locks.removePeer(peer, (lock) => this.#recheck(lock));
  }

  /** Lease lapse: end every hold of our own clients and grant nothing until it is back. */
  /** A zombie issues and grants nothing more; what it waits for ends now, its holds with its lease. */
  #fenced = false;

  #onFence(): void {
    this.#fenced = true;
    for (const own of this.#locks.ownRequests()) {
      if (own.state === 'granted') continue;
      this.#out.push({ type: 'ended', ref: own.ref, lock: firstLock(own), reason: 'lease_lost' });
      this.#dropOwn(own);
    }
  }

  #onLease(valid: boolean): void {
    this.#leaseValid = valid;
    if (valid) {
      if (this.synced) this.#issuePending();
      for (const lock of [...this.#locks.waitingLocks()]) this.#recheck(lock);
      return;
    }
    // Waiting requests end too: a peer without a lease may have been evicted, and its old
    // requests, granted later on acks it heard before the eviction, would sort below grants
    // the majority made meanwhile (simulator seed 216761: a zombie regained a lease through
    // peers that restarted after evicting it, and granted a request older than their grants).
    const dropped = this.#locks.ownRequests().filter((own) => own.state !== 'pending');
    this.#locks.dropOwnAll(dropped);
    for (const own of dropped) {
      this.#out.push({ type: 'ended', ref: own.ref, lock: firstLock(own), reason: 'lease_lost' });
      this.#announceRelease(own);
    }
  }

  /** Rule 3 for every waiting request of ours on one lock. */
  #recheck(lock: string): void {
    if (!this.#locks.isWaiting(lock) || !this.#leaseValid || this.#fenced) return;
    const decided = this.#locks.grantCheck(lock, this.#peers.minLastTs())
      .filter(({ own }) => lock !== viewLock || this.#changes.gateOpen(own.ts, this.#peers.members()));
    for (const { own, grant } of decided) this.#decide(own, grant);
    // A refused no-wait request left its queues, which may admit a later one of ours.
    if (decided.every((d) => d.grant)) return;
    const left = new Set(decided.flatMap((d) => (d.grant ? [] : d.own.parts.map((p) => p.lock))));
    for (const l of left) this.#recheck(l);
  }

  #decide(own: OwnRequest, grant: boolean): void {
    if (!grant) {
      this.#out.push({ type: 'refused', ref: own.ref, lock: firstLock(own), ahead: this.#position(own) });
      this.#dropOwn(own);
      return;
    }
    own.state = 'granted';
    this.#locks.stopWaiting(own);
    const token = tokenOf(own.ts, this.self);
    this.#out.push({ type: 'granted', ref: own.ref, lock: firstLock(own), ts: own.ts, token, mode: firstPart(own).spec.mode });
  }

  /** Whether requests of `peer` ahead of our issued request keep it out of one of its queues. */
  #blockedBy(own: OwnRequest, peer: number): boolean {
    return own.parts.some(({ lock, spec }) => this.#locks.blockedBy({ lock, ts: own.ts, peer: this.self, ...spec }, peer));
  }

  /** Requests ahead of an issued request of ours: in the longest queue, for one naming several locks. */
  #position(own: OwnRequest): number {
    return Math.max(0, ...own.parts.map((p) => this.#locks.indexOf(p.lock, own.ts, this.self)));
  }

  #broadcast(msg: PeerMessage): void {
    // A peer of the view not joined yet is skipped: the state transfer will cover it.
    for (const p of this.#peers.audience()) this.#out.send(p, msg);
  }

  /** Why a request of ours is not granted yet (for a timeout's 423 or 503). */
  explain(ref: number): Explanation | undefined {
    const own = this.#locks.own(ref);
    if (own === undefined) return undefined;
    // A peer whose requests ahead keep ours out owes no ack (rule 2): its release will carry one.
    // A request not issued yet waits for the peers we are not synced with; synced, it waits
    // for the lease, which every peer may renew (issue 37: a peer that never started was
    // named beside the peers that answer).
    const unsynced = own.state === 'pending' ? this.#peers.unsynced() : [];
    const missing = own.state === 'pending' ? (unsynced.length > 0 ? unsynced : this.#peers.members()) : this.#peers.missingAcks(own.ts).filter((p) => !this.#blockedBy(own, p));
    const position = own.state === 'pending' ? 0 : this.#position(own);
    return { state: own.state, position, missingPeers: own.state === 'granted' ? [] : missing };
  }

  /** The queue of one lock, in order, with the mode rule applied (for the HTTP API): its first `max` entries. */
  queue(lock: string, max = Infinity): QueueEntry[] {
    return this.#locks.entries(lock, max);
  }

  /** The ref of our issued request of timestamp `ts`, if it is live. */
  ownRef(ts: number): number | undefined {
    return this.#locks.ownRef(ts);
  }

  /** The head of the queue of `lock`, every holder in it (LockTable.head). */
  head(lock: string, permitsMax: number): QueueEntry[] {
    return this.#locks.head(lock, permitsMax);
  }

  /** How many requests the queue of `lock` holds (views that show only its first entries). */
  queueSize(lock: string): number {
    return this.#locks.queueSize(lock);
  }

  /** Names of every lock with a non-empty queue. */
  lockNames(): string[] {
    return this.#locks.lockNames();
  }

  /** Counts for metrics and the cluster view. */
  stats(): { locks: number; queued: number; own: number; waiting: number; granted: number } {
    return this.#locks.counts();
  }

  /** The highest timestamp heard from each peer (for the cluster view and tests). */
  lastTs(peer: number): number {
    return this.#peers.lastTs(peer);
  }

  /** The incarnation of `peer` whose requests count here (none while it is out of the view or not met). */
  incarnation(peer: number): Incarnation | undefined {
    return this.#peers.incarnation(peer);
  }
}

/** The first lock a request of ours names: the one its effects and explanations name. */
function firstPart(own: OwnRequest): RequestPart {
  const part = own.parts[0];
  assert(part !== undefined, 'a request names a lock');
  return part;
}

function firstLock(own: OwnRequest): string {
  return firstPart(own).lock;
}
