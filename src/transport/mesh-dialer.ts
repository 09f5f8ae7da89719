/**
 * The dialing side of a mesh (docs/design.md section 4): one socket we dial to each peer, the
 * dialer's half of its handshake, and our stream to that peer on it. The stream carries our
 * data and heartbeats; the peer answers on the same socket with acks and echoes. A socket
 * that closes is redialed with backoff until the mesh closes.
 */
import type { Logger } from 'pino';
import { ErrorCode, LockError } from '../errors.js';
import { limits } from '../limits.js';
import type { Incarnation } from '../core/types.js';
import { formatIncarnation } from '../core/types.js';
import type { Frame, HeartbeatFrame } from './codec.js';
import type { FrameSocket } from './connection.js';
import { DialerHandshake, refuse } from './handshake.js';
import type { MeshContext } from './mesh-context.js';
import type { MeshEvents, MeshOptions } from './mesh-options.js';
import type { PeerSlot } from './peer-slot.js';

/** Our sockets to the other peers, and our streams on them. */
export class MeshDialer<P> {
  readonly #opts: MeshOptions<P>;
  readonly #events: MeshEvents<P>;
  readonly #mesh: MeshContext<P>;
  readonly #log: Logger;

  constructor(opts: MeshOptions<P>, events: MeshEvents<P>, mesh: MeshContext<P>) {
    this.#opts = opts;
    this.#events = events;
    this.#mesh = mesh;
    this.#log = opts.logger;
  }

  /** Starts dialing every peer of `slots`. */
  start(slots: Iterable<PeerSlot<P> | undefined>): void {
    for (const slot of slots) if (slot !== undefined) this.#dial(slot);
  }

  /**
   * The peer dialed us and passed the handshake: it is up again, so a redial that waits out
   * a long backoff (up to limits.backoffMsMax, longer than a tuned evict_ms) goes now. Until
   * our own link is up, nothing of ours reaches it, heartbeats included: it would find us
   * silent, and its join would wait for our state transfer.
   */
  dialNow(slot: PeerSlot<P>): void {
    if (slot.redial === null || this.#mesh.closing()) return;
    this.#opts.env.clear(slot.redial);
    slot.backoff.reset();
    this.#dial(slot);
  }

  #dial(slot: PeerSlot<P>): void {
    slot.redial = null;
    if (this.#mesh.closing()) return;
    const sock = this.#mesh.newSocket(this.#opts.network.dial(slot.peer.ws), slot.peer.id);
    const hs = new DialerHandshake(this.#mesh.identity, slot.peer.id);
    slot.dialing = sock;
    sock.onClose = () => this.#onOutboundClosed(slot, sock);
    sock.onFrame = (frame) => {
      this.#mesh.stats.framesReceived++;
      if (frame.t === 'challenge') sock.send(hs.onChallenge(frame));
      else if (frame.t === 'welcome') this.#onWelcome(slot, sock, hs.onWelcome(frame));
      else if (frame.t === 'refuse') this.#mesh.refused(slot, frame, sock);
      else refuse('protocol', `unexpected ${frame.t} frame during the handshake`);
    };
    sock.onOpen(() => sock.send(hs.hello(this.#opts.clock())));
  }

  #onWelcome(slot: PeerSlot<P>, sock: FrameSocket<P>, welcome: { inc: Incarnation; clock: number; delivered: number }): void {
    const verdict = this.#mesh.book.check(slot.peer.index, welcome.inc);
    if (verdict !== null) {
      // We refuse them: not news for the runtime (onRefused means THEY refused US).
      refuse(verdict, `listener incarnation ${formatIncarnation(welcome.inc)} is ${verdict}`, this.#mesh.book.newest(slot.peer.index) ?? undefined);
    }
    this.#mesh.admit(slot, welcome.inc, welcome.clock);
    slot.sender.ack(welcome.delivered);
    slot.dialing = null;
    slot.out = sock;
    slot.backoff.reset();
    sock.onFrame = (frame) => this.#onOutboundFrame(slot, sock, frame);
    sock.established(this.#opts.heartbeatMs * limits.heartbeatsMissedMax);
    sock.startHeartbeat(this.#opts.heartbeatMs, () => this.#heartbeat(slot));
    const resent = slot.sender.resume();
    for (const frame of resent) this.#mesh.flusher.write(sock, frame);
    this.#log.debug({ remote: slot.peer.id, resentFrames: resent.length, delivered: welcome.delivered }, 'stream resumed');
    this.#mesh.updateConnected(slot);
  }

  /**
   * A heartbeat, with the clock the runtime lets it carry (MeshOptions.heartbeatClock): the
   * mesh tells it whether every earlier data frame for that peer is on the socket already.
   */
  #heartbeat(slot: PeerSlot<P>): HeartbeatFrame {
    const sentAtMs = this.#opts.env.monoMs();
    const allSent = slot.pending.length === 0;
    const clock = this.#opts.heartbeatClock === undefined ? (allSent ? this.#opts.clock() : undefined) : this.#opts.heartbeatClock(slot.peer.index, allSent);
    return clock === undefined ? { t: 'hb', sentAtMs } : { t: 'hb', sentAtMs, clock };
  }

  #onOutboundFrame(slot: PeerSlot<P>, sock: FrameSocket<P>, frame: Frame<P>): void {
    this.#mesh.stats.framesReceived++;
    if (slot.out !== sock) return;
    if (frame.t === 'ack') {
      slot.sender.ack(frame.ack);
      if (slot.pending.length > 0) this.#mesh.flusher.markDirty(slot);
    } else if (frame.t === 'hbEcho') {
      const rttMs = this.#opts.env.monoMs() - frame.sentAtMs;
      if (rttMs < 0) throw new LockError(ErrorCode.FrameInvalid, 'heartbeat echo from the future');
      slot.rttMs = rttMs;
      this.#events.onEcho(slot.peer.index, frame.sentAtMs, rttMs);
    } else if (frame.t === 'refuse') {
      this.#mesh.refused(slot, frame, sock);
    } else {
      throw new LockError(ErrorCode.FrameInvalid, `unexpected ${frame.t} frame on our outbound stream`);
    }
  }

  #onOutboundClosed(slot: PeerSlot<P>, sock: FrameSocket<P>): void {
    this.#mesh.forget(sock);
    if (slot.dialing === sock) slot.dialing = null;
    if (slot.out === sock) {
      slot.out = null;
      slot.lastHeardMs = sock.lastHeardMs;
      this.#mesh.updateConnected(slot);
    }
    if (this.#mesh.closing() || slot.out !== null || slot.dialing !== null || slot.redial !== null) return;
    slot.redial = this.#opts.env.after(slot.backoff.next(), () => this.#dial(slot));
  }
}
