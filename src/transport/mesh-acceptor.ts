/**
 * The accepting side of a mesh (DESIGN section 4): the listening socket, the listener's
 * half of each handshake, and the streams other peers dialed to us. A peer's stream to us
 * carries its data and heartbeats; we answer on the same socket with acks and echoes.
 */
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
import type { Frame } from './codec.js';
import type { FrameSocket, TlsMaterial } from './connection.js';
import { monotonicMs } from './connection.js';
import type { ListenerGate, RefuseReason } from './handshake.js';
import { ListenerHandshake, NonceBook, refuse } from './handshake.js';
import type { MeshContext } from './mesh-context.js';
import type { MeshEvents, MeshOptions } from './mesh-options.js';
import type { PeerSlot } from './peer-slot.js';

/** The listening socket of a mesh and the peers' streams to us. */
export class MeshAcceptor<P> {
  readonly #opts: MeshOptions<P>;
  readonly #events: MeshEvents<P>;
  readonly #mesh: MeshContext<P>;
  readonly #log: Logger;
  readonly #gate: ListenerGate;
  #server: Server | null = null;
  #wss: WebSocketServer | null = null;
  #port = 0;
  #handshakesPending = 0;

  constructor(opts: MeshOptions<P>, events: MeshEvents<P>, mesh: MeshContext<P>) {
    this.#opts = opts;
    this.#events = events;
    this.#mesh = mesh;
    this.#log = opts.logger;
    this.#gate = {
      peerIndex: (id) => mesh.peerIndex(id),
      check: (peer, inc) => mesh.book.check(peer, inc),
      nonces: new NonceBook(limits.replayNoncesMax),
      handshakeMsMax: limits.handshakeMsMax,
    };
  }

  /** Whether `start()` was called. */
  get started(): boolean {
    return this.#server !== null;
  }

  /** Binds the listening socket (wss when `tls` is given). */
  async start(tls: TlsMaterial | null): Promise<void> {
    this.#server = createServer(tls);
    this.#wss = new WebSocketServer({ server: this.#server, maxPayload: limits.frameBytesMax, perMessageDeflate: false, clientTracking: false });
    this.#wss.on('connection', (ws, req) => this.#accept(ws, req.socket.remoteAddress ?? '?'));
    this.#wss.on('error', (err) => this.#log.error({ err }, 'listener error'));
    await listen(this.#server, this.#opts.listen.host, this.#opts.listen.port);
    this.#port = (this.#server.address() as AddressInfo).port;
  }

  /** The bound listening port. */
  port(): number {
    return this.#port;
  }

  /** Stops listening and cuts the connections still open on the server. */
  async close(): Promise<void> {
    this.#wss?.close();
    const server = this.#server;
    if (server !== null) {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  }

  #accept(ws: WebSocket, remote: string): void {
    const mesh = this.#mesh;
    const sock = mesh.newSocket(ws, remote);
    if (mesh.closing()) return sock.terminate('mesh closing');
    if (this.#handshakesPending >= limits.handshakesPendingMax) {
      return sock.fail(new LockError(ErrorCode.HandshakeRefused, 'too many handshakes in progress', { reason: 'busy' satisfies RefuseReason }));
    }
    this.#handshakesPending++;
    let slot: PeerSlot<P> | null = null;
    const hs = new ListenerHandshake(mesh.identity, this.#gate);
    sock.onClose = () => {
      mesh.forget(sock);
      if (slot === null) this.#handshakesPending--;
      else this.#onInboundClosed(slot, sock);
    };
    sock.onFrame = (frame) => {
      mesh.stats.framesReceived++;
      if (frame.t === 'hello') sock.send(hs.onHello(frame, monotonicMs()));
      else if (frame.t === 'auth') slot = this.#onAuth(sock, hs.onAuth(frame, monotonicMs()), hs);
      else if (frame.t === 'refuse') sock.close(1000, 'refused');
      else refuse('protocol', `unexpected ${frame.t} frame during the handshake`);
    };
  }

  #onAuth(sock: FrameSocket<P>, dialer: { peer: number; inc: Incarnation; clock: number }, hs: ListenerHandshake): PeerSlot<P> {
    const slot = this.#mesh.slot(dialer.peer);
    this.#mesh.admit(slot, dialer.inc, dialer.clock);
    this.#handshakesPending--;
    slot.in?.close(1000, 'replaced by a newer connection');
    slot.in = sock;
    sock.onFrame = (frame) => this.#onInboundFrame(slot, sock, frame);
    sock.send(hs.welcome(slot.receiver.lastDelivered, this.#opts.clock()));
    sock.established(this.#opts.heartbeatMs * limits.heartbeatsMissedMax);
    this.#mesh.updateConnected(slot);
    return slot;
  }

  #onInboundFrame(slot: PeerSlot<P>, sock: FrameSocket<P>, frame: Frame<P>): void {
    this.#mesh.stats.framesReceived++;
    if (slot.in !== sock) return;
    const inc = this.#mesh.book.known(slot.peer.index);
    assert(inc !== null, 'an inbound stream belongs to a known incarnation');
    if (frame.t === 'data') {
      const receipt = slot.receiver.receive(frame);
      for (const payload of receipt.deliver) {
        this.#events.onPayload(slot.peer.index, inc, payload);
        if (slot.in !== sock) return; // the runtime evicted that peer meanwhile
      }
      this.#mesh.flusher.ackDue(slot);
    } else if (frame.t === 'hb') {
      if (this.#opts.mayEcho?.(slot.peer.index, inc) ?? true) sock.send({ t: 'hbEcho', sentAtMs: frame.sentAtMs });
      this.#events.onHeartbeat(slot.peer.index, inc, frame.clock);
    } else if (frame.t === 'auth') {
      refuse('replayed', 'challenge answered twice');
    } else if (frame.t === 'refuse') {
      this.#mesh.refused(slot, frame, sock);
    } else {
      throw new LockError(ErrorCode.FrameInvalid, `unexpected ${frame.t} frame on an inbound stream`);
    }
  }

  #onInboundClosed(slot: PeerSlot<P>, sock: FrameSocket<P>): void {
    if (slot.in !== sock) return;
    slot.in = null;
    slot.lastHeardMs = sock.lastHeardMs;
    this.#mesh.updateConnected(slot);
  }
}

function createServer(tls: TlsMaterial | null): Server {
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

function listen(server: Server, host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host, port }, () => {
      server.off('error', reject);
      resolve();
    });
  });
}
