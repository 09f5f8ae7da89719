/**
 * End-of-turn flushing for a mesh (docs/design.md section 4: messages produced in one turn of the
 * event loop for one peer go in one frame). `send` only queues; one `setImmediate` per
 * turn frames every peer's queue and hands the frames to the link (numbering, resend buffer)
 * and to the socket if one is up. The link acks owed on inbound streams leave on a timer of
 * limits.linkAckDelayMs, one cumulative ack per window.
 */
import type { Logger } from 'pino';
import { assert } from '../assert.js';
import type { Env, Timer } from '../env.js';
import { ErrorCode, isLockError } from '../errors.js';
import { limits } from '../limits.js';
import type { DataFrame } from './codec.js';
import { encodeFrame } from './codec.js';
import type { FrameSocket } from './connection.js';
import type { MeshStats } from './mesh-options.js';
import type { PeerSlot } from './peer-slot.js';

/** Batches the sends and acks of one turn. */
export class MeshFlusher<P> {
  readonly #env: Env;
  readonly #stats: MeshStats;
  readonly #log: Logger;
  readonly #dirty = new Set<PeerSlot<P>>();
  readonly #acksDue = new Set<PeerSlot<P>>();
  readonly #ackDelayMs: number;
  #scheduled: Timer | null = null;
  #ackTimer: Timer | null = null;

  constructor(env: Env, stats: MeshStats, log: Logger, ackDelayMs: number = limits.linkAckDelayMs) {
    this.#env = env;
    this.#stats = stats;
    this.#log = log;
    this.#ackDelayMs = ackDelayMs;
  }

  /**
   * An inbound stream owes a cumulative ack. Acks only free the sender's resend buffer,
   * never gate the protocol, so they wait a few ms and cover every frame of that window:
   * one ack frame per window instead of one per data frame.
   */
  ackDue(slot: PeerSlot<P>): void {
    slot.ackDue = true;
    this.#acksDue.add(slot);
    this.#ackTimer ??= this.#env.after(this.#ackDelayMs, () => this.#flushAcks());
  }

  #flushAcks(): void {
    this.#ackTimer = null;
    const slots = [...this.#acksDue];
    this.#acksDue.clear();
    for (const slot of slots) {
      if (!slot.ackDue) continue;
      slot.ackDue = false;
      const bytes = slot.in?.send({ t: 'ack', ack: slot.receiver.lastDelivered }) ?? 0;
      if (bytes > 0) this.#stats.framesSent++;
      this.#stats.bytesSent += bytes;
    }
  }

  /** That peer has payloads waiting: frame them at the end of this turn. */
  markDirty(slot: PeerSlot<P>): void {
    this.#dirty.add(slot);
    this.#scheduled ??= this.#env.soon(() => this.#flushAll());
  }

  /** Stops flushing (mesh closing). */
  cancel(): void {
    this.#env.clear(this.#scheduled);
    this.#env.clear(this.#ackTimer);
    this.#scheduled = null;
    this.#ackTimer = null;
    this.#dirty.clear();
    this.#acksDue.clear();
  }

  /** Encodes and writes one data frame (a new one, or a resend on resume). */
  write(sock: FrameSocket<P>, frame: DataFrame<P>): void {
    this.#count(sock, encodeFrame(frame), frame.payloads.length);
  }

  #count(sock: FrameSocket<P>, bytes: Uint8Array, messages: number): void {
    if (!sock.sendEncoded(bytes)) return;
    this.#stats.framesSent++;
    this.#stats.messagesSent += messages;
    this.#stats.bytesSent += bytes.length;
  }

  #flushAll(): void {
    this.#scheduled = null;
    const slots = [...this.#dirty];
    this.#dirty.clear();
    for (const slot of slots) {
      if (slot.pending.length > 0) this.#flushPending(slot);
    }
  }

  /** Frames the queued payloads in order; on a full resend buffer the rest waits for acks. */
  #flushPending(slot: PeerSlot<P>): void {
    const pending = slot.pending;
    let taken = 0;
    while (taken < pending.length) {
      const { payloads, bytes } = cutFrame(pending, taken, slot.sender.nextSeq);
      const count = payloads.length;
      try {
        slot.sender.send(payloads, bytes.length);
      } catch (err) {
        if (!isLockError(err, ErrorCode.LinkBufferFull)) throw err;
        this.#log.warn({ code: err.code, remote: slot.peer.id, waiting: pending.length - taken }, err.message);
        break;
      }
      taken += count;
      if (slot.out !== null) this.#count(slot.out, bytes, count);
    }
    slot.pending = taken === pending.length ? [] : pending.slice(taken);
  }
}

/** The largest prefix of `pending[from..]` that fits the frame limits, encoded. */
function cutFrame<P>(pending: readonly P[], from: number, seq: number): { payloads: readonly P[]; bytes: Buffer } {
  let count = Math.min(pending.length - from, limits.frameMessagesMax);
  for (;;) {
    const frame: DataFrame<P> = { t: 'data', seq, payloads: pending.slice(from, from + count) };
    const bytes = encodeFrame(frame);
    if (bytes.length <= limits.frameBytesMax) return { payloads: frame.payloads, bytes };
    assert(count > 1, `one payload encodes to ${bytes.length} bytes, over limits.frameBytesMax: the runtime must split it`);
    count = Math.ceil(count / 2);
  }
}
