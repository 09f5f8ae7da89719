import { createConnection } from 'node:net';
import v8 from 'node:v8';
import vm from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { limits } from '../../src/limits.js';
import { encodeFrame } from '../../src/transport/codec.js';
import { Prng } from '../support/prng.js';
import { testSeed } from '../support/seed.js';
import { waitFor } from '../support/wait.js';
import type { TestCluster } from './helpers.js';
import { startCluster, waitAllConnected } from './helpers.js';

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;

function heapAfterGcBytes(): number {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

/** One bad connection of kind `kind`, finished when its socket is closed. */
function badConnection(port: number, kind: number, random: () => number): Promise<void> {
  const garbage = Buffer.alloc(1 + Math.floor(random() * 200));
  for (let i = 0; i < garbage.length; i++) garbage[i] = Math.floor(random() * 256);
  if (kind === 0 || kind === 1) {
    return new Promise((resolve) => {
      const sock = createConnection({ host: '127.0.0.1', port }, () => {
        if (kind === 0) sock.destroy();
        else sock.end(garbage);
      });
      sock.on('error', () => undefined);
      sock.on('close', () => resolve());
    });
  }
  return new Promise((resolve) => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}`);
    ws.on('error', () => undefined);
    ws.on('close', () => resolve());
    ws.on('open', () => {
      if (kind === 2) ws.terminate(); // opened and dropped
      else if (kind === 3) ws.send(garbage); // garbage frame: the listener refuses and closes
      else ws.send(encodeFrame({ t: 'hello', v: 1, cluster: 'test', from: 'p1', to: 'p0', inc: { startMs: 1, nonce: 1 }, clock: 0, nonce: garbage.subarray(0, 1) }));
    });
  });
}

async function churn(port: number, count: number, random: () => number): Promise<void> {
  const concurrency = 64;
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < count) {
      const k = next++;
      await badConnection(port, k % 5, random);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
}

describe('mesh under connection churn', () => {
  let cluster: TestCluster;
  beforeAll(async () => {
    cluster = await startCluster(2, { heartbeatMs: 100 });
    await waitAllConnected(cluster);
  });
  afterAll(async () => {
    await cluster.close();
  });

  it('keeps serving, with bounded memory, through 10000 dropped and garbage connections', async () => {
    const seed = testSeed('churn');
    const rng = new Prng(seed);
    const random = (): number => rng.float();
    const why = `reproduce with SEED=${seed}`;
    const [m0] = cluster.meshes;
    const [rec0, rec1] = cluster.recs;
    if (m0 === undefined || rec0 === undefined || rec1 === undefined) throw new Error('cluster');
    await churn(m0.port(), 1000, random); // warm-up: code paths compiled, pools filled
    const before = heapAfterGcBytes();
    await churn(m0.port(), 9000, random);
    // The listener lets go of a closed connection within the close grace (limits.wsCloseGraceMs):
    // wait for the heap to come back, bounded; a leak never does.
    const boundBytes = 8 * 1024 * 1024;
    let growthBytes = Number.POSITIVE_INFINITY;
    await waitFor('the heap back within its bound', () => (growthBytes = heapAfterGcBytes() - before) < boundBytes, limits.wsCloseGraceMs + 4000, 100).catch(() => undefined);
    expect(growthBytes, `${why}: heap grew ${growthBytes} bytes`).toBeLessThan(boundBytes);
    expect(rec0.connected.has(1), why).toBe(true);
    cluster.meshes[1]?.send(0, { n: 1 });
    m0.send(1, { n: 2 });
    await waitFor('traffic after the churn', () => rec0.count(1) === 1 && rec1.count(0) === 1);
    console.log(`churn: heap growth ${(growthBytes / 1024).toFixed(0)} KiB over 9000 bad connections (${why})`);
  });
});
