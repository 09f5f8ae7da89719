/**
 * The protocol core: Lamport's mutual exclusion (DESIGN section 3) as a pure state machine,
 * `step(event) -> effects` (the etcd-io/raft pattern). No sockets, timers, clocks or
 * randomness: the runtime feeds events and executes effects, and the simulator drives the
 * very same code under any interleaving it draws from a seed.
 */
import { assert, assertNever } from '../assert.js';
import type { MachineFaults } from './faults.js';
import { noFaults } from './faults.js';
import type { Packet, PeerMessage, RequestMessage } from './messages.js';
import { addAhead, admits, blocksAll, emptyAhead } from './modes.js';
import type { PeerRank } from './request-queue.js';
import { RequestQueue } from './request-queue.js';
import type { Incarnation, Mode, QueuedRequest, RequestSpec } from './types.js';
import { compareIncarnation, tokenOf } from './types.js';

/** Everything that can happen to a peer's protocol state. */
export type MachineEvent =
  | { readonly type: 'acquire'; readonly ref: number; readonly lock: string; readonly spec: RequestSpec; readonly noWait: boolean }
  | { readonly type: 'release'; readonly ref: number }
  | { readonly type: 'packet'; readonly from: number; readonly inc: Incarnation; readonly packet: Packet }
  | { readonly type: 'joined'; readonly peer: number; readonly inc: Incarnation; readonly clock: number }
  | { readonly type: 'evicted'; readonly peer: number; readonly inc: Incarnation }
  | { readonly type: 'lease'; readonly valid: boolean };

/** What the runtime must do after a step, in order. */
export type Effect =
  | { readonly type: 'send'; readonly to: number; readonly packet: Packet }
  | { readonly type: 'granted'; readonly ref: number; readonly lock: string; readonly ts: number; readonly token: bigint; readonly mode: Mode }
  | { readonly type: 'refused'; readonly ref: number; readonly lock: string }
  | { readonly type: 'ended'; readonly ref: number; readonly lock: string; readonly reason: 'lease_lost' };

/** Construction parameters of one peer's machine. */
export interface MachineOptions {
  /** This peer's index in the configuration. */
  readonly self: number;
  /** Number of configured peers, this one included. */
  readonly peerCount: number;
  /** Lowest clock this incarnation may use: wall-clock ms or a persisted high-water mark. */
  readonly clockFloor: number;
  /** Planted bugs, for the simulator's mutation tests only. */
  readonly faults?: Partial<MachineFaults>;
}

type OwnState = 'pending' | 'waiting' | 'granted';

interface OwnRequest {
  readonly ref: number;
  readonly lock: string;
  readonly spec: RequestSpec;
  readonly noWait: boolean;
  ts: number;
  state: OwnState;
}

/** Why a waiting request is not granted yet, for the 423 / 503 answer of a timeout. */
export interface Explanation {
  readonly state: OwnState;
  /** Requests ahead of it in the queue. */
  readonly position: number;
  /** Peers whose ack (a later timestamp) has not arrived, or that never joined. */
  readonly missingPeers: readonly number[];
}

/** One entry of a lock's queue as the HTTP API shows it. */
export interface QueueEntry extends QueuedRequest {
  readonly token: bigint;
  /** Granted (own requests) or admitted by the mode rule on this peer's queue (others'). */
  readonly held: boolean;
  /** The local ref, for this peer's own requests. */
  readonly ref: number | undefined;
}

/** One peer's protocol state: clock, queues, lastTs, view and its own requests. */
export class Machine {
  readonly self: number;
  readonly peerCount: number;
  #clock: number;
  readonly #faults: MachineFaults;
  readonly #rank: PeerRank;
  readonly #queues = new Map<string, RequestQueue>();
  readonly #lastTs: number[];
  /** Peers whose requests count: configured and not evicted. */
  readonly #view = new Set<number>();
  /** Peers of the view we have handshaked with, and their incarnation. */
  readonly #inc = new Map<number, Incarnation>();
  readonly #evictedInc = new Map<number, Incarnation>();
  readonly #own = new Map<number, OwnRequest>();
  readonly #ownByTs = new Map<number, OwnRequest>();
  /** Locks where we have requests waiting (ungranted, issued): the ones to re-check. */
  readonly #waitingLocks = new Map<string, number>();
  /** Locks where some waiting request of ours is a no-wait one (their scans go to the end). */
  readonly #noWaitLocks = new Map<string, number>();
  #leaseValid = true;
  // Per-step accumulators, emptied by flush().
  #effects: Effect[] = [];
  readonly #outbox = new Map<number, PeerMessage[]>();

  constructor(opts: MachineOptions) {
    assert(opts.peerCount >= 1 && opts.peerCount <= 1024, 'peer count in 1..1024');
    assert(opts.self >= 0 && opts.self < opts.peerCount, 'self is a configured peer');
    this.self = opts.self;
    this.peerCount = opts.peerCount;
    this.#faults = { ...noFaults, ...opts.faults };
    this.#clock = this.#faults.clockReset ? 0 : opts.clockFloor;
    const { self, peerCount } = opts;
    this.#rank = this.#faults.badTiebreak ? (p) => (p - self + peerCount) % peerCount : (p) => p;
    this.#lastTs = new Array<number>(opts.peerCount).fill(0);
    for (let p = 0; p < opts.peerCount; p++) if (p !== self) this.#view.add(p);
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
    for (const p of this.#view) if (!this.#inc.has(p) || (this.#lastTs[p] ?? 0) === 0) return false;
    return true;
  }

  /** Whether this peer currently holds a lease (the runtime decides, the core obeys). */
  get leaseValid(): boolean {
    return this.#leaseValid;
  }

  /** Peers whose requests count (configured, not evicted), this one excluded. */
  view(): readonly number[] {
    return [...this.#view];
  }

  /** The only way state changes: apply one event, return the effects to execute in order. */
  step(event: MachineEvent): readonly Effect[] {
    switch (event.type) {
      case 'acquire':
        this.#onAcquire(event.ref, event.lock, event.spec, event.noWait);
        break;
      case 'release':
        this.#onLocalRelease(event.ref);
        break;
      case 'packet':
        this.#onPacket(event.from, event.inc, event.packet);
        break;
      case 'joined':
        this.#onJoined(event.peer, event.inc, event.clock);
        break;
      case 'evicted':
        this.#onEvicted(event.peer, event.inc);
        break;
      case 'lease':
        this.#onLease(event.valid);
        break;
      default:
        assertNever(event, 'machine event');
    }
    return this.#flush();
  }

  #onAcquire(ref: number, lock: string, spec: RequestSpec, noWait: boolean): void {
    assert(!this.#own.has(ref), 'acquire refs are unique');
    const own: OwnRequest = { ref, lock, spec, noWait, ts: 0, state: 'pending' };
    this.#own.set(ref, own);
    // A request leaves only while we are synced AND hold a lease: a request issued without
    // a lease could outlive an eviction we were never told of and be granted, on acks heard
    // before it, below grants the majority made meanwhile (simulator seed 276422).
    if (this.synced && this.#leaseValid) this.#issue(own);
  }

  /** Rule 1: clock++, queue (ts, self), send REQUEST to every peer in the view. */
  #issue(own: OwnRequest): void {
    this.#clock += 1;
    own.ts = this.#clock;
    own.state = 'waiting';
    this.#ownByTs.set(own.ts, own);
    this.#waitingLocks.set(own.lock, (this.#waitingLocks.get(own.lock) ?? 0) + 1);
    if (own.noWait) this.#noWaitLocks.set(own.lock, (this.#noWaitLocks.get(own.lock) ?? 0) + 1);
    const request = { lock: own.lock, ts: own.ts, peer: this.self, ...own.spec };
    this.#queueOf(own.lock).insert(request);
    this.#broadcast(toRequestMessage(request));
    this.#recheck(own.lock);
  }

  /** Rules 4 and 5: a release, or the cancel of a waiting request, which is the same. */
  #onLocalRelease(ref: number): void {
    const own = this.#own.get(ref);
    if (own === undefined) return; // Already ended by the core (lease lost): nothing to do.
    this.#dropOwn(own);
    this.#recheck(own.lock);
  }

  #dropOwn(own: OwnRequest): void {
    this.#own.delete(own.ref);
    if (own.state === 'pending') return;
    if (own.state === 'waiting') this.#decWaiting(own);
    this.#ownByTs.delete(own.ts);
    this.#removeQueued(own.lock, own.ts, this.self);
    this.#clock += 1;
    this.#broadcast({ t: 'rel', lock: own.lock, ts: own.ts });
  }

  #onPacket(from: number, inc: Incarnation, packet: Packet): void {
    const current = this.#inc.get(from);
    const fromLive = current !== undefined && compareIncarnation(current, inc) === 0 && this.#view.has(from);
    if (!fromLive && !this.#faults.acceptEvicted) return;
    this.#clock = Math.max(this.#clock, packet.c) + 1;
    const minBefore = this.#minLastTs();
    const wasSynced = this.synced;
    if (packet.c > (this.#lastTs[from] ?? 0)) this.#lastTs[from] = packet.c;
    if (!wasSynced && this.synced) this.#issuePending();
    const touched = new Set<string>();
    for (const msg of packet.m) {
      touched.add(msg.lock);
      if (msg.t === 'req') {
        this.#queueOf(msg.lock).insert(fromRequestMessage(msg, from));
        // Rule 2: j must see a later timestamp from us; an empty packet is such an ack.
        if (!this.#outbox.has(from)) this.#outbox.set(from, []);
      } else {
        this.#removeQueued(msg.lock, msg.ts, from);
      }
    }
    // Condition (a) depends on the smallest lastTs only: when it moved, every waiting lock
    // may now pass; otherwise only the locks this packet touched can change.
    if (this.#minLastTs() > minBefore) for (const lock of this.#waitingLocks.keys()) touched.add(lock);
    for (const lock of touched) this.#recheck(lock);
  }

  #onJoined(peer: number, inc: Incarnation, clock: number): void {
    assert(peer !== this.self && peer >= 0 && peer < this.peerCount, 'joined peer is configured');
    const evicted = this.#evictedInc.get(peer);
    if (evicted !== undefined && compareIncarnation(inc, evicted) <= 0) return;
    const current = this.#inc.get(peer);
    if (current !== undefined && compareIncarnation(inc, current) <= 0) return;
    const wasSynced = this.synced;
    // The handshake clock only raises our clock; it is NOT an ack: the peer's earlier
    // requests (its state transfer) may still be in flight on its own stream to us. Its
    // first packet, sent from inside its join, brings lastTs up. Reset before the old
    // incarnation's requests are dropped, so its old acks cannot grant anything.
    this.#lastTs[peer] = 0;
    if (current !== undefined) this.#dropPeerRequests(peer); // A restart: its clients died with it.
    this.#inc.set(peer, inc);
    this.#view.add(peer);
    if (!this.#faults.clockReset) this.#clock = Math.max(this.#clock, clock) + 1;
    if (!this.#faults.noStateTransfer) this.#transferState(peer);
    if (!wasSynced && this.synced) this.#issuePending();
    for (const lock of [...this.#waitingLocks.keys()]) this.#recheck(lock);
  }

  /** State transfer: the joining peer learns our outstanding requests before anything else. */
  #transferState(peer: number): void {
    const out: PeerMessage[] = [];
    for (const own of this.#own.values()) {
      if (own.state === 'pending') continue;
      out.push(toRequestMessage({ lock: own.lock, ts: own.ts, peer: this.self, ...own.spec }));
    }
    out.sort((a, b) => a.ts - b.ts);
    this.#outbox.set(peer, [...out, ...(this.#outbox.get(peer) ?? [])]);
  }

  #issuePending(): void {
    if (!this.#leaseValid) return;
    const pending = [...this.#own.values()].filter((o) => o.state === 'pending');
    for (const own of pending) this.#issue(own);
  }

  #onEvicted(peer: number, inc: Incarnation): void {
    if (peer === this.self) return; // The runtime handles its own eviction by restarting.
    const current = this.#inc.get(peer);
    if (current !== undefined && compareIncarnation(current, inc) > 0) return; // A newer one lives.
    const prev = this.#evictedInc.get(peer);
    if (prev === undefined || compareIncarnation(inc, prev) > 0) this.#evictedInc.set(peer, inc);
    // An eviction of an incarnation we never met (a notice passed on at our join) refuses that
    // incarnation, but must not take the peer out of our view: a newer incarnation we have
    // not met yet may be alive, with requests older than ours (simulator seed 150336). We
    // wait to meet the peer, as for any peer we have not met.
    if (current === undefined) return;
    const wasSynced = this.synced;
    this.#view.delete(peer);
    this.#inc.delete(peer);
    this.#outbox.delete(peer);
    this.#dropPeerRequests(peer);
    if (!wasSynced && this.synced) this.#issuePending();
    for (const lock of [...this.#waitingLocks.keys()]) this.#recheck(lock);
  }

  #dropPeerRequests(peer: number): void {
    for (const [lock, queue] of this.#queues) {
      if (queue.removePeer(peer) > 0) {
        if (queue.size === 0) this.#queues.delete(lock);
        else this.#recheck(lock);
      }
    }
  }

  /** Lease lapse: end every hold of our own clients and grant nothing until it is back. */
  #onLease(valid: boolean): void {
    this.#leaseValid = valid;
    if (valid) {
      if (this.synced) this.#issuePending();
      for (const lock of [...this.#waitingLocks.keys()]) this.#recheck(lock);
      return;
    }
    if (this.#faults.noSelfFence) return;
    // Waiting requests end too: a peer without a lease may have been evicted, and its old
    // requests, granted later on acks it heard before the eviction, would sort below grants
    // the majority made meanwhile (simulator seed 216761: a zombie regained a lease through
    // peers that restarted after evicting it, and granted a request older than their grants).
    for (const own of [...this.#own.values()]) {
      if (own.state === 'pending') continue;
      this.#effects.push({ type: 'ended', ref: own.ref, lock: own.lock, reason: 'lease_lost' });
      this.#dropOwn(own);
    }
  }

  /** Rule 3 for every waiting request of ours on one lock. */
  #recheck(lock: string): void {
    if (!this.#waitingLocks.has(lock) || !this.#leaseValid) return;
    const queue = this.#queues.get(lock);
    assert(queue !== undefined, 'a lock with waiters has a queue');
    const minLast = this.#minLastTs();
    const ahead = emptyAhead();
    let waitingLeft = this.#waitingLocks.get(lock) ?? 0;
    const decided: Array<{ own: OwnRequest; grant: boolean }> = [];
    for (const r of queue.items) {
      const own = r.peer === this.self ? this.#ownByTs.get(r.ts) : undefined;
      if (own !== undefined && own.state === 'waiting') {
        waitingLeft -= 1;
        // The planted ack-ge bug is off by one tick: a plain `>=` is an equivalent mutant
        // here, because a peer's clock strictly increases before each request it issues.
        const acksIn = this.#faults.ackGe ? minLast >= r.ts - 1 : minLast > r.ts;
        const ok = admits(r, ahead, { semaphoreOvercount: this.#faults.semaphoreOvercount });
        if (acksIn && (ok || own.noWait)) decided.push({ own, grant: ok });
        if (waitingLeft === 0) break;
      }
      addAhead(ahead, r);
      if (blocksAll(ahead) && !this.#noWaitLocks.has(lock)) break;
    }
    for (const { own, grant } of decided) this.#decide(own, grant);
    // A refused no-wait request left the queue, which may admit a later one of ours.
    if (decided.some((d) => !d.grant)) this.#recheck(lock);
  }

  #decide(own: OwnRequest, grant: boolean): void {
    if (!grant) {
      this.#effects.push({ type: 'refused', ref: own.ref, lock: own.lock });
      this.#dropOwn(own);
      return;
    }
    own.state = 'granted';
    this.#decWaiting(own);
    const token = tokenOf(own.ts, this.self);
    this.#effects.push({ type: 'granted', ref: own.ref, lock: own.lock, ts: own.ts, token, mode: own.spec.mode });
  }

  #minLastTs(): number {
    let min = Number.POSITIVE_INFINITY;
    for (const p of this.#view) min = Math.min(min, this.#lastTs[p] ?? 0);
    return min;
  }

  #decWaiting(own: OwnRequest): void {
    decrement(this.#waitingLocks, own.lock);
    if (own.noWait) decrement(this.#noWaitLocks, own.lock);
  }

  #queueOf(lock: string): RequestQueue {
    let queue = this.#queues.get(lock);
    if (queue === undefined) {
      queue = new RequestQueue(this.#rank);
      this.#queues.set(lock, queue);
    }
    return queue;
  }

  #removeQueued(lock: string, ts: number, peer: number): void {
    const queue = this.#queues.get(lock);
    if (queue === undefined) return;
    queue.remove(ts, peer);
    if (queue.size === 0) this.#queues.delete(lock); // Idle lock names cost nothing.
  }

  #broadcast(msg: PeerMessage): void {
    for (const p of this.#view) {
      if (!this.#inc.has(p)) continue; // Not joined yet: the state transfer will cover it.
      const box = this.#outbox.get(p);
      if (box === undefined) this.#outbox.set(p, [msg]);
      else box.push(msg);
    }
  }

  /** One packet per peer per step, stamped with the clock after the step. */
  #flush(): readonly Effect[] {
    const effects = this.#effects;
    for (const [to, m] of this.#outbox) effects.push({ type: 'send', to, packet: { c: this.#clock, m } });
    this.#outbox.clear();
    this.#effects = [];
    return effects;
  }

  /** Why a request of ours is not granted yet (for a timeout's 423 or 503). */
  explain(ref: number): Explanation | undefined {
    const own = this.#own.get(ref);
    if (own === undefined) return undefined;
    const missing = [...this.#view].filter((p) => !this.#inc.has(p) || (this.#lastTs[p] ?? 0) <= own.ts || own.state === 'pending');
    const queue = this.#queues.get(own.lock);
    const position = own.state === 'pending' || queue === undefined ? 0 : queue.indexOf(own.ts, this.self);
    return { state: own.state, position: Math.max(0, position), missingPeers: own.state === 'granted' ? [] : missing };
  }

  /** The queue of one lock, in order, with the mode rule applied (for the HTTP API). */
  queue(lock: string): QueueEntry[] {
    const queue = this.#queues.get(lock);
    if (queue === undefined) return [];
    const ahead = emptyAhead();
    return queue.items.map((r) => {
      const own = r.peer === this.self ? this.#ownByTs.get(r.ts) : undefined;
      const held = own !== undefined ? own.state === 'granted' : admits(r, ahead);
      addAhead(ahead, r);
      return { ...r, token: tokenOf(r.ts, r.peer), held, ref: own?.ref };
    });
  }

  /** Names of every lock with a non-empty queue. */
  lockNames(): string[] {
    return [...this.#queues.keys()];
  }

  /** Counts for metrics and the cluster view. */
  stats(): { locks: number; queued: number; own: number; waiting: number } {
    let queued = 0;
    for (const q of this.#queues.values()) queued += q.size;
    let waiting = 0;
    for (const n of this.#waitingLocks.values()) waiting += n;
    return { locks: this.#queues.size, queued, own: this.#own.size, waiting };
  }

  /** The highest timestamp heard from each peer (for the cluster view and tests). */
  lastTs(peer: number): number {
    return this.#lastTs[peer] ?? 0;
  }
}

function decrement(counts: Map<string, number>, key: string): void {
  const n = (counts.get(key) ?? 0) - 1;
  assert(n >= 0, 'counts stay non-negative');
  if (n === 0) counts.delete(key);
  else counts.set(key, n);
}

function toRequestMessage(r: QueuedRequest): RequestMessage {
  return { t: 'req', lock: r.lock, ts: r.ts, mode: r.mode, limit: r.limit, permits: r.permits, owner: r.owner, meta: r.meta };
}

function fromRequestMessage(m: RequestMessage, peer: number): QueuedRequest {
  return { lock: m.lock, ts: m.ts, peer, mode: m.mode, limit: m.limit, permits: m.permits, owner: m.owner, meta: m.meta };
}
