/**
 * The tests' one source of seeded randomness: xoshiro128** seeded through splitmix32. One
 * seed decides everything a simulator run does (TigerBeetle's VOPR), so a failing seed
 * reproduces exactly, and nothing in test/sim may call Math.random; the fault run and the
 * random transport tests draw from it too (their seeds replay the draws, not the OS
 * scheduler). The seed itself comes from seed.ts. Changing the generator changes what
 * every recorded seed means, the simulator's regression seeds first of all.
 */

function splitmix32(state: { s: number }): number {
  state.s = (state.s + 0x9e3779b9) | 0;
  let z = state.s;
  z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
  z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
  return (z ^ (z >>> 16)) >>> 0;
}

/** A small, fast, seeded generator of 32-bit integers and the draws built on them. */
export class Prng {
  #a: number;
  #b: number;
  #c: number;
  #d: number;

  constructor(seed: number) {
    const state = { s: seed | 0 };
    // Mix the high bits of seeds above 2^32 in too, so seeds never alias silently.
    state.s ^= Math.floor(seed / 0x100000000) | 0;
    this.#a = splitmix32(state);
    this.#b = splitmix32(state);
    this.#c = splitmix32(state);
    this.#d = splitmix32(state);
    if ((this.#a | this.#b | this.#c | this.#d) === 0) this.#a = 1; // The all-zero state is a fixed point.
  }

  /** The next 32-bit unsigned integer (xoshiro128**). */
  u32(): number {
    const result = Math.imul(rotl(Math.imul(this.#b, 5), 7), 9) >>> 0;
    const t = this.#b << 9;
    this.#c ^= this.#a;
    this.#d ^= this.#b;
    this.#b ^= this.#c;
    this.#a ^= this.#d;
    this.#c ^= t;
    this.#d = rotl(this.#d, 11);
    return result;
  }

  /** A float in [0, 1). */
  float(): number {
    return this.u32() / 0x100000000;
  }

  /** An integer in [lo, hi], both included. */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.float() * (hi - lo + 1));
  }

  /** True with probability `p`. */
  chance(p: number): boolean {
    return this.float() < p;
  }

  /** One element of a non-empty array. */
  pick<T>(items: readonly T[]): T {
    const item = items[Math.floor(this.float() * items.length)];
    if (item === undefined) throw new Error('pick from an empty array');
    return item;
  }

  /** The items in a random order (Fisher-Yates), as a new array. */
  shuffle<T>(items: readonly T[]): T[] {
    const out = [...items];
    for (let i = out.length - 1; i > 0; i--) {
      const j = this.int(0, i);
      [out[i], out[j]] = [out[j] as T, out[i] as T];
    }
    return out;
  }

  /** An independent generator derived from this one: one stream per concern. */
  fork(): Prng {
    return new Prng(this.u32() * 0x10000 + (this.u32() & 0xffff));
  }
}

function rotl(x: number, k: number): number {
  return (x << k) | (x >>> (32 - k));
}
