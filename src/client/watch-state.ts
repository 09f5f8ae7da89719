/**
 * The holders and waiters a watch stream describes (docs/design.md section 6, "Watches"),
 * kept from its events: the `state` first, then each `queued`, `granted`, `released` and
 * `left`. After any event it equals what a fresh `state` would say, queues in token order
 * (the queue's order).
 */
import type { WatchEvent } from './wire.js';

/** One lock as a `state` event lists it. */
export interface WatchedLock {
  readonly name: string;
  readonly holders: Array<Record<string, unknown>>;
  readonly waiters: Array<Record<string, unknown>>;
}

interface Entry {
  request: Record<string, unknown>;
  held: boolean;
}

function tokenOrder(a: [string, Entry], b: [string, Entry]): number {
  const x = BigInt(a[0]);
  const y = BigInt(b[0]);
  return x < y ? -1 : x > y ? 1 : 0;
}

/** The locks of one watch stream, as its events left them. */
export class WatchState {
  readonly #locks = new Map<string, Map<string, Entry>>();

  /** Applies one event of the stream. */
  apply(e: WatchEvent): void {
    if (e.type === 'state') {
      this.#locks.clear();
      const locks = Array.isArray(e.data['locks']) ? (e.data['locks'] as WatchedLock[]) : [];
      for (const l of locks) {
        const q = new Map<string, Entry>();
        for (const r of l.holders) q.set(String(r['token']), { request: r, held: true });
        for (const r of l.waiters) q.set(String(r['token']), { request: r, held: false });
        if (q.size > 0) this.#locks.set(l.name, q);
      }
      return;
    }
    const lock = String(e.data['lock']);
    const request = (e.data['request'] ?? {}) as Record<string, unknown>;
    const token = String(request['token']);
    let q = this.#locks.get(lock);
    if (q === undefined) {
      q = new Map();
      this.#locks.set(lock, q);
    }
    if (e.type === 'queued') q.set(token, { request, held: false });
    else if (e.type === 'granted') q.set(token, { request, held: true });
    else q.delete(token);
    if (q.size === 0) this.#locks.delete(lock);
  }

  /** The locks with requests, by name, as a `state` event lists them. */
  locks(): WatchedLock[] {
    return [...this.#locks.keys()].sort().map((name) => {
      const entries = [...(this.#locks.get(name) ?? new Map<string, Entry>())].sort(tokenOrder);
      return { name, holders: entries.filter(([, e]) => e.held).map(([, e]) => e.request), waiters: entries.filter(([, e]) => !e.held).map(([, e]) => e.request) };
    });
  }
}
