/**
 * One lock's queue of known requests, kept sorted by `(ts, peer rank)` (docs/design.md section 3:
 * requests are totally ordered by timestamp, ties broken by peer). Every peer must use the
 * same rank function, or peers disagree on who is first (the `bad-tiebreak` mutant).
 */
import { assert } from '../assert.js';
import type { QueuedRequest } from './types.js';

/** Maps a peer index to its tie-break rank; the identity in every correct cluster. */
export type PeerRank = (peer: number) => number;

/** The order of two requests: by timestamp, then by peer rank. */
export function compareRequests(a: QueuedRequest, b: QueuedRequest, rank: PeerRank): number {
  return a.ts !== b.ts ? a.ts - b.ts : rank(a.peer) - rank(b.peer);
}

/** A sorted queue of requests for one lock name. */
export class RequestQueue {
  readonly #items: QueuedRequest[] = [];
  readonly #rank: PeerRank;

  constructor(rank: PeerRank) {
    this.#rank = rank;
  }

  /** Number of requests queued. */
  get size(): number {
    return this.#items.length;
  }

  /** The requests in order; callers must not mutate it. */
  get items(): readonly QueuedRequest[] {
    return this.#items;
  }

  /** Where `(ts, peer)` is or would be inserted: the first index not before it. */
  #lowerBound(ts: number, peer: number): number {
    const probe = { ts, peer } as QueuedRequest;
    let lo = 0;
    let hi = this.#items.length;
    // Most inserts are at the tail (timestamps grow), so check it before the binary search.
    const last = this.#items[hi - 1];
    if (last === undefined || compareRequests(last, probe, this.#rank) < 0) return hi;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const item = this.#items[mid];
      assert(item !== undefined, 'mid is in range');
      if (compareRequests(item, probe, this.#rank) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Index of `(ts, peer)`, or -1 when it is not queued. */
  indexOf(ts: number, peer: number): number {
    const i = this.#lowerBound(ts, peer);
    const item = this.#items[i];
    return item !== undefined && item.ts === ts && item.peer === peer ? i : -1;
  }

  /** Inserts a request; false when `(ts, peer)` is already queued (a resent duplicate). */
  insert(request: QueuedRequest): boolean {
    const i = this.#lowerBound(request.ts, request.peer);
    const at = this.#items[i];
    if (at !== undefined && at.ts === request.ts && at.peer === request.peer) return false;
    this.#items.splice(i, 0, request);
    return true;
  }

  /** Puts `request` in the place of the queued request with its `(ts, peer)`; false when none is. */
  replace(request: QueuedRequest): boolean {
    const i = this.indexOf(request.ts, request.peer);
    if (i < 0) return false;
    this.#items[i] = request;
    return true;
  }

  /** Removes `(ts, peer)`; returns it, or undefined when it was not queued. */
  remove(ts: number, peer: number): QueuedRequest | undefined {
    const i = this.indexOf(ts, peer);
    if (i < 0) return undefined;
    return this.#items.splice(i, 1)[0];
  }

  /**
   * Removes the requests of `peer` whose timestamps are in `stamps`, in one pass; returns how
   * many. A lease lost under thousands of our waiters drops them all in one step, and one
   * `remove` each (a splice in the middle of the queue) made that step quadratic.
   */
  removeStamps(peer: number, stamps: ReadonlySet<number>): number {
    const before = this.#items.length;
    let w = 0;
    for (const item of this.#items) if (item.peer !== peer || !stamps.has(item.ts)) this.#items[w++] = item;
    this.#items.length = w;
    return before - w;
  }

  /** Removes every request of one peer (restart or eviction); returns how many. */
  removePeer(peer: number): number {
    const before = this.#items.length;
    let w = 0;
    for (const item of this.#items) if (item.peer !== peer) this.#items[w++] = item;
    this.#items.length = w;
    return before - w;
  }
}
