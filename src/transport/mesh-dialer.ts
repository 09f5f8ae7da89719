/**
 * The dialing side of a mesh (docs/design.md section 4): one socket we dial to each peer, the
 * dialer's half of its handshake, and our stream to that peer on it. The stream carries our
 * data and heartbeats; the peer answers on the same socket with acks and echoes. A socket
 * that closes is redialed with backoff until the mesh closes. This class owns the redial
 * timers and their backoffs; the sockets and the stream are the peer's link's.
 */
import type { Logger } from 'pino';
import { assert } from '../assert.js';
import type { Timer } from '../env.js';
import { ErrorCode, LockError } from '../errors.js';
import { limits } from '../limits.js';
import type { Incarnation } from '../core/types.js';
import { formatIncarnation } from '../core/types.js';
import type { Frame, HeartbeatFrame } from './codec.js';
import type { FrameSocket } from './connection.js';
import { Backoff } from './connection.js';
import { DialerHandshake, refuse } from './handshake.js';
import type { MeshContext } from './mesh-context.js';
import type { MeshEvents, MeshOptions } from './mesh-options.js';
import type { PeerLink } from './peer-link.js';

/** When to dial one peer again. */
interface Redial {
  /** The armed redial, if a dial waits out its backoff. */
  timer: Timer | null;
  readonly backoff: Backoff;
}

/**
 * The longest wait between two dials of a peer that does not answer: limits.backoffMsMax, or
 * limits.redialHeartbeatsMax heartbeat intervals when that is shorter (800 ms at the default
 * 200 ms), so that both sides of a healed partition find each other within about that, not
 * the 2.5-5 s of a 5 s ceiling, which outlasted the default evict_ms (1.7 s) several times
 * over. A peer that restarts is dialed back at once anyway (`dialNow`).
 */
export function redialMsMax(heartbeatMs: number): number {
  return Math.max(2 * limits.backoffMsMin, Math.min(limits.backoffMsMax, limits.redialHeartbeatsMax * heartbeatMs));
}

/** Our sockets to the other peers, and our streams on them. */
export class MeshDialer<P> {
  readonly #opts: MeshOptions<P>;
  readonly #events: MeshEvents<P>;
  readonly #mesh: MeshContext<P>;
  readonly #log: Logger;
  readonly #redials = new Map<PeerLink<P>, Redial>();

  /** Dials the peers of `links`, in that order, once started. */
  constructor(opts: MeshOptions<P>, events: MeshEvents<P>, mesh: MeshContext<P>, links: readonly PeerLink<P>[]) {
    this.#opts = opts;
    this.#events = events;
    this.#mesh = mesh;
    this.#log = opts.logger;
    for (const link of links) this.#track(link);
  }

  #track(link: PeerLink<P>): void {
    const random = (): number => this.#opts.env.randomInt(2 ** 30) / 2 ** 30;
    this.#redials.set(link, { timer: null, backoff: new Backoff(random, limits.backoffMsMin, redialMsMax(this.#opts.heartbeatMs)) });
  }

  /** Starts dialing every peer. */
  start(): void {
    for (const link of this.#redials.keys()) this.#dial(link);
  }

  /** A peer taken out of the mesh (a member the view retired): not dialed again. */
  remove(link: PeerLink<P>): void {
    const redial = this.#redials.get(link);
    if (redial === undefined) return;
    this.#opts.env.clear(redial.timer);
    this.#redials.delete(link);
  }

  /** A peer added to the mesh after the start (a member the view added): dialed from now on. */
  add(link: PeerLink<P>, started: boolean): void {
    this.#track(link);
    if (started && !this.#mesh.closing()) this.#dial(link);
  }

  /** Stops redialing (mesh closing). */
  close(): void {
    for (const redial of this.#redials.values()) this.#opts.env.clear(redial.timer);
  }

  /**
   * The peer dialed us and passed the handshake: it is up again, so a redial that waits out
   * a long backoff (up to limits.backoffMsMax, longer than a tuned evict_ms) goes now. Until
   * our own link is up, nothing of ours reaches it, heartbeats included: it would find us
   * silent, and its join would wait for our state transfer.
   */
  dialNow(link: PeerLink<P>): void {
    const redial = this.#redial(link);
    if (redial.timer === null || this.#mesh.closing()) return;
    this.#opts.env.clear(redial.timer);
    redial.backoff.reset();
    this.#dial(link);
  }

  #redial(link: PeerLink<P>): Redial {
    const redial = this.#redials.get(link);
    assert(redial !== undefined, 'every link of the mesh is dialed by its dialer');
    return redial;
  }

  #dial(link: PeerLink<P>): void {
    this.#redial(link).timer = null;
    if (this.#mesh.closing()) return;
    const sock = this.#mesh.newSocket(this.#opts.network.dial(link.peer.ws), link.peer.id);
    const hs = new DialerHandshake(this.#mesh.identity, link.peer.id);
    link.dialStarted(sock);
    sock.onClose = () => this.#onOutboundClosed(link, sock);
    sock.onFrame = (frame) => {
      this.#mesh.counters.frameReceived();
      if (frame.t === 'challenge') sock.send(hs.onChallenge(frame));
      else if (frame.t === 'welcome') this.#welcomed(link, sock, () => hs.onWelcome(frame));
      else if (frame.t === 'refuse') this.#mesh.refused(link, frame, sock);
      else refuse('protocol', `unexpected ${frame.t} frame during the handshake`);
    };
    sock.onOpen(() => sock.send(hs.hello(this.#opts.clock())));
  }

  /** A welcome: proven and checked, or refused (and that refusal remembered for GET /v1/cluster). */
  #welcomed(link: PeerLink<P>, sock: FrameSocket<P>, check: () => { inc: Incarnation; clock: number; delivered: number }): void {
    try {
      this.#onWelcome(link, sock, check());
    } catch (err) {
      if (err instanceof LockError) this.#mesh.refusing(link.peer.id, err);
      throw err;
    }
  }

  #onWelcome(link: PeerLink<P>, sock: FrameSocket<P>, welcome: { inc: Incarnation; clock: number; delivered: number }): void {
    const verdict = this.#mesh.book.check(link.peer.index, welcome.inc);
    if (verdict !== null) {
      // We refuse them: not news for the runtime (onRefused means THEY refused US).
      refuse(verdict, `listener incarnation ${formatIncarnation(welcome.inc)} is ${verdict}`, this.#mesh.book.newest(link.peer.index) ?? undefined);
    }
    this.#mesh.admit(link, welcome.inc, welcome.clock);
    link.attachOutgoing(sock, welcome.delivered);
    this.#redial(link).backoff.reset();
    sock.onFrame = (frame) => this.#onOutboundFrame(link, sock, frame);
    sock.established(this.#opts.heartbeatMs * limits.heartbeatsMissedMax);
    sock.startHeartbeat(() => this.#events.onHeartbeatDue(link.peer.index, link.allSent));
    const resentFrames = link.resend();
    this.#log.debug({ remote: link.peer.id, resentFrames, delivered: welcome.delivered }, 'stream resumed');
    this.#mesh.updateConnected(link);
  }

  /** Sends a heartbeat on our stream to `link`'s peer, stamped now, with `clock` if the owner lets it carry one (MeshEvents.onHeartbeatDue). */
  heartbeat(link: PeerLink<P>, clock: number | undefined): void {
    const sock = link.out;
    if (sock === null) return;
    const sentAtMs = this.#opts.env.monoMs();
    const frame: HeartbeatFrame = clock === undefined ? { t: 'hb', sentAtMs } : { t: 'hb', sentAtMs, clock };
    sock.send(frame);
  }

  #onOutboundFrame(link: PeerLink<P>, sock: FrameSocket<P>, frame: Frame<P>): void {
    this.#mesh.counters.frameReceived();
    if (link.out !== sock) return;
    if (frame.t === 'ack') {
      if (link.ackReceived(frame.ack)) this.#mesh.flusher.markDirty(link);
    } else if (frame.t === 'hbEcho') {
      const rttMs = this.#opts.env.monoMs() - frame.sentAtMs;
      if (rttMs < 0) throw new LockError(ErrorCode.FrameInvalid, 'heartbeat echo from the future');
      link.noteRtt(rttMs);
      this.#events.onEcho(link.peer.index, frame.sentAtMs, rttMs);
    } else if (frame.t === 'refuse') {
      this.#mesh.refused(link, frame, sock);
    } else {
      throw new LockError(ErrorCode.FrameInvalid, `unexpected ${frame.t} frame on our outbound stream`);
    }
  }

  #onOutboundClosed(link: PeerLink<P>, sock: FrameSocket<P>): void {
    this.#mesh.forget(sock);
    if (link.detach(sock)) this.#mesh.updateConnected(link);
    const redial = this.#redials.get(link);
    // A peer taken out of the mesh is not dialed again.
    if (redial === undefined || this.#mesh.closing() || link.out !== null || link.dialing !== null || redial.timer !== null) return;
    redial.timer = this.#opts.env.after(redial.backoff.next(), () => this.#dial(link));
  }
}
