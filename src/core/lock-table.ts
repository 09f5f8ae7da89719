/**
 * All lock names of one peer (docs/design.md section 3): one sorted queue per lock with requests in
 * it, the requests of this peer's own clients (from acquire on, issued or not), and the
 * grant check of rule 3 on one lock's queue. The Machine owns the clock, the view and the
 * messages; this table owns the queues, our requests, and the counts that say which locks
 * need a re-check.
 */
import { assert } from '../assert.js';
import { addAhead, admits, blocksAll, emptyAhead } from './modes.js';
import type { QueueLog } from './queue-log.js';
import type { PeerRank } from './request-queue.js';
import { RequestQueue, compareRequests } from './request-queue.js';
import type { QueuedRequest, RequestPart } from './types.js';
import { tokenOf } from './types.js';

/** Where a request of ours stands: not issued yet, waiting in the queues, or granted. */
export type OwnState = 'pending' | 'waiting' | 'granted';

/**
 * A request of this peer's own clients, from acquire until it ends. It names one lock or
 * several (all-or-nothing, docs/design.md section 3, "Multi-lock"): every part enters its
 * lock's queue at the one `(ts, self)`, and the request is granted when the mode rule
 * admits it in every one of them at once.
 */
export interface OwnRequest {
  readonly ref: number;
  /** One per lock name, names distinct; a part is replaced, never changed in place, when its meta changes. */
  readonly parts: RequestPart[];
  readonly noWait: boolean;
  ts: number;
  state: OwnState;
}

/** The first part of a request of ours: the lock its effects and explanations name. */
export function firstPart(own: OwnRequest): RequestPart {
  const part = own.parts[0];
  assert(part !== undefined, 'a request names a lock');
  return part;
}

/** The first lock a request of ours names. */
export function firstLock(own: OwnRequest): string {
  return firstPart(own).lock;
}

/** One entry of a lock's queue as the HTTP API shows it. */
export interface QueueEntry extends QueuedRequest {
  readonly token: bigint;
  /** Granted (own requests) or admitted by the mode rule on this peer's queue (others'). */
  readonly held: boolean;
  /** The local ref, for this peer's own requests. */
  readonly ref: number | undefined;
}

/** The grant check's verdict on one waiting request of ours. */
export interface GrantDecision {
  readonly own: OwnRequest;
  /** False: a no-wait request the mode rule refuses. */
  readonly grant: boolean;
}

/** Adds `ts` to the timestamps of `lock` in `stamps` (for `LockTable.removeStamps`). */
export function addStamp(stamps: Map<string, Set<number>>, lock: string, ts: number): void {
  const set = stamps.get(lock);
  if (set === undefined) stamps.set(lock, new Set([ts]));
  else set.add(ts);
}

/** The queues of every lock one peer knows of, and the requests of its own clients. */
export class LockTable {
  readonly #self: number;
  readonly #rank: PeerRank;
  readonly #queues = new Map<string, RequestQueue>();
  /** Our requests by ref, from acquire until released, refused or ended. */
  readonly #own = new Map<number, OwnRequest>();
  /** Our issued requests (waiting or granted), by timestamp: how a queue finds its own. */
  readonly #ownByTs = new Map<number, OwnRequest>();
  /** Locks where we have requests waiting (ungranted, issued): the ones to re-check. */
  readonly #waitingLocks = new Map<string, number>();
  /** Locks where some waiting request of ours is a no-wait one (their scans go to the end). */
  readonly #noWaitLocks = new Map<string, number>();
  /** Requests of ours not issued yet, per lock: they count towards limits.queuedPerLockMax. */
  readonly #pendingLocks = new Map<string, number>();

  /** Where the changes of the queues are told, for the watches (off unless one follows). */
  readonly #log: QueueLog | undefined;

  constructor(self: number, rank: PeerRank, log?: QueueLog) {
    this.#self = self;
    this.#rank = rank;
    this.#log = log;
  }

  /** The callback that logs each removed request, while the log is on. */
  #onRemoved(): ((r: QueuedRequest) => void) | undefined {
    const log = this.#log;
    return log?.on === true ? (r) => log.left(r) : undefined;
  }

  /** Registers a request of ours, not issued yet; refs are unique. */
  addOwn(own: OwnRequest): void {
    assert(!this.#own.has(own.ref), 'acquire refs are unique');
    assert(own.state === 'pending', 'a request of ours starts pending');
    assert(own.parts.length === 1 || (own.parts.length > 1 && distinctLocks(own.parts)), 'a request names distinct locks, at least one');
    this.#own.set(own.ref, own);
    for (const { lock } of own.parts) this.#pendingLocks.set(lock, (this.#pendingLocks.get(lock) ?? 0) + 1);
  }

  /** The request of ours with that ref, if it is live. */
  own(ref: number): OwnRequest | undefined {
    return this.#own.get(ref);
  }

  /** The ref of our issued request of timestamp `ts`, if it is live. */
  ownRef(ts: number): number | undefined {
    return this.#ownByTs.get(ts)?.ref;
  }

  /** Every live request of ours, in acquire order. */
  ownRequests(): OwnRequest[] {
    return [...this.#own.values()];
  }

  /** Our issued requests (waiting or granted), as every peer queues them, by timestamp, each with whether it is a no-wait one. */
  issuedRequests(): { request: QueuedRequest; noWait: boolean }[] {
    const issued = this.ownRequests().filter((own) => own.state !== 'pending');
    return issued.flatMap((own) => this.#queued(own).map((request) => ({ request, noWait: own.noWait }))).sort((a, b) => a.request.ts - b.request.ts);
  }

  /** Forgets a request of ours, and takes it out of the queues if it was issued. */
  dropOwn(own: OwnRequest): void {
    this.#own.delete(own.ref);
    if (own.state === 'pending') {
      for (const { lock } of own.parts) decrement(this.#pendingLocks, lock);
      return;
    }
    if (own.state === 'waiting') this.stopWaiting(own);
    this.#ownByTs.delete(own.ts);
    for (const { lock } of own.parts) this.remove(lock, own.ts, this.#self);
  }

  /**
   * Forgets many requests of ours at once, as `dropOwn` would each (a lease lost), with one
   * pass over each queue they are in rather than one removal per request.
   */
  dropOwnAll(owns: readonly OwnRequest[]): void {
    const stamps = new Map<string, Set<number>>();
    for (const own of owns) {
      if (own.state === 'pending') {
        this.dropOwn(own);
        continue;
      }
      this.#own.delete(own.ref);
      if (own.state === 'waiting') this.stopWaiting(own);
      this.#ownByTs.delete(own.ts);
      for (const { lock } of own.parts) addStamp(stamps, lock, own.ts);
    }
    this.removeStamps(this.#self, stamps);
  }

  /**
   * Removes the requests of `peer` with the given timestamps, per lock
   * ([`RequestQueue.removeStamps`](./request-queue.ts): thousands from one queue cost one pass
   * over it, not one splice in its middle each; issue 15, bench (f)).
   */
  removeStamps(peer: number, stamps: ReadonlyMap<string, ReadonlySet<number>>): void {
    for (const [lock, set] of stamps) {
      const queue = this.#queues.get(lock);
      if (queue === undefined) continue;
      queue.removeStamps(peer, set, this.#onRemoved());
      if (queue.size === 0) this.#queues.delete(lock);
    }
  }

  /** Queues a request of ours just issued (rule 1), in every lock it names, and counts it as waiting; returns its queue entries. */
  enqueueOwn(own: OwnRequest): QueuedRequest[] {
    this.#ownByTs.set(own.ts, own);
    const requests = this.#queued(own);
    for (const request of requests) {
      const { lock } = request;
      decrement(this.#pendingLocks, lock);
      this.#waitingLocks.set(lock, (this.#waitingLocks.get(lock) ?? 0) + 1);
      if (own.noWait) this.#noWaitLocks.set(lock, (this.#noWaitLocks.get(lock) ?? 0) + 1);
      this.#queueOf(lock).insert(request);
      this.#log?.entered(request);
    }
    return requests;
  }

  /** A waiting request of ours stops waiting: granted (it stays queued), or dropped. */
  stopWaiting(own: OwnRequest): void {
    for (const { lock } of own.parts) {
      this.#log?.touched(lock);
      decrement(this.#waitingLocks, lock);
      if (own.noWait) decrement(this.#noWaitLocks, lock);
    }
  }

  /** Queues another peer's request (rule 2); a resent duplicate is ignored. */
  insert(request: QueuedRequest): void {
    if (this.#queueOf(request.lock).insert(request)) this.#log?.entered(request);
  }

  /**
   * Changes the meta of the queued request `(ts, peer)` of `lock` (a META message, or a
   * leader's new value); the protocol never reads meta, so no grant can change. False when
   * it is not queued (released meanwhile).
   */
  setMeta(lock: string, ts: number, peer: number, meta: QueuedRequest['meta']): boolean {
    const queue = this.#queues.get(lock);
    const i = queue?.indexOf(ts, peer) ?? -1;
    const current = i < 0 ? undefined : queue?.items[i];
    if (queue === undefined || current === undefined) return false;
    if (peer === this.#self) {
      const own = this.#ownByTs.get(ts);
      const i = own?.parts.findIndex((p) => p.lock === lock) ?? -1;
      const part = own?.parts[i];
      if (own !== undefined && part !== undefined) own.parts[i] = { lock, spec: { ...part.spec, meta } };
    }
    const next = { ...current, meta };
    this.#log?.replaced(next);
    return queue.replace(next);
  }

  /** Removes `(ts, peer)` from that lock's queue (rule 4), if it is there. */
  remove(lock: string, ts: number, peer: number): void {
    const queue = this.#queues.get(lock);
    if (queue === undefined) return;
    const removed = queue.remove(ts, peer);
    if (removed !== undefined) this.#log?.left(removed);
    if (queue.size === 0) this.#queues.delete(lock); // Idle lock names cost nothing.
  }

  /**
   * Removes every request of one peer (restart or eviction). `changed` is called, during the
   * walk, for each lock that lost some and still has requests.
   */
  removePeer(peer: number, changed: (lock: string) => void): void {
    for (const [lock, queue] of this.#queues) {
      if (queue.removePeer(peer, this.#onRemoved()) > 0) {
        if (queue.size === 0) this.#queues.delete(lock);
        else changed(lock);
      }
    }
  }

  /**
   * Whether the requests of `peer` ahead of `r` in its lock's queue keep the mode rule from
   * admitting `r`, whatever else is ahead (docs/design.md section 3, rule 2: an ack those
   * requests' release will carry). The mode rule only tightens as requests are added ahead, so
   * `peer`'s alone deciding it is enough. Looks at most `scanMax` entries from the head; past
   * that, false.
   */
  blockedBy(r: QueuedRequest, peer: number, scanMax = Infinity): boolean {
    const queue = this.#queues.get(r.lock);
    if (queue === undefined) return false;
    const ahead = emptyAhead();
    let scanned = 0;
    for (const q of queue.items) {
      if (compareRequests(q, r, this.#rank) >= 0 || ++scanned > scanMax) return false;
      if (q.peer !== peer) continue;
      addAhead(ahead, q);
      if (!admits(r, ahead)) return true;
    }
    return false;
  }

  /** Whether some request of ours waits on that lock. */
  isWaiting(lock: string): boolean {
    return this.#waitingLocks.has(lock);
  }

  /** The locks where requests of ours wait. */
  waitingLocks(): IterableIterator<string> {
    return this.#waitingLocks.keys();
  }

  /**
   * Rule 3 on one lock: the waiting requests of ours that can be decided now. (a) holds when
   * `minLastTs`, the smallest timestamp heard from the view, is later than the request's;
   * (b) is the mode rule against every request ahead. A no-wait request is decided as soon
   * as (a) holds: granted if (b) holds, refused otherwise. A request naming several locks
   * passes (b) only when the mode rule admits it in every one of its queues now.
   */
  grantCheck(lock: string, minLastTs: number): GrantDecision[] {
    const queue = this.#queues.get(lock);
    assert(queue !== undefined, 'a lock with waiters has a queue');
    const ahead = emptyAhead();
    let waitingLeft = this.#waitingLocks.get(lock) ?? 0;
    const decided: GrantDecision[] = [];
    for (const r of queue.items) {
      const own = r.peer === this.#self ? this.#ownByTs.get(r.ts) : undefined;
      if (own !== undefined && own.state === 'waiting') {
        waitingLeft -= 1;
        // The planted ack-ge bug is off by one tick (`>= r.ts - 1`): a plain `>=` is an equivalent
        // mutant here, because a peer's clock strictly increases before each request it issues.
        const acksIn = minLastTs > r.ts;
        const ok = admits(r, ahead) && (own.parts.length === 1 || (acksIn && this.#admittedElsewhere(own, lock)));
        if (acksIn && (ok || own.noWait)) decided.push({ own, grant: ok });
        if (waitingLeft === 0) break;
      }
      addAhead(ahead, r);
      if (blocksAll(ahead) && !this.#noWaitLocks.has(lock)) break;
    }
    return decided;
  }

  /** Whether the mode rule admits our request `own` in the queues of its locks other than `lock`. */
  #admittedElsewhere(own: OwnRequest, lock: string): boolean {
    return own.parts.every((part) => {
      if (part.lock === lock) return true;
      const queue = this.#queues.get(part.lock);
      assert(queue !== undefined, 'an issued request is in the queue of each of its locks');
      const ahead = emptyAhead();
      for (const r of queue.items) {
        if (r.ts === own.ts && r.peer === this.#self) return admits(r, ahead);
        addAhead(ahead, r);
        if (blocksAll(ahead)) return false;
      }
      assert(false, 'an issued request is in the queue of each of its locks');
    });
  }

  /** Requests of one lock: its queue (every peer's issued ones) and ours not issued yet. */
  queued(lock: string): number {
    return (this.#queues.get(lock)?.size ?? 0) + (this.#pendingLocks.get(lock) ?? 0);
  }

  /** Index of `(ts, peer)` in that lock's queue, or -1 when it is not queued. */
  indexOf(lock: string, ts: number, peer: number): number {
    return this.#queues.get(lock)?.indexOf(ts, peer) ?? -1;
  }

  /** The queue of one lock, in order, with the mode rule applied (for the HTTP API): its first `max` entries. */
  entries(lock: string, max = Infinity): QueueEntry[] {
    const queue = this.#queues.get(lock);
    if (queue === undefined) return [];
    const ahead = emptyAhead();
    const out: QueueEntry[] = [];
    for (const r of queue.items) {
      if (out.length >= max) break;
      const own = r.peer === this.#self ? this.#ownByTs.get(r.ts) : undefined;
      const held = own !== undefined ? own.state === 'granted' : admits(r, ahead);
      addAhead(ahead, r);
      out.push({ ...r, token: tokenOf(r.ts, r.peer), held, ref: own?.ref });
    }
    return out;
  }

  /**
   * The head of one lock's queue: its entries up to where nothing later can be held (an
   * exclusive request, or a shared and a semaphore one, ahead; or, in a queue of semaphore
   * requests, `permitsMax` permits ahead, when no request of it has a larger limit). Every
   * holder is in it, and for an exclusive lock it is a few entries however long the queue.
   */
  head(lock: string, permitsMax: number): QueueEntry[] {
    const queue = this.#queues.get(lock);
    if (queue === undefined) return [];
    const ahead = emptyAhead();
    const out: QueueEntry[] = [];
    for (const r of queue.items) {
      if (blocksAll(ahead) || (ahead.nonSemaphore === 0 && ahead.count > 0 && ahead.permits >= permitsMax)) break;
      const own = r.peer === this.#self ? this.#ownByTs.get(r.ts) : undefined;
      const held = own !== undefined ? own.state === 'granted' : admits(r, ahead);
      addAhead(ahead, r);
      out.push({ ...r, token: tokenOf(r.ts, r.peer), held, ref: own?.ref });
    }
    return out;
  }

  /** How many requests the queue of `lock` holds. */
  queueSize(lock: string): number {
    return this.#queues.get(lock)?.size ?? 0;
  }

  /** Names of every lock with a non-empty queue. */
  lockNames(): string[] {
    return [...this.#queues.keys()];
  }

  /** Locks with a queue, requests queued, requests of ours, and those of them waiting. */
  counts(): { locks: number; queued: number; own: number; waiting: number; granted: number } {
    let queued = 0;
    for (const q of this.#queues.values()) queued += q.size;
    let waiting = 0;
    for (const n of this.#waitingLocks.values()) waiting += n;
    let granted = 0;
    for (const o of this.#own.values()) if (o.state === 'granted') granted++;
    return { locks: this.#queues.size, queued, own: this.#own.size, waiting, granted };
  }

  #queued(own: OwnRequest): QueuedRequest[] {
    return own.parts.map(({ lock, spec }) => ({ lock, ts: own.ts, peer: this.#self, ...spec }));
  }

  #queueOf(lock: string): RequestQueue {
    let queue = this.#queues.get(lock);
    if (queue === undefined) {
      queue = new RequestQueue(this.#rank);
      this.#queues.set(lock, queue);
    }
    return queue;
  }
}

function decrement(counts: Map<string, number>, key: string): void {
  const n = (counts.get(key) ?? 0) - 1;
  assert(n >= 0, 'counts stay non-negative');
  if (n === 0) counts.delete(key);
  else counts.set(key, n);
}

/** Whether no two parts name one lock (checked for requests of several locks only: the common one-lock case costs nothing). */
function distinctLocks(parts: readonly RequestPart[]): boolean {
  return new Set(parts.map((p) => p.lock)).size === parts.length;
}
