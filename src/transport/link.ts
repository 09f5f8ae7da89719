/**
 * The PURE reliable link of docs/design.md section 4: per-stream sequence numbers, cumulative
 * acks, a byte-bounded resend buffer and in-order, exactly-once delivery. No sockets, no
 * timers, no clock, no randomness: the mesh drives it from real sockets and the
 * deterministic simulator drives it from a simulated network.
 *
 * One stream is one direction between two peer incarnations. Its two halves:
 *
 * - `LinkSender` (on the sending peer):
 *   - `send(payloads, bytes)` numbers the payloads `nextSeq, nextSeq+1, ...` and returns the
 *     data frame to hand to the socket; it keeps the frame until acknowledged. Throws
 *     `ERR_LINK_BUFFER_FULL` (state unchanged) when the unacknowledged bytes already reach
 *     the bound: backpressure, never silent loss.
 *   - `ack(upTo)` drops everything up to `upTo` (cumulative); stale acks are ignored, an
 *     ack of something never sent is `ERR_FRAME_INVALID` (a broken or hostile peer).
 *   - `resume()` returns every unacknowledged frame, in order, to be resent on a new
 *     connection to the same incarnation BEFORE anything new (call `ack(delivered)` with
 *     the receiver's handshake figure first). There is no resend on a live connection.
 *   - `reset()` starts a new stream (new incarnation of either side): the buffer is dropped,
 *     because those messages were meant for a process that no longer exists.
 * - `LinkReceiver` (on the receiving peer):
 *   - `receive(frame)` delivers exactly the payloads whose seq is `lastDelivered + 1` onwards,
 *     drops what was already delivered (the caller acks again), and throws `ERR_LINK_GAP`
 *     when the frame starts past `lastDelivered + 1` (state unchanged): a gap is a bug, the
 *     caller resets the connection and the resume closes the gap.
 *   - `lastDelivered` is what the handshake tells the sender and what acks carry.
 *   - `reset()` for a new incarnation of the sender.
 */
import { assert } from '../assert.js';
import { ErrorCode, LockError } from '../errors.js';

/**
 * A batch of payloads on the wire: payload k has sequence number `seq + k`. `ack`, when
 * present, is the sender's cumulative ack of the other direction's stream (the one its peer
 * sends on the other socket): a link ack that rides on data instead of a frame of its own.
 */
export interface DataFrame<P> {
  readonly t: 'data';
  readonly seq: number;
  readonly payloads: readonly P[];
  readonly ack?: number;
}

/** Bounds of one sender, from limits.ts in production and small in tests. */
export interface LinkSenderOptions {
  /** Unacknowledged bytes at or above which `send` refuses: backpressure. */
  readonly unackedBytesMax: number;
}

interface Unacked<P> {
  seq: number;
  payloads: readonly P[];
  bytes: number;
}

/** Sending half of one stream: numbering, resend buffer, cumulative acks. */
export class LinkSender<P> {
  readonly #unackedBytesMax: number;
  #queue: Unacked<P>[] = [];
  #head = 0;
  #nextSeq = 1;
  #ackedUpTo = 0;
  #unackedBytes = 0;

  constructor(options: LinkSenderOptions) {
    assert(options.unackedBytesMax > 0, 'the resend buffer needs room');
    this.#unackedBytesMax = options.unackedBytesMax;
  }

  /** Sequence number the next payload will get. */
  get nextSeq(): number {
    return this.#nextSeq;
  }

  /** Highest sequence number acknowledged by the receiver. */
  get ackedUpTo(): number {
    return this.#ackedUpTo;
  }

  /** Bytes kept for resend (as told by the caller at `send`). */
  get unackedBytes(): number {
    return this.#unackedBytes;
  }

  /** Payloads sent and not yet acknowledged. */
  get unackedMessages(): number {
    return this.#nextSeq - 1 - this.#ackedUpTo;
  }

  /** True when `send` would refuse: the caller must hold new payloads back. */
  get full(): boolean {
    return this.#unackedBytes >= this.#unackedBytesMax;
  }

  /** Numbers `payloads` and keeps them for resend; `bytes` is their size on the wire. */
  send(payloads: readonly P[], bytes: number): DataFrame<P> {
    assert(payloads.length > 0, 'a data frame carries at least one payload');
    assert(Number.isSafeInteger(bytes) && bytes > 0, 'a data frame has a positive size');
    if (this.full) {
      throw new LockError(ErrorCode.LinkBufferFull, `link resend buffer holds ${this.#unackedBytes} bytes, the bound is ${this.#unackedBytesMax}`);
    }
    const seq = this.#nextSeq;
    this.#queue.push({ seq, payloads, bytes });
    this.#nextSeq += payloads.length;
    this.#unackedBytes += bytes;
    return { t: 'data', seq, payloads };
  }

  /** Cumulative ack: the receiver has delivered every payload up to `upTo`. */
  ack(upTo: number): number {
    if (upTo >= this.#nextSeq) {
      throw new LockError(ErrorCode.FrameInvalid, `ack ${upTo} is beyond the last payload sent (${this.#nextSeq - 1})`);
    }
    if (upTo <= this.#ackedUpTo) return 0;
    const dropped = upTo - this.#ackedUpTo;
    this.#ackedUpTo = upTo;
    this.#dropAckedFrames(upTo);
    return dropped;
  }

  /** Every unacknowledged payload, in order, in the frames it was sent in. */
  resume(): DataFrame<P>[] {
    const frames: DataFrame<P>[] = [];
    for (let k = this.#head; k < this.#queue.length; k++) {
      const entry = this.#queue[k];
      assert(entry !== undefined, 'queue index in range');
      frames.push({ t: 'data', seq: entry.seq, payloads: entry.payloads });
    }
    return frames;
  }

  /** Starts a new stream: sequence numbers restart at 1 and the buffer is dropped. */
  reset(): void {
    this.#queue = [];
    this.#head = 0;
    this.#nextSeq = 1;
    this.#ackedUpTo = 0;
    this.#unackedBytes = 0;
  }

  #dropAckedFrames(upTo: number): void {
    while (this.#head < this.#queue.length) {
      const entry = this.#queue[this.#head];
      assert(entry !== undefined, 'queue index in range');
      const last = entry.seq + entry.payloads.length - 1;
      if (last <= upTo) {
        this.#unackedBytes -= entry.bytes;
        this.#head++;
        continue;
      }
      if (entry.seq <= upTo) this.#trimFrame(entry, upTo);
      break;
    }
    // Compact now and then so the array does not grow with the stream's history.
    if (this.#head > 1024 && this.#head * 2 > this.#queue.length) {
      this.#queue = this.#queue.slice(this.#head);
      this.#head = 0;
    }
  }

  /** An ack inside a frame (only after a resume re-cut frames): keep the unacked tail. */
  #trimFrame(entry: Unacked<P>, upTo: number): void {
    const keep = entry.payloads.length - (upTo - entry.seq + 1);
    const bytes = Math.ceil((entry.bytes * keep) / entry.payloads.length);
    this.#unackedBytes -= entry.bytes - bytes;
    entry.payloads = entry.payloads.slice(entry.payloads.length - keep);
    entry.seq = upTo + 1;
    entry.bytes = bytes;
  }
}

/** What one received frame yields: payloads to deliver, in order, and the ack to send. */
export interface Receipt<P> {
  readonly deliver: readonly P[];
  /** Cumulative ack to send back: always `lastDelivered`, duplicates included. */
  readonly ack: number;
  /** Payloads of this frame dropped because they were already delivered. */
  readonly duplicates: number;
}

/** Receiving half of one stream: exactly once, in order, gaps refused. */
export class LinkReceiver<P> {
  #lastDelivered = 0;

  /** Highest sequence number delivered: the handshake's `delivered` and every ack. */
  get lastDelivered(): number {
    return this.#lastDelivered;
  }

  /** Delivers the new payloads of `frame`; throws ERR_LINK_GAP if it starts past the next. */
  receive(frame: DataFrame<P>): Receipt<P> {
    const next = this.#lastDelivered + 1;
    if (frame.seq > next) {
      throw new LockError(ErrorCode.LinkGap, `frame starts at seq ${frame.seq} but the next expected is ${next}`, {
        seq: frame.seq,
        expected: next,
      });
    }
    const skip = Math.min(next - frame.seq, frame.payloads.length);
    const deliver = skip === 0 ? frame.payloads : frame.payloads.slice(skip);
    this.#lastDelivered += deliver.length;
    return { deliver, ack: this.#lastDelivered, duplicates: skip };
  }

  /** A new incarnation of the sender: its stream starts again at seq 1. */
  reset(): void {
    this.#lastDelivered = 0;
  }
}
