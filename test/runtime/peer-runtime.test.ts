/**
 * The peer runtime in-process, on a single-peer cluster: what it keeps after holds end.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { ClusterConfig } from '../../src/config.js';
import { limits } from '../../src/limits.js';
import { silentLogger } from '../../src/log.js';
import type { AcquireOptions } from '../../src/runtime/holds.js';
import type { PeerRuntime } from '../../src/runtime/peer.js';
import { startRuntime } from '../../src/server.js';
import { waitFor } from '../support/wait.js';

const config: ClusterConfig = {
  cluster: 't', secret: 'test-secret', peers: [{ id: 'a', ws: 'ws://127.0.0.1:0', http: '127.0.0.1:0' }],
  heartbeatMs: 1000, leaseMs: 5000, evictMs: 15000, tls: undefined,
};
const opts: AcquireOptions = { timeoutMs: 1000, ttlMs: 60_000, mode: 'exclusive', limit: 1, permits: 1, owner: 'x', meta: null, hold: 'ttl', expectedMs: null };

let stop: (() => Promise<void>) | undefined;
afterEach(async () => {
  await stop?.();
  stop = undefined;
});

async function start(): Promise<PeerRuntime> {
  const started = await startRuntime({ config, id: 'a', logger: silentLogger(), wsPort: 0 });
  stop = started.stop;
  return started.runtime;
}

describe('PeerRuntime', () => {
  it('keeps nothing per lock name once its holds are released (idle names cost nothing)', async () => {
    const runtime = await start();
    for (let i = 0; i < 5000; i++) {
      const g = await runtime.acquire(`name-${i}`, opts);
      runtime.release(g.lock, g.id);
    }
    expect(runtime.inspect.coreStats()).toMatchObject({ locks: 0, queued: 0, own: 0, waiting: 0 });
    expect(runtime.inspect.locks()).toEqual([]);
  });

  it('says whether a release leaves others waiting for a lock it freed (the HTTP answer waits for the frames then)', async () => {
    const runtime = await start();
    const first = await runtime.acquire('contended', opts);
    const second = runtime.acquire('contended', opts);
    expect(runtime.release('contended', first.id)).toBe(true);
    const next = await second;
    expect(runtime.release(null, next.id)).toBe(false);
    const alone = await runtime.acquire('alone', opts);
    expect(runtime.release('alone', alone.id)).toBe(false);
  });

  it('ends a waiter that times out, and forgets it', async () => {
    const runtime = await start();
    const held = await runtime.acquire('x', opts);
    await expect(runtime.acquire('x', { ...opts, timeoutMs: 20 })).rejects.toMatchObject({ code: 'ERR_TIMEOUT', details: { queuePosition: 1 } });
    expect(runtime.inspect.coreStats()).toMatchObject({ locks: 1, queued: 1, own: 1, waiting: 0 });
    runtime.release('x', held.id);
    expect(runtime.inspect.coreStats()).toMatchObject({ locks: 0, queued: 0, own: 0 });
  });

  it('refuses an acquire with ERR_LIMIT_EXCEEDED once its lock has queuedPerLockMax requests, and leaves no trace of it', async () => {
    const runtime = await start();
    const held = await runtime.acquire('hot', opts);
    const failures: string[] = [];
    const waiting = { ...opts, timeoutMs: limits.timeoutMsMax };
    const callbacks = { granted: () => undefined, failed: (err: Error) => void failures.push(err.message), ended: () => undefined };
    const handles = Array.from({ length: limits.queuedPerLockMax - 1 }, () => runtime.request('hot', waiting, callbacks));
    expect(failures).toEqual([]);
    expect(runtime.inspect.coreStats()).toMatchObject({ queued: limits.queuedPerLockMax, own: limits.queuedPerLockMax });
    await expect(runtime.acquire('hot', waiting)).rejects.toMatchObject({ code: 'ERR_LIMIT_EXCEEDED', message: expect.stringContaining(`${limits.queuedPerLockMax} requests queued`) });
    expect(runtime.inspect.coreStats()).toMatchObject({ queued: limits.queuedPerLockMax, own: limits.queuedPerLockMax });
    const other = await runtime.acquire('cold', opts); // Another lock has room.
    runtime.release('cold', other.id);
    runtime.release('hot', held.id); // The first waiter is granted; the queue has room again.
    handles.push(runtime.request('hot', waiting, callbacks));
    expect(runtime.inspect.requestState(handles[handles.length - 1]?.id ?? '')).toBe('waiting');
    expect(failures).toEqual([]);
    // Withdrawn from the back: each leaves the end of the queue, so this takes linear time.
    // A closed connection is withdrawn at the end of the turn, limits.clientsGonePerTurnMax
    // per turn (a burst of closes must not stall the event loop): none is in the first turn.
    for (const h of handles.reverse()) h.clientGone();
    expect(runtime.inspect.coreStats()).toMatchObject({ queued: limits.queuedPerLockMax, own: limits.queuedPerLockMax });
    await waitFor('every withdrawal, a batch per turn', () => runtime.inspect.coreStats().queued === 1, 30_000);
    expect(runtime.inspect.coreStats()).toMatchObject({ queued: 1, own: 1 });
  }, 60_000);
});
