/**
 * The watch hub (src/http/watch.ts) on a fake peer: the changes it derives from two queue
 * snapshots, the stream limit, and the end of a stream that falls too far behind. The
 * streams on real peers are tested in test/integration/watch.test.ts.
 */
import { EventEmitter } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { isLockError } from '../../src/errors.js';
import { Watches } from '../../src/http/watch.js';
import { limits } from '../../src/limits.js';
import type { LockView, PeerEvents, QueueView } from '../../src/runtime/peer.js';

function view(owner: string, token: string, local = false): QueueView {
  return { peer: local ? 'a' : 'b', owner, meta: null, token, mode: 'exclusive', limit: 1, permits: 1, requestedAtMs: 1, grantedAtMs: null, expiresAtMs: null, local };
}

class FakePeer {
  readonly events = new EventEmitter<PeerEvents>();
  queues = new Map<string, LockView>();
  lock(name: string): LockView {
    return this.queues.get(name) ?? { name, holders: [], waiters: [], queued: 0 };
  }
  locks(): LockView[] {
    return [...this.queues.values()];
  }
  set(name: string, holders: QueueView[], waiters: QueueView[] = []): void {
    this.queues.set(name, { name, holders, waiters, queued: holders.length + waiters.length });
    this.events.emit('changed');
  }
}

/** A response that records what is written; `backlog` bytes stay unsent. */
class FakeResponse extends EventEmitter {
  readonly chunks: string[] = [];
  ended = false;
  backlog = 0;
  get writableLength(): number {
    return this.backlog;
  }
  writeHead(): this {
    return this;
  }
  write(chunk: string): boolean {
    this.chunks.push(chunk);
    return true;
  }
  end(chunk?: string): void {
    if (chunk !== undefined) this.chunks.push(chunk);
    this.ended = true;
  }
  events(): string[] {
    return this.chunks.map((c) => /^event: (\w+)/.exec(c)?.[1] ?? '?');
  }
}

const request = { socket: { setNoDelay: () => undefined } } as unknown as IncomingMessage;
const silent = pino({ level: 'silent' });

function open(w: Watches, selector: { lock: string } | { prefix: string }): FakeResponse {
  const res = new FakeResponse();
  w.open(request, res as unknown as ServerResponse, selector);
  return res;
}

describe('watches', () => {
  it('tell queued, granted, released (with a local hold\'s reason) and left, for the selected locks only', () => {
    const peer = new FakePeer();
    const w = new Watches(peer, silent, () => 42);
    const one = open(w, { lock: 'L' });
    const all = open(w, { prefix: 'jobs/' });
    peer.set('L', [view('x', '1')], [view('y', '2', true)]);
    peer.set('jobs/1', [view('z', '3')]);
    peer.set('L', [view('y', '2', true)]);
    peer.events.emit('hold', { type: 'ended', lock: 'L', id: 'i', owner: 'y', mode: 'exclusive', token: '2', peer: 'a', reason: 'expired', at: 42 });
    peer.set('L', [], [view('w', '4')]);
    peer.set('L', [], []);
    expect(one.events()).toEqual(['state', 'queued', 'granted', 'queued', 'released', 'granted', 'released', 'queued', 'left']);
    expect(all.events()).toEqual(['state', 'queued', 'granted']);
    const data = (i: number): Record<string, unknown> => JSON.parse(one.chunks[i]?.split('data: ')[1] ?? '{}') as Record<string, unknown>;
    // x is another peer's hold: this peer does not know why it ended; y's is its own.
    expect(data(4)).toMatchObject({ type: 'released', lock: 'L', reason: null, at: 42 });
    expect(data(6)).toMatchObject({ type: 'released', lock: 'L', reason: 'expired', request: { owner: 'y', local: true } });
    expect(data(8)).toMatchObject({ type: 'left', reason: null, request: { owner: 'w' } });
    expect(w.count()).toBe(2);
    one.emit('close');
    all.emit('close');
    expect(w.count()).toBe(0);
    expect(peer.events.listenerCount('changed')).toBe(0);
  });

  it('answer 429 past limits.watchStreamsMax streams', () => {
    const w = new Watches(new FakePeer(), silent);
    for (let i = 0; i < limits.watchStreamsMax; i++) open(w, { lock: `L${i}` });
    let refused: unknown;
    try {
      open(w, { lock: 'one-more' });
    } catch (err) {
      refused = err;
    }
    expect(isLockError(refused, 'ERR_LIMIT_EXCEEDED')).toBe(true);
  });

  it('end a stream that falls behind with ERR_WATCH_BEHIND, and keep serving the others', () => {
    const peer = new FakePeer();
    const w = new Watches(peer, silent);
    const slow = open(w, { lock: 'L' });
    const fast = open(w, { lock: 'L' });
    slow.backlog = limits.watchBufferBytesMax + 1;
    peer.set('L', [view('x', '1')]);
    expect(slow.ended).toBe(true);
    expect(slow.chunks.at(-1)).toMatch(/^event: error\ndata: \{"error":"ERR_WATCH_BEHIND"/);
    expect(w.count()).toBe(1);
    peer.set('L', []);
    expect(fast.events()).toEqual(['state', 'queued', 'granted', 'released']);
  });
});
