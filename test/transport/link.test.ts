import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ErrorCode, LockError } from '../../src/errors.js';
import type { DataFrame } from '../../src/transport/link.js';
import { LinkReceiver, LinkSender } from '../../src/transport/link.js';
import { codeOf } from './helpers.js';


const sender = (unackedBytesMax = 1000): LinkSender<string> => new LinkSender<string>({ unackedBytesMax });

describe('LinkSender', () => {
  it('numbers payloads per stream, a frame at a time', () => {
    const s = sender();
    expect(s.send(['a', 'b'], 10)).toEqual({ t: 'data', seq: 1, payloads: ['a', 'b'] });
    expect(s.send(['c'], 5)).toEqual({ t: 'data', seq: 3, payloads: ['c'] });
    expect(s.nextSeq).toBe(4);
    expect(s.unackedMessages).toBe(3);
    expect(s.unackedBytes).toBe(15);
  });

  it('drops frames on a cumulative ack and ignores stale acks', () => {
    const s = sender();
    s.send(['a', 'b'], 10);
    s.send(['c'], 5);
    expect(s.ack(2)).toBe(2);
    expect(s.unackedBytes).toBe(5);
    expect(s.ack(1)).toBe(0);
    expect(s.resume()).toEqual([{ t: 'data', seq: 3, payloads: ['c'] }]);
  });

  it('refuses an ack of something never sent with ERR_FRAME_INVALID', () => {
    const s = sender();
    s.send(['a'], 1);
    expect(codeOf(() => s.ack(2))).toBe(ErrorCode.FrameInvalid);
    expect(s.ackedUpTo).toBe(0);
  });

  it('resume returns every unacked payload in order, before anything new', () => {
    const s = sender();
    s.send(['a'], 1);
    s.send(['b', 'c'], 2);
    s.send(['d'], 1);
    s.ack(1);
    expect(s.resume()).toEqual([
      { t: 'data', seq: 2, payloads: ['b', 'c'] },
      { t: 'data', seq: 4, payloads: ['d'] },
    ]);
    expect(s.send(['e'], 1).seq).toBe(5);
  });

  it('keeps the unacked tail of a frame acked in its middle', () => {
    const s = sender();
    s.send(['a', 'b', 'c', 'd'], 40);
    s.ack(2);
    expect(s.resume()).toEqual([{ t: 'data', seq: 3, payloads: ['c', 'd'] }]);
    expect(s.unackedBytes).toBe(20);
  });

  it('signals backpressure with ERR_LINK_BUFFER_FULL instead of dropping, and recovers on ack', () => {
    const s = sender(100);
    s.send(['a'], 60);
    s.send(['b'], 60);
    expect(s.full).toBe(true);
    expect(codeOf(() => s.send(['c'], 1))).toBe(ErrorCode.LinkBufferFull);
    expect(s.nextSeq).toBe(3);
    s.ack(1);
    expect(s.full).toBe(false);
    expect(s.send(['c'], 1).seq).toBe(3);
  });

  it('reset starts a new stream at seq 1 and drops the old buffer', () => {
    const s = sender();
    s.send(['a', 'b'], 2);
    s.reset();
    expect(s.resume()).toEqual([]);
    expect(s.unackedBytes).toBe(0);
    expect(s.send(['x'], 1).seq).toBe(1);
  });
});

describe('LinkReceiver', () => {
  it('delivers seq == next and acks cumulatively', () => {
    const r = new LinkReceiver<string>();
    expect(r.receive({ t: 'data', seq: 1, payloads: ['a', 'b'] })).toEqual({ deliver: ['a', 'b'], ack: 2, duplicates: 0 });
    expect(r.receive({ t: 'data', seq: 3, payloads: ['c'] })).toEqual({ deliver: ['c'], ack: 3, duplicates: 0 });
  });

  it('drops duplicates, whole or partial, and acks again', () => {
    const r = new LinkReceiver<string>();
    r.receive({ t: 'data', seq: 1, payloads: ['a', 'b'] });
    expect(r.receive({ t: 'data', seq: 1, payloads: ['a', 'b'] })).toEqual({ deliver: [], ack: 2, duplicates: 2 });
    expect(r.receive({ t: 'data', seq: 2, payloads: ['b', 'c'] })).toEqual({ deliver: ['c'], ack: 3, duplicates: 1 });
  });

  it('treats a gap as ERR_LINK_GAP and delivers nothing', () => {
    const r = new LinkReceiver<string>();
    r.receive({ t: 'data', seq: 1, payloads: ['a'] });
    expect(codeOf(() => r.receive({ t: 'data', seq: 3, payloads: ['c'] }))).toBe(ErrorCode.LinkGap);
    expect(r.lastDelivered).toBe(1);
  });

  it('reset expects seq 1 again (new incarnation of the sender)', () => {
    const r = new LinkReceiver<string>();
    r.receive({ t: 'data', seq: 1, payloads: ['a'] });
    r.reset();
    expect(r.receive({ t: 'data', seq: 1, payloads: ['x'] }).deliver).toEqual(['x']);
  });
});

type Op =
  | { k: 'send'; n: number }
  | { k: 'deliver' }
  | { k: 'drop'; at: number }
  | { k: 'dup'; at: number }
  | { k: 'swap'; at: number }
  | { k: 'ack'; stale: boolean }
  | { k: 'reconnect' };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ k: fc.constant('send' as const), n: fc.integer({ min: 1, max: 5 }) }),
  fc.record({ k: fc.constant('deliver' as const) }),
  fc.record({ k: fc.constant('deliver' as const) }),
  fc.record({ k: fc.constant('drop' as const), at: fc.nat() }),
  fc.record({ k: fc.constant('dup' as const), at: fc.nat() }),
  fc.record({ k: fc.constant('swap' as const), at: fc.nat() }),
  fc.record({ k: fc.constant('ack' as const), stale: fc.boolean() }),
  fc.record({ k: fc.constant('reconnect' as const) }),
);

/**
 * A lossy channel between a sender and a receiver. Frames in flight can be dropped,
 * duplicated and reordered; a gap at the receiver (or a reconnect) cuts the connection:
 * in-flight frames vanish, and the sender resumes from what the receiver says it delivered.
 */
class Channel {
  readonly s = new LinkSender<number>({ unackedBytesMax: 1_000_000 });
  readonly r = new LinkReceiver<number>();
  inFlight: DataFrame<number>[] = [];
  sent: number[] = [];
  delivered: number[] = [];
  next = 0;

  apply(op: Op): void {
    const at = (n: number): number => n % Math.max(1, this.inFlight.length);
    switch (op.k) {
      case 'send': {
        const payloads = Array.from({ length: op.n }, () => this.next++);
        this.sent.push(...payloads);
        this.inFlight.push(this.s.send(payloads, op.n));
        return;
      }
      case 'deliver':
        return this.deliverOne();
      case 'drop':
        this.inFlight.splice(at(op.at), 1);
        return;
      case 'dup': {
        const frame = this.inFlight[at(op.at)];
        if (frame !== undefined) this.inFlight.splice(at(op.at) + 1 + (op.at % 3), 0, frame);
        return;
      }
      case 'swap': {
        const i = at(op.at);
        const [a, b] = [this.inFlight[i], this.inFlight[i + 1]];
        if (a !== undefined && b !== undefined) this.inFlight.splice(i, 2, b, a);
        return;
      }
      case 'ack':
        this.s.ack(op.stale ? Math.floor(this.r.lastDelivered / 2) : this.r.lastDelivered);
        return;
      case 'reconnect':
        return this.reconnect();
    }
  }

  deliverOne(): void {
    const frame = this.inFlight.shift();
    if (frame === undefined) return;
    try {
      this.delivered.push(...this.r.receive(frame).deliver);
    } catch (err) {
      if (!(err instanceof LockError) || err.code !== ErrorCode.LinkGap) throw err;
      this.reconnect();
    }
  }

  reconnect(): void {
    this.s.ack(this.r.lastDelivered);
    this.inFlight = this.s.resume();
  }
}

describe('link property', () => {
  it('delivers exactly once and in order under drop, duplicate and reorder with resume', () => {
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 300 }), (ops) => {
        const ch = new Channel();
        for (const op of ops) ch.apply(op);
        // Faults stop: reconnect and deliver until the channel is drained.
        ch.reconnect();
        while (ch.inFlight.length > 0) ch.deliverOne();
        expect(ch.delivered).toEqual(ch.sent);
        ch.s.ack(ch.r.lastDelivered);
        expect(ch.s.unackedBytes).toBe(0);
      }),
      { numRuns: 500 },
    );
  });
});
