/**
 * The dashboard's "recent grants and ends" and its grants-per-second figure: this peer's
 * own hold events (exact, with the end reason) plus the queue changes it sees for other
 * peers' requests, found by diffing
 * two snapshots of its queues. A remote grant and release that both fall between two
 * snapshots (one push interval) are not seen; the peer that granted them has them exact.
 */
import type { HoldEvent, QueueView } from '../runtime/peer.js';

/** One line of the activity list. */
export interface Activity {
  /** granted / ended: a local hold (exact); queued / left: a request entered or left the queue; held / gone: a request of another peer seen holding, then leaving. */
  readonly type: 'granted' | 'ended' | 'queued' | 'left' | 'held' | 'gone';
  readonly lock: string;
  readonly peer: string;
  readonly owner: string;
  readonly mode: string;
  readonly token: string;
  readonly reason: string | null;
  readonly local: boolean;
  /** Epoch ms. */
  readonly at: number;
}

/** A local hold event as an activity line. */
export function activityOfHold(e: HoldEvent): Activity {
  return { type: e.type, lock: e.lock, peer: e.peer, owner: e.owner, mode: e.mode, token: e.token, reason: e.reason, local: true, at: e.at };
}

interface Seen {
  readonly lock: string;
  readonly view: QueueView;
  readonly held: boolean;
}

type Snapshot = Map<string, Seen>;

function snapshotOf(locks: ReadonlyArray<{ name: string; holders: readonly QueueView[]; waiters: readonly QueueView[] }>): Snapshot {
  const snap: Snapshot = new Map();
  for (const l of locks) {
    for (const v of l.holders) snap.set(keyOf(l.name, v), { lock: l.name, view: v, held: true });
    for (const v of l.waiters) snap.set(keyOf(l.name, v), { lock: l.name, view: v, held: false });
  }
  return snap;
}

/** A request is named by its lock and token (the token encodes its timestamp and peer). */
function keyOf(lock: string, v: QueueView): string {
  return `${v.token}\u0000${lock}`;
}

function line(type: Activity['type'], s: Seen, at: number): Activity {
  const v = s.view;
  return { type, lock: s.lock, peer: v.peer, owner: v.owner, mode: v.mode, token: v.token, reason: null, local: v.local, at };
}

/** Turns successive queue snapshots into activity lines. */
export class QueueDiff {
  #prev: Snapshot = new Map();

  /**
   * The changes since the last call. Local holds are reported by their hold events, so a
   * local request only shows here when it enters the queue as a waiter or leaves it
   * without a grant; `reported` holds the tokens of the hold events of this interval;
   * `evicted`, the peers out of this peer's view now (their requests left as `evicted`).
   */
  next(locks: Parameters<typeof snapshotOf>[0], at: number, reported: ReadonlySet<string> = new Set(), evicted: ReadonlySet<string> = new Set()): Activity[] {
    const cur = snapshotOf(locks);
    const out: Activity[] = [];
    for (const [key, s] of cur) {
      const before = this.#prev.get(key);
      if (s.view.local) {
        if (before === undefined && !s.held) out.push(line('queued', s, at));
      } else if (before === undefined) out.push(line(s.held ? 'held' : 'queued', s, at));
      else if (s.held && !before.held) out.push(line('held', s, at));
    }
    for (const [key, s] of this.#prev) {
      if (cur.has(key)) continue;
      // Another peer's request dropped with its evicted peer: the one end this peer knows the reason of.
      if (!s.view.local) out.push({ ...line(s.held ? 'gone' : 'left', s, at), reason: evicted.has(s.view.peer) ? 'evicted' : null });
      else if (!s.held && !reported.has(s.view.token)) out.push(line('left', s, at));
    }
    this.#prev = cur;
    return out;
  }
}

/**
 * Grants per second over the last `windowMs`, counted in one-second buckets: memory is
 * bounded by the window, whatever the grant rate.
 */
export class RateWindow {
  readonly #windowS: number;
  readonly #buckets: number[];
  /** The second (epoch s) each bucket counts. */
  readonly #seconds: number[];

  constructor(windowMs: number) {
    this.#windowS = Math.max(1, Math.round(windowMs / 1000));
    // One bucket more than the window: the current, partial second fills while the whole
    // seconds before it are still counted.
    this.#buckets = new Array<number>(this.#windowS + 1).fill(0);
    this.#seconds = new Array<number>(this.#windowS + 1).fill(-1);
  }

  /** Counts `n` events at `atMs` (epoch ms). */
  add(atMs: number, n = 1): void {
    const s = Math.floor(atMs / 1000);
    const i = s % this.#buckets.length;
    if (this.#seconds[i] !== s) {
      this.#seconds[i] = s;
      this.#buckets[i] = 0;
    }
    this.#buckets[i] = (this.#buckets[i] ?? 0) + n;
  }

  /** Events per second over the window that ends at `nowMs`: the seconds before the current one. */
  perSecond(nowMs: number): number {
    const now = Math.floor(nowMs / 1000);
    let sum = 0;
    for (let i = 0; i < this.#buckets.length; i++) {
      const s = this.#seconds[i] ?? -1;
      if (s < now && s >= now - this.#windowS) sum += this.#buckets[i] ?? 0;
    }
    return sum / this.#windowS;
  }
}
