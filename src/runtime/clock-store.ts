/**
 * The persisted clock high-water mark (DESIGN section 4, "Clock floor"). Instead of
 * writing the clock on every step, the store reserves a range ahead of it: the file
 * holds a value the clock has not reached yet, rewritten (atomically, fsync'd) when the
 * clock comes near. After any crash, the next start begins at or above everything used.
 */
import { closeSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { ErrorCode, LockError } from '../errors.js';

/** How far ahead of the clock each reservation reaches. */
const reserveAhead = 1_000_000;

/** A clock high-water mark kept in `<dataDir>/clock.json`. */
export class ClockStore {
  readonly #path: string;
  #reserved = 0;

  constructor(dataDir: string) {
    mkdirSync(dataDir, { recursive: true });
    this.#path = join(dataDir, 'clock.json');
  }

  /** The persisted mark, or 0 when there is none yet. */
  load(): number {
    let text: string;
    try {
      text = readFileSync(this.#path, 'utf8');
    } catch {
      return 0;
    }
    const value: unknown = JSON.parse(text);
    const hwm = typeof value === 'object' && value !== null ? (value as { hwm?: unknown }).hwm : undefined;
    if (typeof hwm !== 'number' || !Number.isSafeInteger(hwm) || hwm < 0) {
      throw new LockError(ErrorCode.ConfigInvalid, `${this.#path} is corrupt: expected {"hwm": <integer>}`);
    }
    this.#reserved = hwm;
    return hwm;
  }

  /** Makes sure the persisted mark is above `clock`, writing only when it comes near. */
  reserve(clock: number): void {
    if (clock + reserveAhead / 2 < this.#reserved) return;
    const next = clock + reserveAhead;
    const tmp = `${this.#path}.tmp`;
    const fd = openSync(tmp, 'w');
    try {
      writeSync(fd, JSON.stringify({ hwm: next }));
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, this.#path);
    this.#reserved = next;
  }
}
