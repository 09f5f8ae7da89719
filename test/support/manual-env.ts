/**
 * An `Env` on virtual time for unit tests: nothing happens until the test moves the clock,
 * so a test of timers (a throttle, a TTL, a wait deadline) asserts exact outcomes instead of
 * hoping the machine was fast enough. Randomness comes from the seeded Prng.
 */
import type { Env, Timer } from '../../src/env.js';
import { Prng } from './prng.js';

interface Pending {
  readonly id: number;
  atMs: number;
  readonly everyMs: number | null;
  readonly fn: () => void;
}

/** Virtual monotonic and wall clocks, and the timers armed on them. */
export class ManualEnv implements Env {
  #nowMs = 0;
  /** Wall clock minus monotonic clock. */
  #wallOffsetMs: number;
  #nextId = 1;
  readonly #timers = new Map<number, Pending>();
  readonly #rng: Prng;

  constructor(opts: { wallMs?: number; seed?: number } = {}) {
    this.#wallOffsetMs = opts.wallMs ?? 1_700_000_000_000;
    this.#rng = new Prng(opts.seed ?? 1);
  }

  monoMs(): number {
    return this.#nowMs;
  }

  wallMs(): number {
    return this.#nowMs + this.#wallOffsetMs;
  }

  after(ms: number, fn: () => void): Timer {
    return this.#arm(ms, null, fn);
  }

  every(ms: number, fn: () => void): Timer {
    return this.#arm(ms, Math.max(1, ms), fn);
  }

  /** The end of the turn is "now": it runs at the next `advance`, even `advance(0)`. */
  soon(fn: () => void): Timer {
    return this.#arm(0, null, fn);
  }

  clear(timer: Timer | null): void {
    if (timer !== null) this.#timers.delete(timer as unknown as number);
  }

  randomInt(maxExclusive: number): number {
    return this.#rng.int(0, maxExclusive - 1);
  }

  randomBytes(n: number): Uint8Array {
    return Uint8Array.from({ length: n }, () => this.#rng.int(0, 255));
  }

  /** Timers armed and not yet run (intervals count once). */
  get pendingTimers(): number {
    return this.#timers.size;
  }

  /** Moves time on by `ms`, running every timer due on the way, in time order (ties in arming order). */
  advance(ms: number): void {
    const target = this.#nowMs + ms;
    for (;;) {
      const next = this.#due(target);
      if (next === undefined) break;
      this.#nowMs = Math.max(this.#nowMs, next.atMs);
      if (next.everyMs === null) this.#timers.delete(next.id);
      else next.atMs += next.everyMs;
      next.fn();
    }
    this.#nowMs = target;
  }

  /** Steps the wall clock alone (an operator or NTP), as hosts do. */
  stepWall(ms: number): void {
    this.#wallOffsetMs += ms;
  }

  #arm(ms: number, everyMs: number | null, fn: () => void): Timer {
    const id = this.#nextId++;
    this.#timers.set(id, { id, atMs: this.#nowMs + Math.max(0, ms), everyMs, fn });
    return id as unknown as Timer;
  }

  #due(target: number): Pending | undefined {
    let first: Pending | undefined;
    for (const t of this.#timers.values()) {
      if (t.atMs <= target && (first === undefined || t.atMs < first.atMs || (t.atMs === first.atMs && t.id < first.id))) first = t;
    }
    return first;
  }
}
