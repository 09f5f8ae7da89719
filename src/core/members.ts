/**
 * The members of one peer's view, by ordinal, and the majorities counted over them
 * (docs/design.md section 5; docs/reconfiguration.md, "Quorum config"). Every quorum of the
 * core is counted here: the lease (core/lease.ts), eviction confirmations (core/membership.ts)
 * and the join rule (core/peer-view.ts `joinedByQuorum`).
 *
 * An ordinal names a member for good: it breaks timestamp ties and is the low bits of its
 * tokens. A cluster started from a config file has the ordinals 0..N-1 in file order. Arrays
 * kept per member are indexed by ordinal and sized by `capacity`.
 */
import { assert } from '../assert.js';
import { limits } from '../limits.js';

/**
 * The voters of a view: the members whose majorities count. `self` is one of them, or a learner
 * or leaving member that counts in no majority (docs/reconfiguration.md, rules P5 and P6).
 * Immutable.
 */
export class Members {
  readonly self: number;
  /** Whether this peer is a voter: it counts for itself in every majority. */
  readonly voter: boolean;
  readonly #all: readonly number[];
  readonly #others: readonly number[];
  readonly #set: ReadonlySet<number>;
  /** One more than the highest ordinal: the length of an array indexed by ordinal. */
  readonly capacity: number;

  /** `ordinals`: every voter, ascending; `self` among them unless it is a learner or leaving. */
  constructor(self: number, ordinals: readonly number[]) {
    assert(ordinals.length >= 1 && ordinals.length <= limits.peersMax, 'members within 1..limits.peersMax');
    for (let i = 0; i < ordinals.length; i++) {
      const o = ordinals[i] ?? -1;
      assert(Number.isSafeInteger(o) && o >= 0 && o < limits.peersMax, 'ordinal within 0..limits.peersMax-1');
      assert(i === 0 || o > (ordinals[i - 1] ?? -1), 'ordinals ascending and distinct');
    }
    assert(Number.isSafeInteger(self) && self >= 0 && self < limits.peersMax, 'self is an ordinal');
    this.self = self;
    this.voter = ordinals.includes(self);
    this.#all = [...ordinals];
    this.#others = ordinals.filter((o) => o !== self);
    this.#set = new Set(ordinals);
    this.capacity = Math.max(self, ordinals[ordinals.length - 1] ?? 0) + 1;
  }

  /** The members of a cluster started from a config file of `count` peers: ordinals 0..count-1. */
  static first(self: number, count: number): Members {
    return new Members(self, Array.from({ length: count }, (_, i) => i));
  }

  /** Number of members, this one included. */
  get size(): number {
    return this.#all.length;
  }

  /** Voters that make a majority (this one among them when it is a voter). */
  get majority(): number {
    return Math.floor(this.#all.length / 2) + 1;
  }

  /**
   * True when a majority takes every member (one or two members): no member can be
   * outvoted, so none is evicted for silence (docs/design.md section 5).
   */
  get isPair(): boolean {
    return this.majority >= this.#all.length;
  }

  /**
   * Fewest other members whose set meets every majority that leaves this peer out: `size -
   * majority + 1`, at most every other member (PeerView.joinedByQuorum).
   */
  get meetsEveryMajority(): number {
    return Math.min(this.#all.length - 1, this.#all.length - this.majority + 1);
  }

  has(ordinal: number): boolean {
    return this.#set.has(ordinal);
  }

  /** Every voter, this one included when it is one, ascending. */
  all(): readonly number[] {
    return this.#all;
  }

  /** Every voter but this one, ascending. */
  others(): readonly number[] {
    return this.#others;
  }
}
