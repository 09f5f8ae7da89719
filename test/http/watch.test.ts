/**
 * The watch hub (src/http/watch.ts) on a real single-peer runtime, its streams recorded by a
 * response that keeps what is written: the events of each change, what one change costs in
 * a long queue, that the events rebuild what a fresh `state` says, the stream limit, and the
 * end of a stream that falls too far behind. The streams on real processes are tested in
 * test/integration/watch.test.ts.
 */
import { EventEmitter } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { WatchState } from '../../src/client/watch-state.js';
import type { WatchEvent } from '../../src/client/wire.js';
import type { ClusterConfig } from '../../src/config.js';
import type { QueuedRequest } from '../../src/core/types.js';
import { nodeEnv } from '../../src/env.js';
import { isLockError } from '../../src/errors.js';
import type { WatchSource } from '../../src/http/watch.js';
import { Watches } from '../../src/http/watch.js';
import { limits } from '../../src/limits.js';
import { silentLogger } from '../../src/log.js';
import type { AcquireOptions, RequestCallbacks } from '../../src/runtime/holds.js';
import type { LockView, PeerRuntime } from '../../src/runtime/peer.js';
import { startRuntime } from '../../src/server.js';
import { Prng } from '../support/prng.js';
import { waitFor } from '../support/wait.js';

const config: ClusterConfig = {
  cluster: 't', secret: 'test-secret', peers: [{ id: 'a', ws: 'ws://127.0.0.1:0', http: '127.0.0.1:0' }],
  heartbeatMs: 1000, leaseMs: 5000, evictMs: 15000, tls: undefined,
};
const opts: AcquireOptions = { timeoutMs: limits.timeoutMsMax, ttlMs: 60_000, mode: 'exclusive', limit: 1, permits: 1, owner: 'x', meta: null, hold: 'ttl', expectedMs: null };
const quiet: RequestCallbacks = { granted: () => undefined, failed: () => undefined, ended: () => undefined };

/** A response that records what is written; `backlog` bytes stay unsent. */
class FakeResponse extends EventEmitter {
  readonly chunks: string[] = [];
  ended = false;
  backlog = 0;
  destroyed = false;
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
  parsed(): WatchEvent[] {
    return this.chunks.map((c) => ({ type: (/^event: (\w+)/.exec(c)?.[1] ?? '?') as WatchEvent['type'], data: JSON.parse(c.split('data: ')[1] ?? '{}') as Record<string, unknown> }));
  }
}

const request = { socket: { setNoDelay: () => undefined } } as unknown as IncomingMessage;

function open(w: Watches, selector: { lock: string } | { prefix: string }): FakeResponse {
  const res = new FakeResponse();
  w.open(request, res as unknown as ServerResponse, selector);
  return res;
}

let stop: (() => Promise<void>) | undefined;
afterEach(async () => {
  await stop?.();
  stop = undefined;
});

async function start(): Promise<PeerRuntime> {
  const started = await startRuntime({ config, id: 'a', logger: silentLogger(), wsPort: 0 });
  stop = started.stop;
  await waitFor('the peer is ready', () => started.runtime.ready(), 5000);
  return started.runtime;
}

/** The runtime as the watches read it, counting the queue entries handed to them. */
function counted(runtime: PeerRuntime): { source: WatchSource; read: { entries: number } } {
  const read = { entries: 0 };
  const count = (l: LockView): LockView => {
    read.entries += l.holders.length + l.waiters.length;
    return l;
  };
  const source: WatchSource = {
    events: runtime.events, queueLog: runtime.queueLog,
    inspect: {
      lock: (name) => count(runtime.inspect.lock(name)),
      locks: () => runtime.inspect.locks().map(count),
      head: (name, permitsMax) => count(runtime.inspect.head(name, permitsMax)),
      waiterView: (r: QueuedRequest) => {
        read.entries += 1;
        return runtime.inspect.waiterView(r);
      },
    },
  };
  return { source, read };
}

async function drained(w: Watches): Promise<void> {
  await waitFor('every watch event written', () => w.backlog() === 0, 5000);
}

/** Tokens and grants of each lock, as a `state` lists them. */
function shape(locks: ReadonlyArray<{ name: string; holders: ReadonlyArray<Record<string, unknown>>; waiters: ReadonlyArray<Record<string, unknown>> }>): unknown {
  return locks.map((l) => ({ name: l.name, holders: l.holders.map((r) => r['token']), waiters: l.waiters.map((r) => r['token']) }));
}

describe('watches', () => {
  it('tell queued, granted, released (with a local hold\'s reason) and left, for the selected locks only', async () => {
    const runtime = await start();
    const w = new Watches(runtime, silentLogger(), nodeEnv);
    const one = open(w, { lock: 'L' });
    const all = open(w, { prefix: 'jobs/' });
    const x = await runtime.acquire('L', { ...opts, ttlMs: 60_000 });
    const y = runtime.acquire('L', { ...opts, ttlMs: 200 });
    const job = await runtime.acquire('jobs/1', opts);
    runtime.release('L', x.id);
    await y; // It expires 200 ms after its grant.
    const z = runtime.request('L', opts, quiet);
    await waitFor('y expired', () => runtime.inspect.lock('L').holders.length === 1 && runtime.inspect.lock('L').holders[0]?.id === z.id, 5000);
    const v = runtime.request('L', opts, quiet);
    v.clientGone();
    await drained(w);
    expect(one.events()).toEqual(['state', 'queued', 'granted', 'queued', 'released', 'granted', 'queued', 'released', 'granted', 'queued', 'left']);
    expect(all.events()).toEqual(['state', 'queued', 'granted']);
    const data = one.parsed().map((e) => e.data);
    expect(data[4]).toMatchObject({ type: 'released', lock: 'L', reason: 'released', request: { id: x.id, local: true } });
    expect(data[7]).toMatchObject({ type: 'released', lock: 'L', reason: 'expired' });
    expect(data[10]).toMatchObject({ type: 'left', reason: null, request: { id: v.id } });
    runtime.release('jobs/1', job.id);
    expect(w.count()).toBe(2);
    one.emit('close');
    all.emit('close');
    expect(w.count()).toBe(0);
    expect(runtime.events.listenerCount('changed')).toBe(0);
    expect(runtime.queueLog.on).toBe(false);
  });

  it('cost what changed, not the length of the queue: one change among 20,000 waiters reads a few entries and writes one event', async () => {
    const runtime = await start();
    const first = await runtime.acquire('big', opts);
    for (let i = 0; i < 20_000; i++) runtime.request('big', opts, quiet);
    const { source, read } = counted(runtime);
    const w = new Watches(source, silentLogger(), nodeEnv);
    const res = open(w, { prefix: '' });
    expect(read.entries).toBeGreaterThan(20_000); // The state, once.
    read.entries = 0;
    const before = res.chunks.length;
    runtime.request('big', opts, quiet); // queued
    runtime.release('big', first.id); // released, granted
    await drained(w);
    const written = res.chunks.slice(before);
    expect(res.events().slice(before)).toEqual(['queued', 'released', 'granted']);
    expect(read.entries).toBeLessThan(10);
    expect(written.join('').length).toBeLessThan(3000);
  });

  it('rebuild from the state and the events what a fresh state says, after any mix of modes, grants, releases and withdrawals', async () => {
    const runtime = await start();
    const w = new Watches(runtime, silentLogger(), nodeEnv);
    const res = open(w, { prefix: 'm/' });
    const rng = new Prng(37);
    const live: Array<{ lock: string; id: string; gone: () => void }> = [];
    for (let step = 0; step < 400; step++) {
      const lock = `m/${rng.int(0, 3)}`;
      const roll = rng.int(0, 10);
      if (roll < 5 || live.length === 0) {
        const mode = (['exclusive', 'shared', 'semaphore'] as const)[rng.int(0, 3)] ?? 'exclusive';
        const limit = mode === 'semaphore' ? rng.int(2, 4) : 1;
        const h = runtime.request(lock, { ...opts, mode, limit, permits: 1 }, quiet);
        live.push({ lock, id: h.id, gone: () => h.clientGone() });
      } else {
        const [h] = live.splice(rng.int(0, live.length), 1);
        if (h === undefined) continue;
        if (runtime.inspect.lock(h.lock).holders.some((v) => v.id === h.id)) runtime.release(h.lock, h.id);
        else h.gone();
      }
      if (step % 50 === 49) {
        await drained(w);
        const rebuilt = new WatchState();
        for (const e of res.parsed()) rebuilt.apply(e);
        const fresh = new WatchState();
        for (const e of open(w, { prefix: 'm/' }).parsed()) fresh.apply(e);
        expect(shape(rebuilt.locks()), `after step ${step}`).toEqual(shape(fresh.locks()));
        expect(rebuilt.locks().length).toBeGreaterThan(0);
      }
    }
  });

  it('answer 429 past limits.watchStreamsMax streams', async () => {
    const w = new Watches(await start(), silentLogger(), nodeEnv);
    for (let i = 0; i < limits.watchStreamsMax; i++) open(w, { lock: `L${i}` });
    let refused: unknown;
    try {
      open(w, { lock: 'one-more' });
    } catch (err) {
      refused = err;
    }
    expect(isLockError(refused, 'ERR_LIMIT_EXCEEDED')).toBe(true);
  });

  it('end a stream that falls behind with ERR_WATCH_BEHIND, and keep serving the others', async () => {
    const runtime = await start();
    const w = new Watches(runtime, silentLogger(), nodeEnv);
    const slow = open(w, { lock: 'L' });
    const fast = open(w, { lock: 'L' });
    slow.backlog = limits.watchBufferBytesMax + 1000;
    const x = await runtime.acquire('L', opts);
    await drained(w);
    expect(slow.ended).toBe(true);
    expect(slow.chunks.at(-1)).toMatch(/^event: error\ndata: \{"error":"ERR_WATCH_BEHIND"/);
    expect(w.count()).toBe(1);
    runtime.release('L', x.id);
    await drained(w);
    expect(fast.events()).toEqual(['state', 'queued', 'granted', 'released']);
  });
});
