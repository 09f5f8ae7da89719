/**
 * What changed in the queues, for viewers that follow them (the watches, docs/design.md
 * section 6, "Watches"): the requests that entered and left each lock's queue, in order,
 * and the locks where something else may have changed who holds (a request of ours
 * granted, a meta changed). Off until a viewer turns it on; then the viewer takes the
 * records after each step, so following a queue costs what changed in it, never a walk of
 * it. No protocol rule reads it.
 */
import type { QueuedRequest } from './types.js';

/** One record: a request entered (`in`) or left (`out`) its lock's queue, took new meta (`meta`), or its lock needs a look (`touch`). */
export type QueueRecord =
  | { readonly op: 'in' | 'out' | 'meta'; readonly lock: string; readonly request: QueuedRequest }
  | { readonly op: 'touch'; readonly lock: string }
  /** Every queue was replaced (a new incarnation of this peer starts with empty ones). */
  | { readonly op: 'reset' };

/** The records of one peer, kept across its incarnations. */
export class QueueLog {
  #on = false;
  #records: QueueRecord[] = [];

  /** Whether records are kept. */
  get on(): boolean {
    return this.#on;
  }

  /** Starts or stops keeping records; stopping drops the ones not taken. */
  enable(on: boolean): void {
    this.#on = on;
    if (!on) this.#records = [];
  }

  /** Records that `request` entered its lock's queue. */
  entered(request: QueuedRequest): void {
    if (this.#on) this.#records.push({ op: 'in', lock: request.lock, request });
  }

  /** Records that `request` left its lock's queue. */
  left(request: QueuedRequest): void {
    if (this.#on) this.#records.push({ op: 'out', lock: request.lock, request });
  }

  /** Records that `request` replaced the queued one of its `(ts, peer)` (new meta). */
  replaced(request: QueuedRequest): void {
    if (this.#on) this.#records.push({ op: 'meta', lock: request.lock, request });
  }

  /** Records that who holds `lock` may have changed without a request entering or leaving it. */
  touched(lock: string): void {
    if (this.#on) this.#records.push({ op: 'touch', lock });
  }

  /** Records that every queue was replaced. */
  reset(): void {
    if (this.#on) this.#records.push({ op: 'reset' });
  }

  /** The records since the last take, oldest first; the log is empty after. */
  take(): QueueRecord[] {
    const out = this.#records;
    this.#records = [];
    return out;
  }
}
