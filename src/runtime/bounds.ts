/**
 * The bounds on disk of the promises and echoes a process gives (docs/design.md section 5,
 * "Eviction" and "Successors"): before a confirmation or a heartbeat echo leaves, the bound in
 * the data dir must reach past what it binds, so that the next process of this peer honours it
 * after a crash. Each bound is written `aheadMs` ahead of now, so it is rewritten about once
 * per half of that.
 *
 * The rewrite runs off the event loop. An fsync waits for the disk, and under another
 * process's writes one took 556 ms on the project machine (issue 15): on the event loop that
 * is 556 ms without heartbeats, echoes or answers, enough to cost leases. So once less than
 * three quarters of `aheadMs` is left, the next bound is written in the background while the
 * one on disk still covers every message (a message needs half of `aheadMs`). Only a message
 * that finds no covering bound and no write under way writes one at once, on the loop: the
 * first of a process, or one after failed writes. A write under way never counts before it is
 * done: while it is slower than the quarter of `aheadMs` it had, messages wait (false).
 */
import type { Env } from '../env.js';
import { ErrorCode } from '../errors.js';
import type { Logger } from '../log.js';
import type { Bound, ClockStore } from './clock-store.js';

/** Which messages a bound guards, for the log. */
const guarded: Readonly<Record<Bound, string>> = {
  promise: "cannot persist a confirmation's promise: confirmations are not sent",
  echo: 'cannot persist how long an echo vouches: heartbeats are not echoed',
};

export class PersistedBounds {
  readonly #store: ClockStore;
  readonly #env: Env;
  readonly #log: Logger;
  readonly #aheadMs: (kind: Bound) => number;
  /** Wall-clock ms each bound on disk reaches (0 before the first write of this process). */
  readonly #storedUntilMs: Record<Bound, number> = { promise: 0, echo: 0 };
  /** Kinds with a background write under way. */
  readonly #writing = new Set<Bound>();
  /** Kinds whose last write failed: logged once until a write succeeds. */
  readonly #failing = new Set<Bound>();

  constructor(opts: { store: ClockStore; env: Env; log: Logger; aheadMs: (kind: Bound) => number }) {
    this.#store = opts.store;
    this.#env = opts.env;
    this.#log = opts.log;
    this.#aheadMs = opts.aheadMs;
  }

  /**
   * Whether a message guarded by `kind` may leave now: the bound on disk reaches half of
   * `aheadMs` past now. Starts the next write in the background when the bound gets short.
   */
  ensure(kind: Bound): boolean {
    const now = this.#env.wallMs();
    const ahead = this.#aheadMs(kind);
    const stored = this.#storedUntilMs[kind];
    const covers = stored >= now + ahead / 2;
    if (this.#writing.has(kind)) return covers;
    if (stored >= now + (ahead * 3) / 4) return covers;
    if (covers) {
      this.#writeLater(kind, now + ahead);
      return true;
    }
    return this.#writeNow(kind, now + ahead);
  }

  /** The bound on disk of `kind`, as far as this process wrote it (0 before its first write). */
  storedUntilMs(kind: Bound): number {
    return this.#storedUntilMs[kind];
  }

  #writeNow(kind: Bound, until: number): boolean {
    try {
      this.#store.writeBound(kind, until);
    } catch (err) {
      this.#failed(kind, err);
      return false;
    }
    this.#stored(kind, until);
    return true;
  }

  #writeLater(kind: Bound, until: number): void {
    this.#writing.add(kind);
    this.#store.writeBoundLater(kind, until, (err) => {
      this.#writing.delete(kind);
      if (err === null) this.#stored(kind, until);
      else this.#failed(kind, err);
    });
  }

  #stored(kind: Bound, until: number): void {
    if (this.#failing.delete(kind)) this.#log.info({ kind }, 'the data dir takes writes again');
    this.#storedUntilMs[kind] = until;
  }

  #failed(kind: Bound, err: unknown): void {
    if (this.#failing.has(kind)) return;
    this.#failing.add(kind);
    this.#log.error({ code: ErrorCode.Storage, cause: err instanceof Error ? err.message : String(err) }, guarded[kind]);
  }
}
