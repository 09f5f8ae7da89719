import { afterEach, describe, expect, it } from 'vitest';
import type { Mesh } from '../../src/transport/mesh.js';
import { Prng } from '../support/prng.js';
import { testSeed } from '../support/seed.js';
import { delay, waitFor } from '../support/wait.js';
import type { TestCluster, TestPayload } from './helpers.js';
import { makeMesh, peerAt, startCluster, waitAllConnected } from './helpers.js';

let cluster: TestCluster | null = null;
const extra: Mesh<TestPayload>[] = [];
afterEach(async () => {
  await Promise.all(extra.splice(0).map((m) => m.close()));
  await cluster?.close();
  cluster = null;
});

describe('mesh under faults', () => {
  it('delivers 100000 messages per direction exactly once, in order, across 50+ connection kills', async () => {
    const seed = testSeed('mesh under faults');
    const rng = new Prng(seed);
    const random = (): number => rng.float();
    const why = `reproduce with SEED=${seed}`;
    cluster = await startCluster(3, { heartbeatMs: 100 });
    const c = cluster;
    await waitAllConnected(c);
    for (const rec of c.recs) rec.checkOrder = true;
    const total = 100_000;
    const chunk = 2_000;
    let sent = 0;
    let kills = 0;
    while (sent < total || kills < 50) {
      if (sent < total) {
        for (const [i, mesh] of c.meshes.entries()) {
          for (const j of [0, 1, 2].filter((p) => p !== i)) for (let k = sent; k < sent + chunk; k++) mesh.send(j, { n: k });
        }
        sent += chunk;
      }
      const proxy = c.proxies[Math.floor(random() * 3)];
      if (random() < 0.3) proxy?.killMidChunk();
      else proxy?.killAll();
      await delay(15 + Math.floor(random() * 20)); // Pacing: traffic flows between kills.
      kills = c.proxies.reduce((sum, p) => sum + p.killEvents, 0);
    }
    await waitFor(
      `all ${total} messages delivered on all 6 streams (${why})`,
      () => c.recs.every((rec, i) => [0, 1, 2].every((j) => j === i || rec.count(j) === total)),
      100_000,
    );
    for (const rec of c.recs) {
      expect(rec.violations, why).toEqual([]);
      expect(rec.joined.every((j) => !j.restarted), why).toBe(true);
      expect(rec.joined, why).toHaveLength(2);
    }
    expect(kills, why).toBeGreaterThanOrEqual(50);
    expect(c.proxies.reduce((sum, p) => sum + p.midChunkKills, 0), why).toBeGreaterThan(0);
    // The kills hit live traffic: some payloads had to be resent on resume.
    const messagesSent = c.meshes.reduce((sum, m) => sum + m.stats().messagesSent, 0);
    expect(messagesSent, why).toBeGreaterThan(6 * total);
    console.log(`faults: ${kills} kill events, ${c.proxies.reduce((s, p) => s + p.kills, 0)} connections cut, ${messagesSent - 6 * total} payloads resent (${why})`);
  }, 120_000);

  it('detects a stalled (half-open) path after 3 to 4 heartbeat intervals and reconnects after', async () => {
    const heartbeatMs = 100;
    cluster = await startCluster(2, { heartbeatMs });
    const c = cluster;
    await waitAllConnected(c);
    const stalledAt = performance.now();
    c.proxies[1]?.stall(); // the path p0 -> p1: p0's stream, p1's acks and echoes
    await waitFor('p0 sees p1 disconnected', () => !(c.recs[0]?.connected.has(1) ?? true), 2_000);
    await waitFor('p1 sees p0 disconnected', () => !(c.recs[1]?.connected.has(0) ?? true), 2_000);
    const down = (r: number): number => c.recs[r]?.connections.find((e) => !e.connected && e.atMs >= stalledAt)?.atMs ?? Infinity;
    // The watchdog runs at the mesh's heartbeat tick: 3 intervals of silence, seen at the next tick.
    expect(down(0) - stalledAt).toBeLessThanOrEqual(4 * heartbeatMs + 50);
    expect(down(1) - stalledAt).toBeLessThanOrEqual(4 * heartbeatMs + 50);
    c.proxies[1]?.resume();
    await waitAllConnected(c, 15_000);
    c.meshes[0]?.send(1, { n: 7 });
    await waitFor('delivery after the stall', () => c.recs[1]?.count(0) === 1);
  });

  it('reports a restarted peer once, sends the state transfer first, drops the old stream, and refuses the old incarnation', async () => {
    cluster = await startCluster(2, { heartbeatMs: 100 });
    const c = cluster;
    const [m0, m1] = c.meshes;
    const rec0 = c.recs[0];
    if (m0 === undefined || m1 === undefined || rec0 === undefined) throw new Error('cluster');
    await waitAllConnected(c);
    await m1.close();
    await waitFor('p0 sees p1 gone', () => !rec0.connected.has(1));
    for (let n = 100; n < 110; n++) m0.send(1, { n }); // for the dead incarnation: never delivered
    rec0.onJoin = (peer, restarted) => {
      if (peer === 1 && restarted) m0.send(1, { n: -1 }); // the runtime's state transfer
    };
    const reborn = await makeMesh({ self: peerAt(1, c.proxies[1]?.port ?? 0), peers: [peerAt(0, c.proxies[0]?.port ?? 0)], incarnation: { startMs: 9000, nonce: 3 } });
    extra.push(reborn.mesh);
    c.proxies[1]!.target = reborn.mesh.port();
    await waitFor('p0 joins the new p1', () => rec0.joined.some((j) => j.peer === 1 && j.restarted));
    for (let n = 0; n < 10; n++) m0.send(1, { n });
    await waitFor('new p1 receives', () => reborn.rec.count(0) === 11);
    expect(reborn.rec.payloads.get(0)).toEqual([-1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(rec0.joined.filter((j) => j.peer === 1 && j.restarted)).toEqual([{ peer: 1, inc: { startMs: 9000, nonce: 3 }, clock: 42, restarted: true }]);
    // A zombie of the old incarnation dials p0 directly: refused, and nothing of it delivered.
    const zombie = await makeMesh({ self: peerAt(1, 1), peers: [peerAt(0, m0.port())], incarnation: { startMs: 1001, nonce: 7 } });
    extra.push(zombie.mesh);
    await waitFor('zombie refused', () => zombie.rec.refused.some((r) => r.peer === 0 && r.reason === 'stale_incarnation'));
    expect(zombie.rec.joined).toEqual([]);
    expect(rec0.joined.filter((j) => j.peer === 1)).toHaveLength(2);
  });
});
