/**
 * GET /v1/events: the dashboard's live feed, as server-sent events. The page never polls:
 * the peer pushes a `state` event (links + every lock's holders and waiters) after the
 * runtime reports a change, at most once per `pushIntervalMs`, a `cluster` event (link
 * state, RTT, lease) every `linkRefreshMs`, and `activity` events (local grants and ends,
 * queue changes seen in this peer's queues).
 *
 * Activity is recorded from the moment the feed exists, whether or not a page is open, so
 * a page opened later shows the grants and ends that led to what it sees (the last
 * `activityMax` of them), and a grants-per-second figure over the last `rateWindowMs`.
 *
 * Everything is bounded: clients (503 past the limit), locks and waiters per snapshot,
 * remembered activity, the rate window. A client that cannot keep up is skipped, not
 * buffered for: when its socket drains it gets one fresh snapshot. The periodic `cluster`
 * push runs only while a client is connected.
 */
import type { EventEmitter } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { Env, Timer } from '../env.js';
import { ErrorCode } from '../errors.js';
import { limits } from '../limits.js';
import type { ClusterView, HoldEvent, LockView, PeerEvents } from '../runtime/peer.js';
import type { Activity } from './dashboard-activity.js';
import { QueueDiff, RateWindow, activityOfHold } from './dashboard-activity.js';
import { clusterJson, lockJson } from './views.js';

/** What the feed reads of a peer (PeerRuntime fits). */
export interface DashboardSource {
  readonly events: EventEmitter<PeerEvents>;
  /** The peer's inspector: its cluster view and its locks. */
  readonly inspect: { cluster(): ClusterView; locks(entriesMax?: number): LockView[] };
}

/**
 * The clocks and timers the feed runs on: Node's unless a test passes virtual ones, so the
 * throttle can be checked without depending on how fast the test machine is.
 */
export type FeedClock = Pick<Env, 'monoMs' | 'wallMs' | 'after' | 'every' | 'clear'>;

/** Node's clocks; the timers are unref'd, so an open page never keeps a stopping process alive. */
const nodeFeedClock: FeedClock = {
  monoMs: () => performance.now(),
  wallMs: () => Date.now(),
  after: (ms, fn) => setTimeout(fn, ms).unref() as unknown as Timer,
  every: (ms, fn) => setInterval(fn, ms).unref() as unknown as Timer,
  clear: (timer) => {
    if (timer !== null) clearTimeout(timer as unknown as NodeJS.Timeout);
  },
};

/** Limits and rates of the feed. */
export interface DashboardFeedOptions {
  /** Concurrent SSE clients; more are answered 503. */
  readonly clientsMax: number;
  /** Least time between two `state` pushes. */
  readonly pushIntervalMs: number;
  /** Least time between two looks at the queues while no page is open (the activity list only). */
  readonly idlePushIntervalMs: number;
  /** Period of the `cluster` push (link state changes without a queue change). */
  readonly linkRefreshMs: number;
  /** Activity items remembered for a page that connects. */
  readonly activityMax: number;
  /** Locks in one snapshot (the rest are counted, not listed). */
  readonly locksMax: number;
  /** Waiters listed per lock in one snapshot. */
  readonly waitersPerLockMax: number;
  /** The grants-per-second figure averages over this window. */
  readonly rateWindowMs: number;
  /** How long a browser waits before it reconnects a dropped stream (the SSE `retry`). */
  readonly retryMs: number;
  /** Clocks and timers (Node's by default). */
  readonly clock: FeedClock;
}

/** Defaults: a handful of operators' browsers, 10 pushes a second at most; the bounds are in limits.ts. */
export const dashboardFeedDefaults: DashboardFeedOptions = {
  clientsMax: limits.dashboardStreamsMax,
  pushIntervalMs: 100,
  idlePushIntervalMs: 1000,
  linkRefreshMs: 1000,
  activityMax: limits.dashboardActivityMax,
  locksMax: limits.dashboardLocksMax,
  waitersPerLockMax: limits.dashboardWaitersPerLockMax,
  rateWindowMs: 10_000,
  retryMs: 2000,
  clock: nodeFeedClock,
};

interface FeedClient {
  readonly res: ServerResponse;
  /** The socket buffer is full: skip pushes until it drains. */
  blocked: boolean;
  /** A push was skipped while blocked: send a fresh snapshot on drain. */
  missed: boolean;
}

/** The SSE hub of one peer. */
export class DashboardFeed {
  readonly #source: DashboardSource;
  readonly #opts: DashboardFeedOptions;
  readonly #clients = new Set<FeedClient>();
  readonly #activity: Activity[] = [];
  readonly #pending: Activity[] = [];
  readonly #diff = new QueueDiff();
  /** Grants of this peer's own holds (exact). */
  readonly #localGrants: RateWindow;
  /** Grants of every peer: this peer's own plus the other peers' holds seen in its queues. */
  readonly #seenGrants: RateWindow;
  readonly #clock: FeedClock;
  #pushTimer: Timer | null = null;
  #linkTimer: Timer | null = null;
  #lastPushMs = -Infinity;
  #closed = false;

  constructor(source: DashboardSource, opts: Partial<DashboardFeedOptions> = {}) {
    this.#source = source;
    this.#opts = { ...dashboardFeedDefaults, ...opts };
    this.#clock = this.#opts.clock;
    this.#localGrants = new RateWindow(this.#opts.rateWindowMs);
    this.#seenGrants = new RateWindow(this.#opts.rateWindowMs);
    // Listening from the start: the activity list and the rate do not wait for a page. The
    // queue diff starts from empty queues, which is what a peer starts with.
    this.#source.events.on('changed', this.#onChanged);
    this.#source.events.on('hold', this.#onHold);
  }

  /** Connected clients (tests, metrics). */
  clientCount(): number {
    return this.#clients.size;
  }

  /** The route handler for GET /v1/events. */
  readonly route = (req: IncomingMessage, res: ServerResponse): void => {
    if (this.#closed || this.#clients.size >= this.#opts.clientsMax) {
      const body = JSON.stringify({ error: ErrorCode.LimitExceeded, message: `this peer already serves ${this.#opts.clientsMax} dashboard streams; close one or raise the limit` });
      res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '5', 'content-length': Buffer.byteLength(body) });
      res.end(body);
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', 'x-accel-buffering': 'no', connection: 'keep-alive' });
    req.socket.setNoDelay(true);
    const client: FeedClient = { res, blocked: false, missed: false };
    if (this.#clients.size === 0) this.#startLinkTimer();
    this.#clients.add(client);
    res.on('close', () => this.#remove(client));
    res.on('drain', () => this.#onDrain(client));
    this.#write(client, `retry: ${this.#opts.retryMs}\n\n`);
    this.#send(client, 'activity', this.#activity);
    this.#send(client, 'state', this.#state());
  };

  /** The remembered activity, oldest first (tests). */
  activity(): readonly Activity[] {
    return this.#activity;
  }

  /** Flushes a pending push (the holds ended by a shutdown), ends every stream, drops the runtime listeners. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#pushTimer !== null) {
      this.#clock.clear(this.#pushTimer);
      this.#push();
    }
    this.#source.events.off('changed', this.#onChanged);
    this.#source.events.off('hold', this.#onHold);
    for (const c of [...this.#clients]) {
      this.#remove(c);
      c.res.end();
    }
  }

  #startLinkTimer(): void {
    this.#linkTimer = this.#clock.every(this.#opts.linkRefreshMs, this.#onLinkTick);
  }

  #remove(client: FeedClient): void {
    if (!this.#clients.delete(client)) return;
    if (this.#clients.size > 0) return;
    this.#clock.clear(this.#linkTimer);
    this.#linkTimer = null;
  }

  /** Throttle: the first change after a quiet period is pushed on the next turn, then at most once per interval. */
  readonly #onChanged = (): void => {
    if (this.#pushTimer !== null || this.#closed) return;
    // With no page open the queues are read for the activity list only: once a second is
    // enough, and it keeps a busy peer from walking its queues ten times a second.
    const intervalMs = this.#clients.size > 0 ? this.#opts.pushIntervalMs : this.#opts.idlePushIntervalMs;
    const waitMs = Math.max(0, this.#lastPushMs + intervalMs - this.#clock.monoMs());
    this.#pushTimer = this.#clock.after(waitMs, this.#push);
  };

  readonly #onHold = (e: HoldEvent): void => {
    this.#pending.push(activityOfHold(e));
    // Trimmed to the last activityMax once it holds twice that: a shift per event would move
    // the whole list on every grant and end of a busy peer.
    if (this.#pending.length >= 2 * this.#opts.activityMax) this.#keepLastPending();
    this.#onChanged();
  };

  /** Drops all but the last activityMax pending activities (the older ones would be cut from the list anyway). */
  #keepLastPending(): void {
    const over = this.#pending.length - this.#opts.activityMax;
    if (over > 0) this.#pending.splice(0, over);
  }

  readonly #push = (): void => {
    this.#pushTimer = null;
    this.#lastPushMs = this.#clock.monoMs();
    // The first entries of each queue only: a burst of waiters (100,000 in the benchmark) must
    // not make every push walk them all, or the event loop stalls past the lease (issue 15).
    const locks = this.#source.inspect.locks(this.#entriesMax());
    this.#keepLastPending();
    const reported = new Set(this.#pending.map((a) => a.token));
    const evicted = new Set(this.#source.inspect.cluster().peers.flatMap((p) => ('self' in p || !p.evicted ? [] : [p.id])));
    const fresh = [...this.#pending, ...this.#diff.next(locks, this.#clock.wallMs(), reported, evicted)];
    this.#pending.length = 0;
    if (fresh.length > 0) {
      this.#remember(fresh);
      this.#broadcast('activity', fresh);
    }
    // With no page open the activity is still recorded, but no snapshot is built.
    if (this.#clients.size > 0) this.#broadcast('state', this.#state(locks));
  };

  readonly #onLinkTick = (): void => {
    const now = this.#clock.wallMs();
    this.#broadcast('cluster', { now, cluster: clusterJson(this.#source.inspect.cluster()), rates: this.#rates(now) });
  };

  #rates(now: number): Record<string, number> {
    return { window_ms: this.#opts.rateWindowMs, local_grants_per_s: this.#localGrants.perSecond(now), seen_grants_per_s: this.#seenGrants.perSecond(now) };
  }

  #remember(items: readonly Activity[]): void {
    for (const a of items) {
      if (a.type === 'granted') this.#localGrants.add(a.at);
      if (a.type === 'granted' || a.type === 'held') this.#seenGrants.add(a.at);
    }
    this.#activity.push(...items);
    const over = this.#activity.length - this.#opts.activityMax;
    if (over > 0) this.#activity.splice(0, over);
  }

  /** Entries of each queue the feed reads: the holders and the waiters it may show. */
  #entriesMax(): number {
    return this.#opts.waitersPerLockMax + limits.dashboardHoldersPerLockMax;
  }

  #state(locks: LockView[] = this.#source.inspect.locks(this.#entriesMax())): Record<string, unknown> {
    const listed = locks.slice(0, this.#opts.locksMax).map((l) => ({ ...lockJson(l, this.#opts.waitersPerLockMax), waiters_total: l.queued - l.holders.length }));
    const now = this.#clock.wallMs();
    return { now, cluster: clusterJson(this.#source.inspect.cluster()), rates: this.#rates(now), locks: listed, locks_total: locks.length, activity_max: this.#opts.activityMax };
  }

  #broadcast(event: string, data: unknown): void {
    if (this.#clients.size === 0) return;
    const chunk = frame(event, data);
    for (const c of this.#clients) {
      if (c.blocked) c.missed = true;
      else this.#write(c, chunk);
    }
  }

  #send(client: FeedClient, event: string, data: unknown): void {
    this.#write(client, frame(event, data));
  }

  #write(client: FeedClient, chunk: string): void {
    if (client.res.destroyed) return;
    if (!client.res.write(chunk)) client.blocked = true;
  }

  #onDrain(client: FeedClient): void {
    client.blocked = false;
    if (!client.missed) return;
    client.missed = false;
    this.#send(client, 'state', this.#state());
  }
}

/** One SSE message; JSON never contains a raw newline, so `data:` is one line. */
function frame(event: string, data: unknown): string {
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}
