/**
 * The discrete-event loop's agenda: a binary heap ordered by virtual time, then by
 * insertion order, so two events at the same millisecond always run in the order they were
 * scheduled and a seed replays identically.
 */

interface Entry<T> {
  readonly atMs: number;
  readonly seq: number;
  readonly item: T;
}

/** A min-heap of items keyed by (atMs, insertion seq). */
export class EventQueue<T> {
  readonly #heap: Entry<T>[] = [];
  #seq = 0;

  /** Number of scheduled items. */
  get size(): number {
    return this.#heap.length;
  }

  /** Schedules `item` at virtual time `atMs`. */
  push(atMs: number, item: T): void {
    const heap = this.#heap;
    heap.push({ atMs, seq: this.#seq++, item });
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(heap, i, parent)) break;
      swap(heap, i, parent);
      i = parent;
    }
  }

  /** Time of the earliest item, or Infinity when empty. */
  peekMs(): number {
    return this.#heap[0]?.atMs ?? Number.POSITIVE_INFINITY;
  }

  /** Removes and returns the earliest item with its time. */
  pop(): { atMs: number; item: T } | undefined {
    const heap = this.#heap;
    const top = heap[0];
    if (top === undefined) return undefined;
    const last = heap.pop();
    if (heap.length > 0 && last !== undefined) {
      heap[0] = last;
      siftDown(heap);
    }
    return { atMs: top.atMs, item: top.item };
  }
}

function before<T>(heap: Entry<T>[], i: number, j: number): boolean {
  const a = heap[i];
  const b = heap[j];
  if (a === undefined || b === undefined) return false;
  return a.atMs !== b.atMs ? a.atMs < b.atMs : a.seq < b.seq;
}

function swap<T>(heap: Entry<T>[], i: number, j: number): void {
  const a = heap[i];
  const b = heap[j];
  if (a === undefined || b === undefined) return;
  heap[i] = b;
  heap[j] = a;
}

function siftDown<T>(heap: Entry<T>[]): void {
  let i = 0;
  for (;;) {
    const l = 2 * i + 1;
    const r = l + 1;
    let m = i;
    if (l < heap.length && before(heap, l, m)) m = l;
    if (r < heap.length && before(heap, r, m)) m = r;
    if (m === i) return;
    swap(heap, i, m);
    i = m;
  }
}
