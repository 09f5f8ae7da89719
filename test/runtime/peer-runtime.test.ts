/**
 * The peer runtime in-process, on a single-peer cluster: what it keeps after holds end.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { ClusterConfig } from '../../src/config.js';
import { silentLogger } from '../../src/log.js';
import type { AcquireOptions } from '../../src/runtime/holds.js';
import { PeerRuntime } from '../../src/runtime/peer.js';

const config: ClusterConfig = {
  cluster: 't', secret: 'test-secret', peers: [{ id: 'a', ws: 'ws://127.0.0.1:0', http: '127.0.0.1:0' }],
  heartbeatMs: 1000, leaseMs: 5000, evictMs: 15000, tls: undefined,
};
const opts: AcquireOptions = { timeoutMs: 1000, ttlMs: 60_000, mode: 'exclusive', limit: 1, permits: 1, owner: 'x', meta: null, hold: 'ttl', expectedMs: null };

let runtime: PeerRuntime | undefined;
afterEach(async () => {
  await runtime?.stop();
  runtime = undefined;
});

describe('PeerRuntime', () => {
  it('keeps nothing per lock name once its holds are released (idle names cost nothing)', async () => {
    runtime = new PeerRuntime({ config, id: 'a', logger: silentLogger(), wsPort: 0 });
    await runtime.start();
    for (let i = 0; i < 5000; i++) {
      const g = await runtime.acquire(`name-${i}`, opts);
      runtime.release(g.lock, g.id);
    }
    expect(runtime.coreStats()).toMatchObject({ locks: 0, queued: 0, own: 0, waiting: 0 });
    expect(runtime.locks()).toEqual([]);
  });

  it('ends a waiter that times out, and forgets it', async () => {
    runtime = new PeerRuntime({ config, id: 'a', logger: silentLogger(), wsPort: 0 });
    await runtime.start();
    const held = await runtime.acquire('x', opts);
    await expect(runtime.acquire('x', { ...opts, timeoutMs: 20 })).rejects.toMatchObject({ code: 'ERR_TIMEOUT', details: { queue_position: 1 } });
    expect(runtime.coreStats()).toMatchObject({ locks: 1, queued: 1, own: 1, waiting: 0 });
    runtime.release('x', held.id);
    expect(runtime.coreStats()).toMatchObject({ locks: 0, queued: 0, own: 0 });
  });
});
