/**
 * Watches (docs/design.md section 6, "Watches"): `GET /v1/locks/{name}/watch` and
 * `GET /v1/watch?prefix=P` stream, as server-sent events, every change of the queues this
 * peer sees for one lock or for every lock whose name starts with P. The first event is
 * `state`, the current holders and waiters; then one event per change, in the order they
 * happened: `queued` (a request entered the queue), `granted` (a request holds), `released`
 * (a hold left the queue: `reason` says why for this peer's own holds, null for other peers',
 * which their own peers know) and `left` (a waiter left without a grant).
 *
 * The changes come from the core's queue log (src/core/queue-log.ts), read after every step
 * that can change a queue, so no change is missed and a change costs the same however long
 * the queue (src/http/watch-queues.ts). The events are written later, at most
 * `limits.watchWritesPerTurnMax` writes per event-loop turn (`Env.soon` between batches):
 * the peer's heartbeats and echoes never wait behind them. Bounded: at most
 * `limits.watchStreamsMax` streams per peer (429 ERR_LIMIT_EXCEEDED beyond), and a watcher
 * whose socket buffer holds more than `limits.watchBufferBytesMax` unsent bytes beyond its
 * `state` gets an `error` event (ERR_WATCH_BEHIND) and its stream ends: it reconnects and
 * starts again from a fresh `state`.
 */
import type { EventEmitter } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { QueueLog } from '../core/queue-log.js';
import type { Env, Timer } from '../env.js';
import { ErrorCode, LockError } from '../errors.js';
import { limits } from '../limits.js';
import type { Logger } from '../log.js';
import type { HoldEvent, LockView, PeerEvents } from '../runtime/peer.js';
import { leaderJson, lockJson } from './views.js';
import type { QueueSource } from './watch-queues.js';
import { WatchedQueues } from './watch-queues.js';

export type { WatchChange } from './watch-queues.js';

/** What the watches read of a peer (PeerRuntime fits): its events, its queue log, and through its inspector the queues. */
export interface WatchSource {
  readonly events: EventEmitter<PeerEvents>;
  readonly queueLog: QueueLog;
  readonly inspect: QueueSource & { locks(): LockView[] };
}

/** The clock and the end-of-turn scheduling the watches run on. */
export type WatchEnv = Pick<Env, 'wallMs' | 'soon' | 'clear'>;

/** Which locks a stream follows; `election`: the leader of that election only (its lock's holder). */
export type WatchSelector = { readonly lock: string } | { readonly prefix: string } | { readonly election: string };

interface Stream {
  readonly res: ServerResponse;
  readonly selector: WatchSelector;
  /** The first event (by number) this stream is sent: the ones before were in its `state`. */
  readonly from: number;
  /** Unsent bytes it may hold: its `state`, and `limits.watchBufferBytesMax` more. */
  readonly allowance: number;
  /** For an election: the term and value of the leader last told, '' for none. */
  term: string;
}

/** An event waiting to be written: to every stream that selects its lock, or to one stream. */
interface Outgoing {
  readonly seq: number;
  readonly lock: string;
  readonly event: string;
  readonly data: unknown;
  readonly only?: Stream;
}

function selects(s: WatchSelector, lock: string): boolean {
  if ('lock' in s) return s.lock === lock;
  if ('election' in s) return s.election === lock;
  return lock.startsWith(s.prefix);
}

function frame(event: string, data: unknown): string {
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

/** The watch streams of one peer. */
export class Watches {
  readonly #source: WatchSource;
  readonly #log: Logger;
  readonly #env: WatchEnv;
  readonly #streams = new Set<Stream>();
  readonly #queues: WatchedQueues;
  /** End reasons of this peer's own holds since the last step, by token. */
  readonly #reasons = new Map<string, string>();
  #outbox: Outgoing[] = [];
  #outHead = 0;
  #seq = 0;
  #flushTimer: Timer | null = null;
  #closed = false;

  constructor(source: WatchSource, log: Logger, env: WatchEnv) {
    this.#source = source;
    this.#log = log.child({ component: 'watch' });
    this.#env = env;
    this.#queues = new WatchedQueues(source.inspect);
  }

  /** Open streams (tests, metrics). */
  count(): number {
    return this.#streams.size;
  }

  /** Events not written yet (tests). */
  backlog(): number {
    return this.#outbox.length - this.#outHead;
  }

  /** Starts a stream on `res`: headers, the `state` event, then every change. */
  open(req: IncomingMessage, res: ServerResponse, selector: WatchSelector): void {
    if (this.#closed) throw new LockError(ErrorCode.ShuttingDown, 'this peer is shutting down');
    if (this.#streams.size >= limits.watchStreamsMax) {
      throw new LockError(ErrorCode.LimitExceeded, `this peer already serves ${limits.watchStreamsMax} watch streams; close one or watch a prefix instead of many locks`);
    }
    if (this.#streams.size === 0) {
      this.#source.events.on('changed', this.#onChanged);
      this.#source.events.on('hold', this.#onHold);
      this.#source.queueLog.enable(true);
    } else {
      this.#onChanged(); // The followed queues catch up with the core before the new stream's state.
    }
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', 'x-accel-buffering': 'no', connection: 'keep-alive' });
    req.socket.setNoDelay(true);
    const locks = 'prefix' in selector ? this.#source.inspect.locks().filter((l) => l.name.startsWith(selector.prefix)) : [this.#source.inspect.lock('lock' in selector ? selector.lock : selector.election)];
    for (const l of locks) if (l.queued > 0) this.#queues.follow(l.name);
    const first: { event: string; data: unknown; term?: string } = 'election' in selector ? this.#leaderEvent(selector.election, locks[0]) : { event: 'state', data: { locks: locks.map((l) => lockJson(l)), at: this.#env.wallMs() } };
    const text = frame(first.event, first.data);
    const stream: Stream = { res, selector, from: this.#seq, allowance: Buffer.byteLength(text) + limits.watchBufferBytesMax, term: first.term ?? '' };
    this.#streams.add(stream);
    res.on('close', () => this.#remove(stream));
    this.#write(stream, text);
  }

  /** The event that tells an election's leader (`leader`, `{name, leader, at}`), or `vacant`, and its term. */
  #leaderEvent(name: string, lock: LockView | undefined): { event: string; data: unknown; term: string } {
    const leader = lock === undefined ? null : leaderJson(lock);
    const term = leader === null ? '' : `${String(leader['term'])}\u0000${JSON.stringify(leader['value'])}`;
    return { event: leader === null ? 'vacant' : 'leader', data: { name, leader, at: this.#env.wallMs() }, term };
  }

  /** Ends every stream and drops the runtime listeners (peer shutdown). */
  close(): void {
    this.#closed = true;
    for (const s of [...this.#streams]) {
      this.#remove(s);
      s.res.end();
    }
  }

  #remove(stream: Stream): void {
    if (!this.#streams.delete(stream)) return;
    if (this.#streams.size > 0) {
      this.#queues.prune((lock) => [...this.#streams].some((s) => selects(s.selector, lock)));
      return;
    }
    this.#source.events.off('changed', this.#onChanged);
    this.#source.events.off('hold', this.#onHold);
    this.#source.queueLog.enable(false);
    this.#queues.clear();
    this.#reasons.clear();
    this.#outbox = [];
    this.#outHead = 0;
    this.#env.clear(this.#flushTimer);
    this.#flushTimer = null;
  }

  readonly #onHold = (e: HoldEvent): void => {
    if (e.type === 'ended' && e.reason !== null) this.#reasons.set(e.token, e.reason);
  };

  #selected = (lock: string): boolean => {
    for (const s of this.#streams) if (selects(s.selector, lock)) return true;
    return false;
  };

  /** After a step: what changed in the followed queues is queued for the streams, to be written later. */
  readonly #onChanged = (): void => {
    const records = this.#source.queueLog.take();
    if (records.length === 0) return;
    const heads = new Map<string, LockView>();
    const changes = this.#queues.apply(records, this.#selected, this.#reasons, this.#env.wallMs(), heads);
    this.#reasons.clear();
    for (const c of changes) this.#outbox.push({ seq: this.#seq++, lock: c.lock, event: c.type, data: c });
    for (const [lock, head] of heads) this.#tellLeaders(lock, head);
    if (this.backlog() > 0 && this.#flushTimer === null) this.#flushTimer = this.#env.soon(this.#flush);
  };

  /** Election streams of `lock`: an event when its leader or the leader's value changed. */
  #tellLeaders(lock: string, head: LockView): void {
    for (const s of this.#streams) {
      if (!('election' in s.selector) || s.selector.election !== lock) continue;
      const told = this.#leaderEvent(lock, head);
      if (told.term === s.term) continue;
      s.term = told.term;
      this.#outbox.push({ seq: this.#seq++, lock, event: told.event, data: told.data, only: s });
    }
  }

  /** Writes queued events, a bounded number per turn; the rest on a later turn. */
  readonly #flush = (): void => {
    this.#flushTimer = null;
    let writes = 0;
    while (this.#outHead < this.#outbox.length && writes < limits.watchWritesPerTurnMax) {
      const e = this.#outbox[this.#outHead++] as Outgoing;
      let text: string | null = null;
      for (const s of e.only === undefined ? [...this.#streams] : [e.only]) {
        if (s.from > e.seq || !this.#streams.has(s) || (e.only === undefined && ('election' in s.selector || !selects(s.selector, e.lock)))) continue;
        text ??= frame(e.event, e.data);
        this.#write(s, text);
        writes++;
      }
    }
    if (this.#outHead < this.#outbox.length) {
      this.#flushTimer = this.#env.soon(this.#flush);
      return;
    }
    this.#outbox = [];
    this.#outHead = 0;
  };

  #write(stream: Stream, text: string): void {
    if (stream.res.destroyed) return;
    stream.res.write(text);
    if (stream.res.writableLength <= stream.allowance) return;
    // Too far behind: a watcher must not make this peer buffer without bound.
    const message = `this watcher fell more than ${limits.watchBufferBytesMax} bytes behind; reconnect to start again from the current state`;
    this.#log.warn({ code: ErrorCode.WatchBehind, selector: stream.selector }, message);
    stream.res.end(frame('error', { error: ErrorCode.WatchBehind, message }));
    this.#remove(stream);
  }
}
