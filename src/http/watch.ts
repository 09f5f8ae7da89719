/**
 * Watches (docs/design.md section 6, "Watches"): `GET /v1/locks/{name}/watch` and
 * `GET /v1/watch?prefix=P` stream, as server-sent events, every change of the queues this
 * peer sees for one lock or for every lock whose name starts with P. The first event is
 * `state`, the current holders and waiters; then one event per change, step by step:
 * `released` (a hold left the queue: `reason` says why for this peer's own holds, null for
 * other peers', which their own peers know), `left` (a waiter left without a grant), then
 * `queued` (a request entered the queue) and `granted` (a request holds).
 *
 * The queues are compared after every step of the core that can change them (the runtime's
 * `changed` event), so no change is missed: a watcher sees every grant and release this
 * peer's core makes or hears of. Bounded: at most `limits.watchStreamsMax` streams per peer (429 ERR_LIMIT_EXCEEDED
 * beyond), and a watcher whose socket buffer holds more than `limits.watchBufferBytesMax`
 * unsent bytes gets an `error` event (ERR_WATCH_BEHIND) and its stream ends: it reconnects
 * and starts again from a fresh `state`.
 */
import type { EventEmitter } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ErrorCode, LockError } from '../errors.js';
import { limits } from '../limits.js';
import type { Logger } from '../log.js';
import type { HoldEvent, LockView, PeerEvents, QueueView } from '../runtime/peer.js';
import { leaderJson, lockJson, queueJson } from './views.js';

/** What the watches read of a peer (PeerRuntime fits). */
export interface WatchSource {
  readonly events: EventEmitter<PeerEvents>;
  lock(name: string): LockView;
  locks(): LockView[];
}

/** Which locks a stream follows; `election`: the leader of that election only (its lock's holder). */
export type WatchSelector = { readonly lock: string } | { readonly prefix: string } | { readonly election: string };

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

interface Entry {
  readonly lock: string;
  readonly view: QueueView;
  readonly held: boolean;
}

/** The queues of the selected locks, by lock and token (a token names one request). */
function snapshot(locks: readonly LockView[]): Map<string, Entry> {
  const out = new Map<string, Entry>();
  for (const l of locks) {
    for (const v of l.holders) out.set(`${l.name}\u0000${v.token}`, { lock: l.name, view: v, held: true });
    for (const v of l.waiters) out.set(`${l.name}\u0000${v.token}`, { lock: l.name, view: v, held: false });
  }
  return out;
}

/**
 * The changes from `before` to `after`, entries in queue order. `reasons` holds the end
 * reasons of this peer's own holds, by token, heard since the last comparison.
 */
export function queueChanges(before: ReadonlyMap<string, Entry>, after: ReadonlyMap<string, Entry>, reasons: ReadonlyMap<string, string>, at: number): WatchChange[] {
  const out: WatchChange[] = [];
  const change = (type: WatchChange['type'], e: Entry, reason: string | null = null): void => {
    out.push({ type, lock: e.lock, request: queueJson(e.view), reason, at });
  };
  for (const [key, e] of before) {
    if (after.has(key)) continue;
    if (e.held) change('released', e, reasons.get(e.view.token) ?? null);
    else change('left', e);
  }
  for (const [key, e] of after) {
    const was = before.get(key);
    if (was === undefined) {
      // A request can enter and be granted in one step (a free lock): both are told.
      change('queued', e);
      if (e.held) change('granted', e);
    } else if (e.held && !was.held) change('granted', e);
  }
  return out;
}

interface Stream {
  readonly res: ServerResponse;
  readonly selector: WatchSelector;
  queues: Map<string, Entry>;
  /** For an election: the term and value of the leader last told, '' for none. */
  term: string;
}

/** The watch streams of one peer. */
export class Watches {
  readonly #source: WatchSource;
  readonly #log: Logger;
  readonly #now: () => number;
  readonly #streams = new Set<Stream>();
  /** End reasons of this peer's own holds since the last comparison, by token. */
  readonly #reasons = new Map<string, string>();
  #closed = false;

  constructor(source: WatchSource, log: Logger, now: () => number = Date.now) {
    this.#source = source;
    this.#log = log.child({ component: 'watch' });
    this.#now = now;
  }

  /** Open streams (tests, metrics). */
  count(): number {
    return this.#streams.size;
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
    }
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', 'x-accel-buffering': 'no', connection: 'keep-alive' });
    req.socket.setNoDelay(true);
    const locks = this.#select(selector);
    const stream: Stream = { res, selector, queues: snapshot(locks), term: '' };
    this.#streams.add(stream);
    res.on('close', () => this.#remove(stream));
    if ('election' in selector) this.#tellLeader(stream, locks[0], true);
    else this.#send(stream, 'state', { locks: locks.map((l) => lockJson(l)), at: this.#now() });
  }

  /**
   * An election's stream: `leader` (`{name, leader, at}`) when the leader or its value
   * changes, `vacant` when nobody leads any more; the first event says which holds now.
   */
  #tellLeader(stream: Stream, lock: LockView | undefined, first: boolean): void {
    const leader = lock === undefined ? null : leaderJson(lock);
    const term = leader === null ? '' : `${String(leader['term'])}\u0000${JSON.stringify(leader['value'])}`;
    if (!first && term === stream.term) return;
    stream.term = term;
    const name = 'election' in stream.selector ? stream.selector.election : '';
    this.#send(stream, leader === null ? 'vacant' : 'leader', { name, leader, at: this.#now() });
  }

  /** Ends every stream and drops the runtime listeners (peer shutdown). */
  close(): void {
    this.#closed = true;
    for (const s of [...this.#streams]) {
      this.#remove(s);
      s.res.end();
    }
  }

  #select(selector: WatchSelector): LockView[] {
    if ('lock' in selector) return [this.#source.lock(selector.lock)];
    if ('election' in selector) return [this.#source.lock(selector.election)];
    return this.#source.locks().filter((l) => l.name.startsWith(selector.prefix));
  }

  #remove(stream: Stream): void {
    if (!this.#streams.delete(stream) || this.#streams.size > 0) return;
    this.#source.events.off('changed', this.#onChanged);
    this.#source.events.off('hold', this.#onHold);
    this.#reasons.clear();
  }

  readonly #onHold = (e: HoldEvent): void => {
    if (e.type === 'ended' && e.reason !== null) this.#reasons.set(e.token, e.reason);
  };

  readonly #onChanged = (): void => {
    const at = this.#now();
    for (const s of [...this.#streams]) {
      if ('election' in s.selector) {
        this.#tellLeader(s, this.#select(s.selector)[0], false);
        continue;
      }
      const queues = snapshot(this.#select(s.selector));
      const changes = queueChanges(s.queues, queues, this.#reasons, at);
      s.queues = queues;
      for (const c of changes) {
        if (!this.#streams.has(s)) break;
        this.#send(s, c.type, c);
      }
    }
    this.#reasons.clear();
  };

  #send(stream: Stream, event: string, data: unknown): void {
    stream.res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
    if (stream.res.writableLength <= limits.watchBufferBytesMax) return;
    // Too far behind: a watcher must not make this peer buffer without bound.
    const message = `this watcher fell more than ${limits.watchBufferBytesMax} bytes behind; reconnect to start again from the current state`;
    this.#log.warn({ code: ErrorCode.WatchBehind, selector: stream.selector }, message);
    stream.res.end(`event: error\ndata: ${JSON.stringify({ error: ErrorCode.WatchBehind, message })}\n\n`);
    this.#remove(stream);
  }
}
