/**
 * Everything the mesh keeps about one other peer (docs/design.md section 4): both streams
 * (our sender, our receiver), the payloads not framed yet, the link ack we owe, the sockets
 * bound to its incarnation, and what `Mesh.status()` reports of it. Only this class changes
 * that state: the mesh, its accepting and dialing sides and its flusher say what happened
 * through its methods and read the rest through getters.
 *
 * It also cuts its queue into frames (docs/design.md "Batching", src/transport/frame-cut.ts):
 * the flusher decides when, the link what goes in each frame.
 */
import type { Logger } from 'pino';
import { assert } from '../assert.js';
import { ErrorCode, LockError, isLockError } from '../errors.js';
import { limits } from '../limits.js';
import type { DataFrame } from './codec.js';
import { encodeFrame } from './codec.js';
import type { FrameSocket } from './connection.js';
import type { FrameCutOptions, SplitPayload } from './frame-cut.js';
import { FrameCutter } from './frame-cut.js';
import { LinkReceiver, LinkSender } from './link.js';
import type { MeshPeer } from './mesh-options.js';
import type { MeshCounters } from './mesh-stats.js';

/** What a PeerLink is built with. */
export interface PeerLinkOptions<P> {
  readonly peer: MeshPeer;
  /** Our stream's resend buffer bound (limits.linkUnackedBytesMax in production). */
  readonly unackedBytesMax: number;
  /** The mesh's counters: every frame the link writes is counted there. */
  readonly counters: MeshCounters;
  readonly logger: Logger;
  /** MeshOptions.mergePayloads: two consecutive payloads not yet framed, sent as one (or null). */
  readonly merge?: ((earlier: P, later: P) => P | null) | undefined;
  /** MeshOptions.splitPayload: one payload too large for a frame, as several (or null). */
  readonly split?: SplitPayload<P> | undefined;
  /** Largest frame this link writes; default limits.frameBytesMax (MeshOptions.frameBytesMax). */
  readonly frameBytesMax?: number | undefined;
}

/** The link with one other peer: its two streams and the sockets that carry them. */
export class PeerLink<P> {
  readonly peer: MeshPeer;
  /** Our stream to the peer, carried by `out`. */
  readonly #sender: LinkSender<P>;
  /** The peer's stream to us, carried by `in`. */
  readonly #receiver = new LinkReceiver<P>();
  readonly #counters: MeshCounters;
  readonly #log: Logger;
  /**
   * Payloads not framed yet: queued in this event-loop turn and framed at its end, or left
   * over when the resend buffer was full (they wait for acks to free it).
   */
  #pending: P[] = [];
  /** A cumulative ack for `in` is owed: it rides on our next data frame, or leaves on the flusher's ack timer (limits.linkAckDelayMs). */
  #ackDue = false;
  #out: FrameSocket<P> | null = null;
  #in: FrameSocket<P> | null = null;
  #dialing: FrameSocket<P> | null = null;
  /** Last value `recheckConnected` reported. */
  #connected = false;
  /** Monotonic time a frame was last heard on a socket now closed. */
  #closedHeardMs: number | null = null;
  #rttMs: number | null = null;
  #newestLevel: number | null = null;

  constructor(options: PeerLinkOptions<P>) {
    this.peer = options.peer;
    this.#merge = options.merge ?? null;
    this.#cut = { frameBytesMax: options.frameBytesMax ?? limits.frameBytesMax, split: options.split };
    this.#sender = new LinkSender<P>({ unackedBytesMax: options.unackedBytesMax });
    this.#counters = options.counters;
    this.#log = options.logger;
  }

  /** Established socket we dialed (our stream), if any. */
  get out(): FrameSocket<P> | null {
    return this.#out;
  }

  /** Established socket the peer dialed (its stream), if any. */
  get in(): FrameSocket<P> | null {
    return this.#in;
  }

  /** Our dial attempt still in its handshake, if any. */
  get dialing(): FrameSocket<P> | null {
    return this.#dialing;
  }

  /** Whether both sockets were up when last rechecked (what the runtime was told). */
  get connected(): boolean {
    return this.#connected;
  }

  /** Round trip of our last echoed heartbeat, in monotonic milliseconds. */
  get rttMs(): number | null {
    return this.#rttMs;
  }

  /** The newest protocol level the peer's binary advertised in its last accepted handshake; null before one. */
  get newestLevel(): number | null {
    return this.#newestLevel;
  }

  /** The peer's handshake was accepted, advertising `newest`. */
  noteNewestLevel(newest: number): void {
    this.#newestLevel = newest;
  }

  /** Monotonic time a frame was last heard from that peer, on any socket, open or closed. */
  get lastHeardMs(): number | null {
    const heard = [this.#closedHeardMs, this.#out?.lastHeardMs ?? null, this.#in?.lastHeardMs ?? null].filter((v): v is number => v !== null);
    return heard.length === 0 ? null : Math.max(...heard);
  }

  /** Bytes of our stream the peer has not acknowledged yet. */
  get unackedBytes(): number {
    return this.#sender.unackedBytes;
  }

  /** The last seq of the peer's stream delivered to us: what our welcome tells it. */
  get delivered(): number {
    return this.#receiver.lastDelivered;
  }

  /** True when nothing for that peer waits unframed, so every earlier data frame is written. */
  get allSent(): boolean {
    return this.#pending.length === 0;
  }

  // ---- our stream ---------------------------------------------------------------------

  readonly #merge: ((earlier: P, later: P) => P | null) | null;
  /** How `flush` cuts frames: the frame limit and the payload split rule. */
  readonly #cut: FrameCutOptions<P>;

  /**
   * Queues one payload for the end of the turn; throws ERR_LINK_BUFFER_FULL (backpressure).
   * When the payload queued just before it is not framed yet and the mesh's `mergePayloads`
   * joins the two, they travel as one.
   */
  queue(payload: P): void {
    if (this.#sender.full) {
      throw new LockError(ErrorCode.LinkBufferFull, `link to ${this.peer.id} holds ${this.#sender.unackedBytes} unacknowledged bytes`, { peer: this.peer.index });
    }
    const last = this.#pending.length - 1;
    const merged = last >= 0 && this.#merge !== null ? this.#merge(this.#pending[last] as P, payload) : null;
    if (merged === null) this.#pending.push(payload);
    else this.#pending[last] = merged;
  }

  /**
   * Frames the queued payloads in order into our stream (numbering, resend buffer) and writes
   * them on `out` if it is up; on a full resend buffer the rest waits for acks. No frame
   * passes the frame limit: a payload too large alone is split first (FrameCutter).
   */
  flush(): void {
    const cutter = new FrameCutter(this.#pending, this.#cut);
    while (!cutter.done) {
      // The ack we owe on `in` rides on the first frame `out` carries (protocol 7): the
      // flusher's ack timer then finds nothing owed. A frame kept for resend is re-encoded
      // without it (LinkSender.resume), so an old ack is never replayed as new.
      const ack = this.#ackDue && this.#out !== null ? this.#receiver.lastDelivered : undefined;
      const { payloads, bytes } = cutter.cut(this.#sender.nextSeq, ack);
      const count = payloads.length;
      try {
        this.#sender.send(payloads, bytes.length);
      } catch (err) {
        if (!isLockError(err, ErrorCode.LinkBufferFull)) throw err;
        this.#log.warn({ code: err.code, remote: this.peer.id, waiting: cutter.rest().length }, err.message);
        break;
      }
      cutter.take(count);
      if (this.#out !== null && this.#write(this.#out, bytes, count) && ack !== undefined) this.#ackDue = false;
    }
    this.#pending = cutter.done ? [] : cutter.rest();
  }

  /**
   * The peer acknowledged our stream up to `upTo` (cumulative), in an ack frame or on one of
   * its data frames: frees the resend buffer. True when payloads wait unframed (for that room).
   */
  ackReceived(upTo: number): boolean {
    this.#sender.ack(upTo);
    return this.#pending.length > 0;
  }

  /** Round trip of a heartbeat echo. */
  noteRtt(rttMs: number): void {
    this.#rttMs = rttMs;
  }

  // ---- the peer's stream --------------------------------------------------------------

  /** The new payloads of a data frame on `in`, in order; throws ERR_LINK_GAP past the next. */
  receive(frame: DataFrame<P>): readonly P[] {
    return this.#receiver.receive(frame).deliver;
  }

  /** We owe the peer a cumulative ack; `sendAck` sends it. */
  oweAck(): void {
    this.#ackDue = true;
  }

  /** Sends the cumulative ack owed on `in`, if one is still owed. */
  sendAck(): void {
    if (!this.#ackDue) return;
    this.#ackDue = false;
    const bytes = this.#in?.send({ t: 'ack', ack: this.#receiver.lastDelivered }) ?? 0;
    if (bytes > 0) this.#counters.frameSent(bytes, 0);
  }

  // ---- sockets ------------------------------------------------------------------------

  /** A dial to that peer started: `sock` is in its handshake. */
  dialStarted(sock: FrameSocket<P>): void {
    this.#dialing = sock;
  }

  /**
   * Our dial passed its handshake: `sock` carries our stream from now on. The peer has
   * delivered our stream up to `delivered`; call `resend` once the socket is set up.
   */
  attachOutgoing(sock: FrameSocket<P>, delivered: number): void {
    this.#sender.ack(delivered);
    this.#dialing = null;
    this.#out = sock;
  }

  /** Writes every unacknowledged frame of our stream again on `out`; how many. */
  resend(): number {
    const out = this.#out;
    assert(out !== null, 'a stream resumes on an established socket');
    const resent = this.#sender.resume();
    for (const frame of resent) this.#write(out, encodeFrame(frame), frame.payloads.length);
    return resent.length;
  }

  /** The peer dialed us and passed the handshake: `sock` carries its stream, replacing the old one. */
  attachIncoming(sock: FrameSocket<P>): void {
    this.#in?.close(1000, 'replaced by a newer connection');
    this.#in = sock;
  }

  /** `sock` closed; true when it was `in` or `out` (the connection status may have changed). */
  detach(sock: FrameSocket<P>): boolean {
    if (this.#dialing === sock) this.#dialing = null;
    if (this.#in === sock) this.#in = null;
    else if (this.#out === sock) this.#out = null;
    else return false;
    this.#closedHeardMs = sock.lastHeardMs;
    return true;
  }

  /** Recomputes "both sockets up"; true when it changed since the last recheck. */
  recheckConnected(): boolean {
    const connected = this.#out !== null && this.#in !== null;
    if (connected === this.#connected) return false;
    this.#connected = connected;
    return true;
  }

  /** Forgets both streams (a new or refused incarnation) and closes the sockets bound to the old one. */
  dropStreams(): void {
    this.#sender.reset();
    this.#receiver.reset();
    this.#pending = [];
    this.#ackDue = false;
    this.#out?.close(1000, 'peer incarnation changed');
    this.#in?.close(1000, 'peer incarnation changed');
  }

  /** Writes one encoded frame on `sock`; false when the socket was no longer open. */
  #write(sock: FrameSocket<P>, bytes: Uint8Array, messages: number): boolean {
    if (!sock.sendEncoded(bytes)) return false;
    this.#counters.frameSent(bytes.length, messages);
    return true;
  }
}
