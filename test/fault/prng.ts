/**
 * The fault test's source of randomness: mulberry32 from one seed. The processes and the
 * OS scheduler are not deterministic, so a seed does not replay a run event for event; it
 * replays the fault schedule (kinds, victims, durations) and the clients' choices, which is
 * what makes a failing run worth re-running (docs/style.md convention 10).
 */

/** A small seeded generator. */
export class Rng {
  #state: number;

  constructor(seed: number) {
    this.#state = seed >>> 0;
  }

  /** A float in [0, 1). */
  float(): number {
    this.#state = (this.#state + 0x6d2b79f5) >>> 0;
    let t = this.#state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** An integer in [lo, hi], both included. */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.float() * (hi - lo + 1));
  }

  /** One element of a non-empty array. */
  pick<T>(items: readonly T[]): T {
    const item = items[Math.floor(this.float() * items.length)];
    if (item === undefined) throw new Error('pick from an empty array');
    return item;
  }

  /** A shuffled copy (Fisher-Yates). */
  shuffle<T>(items: readonly T[]): T[] {
    const out = [...items];
    for (let i = out.length - 1; i > 0; i--) {
      const j = Math.floor(this.float() * (i + 1));
      const a = out[i] as T;
      out[i] = out[j] as T;
      out[j] = a;
    }
    return out;
  }

  /** A child generator for an independent stream (one per client). */
  fork(salt: number): Rng {
    return new Rng((Math.floor(this.float() * 2 ** 32) ^ Math.imul(salt + 1, 0x9e3779b9)) >>> 0);
  }
}

/** The seed of a fault run: FAULT_SEED from the environment, else a fresh one. */
export function faultSeed(env: Readonly<Record<string, string | undefined>> = process.env): number {
  const raw = env['FAULT_SEED'];
  if (raw !== undefined && raw !== '') {
    const seed = Number(raw);
    if (!Number.isSafeInteger(seed) || seed < 0) throw new Error(`FAULT_SEED must be a non-negative integer, not ${JSON.stringify(raw)}`);
    return seed;
  }
  return Math.floor(Math.random() * 2 ** 31);
}
