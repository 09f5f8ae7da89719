/**
 * A fenced register (docs/design.md section 1, "fencing"), kept in the test process: the resource a
 * lock protects. Every access carries the holder's token, and the register refuses any
 * token lower than the highest it has seen, reads included. Fencing reads too is what
 * makes read-modify-write safe: once a newer holder has read, an older (paused or
 * partitioned) holder can no longer write the value it read before, so no update is lost
 * even when two clients believe they hold the lock.
 */

/** One lock's register and its counters. */
export class FencedRegister {
  readonly lock: string;
  /** The current value: one per accepted increment if nothing was lost. */
  value = 0;
  /** Writes accepted (each one an increment of a value read under the same token). */
  accepted = 0;
  /** Reads and writes refused because a higher token was seen first. */
  rejected = 0;
  #highest = -1n;
  #lastAcceptedWrite = -1n;
  readonly #violations: string[] = [];

  constructor(lock: string) {
    this.lock = lock;
  }

  /** The highest token seen so far (-1 before any access). */
  get highestToken(): bigint {
    return this.#highest;
  }

  /** Reads the value under `token`; null when a higher token was seen (refused). */
  read(token: bigint): number | null {
    if (token < this.#highest) {
      this.rejected++;
      return null;
    }
    this.#highest = token;
    return this.value;
  }

  /** Writes `value` under `token`; false when a higher token was seen (refused). */
  write(token: bigint, value: number): boolean {
    if (token < this.#highest) {
      this.rejected++;
      return false;
    }
    // Checked apart from the accept rule above, so a change to that rule cannot hide it.
    if (token < this.#lastAcceptedWrite) this.#violations.push(`register ${this.lock}: accepted a write with token ${token} after one with token ${this.#lastAcceptedWrite}`);
    this.#highest = token;
    this.#lastAcceptedWrite = token;
    this.value = value;
    this.accepted++;
    return true;
  }

  /** Violations: out-of-order accepted writes, and a final value that lost an update. */
  violations(): string[] {
    const out = [...this.#violations];
    if (this.value !== this.accepted) out.push(`register ${this.lock}: value ${this.value} after ${this.accepted} accepted increments (an update was lost)`);
    return out;
  }
}
