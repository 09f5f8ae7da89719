/**
 * The accepting side of a mesh (docs/design.md section 4): the listening socket, the listener's
 * half of each handshake, and the streams other peers dialed to us. A peer's stream to us
 * carries its data and heartbeats; we answer on the same socket with acks and echoes.
 */
import { assert } from '../assert.js';
import { ErrorCode, LockError } from '../errors.js';
import { limits } from '../limits.js';
import type { Frame } from './codec.js';
import type { FrameSocket } from './connection.js';
import type { AcceptedDialer, ListenerGate, RefuseReason } from './handshake.js';
import { ListenerHandshake, NonceBook, refuse } from './handshake.js';
import type { MeshContext } from './mesh-context.js';
import type { MeshEvents, MeshOptions } from './mesh-options.js';
import type { RawSocket } from './network.js';
import type { PeerLink } from './peer-link.js';

/** The listening socket of a mesh and the peers' streams to us. */
export class MeshAcceptor<P> {
  readonly #opts: MeshOptions<P>;
  readonly #events: MeshEvents<P>;
  readonly #mesh: MeshContext<P>;
  readonly #gate: ListenerGate;
  #started = false;
  /** Sockets still in their handshake, by remote address, oldest first (`#makeRoom`). */
  readonly #pending = new Map<string, Set<FrameSocket<P>>>();
  #pendingCount = 0;

  constructor(opts: MeshOptions<P>, events: MeshEvents<P>, mesh: MeshContext<P>) {
    this.#opts = opts;
    this.#events = events;
    this.#mesh = mesh;
    this.#gate = {
      peerIndex: (id) => mesh.peerIndex(id),
      retired: (id) => mesh.retired(id),
      check: (peer, inc) => mesh.book.check(peer, inc),
      newest: (peer) => mesh.book.newest(peer),
      isRefused: (peer, inc) => mesh.book.isRefused(peer, inc),
      nonces: new NonceBook(limits.replayNoncesMax),
      handshakeMsMax: limits.handshakeMsMax,
      refusing: (from, err) => mesh.refusing(from, err),
    };
  }

  /** Whether `start()` was called. */
  get started(): boolean {
    return this.#started;
  }

  /** Takes the connections of the (already bound) listener. */
  start(): void {
    this.#started = true;
    this.#opts.listener.accept((sock, remote) => this.#accept(sock, remote));
  }

  /** Stops taking connections (the listener stays bound for the next mesh). */
  close(): void {
    this.#opts.listener.accept(null);
  }

  #accept(raw: RawSocket, remote: string): void {
    const mesh = this.#mesh;
    const sock = mesh.newSocket(raw, remote);
    if (mesh.closing()) return sock.terminate('mesh closing');
    this.#makeRoom(remote);
    this.#pendingAdd(remote, sock);
    let link: PeerLink<P> | null = null;
    const hs = new ListenerHandshake(mesh.identity, this.#gate);
    sock.onClose = () => {
      mesh.forget(sock);
      if (link === null) this.#pendingDelete(remote, sock);
      else this.#onInboundClosed(link, sock);
    };
    sock.onFrame = (frame) => {
      mesh.counters.frameReceived();
      if (frame.t === 'hello') sock.send(hs.onHello(frame, this.#opts.env.monoMs()));
      else if (frame.t === 'auth') link = this.#onAuth(sock, remote, hs.onAuth(frame, this.#opts.env.monoMs()), hs);
      else if (frame.t === 'refuse') sock.close(1000, 'refused');
      else refuse('protocol', `unexpected ${frame.t} frame during the handshake`);
    };
  }

  /**
   * Before a new handshake starts: beyond limits.handshakesPendingPerAddressMax from its
   * address, or limits.handshakesPendingMax in all, the oldest pending handshake of that
   * address (or of the address with the most) is cut. A flood displaces its own connections;
   * a peer's handshake lasts a round trip or two and is almost never the oldest, so a
   * configured peer gets its slot however many strangers connect (docs/design.md section 4,
   * "Strangers on the peer port").
   */
  #makeRoom(remote: string): void {
    const own = this.#pending.get(remote);
    let victims: Set<FrameSocket<P>> | undefined;
    if (own !== undefined && own.size >= limits.handshakesPendingPerAddressMax) victims = own;
    else if (this.#pendingCount >= limits.handshakesPendingMax) {
      for (const set of this.#pending.values()) if (victims === undefined || set.size > victims.size) victims = set;
    }
    const oldest = victims?.values().next().value;
    if (oldest === undefined) return;
    oldest.fail(new LockError(ErrorCode.HandshakeRefused, 'too many handshakes in progress from this address', { reason: 'busy' satisfies RefuseReason }));
  }

  #pendingAdd(remote: string, sock: FrameSocket<P>): void {
    let set = this.#pending.get(remote);
    if (set === undefined) this.#pending.set(remote, (set = new Set()));
    set.add(sock);
    this.#pendingCount++;
  }

  #pendingDelete(remote: string, sock: FrameSocket<P>): void {
    const set = this.#pending.get(remote);
    if (set === undefined || !set.delete(sock)) return;
    this.#pendingCount--;
    if (set.size === 0) this.#pending.delete(remote);
  }

  #onAuth(sock: FrameSocket<P>, remote: string, dialer: AcceptedDialer, hs: ListenerHandshake): PeerLink<P> {
    const link = this.#mesh.link(dialer.peer);
    if (dialer.aid !== undefined) this.#events.onAcceptorId?.(dialer.peer, dialer.aid);
    this.#mesh.admit(link, dialer.inc, dialer.clock);
    link.noteNewestLevel(dialer.newest);
    this.#pendingDelete(remote, sock);
    link.attachIncoming(sock);
    sock.onFrame = (frame) => this.#onInboundFrame(link, sock, frame);
    sock.send(hs.welcome(link.delivered, this.#opts.clock()));
    sock.established(this.#opts.heartbeatMs * limits.heartbeatsMissedMax);
    this.#mesh.updateConnected(link);
    this.#mesh.dialNow(link);
    return link;
  }

  #onInboundFrame(link: PeerLink<P>, sock: FrameSocket<P>, frame: Frame<P>): void {
    this.#mesh.counters.frameReceived();
    if (link.in !== sock) return;
    const inc = this.#mesh.book.known(link.peer.index);
    assert(inc !== null, 'an inbound stream belongs to a known incarnation');
    if (frame.t === 'data') {
      // An ack of our stream riding on the peer's data (protocol 7; PeerLink.flush).
      if (frame.ack !== undefined && link.ackReceived(frame.ack)) this.#mesh.flusher.markDirty(link);
      for (const payload of link.receive(frame)) {
        this.#events.onPayload(link.peer.index, inc, payload);
        if (link.in !== sock) return; // the runtime evicted that peer meanwhile
      }
      this.#mesh.flusher.ackDue(link);
    } else if (frame.t === 'hb') {
      this.#events.onHeartbeat(link.peer.index, inc, frame.clock, frame.sentAtMs);
    } else if (frame.t === 'auth') {
      refuse('replayed', 'challenge answered twice');
    } else if (frame.t === 'refuse') {
      this.#mesh.refused(link, frame, sock);
    } else {
      throw new LockError(ErrorCode.FrameInvalid, `unexpected ${frame.t} frame on an inbound stream`);
    }
  }

  #onInboundClosed(link: PeerLink<P>, sock: FrameSocket<P>): void {
    if (link.detach(sock)) this.#mesh.updateConnected(link);
  }
}
