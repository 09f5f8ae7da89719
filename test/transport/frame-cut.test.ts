/**
 * Frames never pass the frame limit, whatever a peer has to send (docs/design.md section 4,
 * "Pieces"; issue 37, point 1): the state transfer of the largest documented state, made by a
 * real core, goes through a PeerLink's flush, the codec's size check and a LinkReceiver, and
 * a receiving core queues all of it, taking the clock for an ack only at the last piece.
 */
import { Members } from '../../src/core/members.js';
import { describe, expect, it } from 'vitest';
import { Machine } from '../../src/core/machine.js';
import type { Effect } from '../../src/core/effects.js';
import type { Packet } from '../../src/core/messages.js';
import { isPacket, splitPacket } from '../../src/core/messages.js';
import type { Incarnation, RequestPart } from '../../src/core/types.js';
import { utf8Length } from '../../src/core/types.js';
import { limits } from '../../src/limits.js';
import { decodeFrame } from '../../src/transport/codec.js';
import type { FrameSocket } from '../../src/transport/connection.js';
import { LinkReceiver } from '../../src/transport/link.js';
import { MeshCounters } from '../../src/transport/mesh-stats.js';
import { PeerLink } from '../../src/transport/peer-link.js';
import { captureLogger } from './helpers.js';

const incA: Incarnation = { startMs: 1000, nonce: 1 };
const incB: Incarnation = { startMs: 1000, nonce: 2 };
const incB2: Incarnation = { startMs: 2000, nonce: 3 };

/**
 * A meta at limits.metaBytesMax bytes of JSON that msgpack encodes at its largest: each 0.5
 * is 4 bytes of JSON ("0.5,") and 9 of msgpack (a float64).
 */
function worstMeta(): Record<string, number[]> {
  const meta = { f: new Array<number>(Math.floor((limits.metaBytesMax - 8) / 4)).fill(0.5) };
  expect(utf8Length(JSON.stringify(meta))).toBeLessThanOrEqual(limits.metaBytesMax);
  return meta;
}

/** A lock name of limits.lockNameBytesMax bytes (two-byte characters and a number). */
function longName(i: number): string {
  const tail = `/${i}`;
  return 'é'.repeat(Math.floor((limits.lockNameBytesMax - tail.length) / 2)) + tail;
}

/** Peer 0's core, synced with peer 1 and ready to ack. */
function senderCore(): Machine {
  const m = new Machine({ members: Members.first(0, 2), clockFloor: 1 });
  m.step({ type: 'joined', peer: 1, inc: incB, clock: 1 });
  m.step({ type: 'packet', from: 1, inc: incB, packet: { c: 2, m: [] } });
  expect(m.synced && m.ackReady).toBe(true);
  return m;
}

/** The one packet of `effects`, to peer 1. */
function onlyPacket(effects: readonly Effect[]): Packet {
  const sends = effects.filter((e) => e.type === 'send');
  const [send] = sends;
  if (sends.length !== 1 || send?.type !== 'send') throw new Error('one send');
  return send.packet;
}

/** `requests` requests, each naming `locks` locks of `spec`, on `m`. */
function acquireMany(m: Machine, requests: number, locks: number, spec: RequestPart['spec']): void {
  const names = Array.from({ length: locks }, (_, i) => longName(i));
  for (let ref = 1; ref <= requests; ref++) m.step({ type: 'acquire', ref, parts: names.map((lock) => ({ lock, spec })), noWait: false });
}

/**
 * Peer 0's core with `requests` waiting requests, each naming `locks` locks, then peer 1's
 * rejoin: the packet of the state transfer it sends peer 1's new incarnation (unready: the
 * new incarnation has not let it in yet).
 */
function stateTransfer(requests: number, locks: number, spec: RequestPart['spec']): Packet {
  const m = senderCore();
  acquireMany(m, requests, locks, spec);
  const packet = onlyPacket(m.step({ type: 'joined', peer: 1, inc: incB2, clock: 1 }));
  expect(packet.m).toHaveLength(requests * locks);
  return packet;
}

/** Peer 0's core regains its lease with `requests` requests pending: one ready packet issues them all. */
function issuedOnLease(requests: number, spec: RequestPart['spec']): Packet {
  const m = senderCore();
  m.step({ type: 'lease', valid: false });
  acquireMany(m, requests, 1, spec);
  const packet = onlyPacket(m.step({ type: 'lease', valid: true }));
  expect(packet.m).toHaveLength(requests);
  expect(packet.u).toBeUndefined();
  return packet;
}

/** What one flush-and-deliver run saw: the packets delivered, in order, and the largest frame. */
interface Delivery {
  readonly packets: Packet[];
  readonly frames: number;
  readonly frameBytesMax: number;
}

/**
 * Queues `packet` on a PeerLink whose socket hands every frame, decoded by the codec (size
 * check included), to a LinkReceiver; the receiver acks after each flush, as a peer would,
 * until nothing waits.
 */
function sendThroughLink(packet: Packet): Delivery {
  const receiver = new LinkReceiver<Packet>();
  const delivery = { packets: [] as Packet[], frames: 0, frameBytesMax: 0 };
  const socket = {
    lastHeardMs: null,
    sendEncoded(bytes: Uint8Array): boolean {
      delivery.frames++;
      delivery.frameBytesMax = Math.max(delivery.frameBytesMax, bytes.length);
      const frame = decodeFrame(bytes, isPacket);
      if (frame.t !== 'data') throw new Error(`a data frame, not ${frame.t}`);
      delivery.packets.push(...receiver.receive(frame).deliver);
      return true;
    },
  } as unknown as FrameSocket<Packet>;
  const link = new PeerLink<Packet>({
    peer: { id: 'b', index: 1, ws: 'ws://127.0.0.1:1' }, unackedBytesMax: limits.linkUnackedBytesMax,
    counters: new MeshCounters(), logger: captureLogger('error').logger, split: (p, parts) => splitPacket(p, parts),
  });
  link.attachOutgoing(socket, 0);
  link.queue(packet);
  for (let round = 0; round < 1000 && !link.allSent; round++) {
    link.flush();
    link.ackReceived(receiver.lastDelivered);
  }
  expect(link.allSent).toBe(true);
  return delivery;
}

/**
 * The receiving core, peer 1, fed the pieces one by one: their clock acks and syncs nothing
 * before the last piece, which acks as the whole packet would (not at all when it is unready).
 */
function receive(packets: readonly Packet[], sent: Packet): Machine {
  const m = new Machine({ members: Members.first(1, 2), clockFloor: 1 });
  m.step({ type: 'joined', peer: 0, inc: incA, clock: 1 });
  packets.forEach((p, i) => {
    m.step({ type: 'packet', from: 0, inc: incA, packet: p });
    const acked = i === packets.length - 1 && sent.u !== true;
    expect(m.lastTs(0)).toBe(acked ? sent.c : 0);
    expect(m.synced).toBe(acked);
  });
  return m;
}

/** The delivered pieces say what `sent` said: its messages in order, its clock, its mark on the last piece only. */
function expectPiecesOf(got: Delivery, sent: Packet): void {
  expect(got.frameBytesMax).toBeLessThanOrEqual(limits.frameBytesMax);
  expect(got.packets.length).toBeGreaterThan(1);
  expect(got.packets.flatMap((p) => p.m)).toEqual(sent.m);
  expect(got.packets.every((p) => p.c === sent.c)).toBe(true);
  expect(got.packets.map((p) => p.u === true)).toEqual(got.packets.map((_, i) => i < got.packets.length - 1 || sent.u === true));
}

describe('a packet larger than a frame', () => {
  const fullSpec = { mode: 'exclusive', limit: 1, permits: 1, owner: 'o'.repeat(limits.ownerBytesMax), meta: worstMeta(), requestedAtMs: Number.MAX_SAFE_INTEGER } as const;

  it(`a state transfer arrives whole in frames within limits.frameBytesMax: ${limits.multiLocksMax}-lock requests with name, owner and meta at their limits, past the resend buffer`, () => {
    // Enough requests that the transfer passes limits.linkUnackedBytesMax: the link frames
    // what its resend buffer takes and the rest after the acks.
    const sent = stateTransfer(600, limits.multiLocksMax, fullSpec);
    const got = sendThroughLink(sent);
    expectPiecesOf(got, sent);
    expect(got.frames * limits.frameBytesMax).toBeGreaterThan(limits.linkUnackedBytesMax);
    const m = receive(got.packets, sent);
    expect(m.queueSize(longName(0))).toBe(600);
    expect(m.queueSize(longName(limits.multiLocksMax - 1))).toBe(600);
  }, 120_000);

  it(`a state transfer arrives whole in frames within limits.frameBytesMax: ${limits.queuedPerLockMax - 1} plain waiters on one lock`, () => {
    const sent = stateTransfer(limits.queuedPerLockMax - 1, 1, { ...fullSpec, owner: '', meta: null, requestedAtMs: 1 });
    const got = sendThroughLink(sent);
    expectPiecesOf(got, sent);
    expect(receive(got.packets, sent).queueSize(longName(0))).toBe(limits.queuedPerLockMax - 1);
  }, 120_000);

  it('a ready packet in pieces acks at its last piece only: requests issued when the lease comes back', () => {
    const sent = issuedOnLease(400, fullSpec);
    const got = sendThroughLink(sent);
    expectPiecesOf(got, sent);
    expect(receive(got.packets, sent).queueSize(longName(0))).toBe(400);
  }, 60_000);
});

describe('splitPacket', () => {
  const req = (ts: number): Packet['m'][number] => ({ t: 'rel', lock: 'a', ts });

  it('keeps the messages in order, marks every piece but the last unready, and the last as the packet was', () => {
    const m = [1, 2, 3, 4, 5].map(req);
    expect(splitPacket({ c: 9, m }, 2)).toEqual([{ c: 9, m: m.slice(0, 3), u: true }, { c: 9, m: m.slice(3) }]);
    expect(splitPacket({ c: 9, m, u: true }, 3)).toEqual([{ c: 9, m: m.slice(0, 2), u: true }, { c: 9, m: m.slice(2, 4), u: true }, { c: 9, m: m.slice(4), u: true }]);
    expect(splitPacket({ c: 9, m: m.slice(0, 2) }, 5)).toEqual([{ c: 9, m: m.slice(0, 1), u: true }, { c: 9, m: m.slice(1, 2) }]);
  });

  it('cannot split one message', () => {
    expect(splitPacket({ c: 9, m: [req(1)] }, 2)).toBeNull();
    expect(splitPacket({ c: 9, m: [] }, 2)).toBeNull();
  });
});
