/**
 * The queues the watches follow (src/http/watch.ts), kept up to date from the core's queue
 * log (src/core/queue-log.ts) rather than by walking them: a request that entered or left
 * costs one map operation, and who holds is read from the head of a queue the step touched
 * (every holder, a few entries for an exclusive lock however many wait behind). Only the
 * first look at a lock walks its queue, once.
 */
import type { QueueRecord } from '../core/queue-log.js';
import type { QueuedRequest } from '../core/types.js';
import { tokenOf } from '../core/types.js';
import type { LockView, QueueView } from '../runtime/peer.js';
import { queueJson } from './views.js';

/** One change of a queue, as a watcher receives it. */
export interface WatchChange {
  readonly type: 'queued' | 'granted' | 'released' | 'left';
  readonly lock: string;
  /** The request, as GET /v1/locks/{name} shows it. */
  readonly request: Record<string, unknown>;
  /** Why this peer's own hold ended (`released`, `expired`, `lease_lost`, ...); null otherwise. */
  readonly reason: string | null;
  /** Epoch ms on this peer's clock. */
  readonly at: number;
}

/** What the tracker reads of a peer (its inspector fits). */
export interface QueueSource {
  /** Holders and waiters of one whole queue (the first look at a lock). */
  lock(name: string): LockView;
  /** The head of one queue: every holder in it (`permitsMax`: the largest semaphore limit in it). */
  head(name: string, permitsMax: number): LockView;
  /** A queued request as a waiter. */
  waiterView(request: QueuedRequest): QueueView;
}

/** One followed lock: every request in its queue, and which of them held at the last look. */
interface Followed {
  readonly known: Map<string, QueueView>;
  held: Set<string>;
  /** Semaphore requests in the queue, by limit: the largest bounds the head. */
  readonly limits: Map<number, number>;
}

function countLimit(f: Followed, v: QueueView, by: 1 | -1): void {
  if (v.mode !== 'semaphore') return;
  const n = (f.limits.get(v.limit) ?? 0) + by;
  if (n > 0) f.limits.set(v.limit, n);
  else f.limits.delete(v.limit);
}

function permitsMax(f: Followed): number {
  let max = 0;
  for (const limit of f.limits.keys()) max = Math.max(max, limit);
  return max;
}

/** The followed queues of one peer. */
export class WatchedQueues {
  readonly #source: QueueSource;
  readonly #followed = new Map<string, Followed>();

  constructor(source: QueueSource) {
    this.#source = source;
  }

  /** Locks followed (tests). */
  get size(): number {
    return this.#followed.size;
  }

  /** Follows `name` from now on, from its whole queue if it is not followed yet. */
  follow(name: string): void {
    if (this.#followed.has(name)) return;
    const view = this.#source.lock(name);
    const f: Followed = { known: new Map(), held: new Set(), limits: new Map() };
    for (const v of view.holders) f.held.add(v.token);
    for (const v of [...view.holders, ...view.waiters]) {
      f.known.set(v.token, v);
      countLimit(f, v, 1);
    }
    this.#followed.set(name, f);
  }

  /** Stops following the locks `keep` refuses. */
  prune(keep: (lock: string) => boolean): void {
    for (const lock of [...this.#followed.keys()]) if (!keep(lock)) this.#followed.delete(lock);
  }

  /** Forgets every lock. */
  clear(): void {
    this.#followed.clear();
  }

  /**
   * Applies the records of one step to the followed locks (a lock `selected` accepts starts
   * being followed at its first request), in order, and returns the changes: one per
   * request that entered or left, then a `granted` for each request that holds now and did
   * not at the last look. `reasons`: end reasons of this peer's own holds, by token.
   * `touched` receives the locks whose head was read, with it.
   */
  apply(records: readonly QueueRecord[], selected: (lock: string) => boolean, reasons: ReadonlyMap<string, string>, at: number, touched: Map<string, LockView>): WatchChange[] {
    const out: WatchChange[] = [];
    const looks = new Set<string>();
    for (const r of records) {
      if (r.op === 'reset') {
        this.#leaveAll(out, reasons, at);
        continue;
      }
      let f = this.#followed.get(r.lock);
      if (f === undefined) {
        if (!selected(r.lock) || r.op !== 'in') continue;
        f = { known: new Map(), held: new Set(), limits: new Map() };
        this.#followed.set(r.lock, f);
      }
      looks.add(r.lock);
      if (r.op !== 'touch') this.#record(f, r, out, reasons, at);
    }
    for (const lock of looks) {
      const f = this.#followed.get(lock);
      if (f === undefined) continue;
      touched.set(lock, this.#look(lock, f, out, at));
      if (f.known.size === 0) this.#followed.delete(lock);
    }
    return out;
  }

  #record(f: Followed, r: QueueRecord & { op: 'in' | 'out' | 'meta' }, out: WatchChange[], reasons: ReadonlyMap<string, string>, at: number): void {
    const token = tokenOf(r.request.ts, r.request.peer).toString();
    if (r.op === 'in') {
      const v = this.#source.waiterView(r.request);
      f.known.set(token, v);
      countLimit(f, v, 1);
      out.push({ type: 'queued', lock: r.lock, request: queueJson(v), reason: null, at });
      return;
    }
    const v = f.known.get(token);
    if (v === undefined) return;
    if (r.op === 'meta') {
      f.known.set(token, { ...v, meta: r.request.meta });
      return;
    }
    f.known.delete(token);
    countLimit(f, v, -1);
    if (f.held.delete(token)) out.push({ type: 'released', lock: r.lock, request: queueJson(v), reason: reasons.get(token) ?? null, at });
    else out.push({ type: 'left', lock: r.lock, request: queueJson(v), reason: null, at });
  }

  /** Reads the head of `lock`: a `granted` for each holder not held at the last look. */
  #look(lock: string, f: Followed, out: WatchChange[], at: number): LockView {
    const head = this.#source.head(lock, permitsMax(f));
    const held = new Set<string>();
    for (const v of head.holders) {
      held.add(v.token);
      if (!f.known.has(v.token)) countLimit(f, v, 1);
      f.known.set(v.token, v); // with its grant time
      if (!f.held.has(v.token)) out.push({ type: 'granted', lock, request: queueJson(v), reason: null, at });
    }
    f.held = held;
    return head;
  }

  /** Every queue was replaced: every request known left. */
  #leaveAll(out: WatchChange[], reasons: ReadonlyMap<string, string>, at: number): void {
    for (const [lock, f] of this.#followed) {
      for (const [token, v] of f.known) {
        const type = f.held.has(token) ? 'released' : 'left';
        out.push({ type, lock, request: queueJson(v), reason: type === 'released' ? (reasons.get(token) ?? null) : null, at });
      }
    }
    this.#followed.clear();
  }
}
