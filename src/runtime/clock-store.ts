/**
 * The persisted clock high-water mark (docs/design.md section 4, "Clock floor"). Instead of
 * writing the clock on every step, the peer reserves a range ahead of it: the store holds
 * a value the clock has not reached yet, rewritten (atomically, fsync'd) when the clock
 * comes near. After any crash, the next start begins at or above everything used.
 *
 * A write that fails (disk full, read-only file system, a directory in the way) must not
 * kill the peer (issue 12, defect 3: an exception out of a socket handler, and the same on
 * every restart, a crash loop). `ClockReservation` logs it with ERR_STORAGE, stops new
 * requests from leaving while the clock may pass what is on disk, retries, and lets them
 * leave again once a write succeeds.
 */
import { readFileSync } from 'node:fs';
import { mkdir, open, rename } from 'node:fs/promises';
import { join } from 'node:path';
import { replaceFileSync } from '../data-dir.js';
import type { Env } from '../env.js';
import { ErrorCode, LockError } from '../errors.js';
import { limits } from '../limits.js';
import type { Logger } from '../log.js';

/**
 * A wall-clock bound a process keeps on disk so that the next process of its peer honours
 * it after a crash (docs/design.md section 5): `promise`, until which a confirmation this
 * peer gave may bind it ("Eviction"); `echo`, until which a heartbeat it echoed may still
 * vouch for another peer's lease ("Successors").
 */
export type Bound = 'promise' | 'echo';

/** What to do about a corrupt bound file, for its error message. */
const boundAdvice: Readonly<Record<Bound, string>> = {
  promise: 'if no process of this peer gave a confirmation within evict_ms',
  echo: 'if no process of this peer echoed a heartbeat within 2 * lease_ms',
};

/**
 * Where the high-water mark lives: a file in production, memory in tests and the simulator.
 * Beside it, the bounds (`Bound`) the previous process left.
 */
export interface ClockStore {
  /** The persisted mark, or 0 when there is none yet. Throws ERR_CONFIG_INVALID when corrupt. */
  load(): number;
  /** Persists `hwm` durably; throws on any failure. */
  write(hwm: number): void;
  /** Wall-clock ms until which `kind` may bind this peer, 0 when none. Throws ERR_CONFIG_INVALID when corrupt. */
  loadBound(kind: Bound): number;
  /** Persists that bound durably; throws on any failure. */
  writeBound(kind: Bound, untilWallMs: number): void;
  /**
   * Persists that bound durably off the event loop and then calls `done` (with the error,
   * if any). At most one write of a kind is under way at a time, and none by `writeBound`
   * meanwhile (bounds.ts keeps to that).
   */
  writeBoundLater(kind: Bound, untilWallMs: number, done: (err: Error | null) => void): void;
}

/** No data dir: nothing survives the process (the wall clock is the only floor). */
export class MemoryClockStore implements ClockStore {
  #hwm = 0;
  readonly #bounds: Record<Bound, number> = { promise: 0, echo: 0 };

  load(): number {
    return this.#hwm;
  }

  write(hwm: number): void {
    this.#hwm = hwm;
  }

  loadBound(kind: Bound): number {
    return this.#bounds[kind];
  }

  writeBound(kind: Bound, untilWallMs: number): void {
    this.#bounds[kind] = untilWallMs;
  }

  writeBoundLater(kind: Bound, untilWallMs: number, done: (err: Error | null) => void): void {
    this.#bounds[kind] = untilWallMs;
    done(null);
  }
}

/**
 * `<dataDir>/clock.json` (`{"hwm"}`), `<dataDir>/promise.json` and `<dataDir>/echo.json`
 * (`{"until_wall_ms"}`), each replaced atomically: write a temp file, fsync, rename, fsync
 * the dir.
 */
export class FileClockStore implements ClockStore {
  readonly #dir: string;
  readonly #path: string;

  constructor(dataDir: string) {
    this.#dir = dataDir;
    this.#path = join(dataDir, 'clock.json');
  }

  load(): number {
    return this.#read(this.#path, 'hwm', 'to start with the wall clock as the floor');
  }

  write(hwm: number): void {
    this.#replace(this.#path, { hwm });
  }

  loadBound(kind: Bound): number {
    return this.#read(join(this.#dir, `${kind}.json`), 'until_wall_ms', boundAdvice[kind]);
  }

  writeBound(kind: Bound, untilWallMs: number): void {
    this.#replace(join(this.#dir, `${kind}.json`), { until_wall_ms: untilWallMs });
  }

  writeBoundLater(kind: Bound, untilWallMs: number, done: (err: Error | null) => void): void {
    this.#replaceLater(join(this.#dir, `${kind}.json`), { until_wall_ms: untilWallMs }).then(
      () => done(null),
      (err: unknown) => done(err instanceof Error ? err : new Error(String(err))),
    );
  }

  /** The integer `key` of the JSON object in `path`, 0 when the file is missing. */
  #read(path: string, key: string, advice: string): number {
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch {
      return 0;
    }
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      value = undefined;
    }
    const n = typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[key] : undefined;
    if (key === 'hwm' && typeof n === 'number' && n > limits.clockValueMax) {
      // A clock that large came from a host with an absurd wall clock (or a damaged file):
      // starting above it would give tokens near 2^63 and a mark past 2^53 (issue 37).
      throw new LockError(ErrorCode.ConfigInvalid, `${path} holds the clock ${n}, past the largest clock a peer uses (${limits.clockValueMax}, the year 37,600): it came from a host whose wall clock was far ahead, or the file is damaged. Set every host's wall clock right, stop every peer whose clock.json is this large, move those files away and start them again: their clocks start over from the wall clock, so reset the fence your resources keep (the highest token they saw) too`);
    }
    if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0) {
      throw new LockError(ErrorCode.ConfigInvalid, `${path} is corrupt: expected {"${key}": <integer>}; move it away ${advice}`);
    }
    return n;
  }

  #replace(path: string, value: Record<string, number>): void {
    replaceFileSync(this.#dir, path, JSON.stringify(value));
  }

  /** `#replace` off the event loop: the same steps through libuv's thread pool. */
  async #replaceLater(path: string, value: Record<string, number>): Promise<void> {
    await mkdir(this.#dir, { recursive: true });
    const tmp = `${path}.tmp`;
    const file = await open(tmp, 'w');
    try {
      await file.writeFile(JSON.stringify(value));
      await file.sync();
    } finally {
      await file.close();
    }
    await rename(tmp, path);
    const dir = await open(this.#dir, 'r');
    try {
      await dir.sync();
    } finally {
      await dir.close();
    }
  }
}

/** The reservation ahead of the clock, kept through a failing store. */
export class ClockReservation {
  readonly #store: ClockStore;
  readonly #env: Env;
  readonly #log: Logger;
  /** The mark known to be on disk (0 before the first successful write). */
  #reserved: number;
  #failing: LockError | null = null;
  #retryAtMs = Number.NEGATIVE_INFINITY;

  constructor(opts: { store: ClockStore; env: Env; log: Logger }) {
    this.#store = opts.store;
    this.#env = opts.env;
    this.#log = opts.log;
    this.#reserved = 0;
  }

  /** Loads the persisted mark: the clock floor of a new process. */
  load(): number {
    this.#reserved = this.#store.load();
    return this.#reserved;
  }

  /**
   * Null while new requests may leave: the store took the last reservation and the clock is
   * below it. Otherwise the coded error an acquire is refused with.
   */
  get failure(): LockError | null {
    return this.#failing;
  }

  /** Makes sure the persisted mark is above `clock`, writing only when it comes near. */
  reserve(clock: number): void {
    if (clock + limits.clockReserveAheadTicks / 2 < this.#reserved) return;
    if (this.#failing !== null && this.#env.monoMs() < this.#retryAtMs && clock < this.#reserved) return;
    let next = clock + limits.clockReserveAheadTicks;
    try {
      // The mark only rises: a second process on this data dir (one started beside a live
      // one with its id) reserves from a clock of its own, and a lower mark written over the
      // other's would let the next process start below the grants that one made (simulator
      // seed 17 --net link --multi 0.3).
      const onDisk = this.#store.load();
      if (onDisk < next) this.#store.write(next);
      else next = onDisk;
    } catch (err) {
      this.#onFailure(err, clock);
      return;
    }
    this.#reserved = next;
    if (this.#failing !== null) this.#log.warn({ hwm: next }, 'clock high-water mark written again: new requests may leave');
    this.#failing = null;
  }

  #onFailure(err: unknown, clock: number): void {
    this.#retryAtMs = this.#env.monoMs() + limits.clockStoreRetryMs;
    const cause = err instanceof Error ? err.message : String(err);
    const message = `cannot persist the clock high-water mark (${cause}): this peer grants no new requests until a write succeeds`;
    if (this.#failing === null) this.#log.error({ code: ErrorCode.Storage, cause, clock, reserved: this.#reserved }, message);
    this.#failing = new LockError(ErrorCode.Storage, message);
  }
}
