/**
 * The clock leases and eviction are measured with: monotonic time that also counts the time
 * the host spent suspended. performance.now() (Linux CLOCK_MONOTONIC) stops during a
 * suspend, so after a resume a peer would believe a lease valid for up to lease_ms while
 * the majority, whose clocks ran on, had long evicted it (issue 12, defect 4).
 *
 * Where the OS tells the boot clock (Linux CLOCK_BOOTTIME, `Env.bootMs`), the time it ran
 * ahead of the monotonic clock since this clock was made is the time suspended, to within its
 * 10 ms resolution, whatever the wall clock did (issue 37: a wall clock stepped back during a
 * suspend hid it). Beside it, and alone elsewhere, the wall clock: when it moves ahead of the
 * monotonic clock by more than limits.suspendDetectMs between two reads, the difference is
 * counted as elapsed. The larger of the two counts.
 *
 * A wall clock stepped forward while the peer runs looks like a suspend too: the lease then
 * lapses early and local holds end (lease_lost), which is safe. A step back is ignored; one
 * that happens during a suspend hides that much of it where there is no boot clock (README:
 * assumptions).
 */
import type { Env } from '../env.js';
import { limits } from '../limits.js';

/** Monotonic milliseconds that count suspends. */
export class LeaseClock {
  readonly #env: Env;
  #lastMonoMs: number;
  #lastWallMs: number;
  #suspendedMs = 0;
  /** The boot clock less the monotonic one when this clock was made; null without a boot clock. */
  readonly #bootLeadMs: number | null;
  /** Time suspended by the boot clock: the most it ran ahead of the monotonic clock since. */
  #bootSuspendedMs = 0;

  constructor(env: Env) {
    this.#env = env;
    this.#lastMonoMs = env.monoMs();
    this.#lastWallMs = env.wallMs();
    const bootMs = env.bootMs?.() ?? null;
    this.#bootLeadMs = bootMs === null ? null : bootMs - this.#lastMonoMs;
  }

  /** Now, in this clock's milliseconds. */
  nowMs(): number {
    const monoMs = this.#env.monoMs();
    const wallMs = this.#env.wallMs();
    const gapMs = wallMs - this.#lastWallMs - (monoMs - this.#lastMonoMs);
    if (gapMs > limits.suspendDetectMs) this.#suspendedMs += gapMs;
    this.#lastMonoMs = monoMs;
    this.#lastWallMs = wallMs;
    const bootMs = this.#bootLeadMs === null ? null : (this.#env.bootMs?.() ?? null);
    if (bootMs !== null && this.#bootLeadMs !== null) this.#bootSuspendedMs = Math.max(this.#bootSuspendedMs, bootMs - monoMs - this.#bootLeadMs);
    return monoMs + this.suspendedMs;
  }

  /** Total time counted as suspended so far: the larger count of the boot and the wall clock. */
  get suspendedMs(): number {
    return Math.max(this.#suspendedMs, this.#bootSuspendedMs);
  }

  /** Whether a boot clock counts suspends here (logs and tests). */
  get bootClock(): boolean {
    return this.#bootLeadMs !== null;
  }
}
