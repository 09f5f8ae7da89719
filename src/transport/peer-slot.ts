/**
 * Everything the mesh keeps about one other peer: both streams (our sender, our receiver),
 * the payloads of the current event-loop turn, and the sockets bound to its incarnation.
 */
import type { Timer } from '../env.js';
import type { Backoff, FrameSocket } from './connection.js';
import { LinkReceiver, LinkSender } from './link.js';
import type { MeshPeer } from './mesh-options.js';

/** Mutable per-peer state of a mesh: mesh.ts owns it; its acceptor, dialer and flusher change their parts. */
export interface PeerSlot<P> {
  readonly peer: MeshPeer;
  /** Our stream to the peer, carried by `out`. */
  readonly sender: LinkSender<P>;
  /** The peer's stream to us, carried by `in`. */
  readonly receiver: LinkReceiver<P>;
  /**
   * Payloads not framed yet: queued in this event-loop turn and framed at its end, or left
   * over when the resend buffer was full (they wait for acks to free it).
   */
  pending: P[];
  /** A cumulative ack for `in` is owed: it leaves on the flusher's ack timer (limits.linkAckDelayMs). */
  ackDue: boolean;
  /** Established socket we dialed (our stream). */
  out: FrameSocket<P> | null;
  /** Established socket the peer dialed (its stream). */
  in: FrameSocket<P> | null;
  /** Dial attempt still in its handshake. */
  dialing: FrameSocket<P> | null;
  redial: Timer | null;
  readonly backoff: Backoff;

  /** Last value reported through onConnection. */
  connected: boolean;
  /** Monotonic time a frame was last heard on a socket now closed. */
  lastHeardMs: number | null;
  rttMs: number | null;
}

/** A fresh slot: no incarnation known yet, nothing sent. */
export function newPeerSlot<P>(peer: MeshPeer, unackedBytesMax: number, backoff: Backoff): PeerSlot<P> {
  return {
    peer,
    sender: new LinkSender<P>({ unackedBytesMax }),
    receiver: new LinkReceiver<P>(),
    pending: [],
    ackDue: false,
    out: null,
    in: null,
    dialing: null,
    redial: null,
    backoff,
    connected: false,
    lastHeardMs: null,
    rttMs: null,
  };
}
