/**
 * The protocol core: Lamport's mutual exclusion (docs/design.md section 3) as a pure state machine,
 * `step(event) -> effects` (the etcd-io/raft pattern). No sockets, timers, clocks or
 * randomness: the runtime feeds events and executes effects, and the simulator drives the
 * very same code under any interleaving it draws from a seed. The steps of its own clients'
 * requests are in core/own-steps.ts, those of changes of the view in core/view-steps.ts.
 */
import { assert, assertNever } from '../assert.js';
import { limits } from '../limits.js';
import type { Effect, Explanation, MachineEvent } from './effects.js';
import { EffectBuffer } from './effects.js';
import type { QueueEntry } from './lock-table.js';
import type { QueueLog } from './queue-log.js';
import { LockTable, addStamp } from './lock-table.js';
import { removeOneByOneMax } from './request-queue.js';
import type { Packet, PeerMessage, ReleaseMessage } from './messages.js';
import { fromRequestMessage, toRequestMessage } from './messages.js';
import type { Members } from './members.js';
import { OwnSteps } from './own-steps.js';
import { PeerView } from './peer-view.js';
import type { Proposal } from './view-changes.js';
import { ViewChanges } from './view-changes.js';
import { ViewSteps } from './view-steps.js';
import type { Incarnation } from './types.js';
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
  /** Our own clients' requests, the lease and the fence (core/own-steps.ts). */
  readonly #own: OwnSteps;
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
      issuePending: () => this.#own.issuePending(),
      dropPeerRequests: (p) => this.#dropPeerRequests(p),
      fence: () => this.#own.halt(),
      announceRelease: (own) => this.#own.announceRelease(own),
    });
    this.#own = new OwnSteps({
      self: this.self, changes: this.#changes, locks: this.#locks, peers: this.#peers, out: this.#out,
      members: () => this.#members,
      tick: () => ++this.#clock,
    });
    // A new incarnation of a member its view removes (a rejoin after its removal): removed from
    // the start, it issues and grants nothing (rule P6), whatever its clients ask.
    const me = opts.view?.members.find((m) => m.ordinal === this.self);
    if (opts.view !== undefined && (me === undefined || me.state === 'leaving')) {
      this.#changes.remove();
      this.#own.halt();
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
    return this.#own.leaseValid;
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
        this.#own.acquire(event.ref, event.parts, event.noWait);
        break;
      case 'release':
        this.#own.release(event.ref);
        break;
      case 'meta':
        this.#own.meta(event.ref, event.meta);
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
        this.#own.lease(event.valid);
        break;
      case 'superseded':
        this.#peers.supersede(event.peer);
        break;
      case 'fence':
        this.#own.fence();
        break;
      case 'propose':
        this.#viewSteps.propose(event.view);
        break;
      case 'heldView':
        if (this.#viewSteps.caughtUp(event.view)) for (const lock of [...this.#locks.waitingLocks()]) this.#own.recheck(lock);
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

  #onPacket(from: number, inc: Incarnation, packet: Packet): void {
    if (!this.#peers.isLive(from, inc)) return;
    this.#clock = Math.max(this.#clock, packet.c) + 1;
    const minBefore = this.#peers.minLastTs();
    const wasSynced = this.synced;
    // A packet marked unready lets us in, no more: its sender's clock may be below grants a
    // predecessor of its made, which we never saw (docs/design.md section 5, "Successors").
    this.#peers.heard(from, packet.c, packet.u !== true);
    if (!wasSynced && this.synced) this.#own.issuePending();
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
    for (const lock of touched) this.#own.recheck(lock);
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
    if (!wasSynced && this.synced) this.#own.issuePending();
    for (const lock of [...this.#locks.waitingLocks()]) this.#own.recheck(lock);
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
    if (!wasSynced && this.synced) this.#own.issuePending();
    for (const lock of [...this.#locks.waitingLocks()]) this.#own.recheck(lock);
  }

  #dropPeerRequests(peer: number): void {
    this.#locks.removePeer(peer, (lock) => this.#own.recheck(lock));
  }

  /** Why a request of ours is not granted yet (for a timeout's 423 or 503). */
  explain(ref: number): Explanation | undefined {
    return this.#own.explain(ref);
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
