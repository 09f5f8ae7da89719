/**
 * The mesh of links of one peer (DESIGN section 4): one listening socket, and one dialed
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
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import type { Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import type WebSocket from 'ws';
import { WebSocketServer } from 'ws';
import { assert } from '../assert.js';
import { ErrorCode, LockError } from '../errors.js';
import { limits } from '../limits.js';
import type { Incarnation } from '../core/types.js';
import { formatIncarnation } from '../core/types.js';
import type { Frame, HeartbeatFrame, RefuseFrame } from './codec.js';
import { nonceBytes } from './codec.js';
import type { TlsMaterial } from './connection.js';
import { Backoff, FrameSocket, monotonicMs, openClientSocket } from './connection.js';
import type { HandshakeIdentity, ListenerGate, RefuseReason } from './handshake.js';
import { DialerHandshake, ListenerHandshake, NonceBook, refuse, secretKey } from './handshake.js';
import { IncarnationBook } from './incarnations.js';
import { MeshFlusher } from './mesh-flush.js';
import type { PeerSlot } from './peer-slot.js';
import { newPeerSlot } from './peer-slot.js';

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
  readonly self: MeshPeer;
  /** Every other configured peer (not self). */
  readonly peers: readonly MeshPeer[];
  /** Port 0 binds any free port; `port()` tells which. */
  readonly listen: { readonly host: string; readonly port: number };
  readonly incarnation: Incarnation;
  readonly heartbeatMs: number;
  readonly isPayload: (v: unknown) => v is P;
  /** Current Lamport clock, for handshakes and heartbeats. */
  readonly clock: () => number;
  readonly logger: Logger;
  /** Optional wss: PEM file paths; mutual TLS when `ca` is given. */
  readonly tls?: { readonly cert: string; readonly key: string; readonly ca?: string };
  /**
   * Whether to echo a heartbeat of that peer incarnation: an echo lends it our part of its
   * lease, which eviction may forbid (a confirmation we gave). Default: always.
   */
  readonly mayEcho?: (peer: number, inc: Incarnation) => boolean;
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
  /** A heartbeat from `peer`; `clock` only when every earlier payload of it was delivered. */
  onHeartbeat(from: number, inc: Incarnation, clock: number | undefined): void;
  /** Our heartbeat sent at `sentAtMs` (monotonic) came back: lease and RTT. */
  onEcho(peer: number, sentAtMs: number, rttMs: number): void;
  /** Both sockets with `peer` are up (true), or one of them went down (false). */
  onConnection(peer: number, connected: boolean): void;
  /** `peer` refused us with a reason; 'evicted' means our incarnation must rejoin. */
  onRefused?(peer: number, reason: string): void;
}

/** One line of `status()`. Times are monotonic milliseconds (performance.now()). */
export interface MeshPeerStatus {
  readonly peer: number;
  readonly id: string;
  readonly connected: boolean;
  readonly lastHeardMs: number | null;
  readonly rttMs: number | null;
  readonly incarnation: Incarnation | null;
  readonly unackedBytes: number;
}

/** Counters of `stats()`. */
export interface MeshStats {
  framesSent: number;
  messagesSent: number;
  bytesSent: number;
  framesReceived: number;
  /** Payloads sent to a peer whose incarnation is unknown or evicted: there is no stream. */
  messagesDropped: number;
}

/** The links of one peer to all others. */
export class Mesh<P> {
  readonly #opts: MeshOptions<P>;
  readonly #events: MeshEvents<P>;
  readonly #log: Logger;
  readonly #identity: HandshakeIdentity;
  readonly #book: IncarnationBook;
  readonly #slots: (PeerSlot<P> | undefined)[];
  readonly #indexOfId = new Map<string, number>();
  readonly #gate: ListenerGate;
  readonly #sockets = new Set<FrameSocket<P>>();
  readonly #stats: MeshStats = { framesSent: 0, messagesSent: 0, bytesSent: 0, framesReceived: 0, messagesDropped: 0 };
  readonly #flusher: MeshFlusher<P>;
  #tls: TlsMaterial | null = null;
  #server: Server | null = null;
  #wss: WebSocketServer | null = null;
  #port = 0;
  #closing = false;
  #handshakesPending = 0;

  constructor(opts: MeshOptions<P>, events: MeshEvents<P>) {
    validateOptions(opts);
    this.#opts = opts;
    this.#events = events;
    this.#log = opts.logger;
    const size = Math.max(opts.self.index, ...opts.peers.map((p) => p.index)) + 1;
    this.#book = new IncarnationBook(size);
    this.#slots = new Array<PeerSlot<P> | undefined>(size).fill(undefined);
    for (const peer of opts.peers) {
      this.#slots[peer.index] = newPeerSlot<P>(peer, limits.linkUnackedBytesMax, new Backoff());
      this.#indexOfId.set(peer.id, peer.index);
    }
    this.#identity = {
      cluster: opts.cluster,
      key: secretKey(opts.secret),
      selfId: opts.self.id,
      incarnation: opts.incarnation,
      randomNonce: () => randomBytes(nonceBytes),
    };
    this.#gate = {
      peerIndex: (id) => this.#indexOfId.get(id),
      check: (peer, inc) => this.#book.check(peer, inc),
      nonces: new NonceBook(limits.replayNoncesMax),
      handshakeMsMax: limits.handshakeMsMax,
    };
    this.#flusher = new MeshFlusher<P>(this.#stats, this.#log);
  }

  /** Binds the listening socket, then starts dialing every peer. */
  async start(): Promise<void> {
    assert(this.#server === null, 'a mesh starts once');
    const { tls } = this.#opts;
    if (tls !== undefined) {
      const ca = tls.ca === undefined ? {} : { ca: readFileSync(tls.ca) };
      this.#tls = { cert: readFileSync(tls.cert), key: readFileSync(tls.key), ...ca };
    }
    this.#server = this.#createServer();
    this.#wss = new WebSocketServer({ server: this.#server, maxPayload: limits.frameBytesMax, perMessageDeflate: false, clientTracking: false });
    this.#wss.on('connection', (ws, req) => this.#accept(ws, req.socket.remoteAddress ?? '?'));
    this.#wss.on('error', (err) => this.#log.error({ err }, 'listener error'));
    await listen(this.#server, this.#opts.listen.host, this.#opts.listen.port);
    this.#port = (this.#server.address() as AddressInfo).port;
    this.#log.info({ port: this.#port, incarnation: formatIncarnation(this.#opts.incarnation) }, 'mesh listening');
    for (const slot of this.#slots) if (slot !== undefined) this.#dial(slot);
  }

  /** The bound listening port. */
  port(): number {
    return this.#port;
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

  /** Refuses `inc` of `peer` and every older incarnation forever (eviction, DESIGN section 5). */
  refuseIncarnation(peer: number, inc: Incarnation): void {
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

  /** Stops dialing and listening, cuts every socket. */
  async close(): Promise<void> {
    if (this.#closing) return;
    this.#closing = true;
    this.#flusher.cancel();
    for (const slot of this.#slots) {
      if (slot?.redial != null) clearTimeout(slot.redial);
    }
    for (const sock of [...this.#sockets]) sock.terminate('mesh closing');
    this.#wss?.close();
    const server = this.#server;
    if (server !== null) {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  }

  #createServer(): Server {
    const tls = this.#tls;
    const server =
      tls === null
        ? createHttpServer()
        : createHttpsServer({ cert: tls.cert, key: tls.key, ...(tls.ca === undefined ? {} : { ca: tls.ca, requestCert: true, rejectUnauthorized: true }) });
    server.headersTimeout = limits.handshakeMsMax;
    server.requestTimeout = limits.handshakeMsMax;
    server.on('request', (_req, res) => res.writeHead(426, { connection: 'close' }).end());
    server.on('clientError', (_err, socket) => socket.destroy());
    return server;
  }

  #slot(peer: number): PeerSlot<P> {
    const slot = this.#slots[peer];
    assert(slot !== undefined, `peer ${peer} is configured and is not self`);
    return slot;
  }

  #newSocket(ws: WebSocket, remote: string): FrameSocket<P> {
    const sock = new FrameSocket<P>({
      ws,
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
    this.#events.onRefused?.(slot.peer.index, frame.reason);
  }

  #updateConnected(slot: PeerSlot<P>): void {
    const connected = slot.out !== null && slot.in !== null;
    if (connected === slot.connected) return;
    slot.connected = connected;
    this.#events.onConnection(slot.peer.index, connected);
  }

  // ---- dialing: our stream to the peer -------------------------------------------------

  #dial(slot: PeerSlot<P>): void {
    slot.redial = null;
    if (this.#closing) return;
    const sock = this.#newSocket(openClientSocket(slot.peer.ws, limits.handshakeMsMax, this.#tls), slot.peer.id);
    const hs = new DialerHandshake(this.#identity, slot.peer.id);
    slot.dialing = sock;
    sock.onClose = () => this.#onOutboundClosed(slot, sock);
    sock.onFrame = (frame) => {
      this.#stats.framesReceived++;
      if (frame.t === 'challenge') sock.send(hs.onChallenge(frame));
      else if (frame.t === 'welcome') this.#onWelcome(slot, sock, hs.onWelcome(frame));
      else if (frame.t === 'refuse') this.#refused(slot, frame, sock);
      else refuse('protocol', `unexpected ${frame.t} frame during the handshake`);
    };
    sock.onOpen(() => sock.send(hs.hello(this.#opts.clock())));
  }

  #onWelcome(slot: PeerSlot<P>, sock: FrameSocket<P>, welcome: { inc: Incarnation; clock: number; delivered: number }): void {
    const verdict = this.#book.check(slot.peer.index, welcome.inc);
    if (verdict !== null) {
      // We refuse them: not news for the runtime (onRefused means THEY refused US).
      refuse(verdict, `listener incarnation ${formatIncarnation(welcome.inc)} is ${verdict}`);
    }
    this.#admit(slot, welcome.inc, welcome.clock);
    slot.sender.ack(welcome.delivered);
    slot.dialing = null;
    slot.out = sock;
    slot.backoff.reset();
    sock.onFrame = (frame) => this.#onOutboundFrame(slot, sock, frame);
    sock.established(this.#opts.heartbeatMs * limits.heartbeatsMissedMax);
    sock.startHeartbeat(this.#opts.heartbeatMs, () => this.#heartbeat(slot));
    const resent = slot.sender.resume();
    for (const frame of resent) this.#flusher.write(sock, frame);
    this.#log.debug({ remote: slot.peer.id, resentFrames: resent.length, delivered: welcome.delivered }, 'stream resumed');
    this.#updateConnected(slot);
  }

  /**
   * The clock rides on a heartbeat only when nothing for that peer waits unsent: every
   * earlier data frame was handed to this socket first, so by FIFO the receiver has them
   * all when it takes the clock as an ack (DESIGN section 3, rule 3a).
   */
  #heartbeat(slot: PeerSlot<P>): HeartbeatFrame {
    const sentAtMs = monotonicMs();
    return slot.pending.length === 0 ? { t: 'hb', sentAtMs, clock: this.#opts.clock() } : { t: 'hb', sentAtMs };
  }

  #onOutboundFrame(slot: PeerSlot<P>, sock: FrameSocket<P>, frame: Frame<P>): void {
    this.#stats.framesReceived++;
    if (slot.out !== sock) return;
    if (frame.t === 'ack') {
      slot.sender.ack(frame.ack);
      if (slot.pending.length > 0) this.#flusher.markDirty(slot);
    } else if (frame.t === 'hbEcho') {
      const rttMs = monotonicMs() - frame.sentAtMs;
      if (rttMs < 0) throw new LockError(ErrorCode.FrameInvalid, 'heartbeat echo from the future');
      slot.rttMs = rttMs;
      this.#events.onEcho(slot.peer.index, frame.sentAtMs, rttMs);
    } else if (frame.t === 'refuse') {
      this.#refused(slot, frame, sock);
    } else {
      throw new LockError(ErrorCode.FrameInvalid, `unexpected ${frame.t} frame on our outbound stream`);
    }
  }

  #onOutboundClosed(slot: PeerSlot<P>, sock: FrameSocket<P>): void {
    this.#sockets.delete(sock);
    if (slot.dialing === sock) slot.dialing = null;
    if (slot.out === sock) {
      slot.out = null;
      slot.lastHeardMs = sock.lastHeardMs;
      this.#updateConnected(slot);
    }
    if (this.#closing || slot.out !== null || slot.dialing !== null || slot.redial !== null) return;
    slot.redial = setTimeout(() => this.#dial(slot), slot.backoff.next());
  }

  // ---- accepting: the peer's stream to us ----------------------------------------------

  #accept(ws: WebSocket, remote: string): void {
    const sock = this.#newSocket(ws, remote);
    if (this.#closing) return sock.terminate('mesh closing');
    if (this.#handshakesPending >= limits.handshakesPendingMax) {
      return sock.fail(new LockError(ErrorCode.HandshakeRefused, 'too many handshakes in progress', { reason: 'busy' satisfies RefuseReason }));
    }
    this.#handshakesPending++;
    let slot: PeerSlot<P> | null = null;
    const hs = new ListenerHandshake(this.#identity, this.#gate);
    sock.onClose = () => {
      this.#sockets.delete(sock);
      if (slot === null) this.#handshakesPending--;
      else this.#onInboundClosed(slot, sock);
    };
    sock.onFrame = (frame) => {
      this.#stats.framesReceived++;
      if (frame.t === 'hello') sock.send(hs.onHello(frame, monotonicMs()));
      else if (frame.t === 'auth') slot = this.#onAuth(sock, hs.onAuth(frame, monotonicMs()), hs);
      else if (frame.t === 'refuse') sock.close(1000, 'refused');
      else refuse('protocol', `unexpected ${frame.t} frame during the handshake`);
    };
  }

  #onAuth(sock: FrameSocket<P>, dialer: { peer: number; inc: Incarnation; clock: number }, hs: ListenerHandshake): PeerSlot<P> {
    const slot = this.#slot(dialer.peer);
    this.#admit(slot, dialer.inc, dialer.clock);
    this.#handshakesPending--;
    slot.in?.close(1000, 'replaced by a newer connection');
    slot.in = sock;
    sock.onFrame = (frame) => this.#onInboundFrame(slot, sock, frame);
    sock.send(hs.welcome(slot.receiver.lastDelivered, this.#opts.clock()));
    sock.established(this.#opts.heartbeatMs * limits.heartbeatsMissedMax);
    this.#updateConnected(slot);
    return slot;
  }

  #onInboundFrame(slot: PeerSlot<P>, sock: FrameSocket<P>, frame: Frame<P>): void {
    this.#stats.framesReceived++;
    if (slot.in !== sock) return;
    const inc = this.#book.known(slot.peer.index);
    assert(inc !== null, 'an inbound stream belongs to a known incarnation');
    if (frame.t === 'data') {
      const receipt = slot.receiver.receive(frame);
      for (const payload of receipt.deliver) {
        this.#events.onPayload(slot.peer.index, inc, payload);
        if (slot.in !== sock) return; // the runtime evicted that peer meanwhile
      }
      this.#flusher.ackDue(slot);
    } else if (frame.t === 'hb') {
      if (this.#opts.mayEcho?.(slot.peer.index, inc) ?? true) sock.send({ t: 'hbEcho', sentAtMs: frame.sentAtMs });
      this.#events.onHeartbeat(slot.peer.index, inc, frame.clock);
    } else if (frame.t === 'auth') {
      refuse('replayed', 'challenge answered twice');
    } else if (frame.t === 'refuse') {
      this.#refused(slot, frame, sock);
    } else {
      throw new LockError(ErrorCode.FrameInvalid, `unexpected ${frame.t} frame on an inbound stream`);
    }
  }

  #onInboundClosed(slot: PeerSlot<P>, sock: FrameSocket<P>): void {
    if (slot.in !== sock) return;
    slot.in = null;
    slot.lastHeardMs = sock.lastHeardMs;
    this.#updateConnected(slot);
  }
}

function validateOptions<P>(opts: MeshOptions<P>): void {
  assert(opts.heartbeatMs > 0, 'heartbeatMs is positive');
  assert(opts.peers.length + 1 <= limits.peersMax, 'cluster within limits.peersMax');
  const ids = new Set([opts.self.id, ...opts.peers.map((p) => p.id)]);
  const indexes = new Set([opts.self.index, ...opts.peers.map((p) => p.index)]);
  assert(ids.size === opts.peers.length + 1, 'peer ids are distinct and peers exclude self');
  assert(indexes.size === ids.size, 'peer indexes are distinct');
  for (const i of indexes) assert(Number.isSafeInteger(i) && i >= 0 && i < limits.peersMax, 'peer index in range');
}

function listen(server: Server, host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host, port }, () => {
      server.off('error', reject);
      resolve();
    });
  });
}
