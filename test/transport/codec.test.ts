import { Packr } from 'msgpackr';
import { describe, expect, it } from 'vitest';
import { isPacket } from '../../src/core/messages.js';
import type { Packet, RequestMessage } from '../../src/core/messages.js';
import { ErrorCode } from '../../src/errors.js';
import { limits } from '../../src/limits.js';
import type { Frame } from '../../src/transport/codec.js';
import { decodeFrame, encodeFrame } from '../../src/transport/codec.js';
import { Prng } from '../support/prng.js';
import { testSeed } from '../support/seed.js';
import { codeOf } from './helpers.js';

const plain = new Packr({ useRecords: false, mapsAsObjects: true });
const request: RequestMessage = { t: 'req', lock: 'db', ts: 1_735_000_000_123, mode: 'exclusive', limit: 1, permits: 1, owner: 'me', meta: { k: [1, 'x'] }, at: 1_735_000_000_000 };
const packet: Packet = {
  c: 2 ** 53 - 1,
  m: [request, { t: 'rel', lock: 'db', ts: 2 ** 40 + 3 }],
};

/** Data frames whose REQUEST has no `at`, one that is not a time in ms (protocol version 4), or meta that is not an object. */
function badRequests(): Array<[string, unknown]> {
  const frame = (at: unknown): unknown => ({ t: 'data', seq: 1, payloads: [{ c: 1, m: [{ ...request, at }] }] });
  const { at: _at, ...noAt } = request;
  return [
    ['a request without at', { t: 'data', seq: 1, payloads: [{ c: 1, m: [noAt] }] }],
    ['a request whose at is a string', frame('1735000000000')],
    ['a request whose at is negative', frame(-1)],
    ['a request whose at is a fraction', frame(1.5)],
    ['a request whose at is a bigint', frame(2n ** 60n)],
    // One object guard for every decoder (core/types.ts isRecord): msgpack decodes binary as bytes.
    ['a request whose meta is bytes', { t: 'data', seq: 1, payloads: [{ c: 1, m: [{ ...request, meta: new Uint8Array([1, 2]) }] }] }],
  ];
}

describe('codec', () => {
  const frames: Frame<Packet>[] = [
    { t: 'hello', v: 1, cluster: 'c', from: 'a', to: 'b', inc: { startMs: 1_735_000_000_000, nonce: 4_000_000_000 }, clock: 2 ** 53 - 1, nonce: Buffer.alloc(16, 7) },
    { t: 'challenge', nonce: Buffer.alloc(16, 1) },
    { t: 'auth', fp: 'ab'.repeat(12), mac: Buffer.alloc(32, 2) },
    { t: 'welcome', inc: { startMs: 5, nonce: 6 }, clock: 9, delivered: 2 ** 40, fp: '0123456789abcdef01234567', mac: Buffer.alloc(32, 3) },
    { t: 'refuse', reason: 'wrong_config', message: 'no', shape: { cluster: 'c', peers: ['a', 'b'], heartbeatMs: 1, leaseMs: 2, evictMs: 3, marginMilli: 1500, protocol: 9 } },
    { t: 'refuse', reason: 'bad_mac', message: 'no' },
    { t: 'data', seq: 2 ** 52, payloads: [packet, { c: 0, m: [] }] },
    { t: 'data', seq: 3, payloads: [packet], ack: 2 ** 53 - 2 },
    { t: 'ack', ack: 2 ** 53 - 2 },
    { t: 'hb', sentAtMs: 123.456, clock: 2 ** 45 },
    { t: 'hb', sentAtMs: 0 },
    { t: 'hbEcho', sentAtMs: 99.5 },
  ];

  it.each(frames.map((f) => [f.t, f] as const))('round-trips a %s frame, integers up to 2^53 as numbers', (_t, frame) => {
    const decoded = decodeFrame(encodeFrame(frame), isPacket);
    expect(decoded).toEqual(frame);
    expect(Object.getPrototypeOf(decoded)).toBe(Object.prototype);
  });

  it('refuses a frame over the size limit before decoding it', () => {
    const big = Buffer.alloc(limits.frameBytesMax + 1, 0xc0);
    expect(codeOf(() => decodeFrame(big, isPacket))).toBe(ErrorCode.FrameTooLarge);
  });

  it('refuses an empty frame and every truncation of a valid frame', () => {
    expect(codeOf(() => decodeFrame(Buffer.alloc(0), isPacket))).toBe(ErrorCode.FrameInvalid);
    const bytes = encodeFrame({ t: 'data', seq: 1, payloads: [packet] });
    for (let n = 1; n < bytes.length; n++) {
      expect(codeOf(() => decodeFrame(bytes.subarray(0, n), isPacket)), `truncated at ${n}`).toBe(ErrorCode.FrameInvalid);
    }
  });

  it('refuses trailing bytes after a valid frame', () => {
    const bytes = Buffer.concat([encodeFrame({ t: 'ack', ack: 1 }), Buffer.from([0x01])]);
    expect(codeOf(() => decodeFrame(bytes, isPacket))).toBe(ErrorCode.FrameInvalid);
  });

  it.each([
    ['a number', 5],
    ['an array', [1, 2]],
    ['a map without type', { seq: 1 }],
    ['an unknown type', { t: 'nope' }],
    ['a data frame with seq 0', { t: 'data', seq: 0, payloads: [{ c: 1, m: [] }] }],
    ['a data frame without payloads', { t: 'data', seq: 1, payloads: [] }],
    ['a data frame with a malformed payload', { t: 'data', seq: 1, payloads: [{ c: -1, m: [] }] }],
    ['a data frame with a float seq', { t: 'data', seq: 1.5, payloads: [{ c: 1, m: [] }] }],
    ['a data frame with a negative ack', { t: 'data', seq: 1, payloads: [{ c: 1, m: [] }], ack: -1 }],
    ['a data frame with a string ack', { t: 'data', seq: 1, payloads: [{ c: 1, m: [] }], ack: '1' }],
    ['an ack with a bigint', { t: 'ack', ack: 2n ** 60n }],
    ['an ack with a string', { t: 'ack', ack: '1' }],
    ['a heartbeat with a negative time', { t: 'hb', sentAtMs: -1 }],
    ['a hello with a short nonce', { t: 'hello', v: 1, cluster: 'c', from: 'a', to: 'b', inc: { startMs: 1, nonce: 1 }, clock: 1, nonce: new Uint8Array(3) }],
    ['a hello with a string incarnation', { t: 'hello', v: 1, cluster: 'c', from: 'a', to: 'b', inc: '1.1', clock: 1, nonce: new Uint8Array(16) }],
    ['an auth with a string mac', { t: 'auth', mac: 'x'.repeat(32) }],
    ['a welcome with a negative delivered', { t: 'welcome', inc: { startMs: 1, nonce: 1 }, clock: 1, delivered: -1, mac: new Uint8Array(32) }],
    ['a date', new Date(0)],
    ...badRequests(),
  ])('refuses valid msgpack of the wrong shape: %s', (_what, value) => {
    expect(codeOf(() => decodeFrame(plain.pack(value), isPacket))).toBe(ErrorCode.FrameInvalid);
  });

  it('refuses a data frame with more payloads than limits.frameMessagesMax', () => {
    const payloads = Array.from({ length: limits.frameMessagesMax + 1 }, () => ({ c: 1, m: [] }));
    expect(codeOf(() => decodeFrame(plain.pack({ t: 'data', seq: 1, payloads }), isPacket))).toBe(ErrorCode.FrameInvalid);
  });

  it('never throws anything but a coded error on random bytes', () => {
    const seed = testSeed('random bytes to the codec');
    const rng = new Prng(seed);
    const random = (): number => rng.float();
    for (let k = 0; k < 10_000; k++) {
      const bytes = Buffer.alloc(1 + Math.floor(random() * 64));
      for (let i = 0; i < bytes.length; i++) bytes[i] = Math.floor(random() * 256);
      // Bias towards msgpack maps so the shape guards get exercised, not just the decoder.
      if (random() < 0.5) bytes[0] = 0x80 | Math.floor(random() * 16);
      let code: string;
      try {
        code = codeOf(() => decodeFrame(bytes, isPacket));
      } catch (err) {
        throw new Error(`reproduce with SEED=${seed}: ${bytes.toString('hex')} threw ${String(err)}`, { cause: err });
      }
      expect(code, `reproduce with SEED=${seed}: ${bytes.toString('hex')}`).toMatch(/^(ERR_FRAME_INVALID|no error)$/);
    }
  });
});
