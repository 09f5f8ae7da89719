import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCode, isLockError } from '../../src/errors.js';
import { protocolLevels } from '../../src/transport/codec.js';
import { waitFor } from '../support/wait.js';
import type { TestCluster } from './helpers.js';
import { makeMesh, peerAt, startCluster, waitAllConnected } from './helpers.js';

let cluster: TestCluster | null = null;
afterEach(async () => {
  await cluster?.close();
  cluster = null;
});

describe('mesh', () => {
  it('joins every peer once, then delivers payloads in order with one frame per turn', async () => {
    cluster = await startCluster(3);
    const c = cluster;
    await waitAllConnected(c);
    for (const rec of c.recs) {
      expect(rec.joined.map((j) => [j.peer, j.restarted]).sort()).toEqual(
        [0, 1, 2].filter((p) => p !== c.recs.indexOf(rec)).map((p) => [p, false]),
      );
    }
    const [m0] = c.meshes;
    const framesBefore = m0?.stats().framesSent ?? 0;
    for (let n = 0; n < 100; n++) {
      m0?.send(1, { n });
      m0?.send(2, { n });
    }
    await waitFor('delivery', () => c.recs[1]?.count(0) === 100 && c.recs[2]?.count(0) === 100);
    expect(c.recs[1]?.payloads.get(0)).toEqual(Array.from({ length: 100 }, (_, n) => n));
    const stats = m0?.stats();
    expect(stats?.messagesSent).toBe(200);
    // Exactly two data frames, one per peer: framesSent counts data and ack frames only (not
    // heartbeats or echoes), and m0 receives no payloads to ack, so no real-time window counts.
    expect((stats?.framesSent ?? 0) - framesBefore).toBe(2);
  });

  it('reports heartbeat clocks, echoes with RTT, and status', async () => {
    cluster = await startCluster(2, { heartbeatMs: 50 });
    const c = cluster;
    await waitAllConnected(c);
    await waitFor('heartbeats and echoes', () => (c.recs[0]?.heartbeats.length ?? 0) > 2 && (c.recs[0]?.echoes.length ?? 0) > 2);
    expect(c.recs[0]?.heartbeats[0]).toEqual({ from: 1, clock: 42 });
    expect(c.recs[0]?.echoes[0]?.rttMs).toBeGreaterThanOrEqual(0);
    const [line] = c.meshes[0]?.status() ?? [];
    expect(line).toMatchObject({ peer: 1, id: 'p1', connected: true, incarnation: { startMs: 1001, nonce: 7 }, unackedBytes: 0, newestLevel: protocolLevels.newest });
    expect(line?.rttMs).not.toBeNull();
    expect(line?.lastHeardMs).not.toBeNull();
  });

  it('drops (and counts) payloads for a peer whose incarnation is not known yet', async () => {
    const { mesh } = await makeMesh({ self: peerAt(0, 0), peers: [peerAt(1, 1)] });
    try {
      mesh.send(1, { n: 1 });
      expect(mesh.stats().messagesDropped).toBe(1);
      expect(mesh.status()).toEqual([{ peer: 1, id: 'p1', connected: false, lastHeardMs: null, rttMs: null, incarnation: null, unackedBytes: 0, newestLevel: null, streams: { out: false, in: false } }]);
    } finally {
      await mesh.close();
    }
  });

  it('acks a stream on the data frames going the other way, with no ack frame of their own', async () => {
    cluster = await startCluster(2);
    const c = cluster;
    await waitAllConnected(c);
    const [m0, m1] = c.meshes;
    const [r0, r1] = c.recs;
    if (m0 === undefined || m1 === undefined || r0 === undefined || r1 === undefined) throw new Error('two meshes');
    // p1 answers each payload in the turn it arrives, as a peer answers a REQUEST with an ACK.
    const deliver1 = r1.onPayload.bind(r1);
    r1.onPayload = (from, inc, payload) => {
      deliver1(from, inc, payload);
      m1.send(0, { n: payload.n });
    };
    // What p0 still held for resend when each answer reached it: the answer's frame carries
    // p1's ack of p0's stream and is applied before its payloads, so nothing; an ack frame
    // would come only on p1's timer, limits.linkAckDelayMs after the answer left.
    const unackedAtAnswer: number[] = [];
    const deliver0 = r0.onPayload.bind(r0);
    r0.onPayload = (from, inc, payload) => {
      deliver0(from, inc, payload);
      unackedAtAnswer.push(m0.status()[0]?.unackedBytes ?? -1);
    };
    const framesBefore = m1.stats().framesSent;
    for (let n = 0; n < 20; n++) {
      m0.send(1, { n });
      await waitFor(`answer ${n}`, () => r0.count(1) === n + 1);
    }
    expect(unackedAtAnswer).toEqual(Array.from({ length: 20 }, () => 0));
    // p1's ack timers fired meanwhile and found nothing owed: its frames were its 20 answers.
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(m1.stats().framesSent - framesBefore).toBe(20);
  });

  it('signals backpressure with ERR_LINK_BUFFER_FULL rather than dropping', async () => {
    cluster = await startCluster(2);
    const c = cluster;
    await waitAllConnected(c);
    c.proxies[1]?.stall();
    const big = 'x'.repeat(60_000);
    let thrown: unknown = null;
    // 64 MiB of unacked payloads through a stalled path: the link must push back.
    for (let k = 0; k < 2000 && thrown === null; k++) {
      try {
        for (let i = 0; i < 16; i++) c.meshes[0]?.send(1, { n: k, pad: big } as never);
      } catch (err) {
        thrown = err;
      }
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(isLockError(thrown, ErrorCode.LinkBufferFull)).toBe(true);
    c.proxies[1]?.resume();
  });
});
