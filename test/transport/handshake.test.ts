import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { IncarnationBook } from '../../src/core/incarnations.js';
import type { Incarnation } from '../../src/core/types.js';
import type { Frame, HelloFrame } from '../../src/transport/codec.js';
import { decodeFrame, encodeFrame, nonceBytes, protocolLevels } from '../../src/transport/codec.js';
import type { HandshakeIdentity } from '../../src/transport/handshake.js';
import { DialerHandshake, secretKey } from '../../src/transport/handshake.js';
import type { ClusterShape } from '../../src/cluster-shape.js';
import { clusterShapeOf, fingerprintOf } from '../../src/cluster-shape.js';
import type { Mesh } from '../../src/transport/mesh.js';
import { waitFor } from '../support/wait.js';
import type { Recorder, TestPayload } from './helpers.js';
import { captureLogger, isTestPayload, makeMesh, peerAt } from './helpers.js';
import { TcpProxy } from './tcp-proxy.js';

interface RawOptions {
  readonly selfId?: string;
  readonly cluster?: string;
  readonly secret?: string;
  readonly inc?: Incarnation;
  readonly mutateHello?: (h: HelloFrame) => HelloFrame;
  /** Bytes to send instead of our own hello / auth (replays). */
  readonly replay?: { hello: Buffer; auth: Buffer };
  /** After the welcome, answer the challenge a second time. */
  readonly authTwice?: boolean;
  /** The dialer's cluster shape; default the listener's (peers p0, p1, p2, heartbeat 100 ms). */
  readonly shape?: ClusterShape;
}

/** The shape of the meshes of this file (startStandaloneMesh's default for them). */
const meshShape = clusterShapeOf({ cluster: 'test', peers: [{ id: 'p0' }, { id: 'p1' }, { id: 'p2' }], heartbeatMs: 100, leaseMs: 0, evictMs: 0 }, protocolLevels.newest);

interface RawResult {
  /** 'welcome', or the reason of the refuse frame. */
  readonly outcome: string;
  /** The newest incarnation of our id the listener knows, named in a refusal. */
  readonly known: Incarnation | undefined;
  /** The refusal says that newest one is evicted too. */
  readonly knownEvicted: boolean;
  /** The refusal's sentence and the listener's shape it carries. */
  readonly message: string;
  readonly shape: ClusterShape | undefined;
  readonly sent: { hello: Buffer; auth: Buffer | null };
}

/** Dials the listener by hand, as a (possibly misbehaving) peer would. */
function dialRaw(port: number, o: RawOptions = {}): Promise<RawResult> {
  const shape = o.shape ?? meshShape;
  const identity: HandshakeIdentity = {
    shape,
    fingerprint: fingerprintOf(shape),
    levels: protocolLevels,
    level: () => shape.protocol,
    cluster: o.cluster ?? 'test',
    key: secretKey(o.secret ?? 'sesame'),
    selfId: o.selfId ?? 'p2',
    incarnation: o.inc ?? { startMs: 5000, nonce: 1 },
    randomNonce: () => randomBytes(nonceBytes),
  };
  const hs = new DialerHandshake(identity, 'p0');
  const ws = new WebSocket(`ws://127.0.0.1:${port}`);
  const hello = o.replay?.hello ?? encodeFrame((o.mutateHello ?? ((h) => h))(hs.hello(1)));
  const sent: { hello: Buffer; auth: Buffer | null } = { hello, auth: null };
  return new Promise((resolve, reject) => {
    let outcome = 'closed';
    let known: Incarnation | undefined;
    let knownEvicted = false;
    let message = '';
    let theirs: ClusterShape | undefined;
    ws.on('open', () => ws.send(hello));
    ws.on('error', reject);
    ws.on('close', () => resolve({ outcome, known, knownEvicted, sent, message, shape: theirs }));
    ws.on('message', (data: Buffer) => {
      const frame: Frame<TestPayload> = decodeFrame(data, isTestPayload);
      if (frame.t === 'challenge') {
        sent.auth = o.replay?.auth ?? encodeFrame(hs.onChallenge(frame));
        ws.send(sent.auth);
      } else if (frame.t === 'welcome') {
        hs.onWelcome(frame);
        outcome = 'welcome';
        if (o.authTwice === true && sent.auth !== null) ws.send(sent.auth);
        else ws.close();
      } else if (frame.t === 'refuse') {
        outcome = frame.reason;
        known = frame.known;
        knownEvicted = frame.knownEvicted === true;
        message = frame.message;
        theirs = frame.shape;
      }
    });
  });
}

describe('handshake refusals', () => {
  let m0: Mesh<TestPayload>;
  let m1: Mesh<TestPayload>;
  let rec0: Recorder;
  /** m0's book, as a session would share it with its Membership. */
  let book0: IncarnationBook;
  let proxies: TcpProxy[];
  let records: Record<string, unknown>[];

  beforeAll(async () => {
    proxies = [await TcpProxy.start(), await TcpProxy.start()];
    const all = [peerAt(0, proxies[0]!.port), peerAt(1, proxies[1]!.port), peerAt(2, 1)];
    const log = captureLogger();
    records = log.records;
    book0 = new IncarnationBook(3);
    ({ mesh: m0, rec: rec0 } = await makeMesh({ self: all[0]!, peers: [all[1]!, all[2]!], logger: log.logger, incarnations: book0 }));
    ({ mesh: m1 } = await makeMesh({ self: all[1]!, peers: [all[0]!, all[2]!] }));
    proxies[0]!.target = m0.port();
    proxies[1]!.target = m1.port();
    await waitFor('p0 and p1 connected', () => rec0.connected.has(1));
  });

  afterAll(async () => {
    await Promise.all([m0.close(), m1.close()]);
    await Promise.all(proxies.map((p) => p.close()));
  });

  /** The listener logged that refusal with its code. */
  function logged(reason: string): boolean {
    return records.some((r) => r['code'] === 'ERR_HANDSHAKE_REFUSED' && r['reason'] === reason);
  }

  it('accepts a configured peer with the right secret', async () => {
    expect((await dialRaw(m0.port())).outcome).toBe('welcome');
  });

  it('admits in the book it was given, which a session shares with its Membership', () => {
    expect(book0.known(1)).toEqual({ startMs: 1001, nonce: 7 });
    expect(book0.known(2)).toEqual({ startMs: 5000, nonce: 1 });
    expect(m0.status().find((s) => s.peer === 1)?.incarnation).toEqual({ startMs: 1001, nonce: 7 });
  });

  it('refuses a wrong cluster name', async () => {
    expect((await dialRaw(m0.port(), { cluster: 'other' })).outcome).toBe('wrong_cluster');
    expect(logged('wrong_cluster')).toBe(true);
  });

  it('refuses an unknown peer id', async () => {
    expect((await dialRaw(m0.port(), { selfId: 'mallory' })).outcome).toBe('unknown_peer');
    expect(logged('unknown_peer')).toBe(true);
  });

  it('refuses a bad MAC (wrong secret)', async () => {
    expect((await dialRaw(m0.port(), { secret: 'guess' })).outcome).toBe('bad_mac');
    expect(logged('bad_mac')).toBe(true);
  });

  it('tells a dialer that has not proved the secret nothing about the cluster', async () => {
    // A wrong cluster name, an unknown id, an incarnation older than one known: without the
    // secret, each gets the same bad_mac and a sentence that names nothing of the cluster.
    for (const o of [{ cluster: 'other' }, { selfId: 'mallory' }, { selfId: 'p1', inc: { startMs: 1000, nonce: 7 } }]) {
      const r = await dialRaw(m0.port(), { ...o, secret: 'guess' });
      expect([r.outcome, r.known, r.shape]).toEqual(['bad_mac', undefined, undefined]);
      expect(r.message).not.toMatch(/test|p0|p1|p2|mallory|other|1000/);
    }
  });

  it('refuses a peer whose configuration differs, and tells it ours so it can say what differs', async () => {
    const reordered = clusterShapeOf({ cluster: 'test', peers: [{ id: 'p0' }, { id: 'p2' }, { id: 'p1' }], heartbeatMs: 100, leaseMs: 0, evictMs: 0 }, protocolLevels.newest);
    const r = await dialRaw(m0.port(), { shape: reordered });
    expect(r.outcome).toBe('wrong_config');
    expect(r.shape).toEqual(meshShape);
    expect(r.message).toContain(fingerprintOf(reordered));
    const slower = await dialRaw(m0.port(), { shape: { ...meshShape, leaseMs: 5000 } });
    expect([slower.outcome, slower.shape?.leaseMs]).toEqual(['wrong_config', 0]);
    // The listener remembers whom it refused and why, for GET /v1/cluster and /readyz.
    expect(m0.refusals().some((x) => x.peer === 'p2' && x.direction === 'by_us' && x.reason === 'wrong_config')).toBe(true);
    expect(m0.configMismatch()?.code).toBe('ERR_CONFIG_MISMATCH');
    expect(logged('wrong_config')).toBe(true);
  });

  it('gives a configured peer a handshake slot however many strangers hold connections open', async () => {
    // 300 connections from this address that never say hello: more than the 256 slots every
    // stranger shared before; each new one now displaces the oldest of its own address.
    const idle = await Promise.all(Array.from({ length: 300 }, () => new Promise<WebSocket>((resolve, reject) => {
      const ws = new WebSocket(`ws://127.0.0.1:${m0.port()}`);
      ws.on('open', () => resolve(ws));
      ws.on('error', reject);
    })));
    try {
      expect((await dialRaw(m0.port())).outcome).toBe('welcome');
    } finally {
      for (const ws of idle) ws.terminate();
    }
  });

  it('refuses a protocol level this binary does not speak', async () => {
    const refused = await dialRaw(m0.port(), { mutateHello: (h) => ({ ...h, v: protocolLevels.oldest - 1 }) });
    expect(refused.outcome).toBe('wrong_version');
    expect(refused.message).toBe(`peer runs protocol level ${protocolLevels.oldest - 1}; this binary speaks ${protocolLevels.oldest} to ${protocolLevels.newest}`);
    expect(logged('wrong_version')).toBe(true);
  });

  it('refuses a replayed handshake, and a challenge answered twice', async () => {
    const first = await dialRaw(m0.port(), { inc: { startMs: 6000, nonce: 1 } });
    expect(first.outcome).toBe('welcome');
    const replay = { hello: first.sent.hello, auth: first.sent.auth ?? Buffer.alloc(0) };
    expect((await dialRaw(m0.port(), { replay })).outcome).toBe('replayed');
    expect((await dialRaw(m0.port(), { inc: { startMs: 6000, nonce: 1 }, authTwice: true })).outcome).toBe('replayed');
    expect(logged('replayed')).toBe(true);
  });

  it('refuses an incarnation older than one already seen from that peer id', async () => {
    expect((await dialRaw(m0.port(), { selfId: 'p1', inc: { startMs: 1000, nonce: 7 } })).outcome).toBe('stale_incarnation');
    expect(logged('stale_incarnation')).toBe(true);
  });

  it('refuses an evicted incarnation, and older ones, forever', async () => {
    m0.refuseIncarnation(2, { startMs: 7000, nonce: 0 });
    expect((await dialRaw(m0.port(), { inc: { startMs: 7000, nonce: 0 } })).outcome).toBe('evicted');
    const older = await dialRaw(m0.port(), { inc: { startMs: 6999, nonce: 5 } });
    expect(older.outcome).toBe('evicted');
    // The refusal names the evicted floor, so the refused process starts its next incarnation
    // above it at once instead of 1 ms higher each time (simulator seed 504945 --net link).
    expect(older.known).toEqual({ startMs: 7000, nonce: 0 });
    expect(older.knownEvicted).toBe(true);
    expect((await dialRaw(m0.port(), { inc: { startMs: 7001, nonce: 0 } })).outcome).toBe('welcome');
    // A newer incarnation lives: the refusal names it, not evicted. A zombie refused so stays
    // out; once that one is evicted too, the refusal says so and the zombie may rejoin.
    const beside = await dialRaw(m0.port(), { inc: { startMs: 6998, nonce: 0 } });
    expect([beside.outcome, beside.known, beside.knownEvicted]).toEqual(['evicted', { startMs: 7001, nonce: 0 }, false]);
    m0.refuseIncarnation(2, { startMs: 7001, nonce: 0 });
    const after = await dialRaw(m0.port(), { inc: { startMs: 6998, nonce: 0 } });
    expect([after.outcome, after.known, after.knownEvicted]).toEqual(['evicted', { startMs: 7001, nonce: 0 }, true]);
    // The refusals are in the book the mesh was given (stage 6); the eviction floor (stage 5)
    // is Membership's to move, and no Membership runs here.
    expect([book0.isRefused(2, { startMs: 7001, nonce: 0 }), book0.newest(2), book0.evictedUpTo(2)]).toEqual([true, { startMs: 7001, nonce: 0 }, null]);
  });

  it('keeps serving the good peer after all the refusals', async () => {
    const before = rec0.count(1);
    m1.send(0, { n: 1 });
    await waitFor('payload from p1', () => rec0.count(1) === before + 1);
    expect(rec0.connected.has(1)).toBe(true);
    expect(rec0.joined.filter((j) => j.peer === 1)).toHaveLength(1);
  });
});
