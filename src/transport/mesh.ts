/**
 * The mesh of links of one peer (docs/design.md section 4): one listening socket, and one dialed
 * socket per other peer. One socket per ORDERED pair: we dial j for our stream to j, and
 * j's acks and heartbeat echoes come back on that socket; j dials us for its stream, and
 * we answer on that one. Never one shared socket for both directions: two peers dialing
 * each other at once would otherwise have to agree which socket wins (the simultaneous-open
 * trap of libp2p and lnd).
 *
 * Each socket is bound, by its handshake, to the current incarnation of the peer. A newer
 * incarnation of j resets both streams with j (the old one's messages were for a dead
 * process), closes the sockets of the old one, and fires `onPeerJoined(restarted=true)`
 * before any payload of the new one. The runtime sends its state transfer from inside
 * `onPeerJoined`: the streams were reset just before, so those payloads are first.
 *
 * This class owns the per-peer slots and what both directions share; the accepting side
 * is in mesh-acceptor.ts, the dialing side in mesh-dialer.ts.
 */
import type { Logger } from 'pino';
import { assert } from '../assert.js';
import { ErrorCode, LockError } from '../errors.js';
import { limits } from '../limits.js';
import type { Incarnation } from '../core/types.js';
import { formatIncarnation } from '../core/types.js';
import type { RefuseFrame } from './codec.js';
import { nonceBytes } from './codec.js';
import { Backoff, FrameSocket } from './connection.js';
import type { HandshakeIdentity } from './handshake.js';
import { secretKey } from './handshake.js';
import { IncarnationBook } from '../core/incarnations.js';
import type { IncarnationGate } from './incarnations.js';
import { MeshAcceptor } from './mesh-acceptor.js';
import type { MeshContext } from './mesh-context.js';
import { MeshDialer } from './mesh-dialer.js';
import { MeshFlusher } from './mesh-flush.js';
import type { MeshEvents, MeshOptions, MeshStats } from './mesh-options.js';
import { validateMeshOptions } from './mesh-options.js';
import type { PeerSlot } from './peer-slot.js';
import { newPeerSlot } from './peer-slot.js';
import type { RawSocket } from './network.js';

export type { MeshEvents, MeshOptions, MeshPeer, MeshStats } from './mesh-options.js';

/** One line of `status()`. Times are the mesh's monotonic milliseconds (`env.monoMs`). */
export interface MeshPeerStatus {
  readonly peer: number;
  readonly id: string;
  readonly connected: boolean;
  readonly lastHeardMs: number | null;
  readonly rttMs: number | null;
  readonly incarnation: Incarnation | null;
  readonly unackedBytes: number;
}

/** The links of one peer to all others. */
export class Mesh<P> {
  readonly #opts: MeshOptions<P>;
  readonly #events: MeshEvents<P>;
  readonly #log: Logger;
  readonly #book: IncarnationGate;
  readonly #slots: (PeerSlot<P> | undefined)[];
  readonly #indexOfId = new Map<string, number>();
  readonly #sockets = new Set<FrameSocket<P>>();
  readonly #stats: MeshStats = { framesSent: 0, messagesSent: 0, bytesSent: 0, framesReceived: 0, messagesDropped: 0 };
  readonly #flusher: MeshFlusher<P>;
  readonly #acceptor: MeshAcceptor<P>;
  readonly #dialer: MeshDialer<P>;
  #closing = false;

  constructor(opts: MeshOptions<P>, events: MeshEvents<P>) {
    validateMeshOptions(opts);
    this.#opts = opts;
    this.#events = events;
    this.#log = opts.logger;
    const size = Math.max(opts.self.index, ...opts.peers.map((p) => p.index)) + 1;
    this.#book = opts.incarnations ?? new IncarnationBook(size);
    assert(this.#book.peerCount >= size, 'the incarnation book covers every peer');
    this.#slots = new Array<PeerSlot<P> | undefined>(size).fill(undefined);
    for (const peer of opts.peers) {
      this.#slots[peer.index] = newPeerSlot<P>(peer, opts.linkUnackedBytesMax ?? limits.linkUnackedBytesMax, new Backoff(() => opts.env.randomInt(2 ** 30) / 2 ** 30));
      this.#indexOfId.set(peer.id, peer.index);
    }
    const identity: HandshakeIdentity = {
      cluster: opts.cluster,
      key: secretKey(opts.secret),
      selfId: opts.self.id,
      incarnation: opts.incarnation,
      randomNonce: () => opts.env.randomBytes(nonceBytes),
    };
    this.#flusher = new MeshFlusher<P>(opts.env, this.#stats, this.#log);
    const context: MeshContext<P> = {
      identity,
      book: this.#book,
      stats: this.#stats,
      flusher: this.#flusher,
      closing: () => this.#closing,
      peerIndex: (id) => this.#indexOfId.get(id),
      slot: (peer) => this.#slot(peer),
      newSocket: (ws, remote) => this.#newSocket(ws, remote),
      forget: (sock) => this.#sockets.delete(sock),
      admit: (slot, inc, clock) => this.#admit(slot, inc, clock),
      refused: (slot, frame, sock) => this.#refused(slot, frame, sock),
      updateConnected: (slot) => this.#updateConnected(slot),
      dialNow: (slot) => this.#dialer.dialNow(slot),
    };
    this.#acceptor = new MeshAcceptor<P>(opts, events, context);
    this.#dialer = new MeshDialer<P>(opts, events, context);
  }

  /** Takes the listener's connections, then starts dialing every peer. */
  start(): void {
    assert(!this.#acceptor.started, 'a mesh starts once');
    this.#acceptor.start();
    this.#log.info({ port: this.#opts.listener.port, incarnation: formatIncarnation(this.#opts.incarnation) }, 'mesh started');
    this.#dialer.start(this.#slots);
  }

  /**
   * Queues `payload` for `to`. Everything queued for one peer in one event-loop turn goes
   * in one frame (split only by limits.frameMessagesMax / frameBytesMax). Throws
   * ERR_LINK_BUFFER_FULL when that link's resend buffer is full (backpressure).
   */
  send(to: number, payload: P): void {
    const slot = this.#slot(to);
    const inc = this.#book.known(to);
    if (inc === null || this.#book.isRefused(to, inc)) {
      this.#stats.messagesDropped++;
      return;
    }
    if (slot.sender.full) {
      throw new LockError(ErrorCode.LinkBufferFull, `link to ${slot.peer.id} holds ${slot.sender.unackedBytes} unacknowledged bytes`, { peer: to });
    }
    slot.pending.push(payload);
    this.#flusher.markDirty(slot);
  }

  /** Refuses `inc` of `peer` and every older incarnation forever (eviction, docs/design.md section 5). */
  refuseIncarnation(peer: number, inc: Incarnation): void {
    if (this.#opts.faults?.acceptEvicted === true) return;
    const slot = this.#slot(peer);
    if (!this.#book.refuse(peer, inc)) return;
    this.#log.warn({ remote: slot.peer.id, incarnation: formatIncarnation(inc) }, 'incarnation refused from now on');
    this.#dropStreams(slot);
  }

  /** One line per peer, for GET /v1/cluster and metrics. */
  status(): MeshPeerStatus[] {
    const lines: MeshPeerStatus[] = [];
    for (const slot of this.#slots) {
      if (slot === undefined) continue;
      const heard = [slot.lastHeardMs, slot.out?.lastHeardMs ?? null, slot.in?.lastHeardMs ?? null].filter((v): v is number => v !== null);
      lines.push({
        peer: slot.peer.index,
        id: slot.peer.id,
        connected: slot.connected,
        lastHeardMs: heard.length === 0 ? null : Math.max(...heard),
        rttMs: slot.rttMs,
        incarnation: this.#book.known(slot.peer.index),
        unackedBytes: slot.sender.unackedBytes,
      });
    }
    return lines;
  }

  /** Counters since start. */
  stats(): MeshStats {
    return { ...this.#stats };
  }

  /**
   * Stops dialing and accepting, cuts every socket. The listener stays bound for the next
   * mesh, unless this mesh owns it (`ownsListener`), which closes it too.
   */
  async close(): Promise<void> {
    if (this.#closing) return;
    this.#closing = true;
    this.#flusher.cancel();
    for (const slot of this.#slots) if (slot !== undefined) this.#opts.env.clear(slot.redial);
    for (const sock of [...this.#sockets]) sock.terminate('mesh closing');
    this.#acceptor.close();
    if (this.#opts.ownsListener === true) await this.#opts.listener.close();
  }

  /** The bound listening port. */
  port(): number {
    return this.#opts.listener.port;
  }


  #slot(peer: number): PeerSlot<P> {
    const slot = this.#slots[peer];
    assert(slot !== undefined, `peer ${peer} is configured and is not self`);
    return slot;
  }

  #newSocket(raw: RawSocket, remote: string): FrameSocket<P> {
    const sock = new FrameSocket<P>({
      sock: raw,
      env: this.#opts.env,
      isPayload: this.#opts.isPayload,
      logger: this.#log.child({ remote }),
      handshakeMsMax: limits.handshakeMsMax,
    });
    this.#sockets.add(sock);
    return sock;
  }

  // ---- incarnations -------------------------------------------------------------------

  /** Admits an authenticated incarnation; a new one resets the streams and joins first. */
  #admit(slot: PeerSlot<P>, inc: Incarnation, clock: number): void {
    const news = this.#book.admit(slot.peer.index, inc);
    if (news === 'same') return;
    this.#dropStreams(slot);
    this.#log.info({ remote: slot.peer.id, incarnation: formatIncarnation(inc), restarted: news === 'newer' }, 'peer joined');
    this.#events.onPeerJoined(slot.peer.index, inc, clock, news === 'newer');
  }

  /** Forgets both streams with that peer and closes the sockets bound to its old incarnation. */
  #dropStreams(slot: PeerSlot<P>): void {
    slot.sender.reset();
    slot.receiver.reset();
    slot.pending = [];
    slot.ackDue = false;
    slot.out?.close(1000, 'peer incarnation changed');
    slot.in?.close(1000, 'peer incarnation changed');
  }

  #refused(slot: PeerSlot<P>, frame: RefuseFrame, sock: FrameSocket<P>): void {
    this.#log.warn({ code: ErrorCode.HandshakeRefused, reason: frame.reason, remote: slot.peer.id }, `refused by peer: ${frame.message}`);
    sock.close(1000, 'refused');
    this.#events.onRefused?.(slot.peer.index, frame.reason, frame.known, frame.knownEvicted === true);
  }

  #updateConnected(slot: PeerSlot<P>): void {
    const connected = slot.out !== null && slot.in !== null;
    if (connected === slot.connected) return;
    slot.connected = connected;
    this.#events.onConnection(slot.peer.index, connected);
  }
}
