/**
 * What the two directions of a mesh share (docs/design.md section 4): the accepting side and the
 * dialing side each drive one socket per peer, but both sockets of a peer belong to one
 * slot, one incarnation and one set of counters, which the Mesh owns and hands to both.
 */
import type { Incarnation } from '../core/types.js';
import type { RefuseFrame } from './codec.js';
import type { FrameSocket } from './connection.js';
import type { HandshakeIdentity } from './handshake.js';
import type { IncarnationGate } from './incarnations.js';
import type { MeshStats } from './mesh-options.js';
import type { MeshFlusher } from './mesh-flush.js';
import type { RawSocket } from './network.js';
import type { PeerSlot } from './peer-slot.js';

/** The state and transitions of a mesh that its acceptor and its dialer use. */
export interface MeshContext<P> {
  readonly identity: HandshakeIdentity;
  readonly book: IncarnationGate;
  readonly stats: MeshStats;
  readonly flusher: MeshFlusher<P>;
  /** True once the mesh is closing: a new socket is cut at once, nothing is redialed. */
  closing(): boolean;
  /** The index of a configured peer id, if it is one. */
  peerIndex(id: string): number | undefined;
  slot(peer: number): PeerSlot<P>;
  /** Wraps and tracks a new socket, so that closing the mesh cuts it. */
  newSocket(raw: RawSocket, remote: string): FrameSocket<P>;
  /** A socket closed: stop tracking it. */
  forget(sock: FrameSocket<P>): void;
  /** Admits an authenticated incarnation; a new one resets the streams and joins first. */
  admit(slot: PeerSlot<P>, inc: Incarnation, clock: number): void;
  /** The peer refused us on `sock`: log it, close it, tell the runtime. */
  refused(slot: PeerSlot<P>, frame: RefuseFrame, sock: FrameSocket<P>): void;
  /** Reports a change of "both sockets up" for that peer. */
  updateConnected(slot: PeerSlot<P>): void;
  /** The peer just dialed us: if our own link to it waits for a redial, dial now. */
  dialNow(slot: PeerSlot<P>): void;
}
