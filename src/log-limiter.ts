/**
 * Rate-limited logging (docs/design.md section 4, "Strangers on the peer port"): one line per key (a peer and a
 * reason, an address and a reason) per interval, the next one saying how many were passed
 * over meanwhile. A stranger who connects 2,000 times a second writes one line per interval,
 * not 2,000; the keys remembered are bounded, so a flood of addresses costs bounded memory.
 */
import { RecentMap } from './recent-map.js';

export class LogLimiter {
  readonly #everyMs: number;
  /** Per key: when its last line was written, and how many were passed over since. */
  readonly #keys: RecentMap<string, { atMs: number; quiet: number }>;

  constructor(everyMs: number, keysMax: number) {
    this.#everyMs = everyMs;
    this.#keys = new RecentMap(keysMax);
  }

  /** Null: stay quiet. Else write a line now, saying that `n` like it were passed over since the last one. */
  admit(key: string, nowMs: number): number | null {
    const last = this.#keys.get(key);
    if (last !== undefined && nowMs - last.atMs < this.#everyMs) {
      last.quiet++;
      return null;
    }
    this.#keys.set(key, { atMs: nowMs, quiet: 0 });
    return last?.quiet ?? 0;
  }
}
