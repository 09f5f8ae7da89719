/**
 * The clock leases and eviction are measured with: monotonic time that also counts the time
 * the host spent suspended. performance.now() (Linux CLOCK_MONOTONIC) stops during a
 * suspend, so after a resume a peer would believe a lease valid for up to lease_ms while
 * the majority, whose clocks ran on, had long evicted it (issue 12, defect 4). The wall
 * clock keeps running through a suspend: when it moves ahead of the monotonic clock by more
 * than limits.suspendDetectMs between two reads, the difference is counted as elapsed.
 *
 * A wall clock stepped forward while the peer runs looks like a suspend too: the lease then
 * lapses early and local holds end (lease_lost), which is safe. A step back is ignored; one
 * that happens during a suspend hides that much of it (README: assumptions).
 */
import type { Env } from '../env.js';
import { limits } from '../limits.js';

/** Monotonic milliseconds that count suspends. */
export class LeaseClock {
  readonly #env: Env;
  readonly #detect: boolean;
  #lastMonoMs: number;
  #lastWallMs: number;
  #suspendedMs = 0;

  /** `detectSuspend` false is the simulator's `no-suspend-detect` mutant only. */
  constructor(env: Env, detectSuspend = true) {
    this.#env = env;
    this.#detect = detectSuspend;
    this.#lastMonoMs = env.monoMs();
    this.#lastWallMs = env.wallMs();
  }

  /** Now, in this clock's milliseconds. */
  nowMs(): number {
    const monoMs = this.#env.monoMs();
    const wallMs = this.#env.wallMs();
    const gapMs = wallMs - this.#lastWallMs - (monoMs - this.#lastMonoMs);
    if (gapMs > limits.suspendDetectMs && this.#detect) this.#suspendedMs += gapMs;
    this.#lastMonoMs = monoMs;
    this.#lastWallMs = wallMs;
    return monoMs + this.#suspendedMs;
  }

  /** Total time counted as suspended so far (for logs and tests). */
  get suspendedMs(): number {
    return this.#suspendedMs;
  }
}
