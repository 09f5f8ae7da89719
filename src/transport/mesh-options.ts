/**
 * What a mesh is told at construction (docs/design.md section 4): who it is, the peers it links to,
 * where it listens, and the events through which it reports to the runtime.
 */
import type { Logger } from 'pino';
import { assert } from '../assert.js';
import type { Env } from '../env.js';
import { limits } from '../limits.js';
import type { Incarnation } from '../core/types.js';
import type { SplitPayload } from './frame-cut.js';
import type { IncarnationGate } from './incarnations.js';
import type { ClusterShape } from '../cluster-shape.js';
import type { ProtocolLevels } from './codec.js';
import { protocolLevels, speaks } from './codec.js';
import type { Listener, Network } from './network.js';

/** A configured peer; `index` is its position in the cluster configuration. */
export interface MeshPeer {
  readonly id: string;
  readonly index: number;
  /** ws://host:port (or wss://) where that peer listens. */
  readonly ws: string;
}

/** Everything a mesh is told at construction. */
export interface MeshOptions<P> {
  readonly cluster: string;
  readonly secret: string;
  /** What every peer of the cluster holds equal (src/cluster-shape.ts): its fingerprint is checked on every link. */
  readonly shape: ClusterShape;
  /** The protocol levels this binary speaks (default transport/codec.ts `protocolLevels`). */
  readonly levels?: ProtocolLevels | undefined;
  /**
   * The level this peer runs at now, told in its hellos (default: `shape.protocol`, the level
   * its cluster was founded at): a peer whose view a raise moved runs above its shape's level
   * (docs/reconfiguration.md P9). Always one its binary speaks.
   */
  readonly level?: (() => number) | undefined;
  readonly self: MeshPeer;
  /** Every other configured peer (not self). */
  readonly peers: readonly MeshPeer[];
  /** Clocks, timers and randomness of this process. */
  readonly env: Env;
  /** Dials the other peers. */
  readonly network: Network;
  /** The bound listening socket, which outlives meshes: this one takes its connections. */
  readonly listener: Listener;
  /** This mesh closes the listener when it closes (a mesh run alone, transport/standalone-mesh.ts). */
  readonly ownsListener?: boolean | undefined;
  readonly incarnation: Incarnation;
  /** This peer's acceptor id, told in its hellos (runtime/view-store.ts); none without a data dir. */
  readonly acceptorId?: string | undefined;
  readonly heartbeatMs: number;
  readonly isPayload: (v: unknown) => v is P;
  /** Current Lamport clock, for handshakes and heartbeats. */
  readonly clock: () => number;
  readonly logger: Logger;
  /** Each link's resend buffer bound; default limits.linkUnackedBytesMax. */
  readonly linkUnackedBytesMax?: number | undefined;
  /**
   * Two payloads queued for one peer one after the other, neither framed yet, as the one
   * payload that says the same (the runtime's rule: consecutive core packets), or null to
   * send both. Default: every payload travels as queued.
   */
  readonly mergePayloads?: ((earlier: P, later: P) => P | null) | undefined;
  /**
   * One payload too large for a frame on its own, as at most `parts` payloads that say the
   * same when delivered one after the other (the runtime's rule: core/messages.ts
   * `splitPacket`), or null when it cannot be split. Default: none, and a payload that does
   * not fit in a frame alone is a programmer error.
   */
  readonly splitPayload?: SplitPayload<P> | undefined;
  /** Largest frame the links write; default limits.frameBytesMax (the simulator sets less, to cut often). */
  readonly frameBytesMax?: number | undefined;
  /**
   * The session's IncarnationBook (src/core/incarnations.ts), which its Membership shares:
   * the mesh admits and refuses incarnations in it. Default: a book of the mesh's own.
   */
  readonly incarnations?: IncarnationGate | undefined;
  /** Counts one socket failure by reason (a refusal either way, a malformed frame): lamport_link_refusals_total. */
  readonly onFailure?: ((reason: string) => void) | undefined;
}

/** What the mesh reports to the runtime. Called synchronously from socket events. */
export interface MeshEvents<P> {
  /**
   * A peer incarnation became reachable for the first time, before any of its payloads.
   * `restarted` when it replaces an older incarnation of that peer id. `clock` is the one
   * in its handshake: a floor for our clock, NOT an ack (its earlier payloads may still be
   * in flight on the other socket). Payloads sent from inside this call are the first ones
   * of the new stream to that peer (state transfer).
   */
  onPeerJoined(peer: number, inc: Incarnation, clock: number, restarted: boolean): void;
  /** One payload from `peer`: exactly once, in order, per stream. */
  onPayload(from: number, inc: Incarnation, payload: P): void;
  /**
   * A heartbeat from `peer`, sent at `sentAtMs` (its monotonic clock); `clock` only when every
   * earlier payload of it was delivered. The mesh does not echo it: the owner decides whether
   * an echo may leave (it lends the dialer our part of its lease) and sends it with `Mesh.echo`.
   */
  onHeartbeat(from: number, inc: Incarnation, clock: number | undefined, sentAtMs: number): void;
  /**
   * Our heartbeat to `peer` is due (once per heartbeat_ms while our stream to it is up). The
   * owner sends it with `Mesh.heartbeat`, with the clock it may carry, if any (an ack: when
   * it may is a rule of the protocol, not of the links). `allSent`: nothing for that peer
   * waits unsent, so every earlier data frame is on the socket ahead of it.
   */
  onHeartbeatDue(peer: number, allSent: boolean): void;
  /** Our heartbeat sent at `sentAtMs` (monotonic) came back: lease and RTT. */
  onEcho(peer: number, sentAtMs: number, rttMs: number): void;
  /** Both sockets with `peer` are up (true), or one of them went down (false). */
  onConnection(peer: number, connected: boolean): void;
  /**
   * `peer` refused us with a reason; 'evicted' means our incarnation must rejoin;
   * 'stale_incarnation' comes with the newer incarnation of our id that `peer` knows.
   */
  onRefused?(peer: number, reason: string, known: Incarnation | undefined, knownEvicted: boolean): void;
  /** `peer`'s handshake (as a dialer) told its acceptor id, proved: before `onPeerJoined` of that incarnation. */
  onAcceptorId?(peer: number, aid: string): void;

}

/** Asserts what a mesh assumes of its options: programmer errors, caught at construction. */
export function validateMeshOptions<P>(opts: MeshOptions<P>): void {
  assert(opts.heartbeatMs > 0, 'heartbeatMs is positive');
  assert(speaks(opts.levels ?? protocolLevels, opts.level?.() ?? opts.shape.protocol), 'the mesh runs at a protocol level its binary speaks');
  assert(opts.frameBytesMax === undefined || (opts.frameBytesMax >= 256 && opts.frameBytesMax <= limits.frameBytesMax), 'frameBytesMax within 256 bytes..limits.frameBytesMax');
  assert(opts.peers.length + 1 <= limits.peersMax, 'cluster within limits.peersMax');
  const ids = new Set([opts.self.id, ...opts.peers.map((p) => p.id)]);
  const indexes = new Set([opts.self.index, ...opts.peers.map((p) => p.index)]);
  assert(ids.size === opts.peers.length + 1, 'peer ids are distinct and peers exclude self');
  assert(indexes.size === ids.size, 'peer indexes are distinct');
  for (const i of indexes) assert(Number.isSafeInteger(i) && i >= 0 && i < limits.peersMax, 'peer index in range');
}
