/**
 * A map that remembers at most `max` keys, forgetting the one first set longest ago. The order
 * is kept in a ring beside the Map, not read from it: a Map keeps the entries deleted from its
 * front as holes until it rehashes, and `keys().next()` walks them on every call (about 7 us
 * a call at 10,000 keys: 431 ms against 38 ms for 57,000 ended holds, most of it in the one
 * event-loop stretch where 19,000 waiters of bench (f) leave; issue 15).
 */
import { assert } from './assert.js';

export class RecentMap<K, V> {
  readonly #map = new Map<K, V>();
  /** Keys in the order they were first set; the slot at `#next` holds the oldest. */
  readonly #order: (K | undefined)[];
  #next = 0;

  constructor(max: number) {
    assert(Number.isSafeInteger(max) && max >= 1, 'a recent map remembers at least one key');
    this.#order = new Array<K | undefined>(max).fill(undefined);
  }

  get size(): number {
    return this.#map.size;
  }

  get(key: K): V | undefined {
    return this.#map.get(key);
  }

  has(key: K): boolean {
    return this.#map.has(key);
  }

  /** Sets `key`; a new key beyond `max` forgets the oldest. Setting a known key keeps its place. */
  set(key: K, value: V): void {
    if (!this.#map.has(key)) {
      const oldest = this.#order[this.#next];
      if (oldest !== undefined) this.#map.delete(oldest);
      this.#order[this.#next] = key;
      this.#next = (this.#next + 1) % this.#order.length;
    }
    this.#map.set(key, value);
  }
}
