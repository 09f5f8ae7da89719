/**
 * What the two directions of a mesh share (docs/design.md section 4): the accepting side and the
 * dialing side each drive one socket per peer, but both sockets of a peer belong to one
 * link, one incarnation and one set of counters, which the Mesh owns and hands to both.
 * Through this the two sides only read shared state and say what happened; the Mesh and
 * the links change it.
 */
import type { Incarnation } from '../core/types.js';
import type { LockError } from '../errors.js';
import type { RefuseFrame } from './codec.js';
import type { FrameSocket } from './connection.js';
import type { HandshakeIdentity } from './handshake.js';
import type { IncarnationGate } from './incarnations.js';
import type { MeshFlusher } from './mesh-flush.js';
import type { MeshCounters } from './mesh-stats.js';
import type { RawSocket } from './network.js';
import type { PeerLink } from './peer-link.js';

/** The state and transitions of a mesh that its acceptor and its dialer use. */
export interface MeshContext<P> {
  readonly identity: HandshakeIdentity;
  /** The incarnations of the others; the sides only ask it, `admit` changes it. */
  readonly book: Pick<IncarnationGate, 'check' | 'newest' | 'isRefused' | 'known'>;
  readonly counters: MeshCounters;
  readonly flusher: MeshFlusher<P>;
  /** True once the mesh is closing: a new socket is cut at once, nothing is redialed. */
  closing(): boolean;
  /** The index of a configured peer id, if it is one. */
  peerIndex(id: string): number | undefined;
  /** Whether `id` named a member the mesh took out (Mesh.removePeer). */
  retired(id: string): boolean;
  link(peer: number): PeerLink<P>;
  /** Wraps and tracks a new socket, so that closing the mesh cuts it. */
  newSocket(raw: RawSocket, remote: string): FrameSocket<P>;
  /** A socket closed: stop tracking it. */
  forget(sock: FrameSocket<P>): void;
  /** Admits an authenticated incarnation; a new one resets the streams and joins first. */
  admit(link: PeerLink<P>, inc: Incarnation, clock: number): void;
  /** We refuse `peer` (an id it claims, after it proved the secret): remember why, for GET /v1/cluster. */
  refusing(peer: string, err: LockError): void;
  /** The peer refused us on `sock`: log it, close it, tell the runtime. */
  refused(link: PeerLink<P>, frame: RefuseFrame, sock: FrameSocket<P>): void;
  /** Reports a change of "both sockets up" for that peer. */
  updateConnected(link: PeerLink<P>): void;
  /** The peer just dialed us: if our own link to it waits for a redial, dial now. */
  dialNow(link: PeerLink<P>): void;
}
