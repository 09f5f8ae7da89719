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
 * This class holds one PeerLink per other peer (peer-link.ts: its streams and sockets) and
 * owns what both directions share: the incarnations of the others, the set of open sockets
 * and the counters. The accepting side is in mesh-acceptor.ts, the dialing side in
 * mesh-dialer.ts, the end-of-turn flush in mesh-flush.ts.
 */
import type { Logger } from 'pino';
import { assert } from '../assert.js';
import { fingerprintOf } from '../cluster-shape.js';
import type { LockError } from '../errors.js';
import { LogLimiter } from '../log-limiter.js';
import { limits } from '../limits.js';
import type { Incarnation } from '../core/types.js';
import type { Timer } from '../env.js';
import { compareIncarnation, formatIncarnation } from '../core/types.js';
import type { RefuseFrame } from './codec.js';
import { nonceBytes, protocolLevels } from './codec.js';
import { FrameSocket } from './connection.js';
import type { HandshakeIdentity } from './handshake.js';
import { refuse, secretKey } from './handshake.js';
import { IncarnationBook } from '../core/incarnations.js';
import type { IncarnationGate } from './incarnations.js';
import { MeshAcceptor } from './mesh-acceptor.js';
import type { MeshContext } from './mesh-context.js';
import { MeshDialer } from './mesh-dialer.js';
import { MeshFlusher } from './mesh-flush.js';
import type { MeshEvents, MeshOptions, MeshPeer } from './mesh-options.js';
import { validateMeshOptions } from './mesh-options.js';
import type { MeshStats } from './mesh-stats.js';
import { MeshCounters } from './mesh-stats.js';
import type { RawSocket } from './network.js';
import { PeerLink } from './peer-link.js';
import type { LinkRefusal } from './refusals.js';
import { LinkRefusals } from './refusals.js';
import { refuseReasonOf } from './handshake.js';

export type { MeshEvents, MeshOptions, MeshPeer } from './mesh-options.js';
export type { MeshStats } from './mesh-stats.js';

/** One line of `status()`. Times are the mesh's monotonic milliseconds (`env.monoMs`). */
export interface MeshPeerStatus {
  readonly peer: number;
  readonly id: string;
  readonly connected: boolean;
  readonly lastHeardMs: number | null;
  readonly rttMs: number | null;
  readonly incarnation: Incarnation | null;
  readonly unackedBytes: number;
  /** The newest protocol level that peer's binary advertised in its last handshake with us; null before one. */
  readonly newestLevel: number | null;
  /** Which of the link's two streams is established now: the one we dialed (`out`), the one it dialed (`in`); `connected` waits for both. */
  readonly streams: { readonly out: boolean; readonly in: boolean };
}

/** What views and metrics may read of a mesh: its status, counters and refusals, none of its sends. */
export type LinksReader = Pick<Mesh<unknown>, 'fingerprint' | 'status' | 'refusals' | 'configMismatch' | 'stats'>;

/** The links of one peer to all others. */
export class Mesh<P> {
  readonly #opts: MeshOptions<P>;
  readonly #events: MeshEvents<P>;
  readonly #log: Logger;
  readonly #book: IncarnationGate;
  /** One link per other peer, by peer index (undefined for self and gaps). */
  readonly #links: (PeerLink<P> | undefined)[];
  readonly #indexOfId = new Map<string, number>();
  /** Ids of members taken out (`removePeer`) and not added again: refused as removed. */
  readonly #retired = new Set<string>();
  readonly #sockets = new Set<FrameSocket<P>>();
  readonly #counters = new MeshCounters();
  readonly #flusher: MeshFlusher<P>;
  readonly #acceptor: MeshAcceptor<P>;
  readonly #dialer: MeshDialer<P>;
  readonly #refusals: LinkRefusals;
  /** Socket failures, one line per remote address and reason per interval (strangers included). */
  readonly #failLines = new LogLimiter(limits.refusalLogEveryMs, limits.refusalLogKeysMax);
  /** This peer's cluster fingerprint (src/cluster-shape.ts), checked on every link. */
  readonly fingerprint: string;
  #closing = false;
  /** The one heartbeat timer of the mesh: every socket's heartbeat and silence check (`#tick`). */
  #ticker: Timer | null = null;

  constructor(opts: MeshOptions<P>, events: MeshEvents<P>) {
    validateMeshOptions(opts);
    this.#opts = opts;
    this.#events = events;
    this.#log = opts.logger;
    const size = Math.max(opts.self.index, ...opts.peers.map((p) => p.index)) + 1;
    this.#book = opts.incarnations ?? new IncarnationBook(size);
    assert(this.#book.capacity >= size, 'the incarnation book covers every peer');
    this.#links = new Array<PeerLink<P> | undefined>(size).fill(undefined);
    for (const peer of opts.peers) this.#newLink(peer);
    this.fingerprint = fingerprintOf(opts.shape);
    this.#refusals = new LinkRefusals(opts.shape, this.#log);
    const identity: HandshakeIdentity = {
      cluster: opts.cluster,
      shape: opts.shape,
      fingerprint: this.fingerprint,
      levels: opts.levels ?? protocolLevels,
      level: opts.level ?? (() => opts.shape.protocol),
      acceptorId: opts.acceptorId,
      key: secretKey(opts.secret),
      selfId: opts.self.id,
      incarnation: opts.incarnation,
      randomNonce: () => opts.env.randomBytes(nonceBytes),
    };
    this.#flusher = new MeshFlusher<P>(opts.env);
    const context: MeshContext<P> = {
      identity,
      book: this.#book,
      counters: this.#counters,
      flusher: this.#flusher,
      closing: () => this.#closing,
      peerIndex: (id) => this.#indexOfId.get(id),
      retired: (id) => this.#retired.has(id),
      link: (peer) => this.#link(peer),
      newSocket: (ws, remote) => this.#newSocket(ws, remote),
      forget: (sock) => this.#sockets.delete(sock),
      admit: (link, inc, clock) => this.#admit(link, inc, clock),
      refused: (link, frame, sock) => this.#refused(link, frame, sock),
      refusing: (peer, err) => this.#refusals.byUs(peer, refuseReasonOf(err) ?? err.code, err.message, opts.env.monoMs()),
      updateConnected: (link) => this.#updateConnected(link),
      dialNow: (link) => this.#dialer.dialNow(link),
    };
    this.#acceptor = new MeshAcceptor<P>(opts, events, context);
    this.#dialer = new MeshDialer<P>(opts, events, context, this.#links.filter((link) => link !== undefined));
  }

  #newLink(peer: MeshPeer): PeerLink<P> {
    const opts = this.#opts;
    const link = new PeerLink<P>({ peer, unackedBytesMax: opts.linkUnackedBytesMax ?? limits.linkUnackedBytesMax, counters: this.#counters, logger: this.#log,
      merge: opts.mergePayloads, split: opts.splitPayload, frameBytesMax: opts.frameBytesMax });
    this.#links[peer.index] = link;
    this.#indexOfId.set(peer.id, peer.index);
    this.#retired.delete(peer.id);
    return link;
  }

  /**
   * Links to `peer` from now on (a member the agreed view added, docs/reconfiguration.md P5):
   * its handshakes are accepted and it is dialed. A peer linked already, or this one, is left
   * as it is. The incarnation book grows with the view first (core/membership.ts setMembers).
   */
  addPeer(peer: MeshPeer): void {
    if (peer.index === this.#opts.self.index || this.#links[peer.index] !== undefined || this.#indexOfId.has(peer.id)) return;
    assert(Number.isSafeInteger(peer.index) && peer.index >= 0 && peer.index < limits.peersMax && this.#book.capacity > peer.index, 'an added peer has an ordinal the book covers');
    this.#dialer.add(this.#newLink(peer), this.#acceptor.started);
  }

  /**
   * Takes `peer` out of the mesh (a member the agreed view retired): its sockets are closed, it
   * is not dialed again, and its id, which a member added later may carry again (under another
   * ordinal), no longer maps to it. Sends to it are dropped from now on.
   */
  removePeer(peer: number): void {
    const link = this.#links[peer];
    if (link === undefined) return;
    this.#links[peer] = undefined;
    if (this.#indexOfId.get(link.peer.id) === peer) {
      this.#indexOfId.delete(link.peer.id);
      this.#retired.add(link.peer.id);
    }
    this.#dialer.remove(link);
    link.dialing?.terminate('peer retired');
    link.dropStreams();
    this.#log.info({ remote: link.peer.id, ordinal: peer }, 'link to a retired member closed');
  }

  /** The ordinals this mesh links to. */
  linked(): number[] {
    return this.#links.flatMap((l) => (l === undefined ? [] : [l.peer.index]));
  }

  /** Takes the listener's connections, then starts dialing every peer. */
  start(): void {
    assert(!this.#acceptor.started, 'a mesh starts once');
    this.#acceptor.start();
    this.#log.info({ port: this.#opts.listener.port, incarnation: formatIncarnation(this.#opts.incarnation) }, 'mesh started');
    this.#dialer.start();
    this.#ticker = this.#opts.env.every(this.#opts.heartbeatMs, () => this.#tick());
  }

  /**
   * Every heartbeat_ms, one timer for every socket (FrameSocket.tick): a socket silent for
   * limits.heartbeatsMissedMax intervals is cut, and each of our streams sends its heartbeat.
   * One wake-up per interval for the whole mesh, not one per socket and per watchdog: with 9
   * peers that was about 70 of an idle peer's wake-ups per second (docs/design.md section 4,
   * "Heartbeats and echoes").
   */
  #tick(): void {
    for (const sock of [...this.#sockets]) sock.tick();
  }

  /**
   * Queues `payload` for `to`. Everything queued for one peer in one event-loop turn goes
   * in one frame (split only by limits.frameMessagesMax / frameBytesMax). A `lazy` payload
   * may wait: it leaves with the next payload for that peer that may not, or after
   * limits.lazyPayloadDelayMs (MeshFlusher.lazyDue); order is kept either way. Throws
   * ERR_LINK_BUFFER_FULL when that link's resend buffer is full (backpressure).
   */
  send(to: number, payload: P, lazy = false): void {
    const link = this.#links[to];
    const inc = this.#book.known(to);
    if (link === undefined || inc === null || this.#book.isRefused(to, inc)) {
      this.#counters.messageDropped();
      return;
    }
    link.queue(payload);
    if (lazy) this.#flusher.lazyDue(link);
    else this.#flusher.markDirty(link);
  }

  /**
   * Echoes the heartbeat that `inc` of `peer` sent at `sentAtMs`, on its stream to us, if that
   * incarnation's stream is still up: whether it may is the owner's call (MeshEvents.onHeartbeat).
   */
  echo(peer: number, inc: Incarnation, sentAtMs: number): void {
    const sock = this.#links[peer]?.in ?? null;
    const known = this.#book.known(peer);
    if (sock === null || known === null || compareIncarnation(known, inc) !== 0) return;
    sock.send({ t: 'hbEcho', sentAtMs });
  }

  /** Sends our heartbeat to `peer`, with `clock` as an ack if the owner lets it carry one (MeshEvents.onHeartbeatDue). */
  heartbeat(peer: number, clock: number | undefined): void {
    const link = this.#links[peer];
    if (link !== undefined) this.#dialer.heartbeat(link, clock);
  }

  /** Frames everything queued for every peer now, lazy payloads included (before a drain). */
  flushNow(): void {
    this.#flusher.flushNow();
  }

  /** Refuses `inc` of `peer` and every older incarnation forever (eviction, docs/design.md section 5). */
  refuseIncarnation(peer: number, inc: Incarnation): void {
    if (!this.#book.refuse(peer, inc)) return;
    const link = this.#links[peer];
    this.#log.warn({ remote: link?.peer.id ?? `#${peer}`, incarnation: formatIncarnation(inc) }, 'incarnation refused from now on');
    link?.dropStreams();
  }

  /**
   * Stops listening to `inc` of `peer` (and older ones): a clock it sent is too far ahead
   * (`clock_ahead`, core/incarnations.ts `refuseAhead`). Its links are cut, and its handshakes
   * are refused from now on; a newer incarnation may come in.
   */
  refuseAhead(peer: number, inc: Incarnation): void {
    this.#book.refuseAhead(peer, inc);
    this.#links[peer]?.dropStreams();
  }

  /**
   * Cuts the links to peers whose binary advertised no level as high as `level`, the one this
   * peer runs at now: a raise while the cluster runs (docs/reconfiguration.md P9) leaves no link
   * to a binary that cannot read it, and the listener refuses such a binary from then on.
   */
  dropBelow(level: number): void {
    for (const link of this.#links) {
      if (link === undefined || link.newestLevel === null || link.newestLevel >= level) continue;
      this.#log.warn({ remote: link.peer.id, newest: link.newestLevel, level },
        `peer ${link.peer.id}'s binary speaks protocol levels up to ${link.newestLevel}; this cluster runs at ${level} now: link cut (run a binary that speaks ${level} on that host)`);
      link.dropStreams();
    }
  }

  /** One line per peer, for GET /v1/cluster and metrics. */
  status(): MeshPeerStatus[] {
    const lines: MeshPeerStatus[] = [];
    for (const link of this.#links) {
      if (link === undefined) continue;
      lines.push({
        peer: link.peer.index,
        id: link.peer.id,
        connected: link.connected,
        lastHeardMs: link.lastHeardMs,
        rttMs: link.rttMs,
        incarnation: this.#book.known(link.peer.index),
        unackedBytes: link.unackedBytes,
        newestLevel: link.newestLevel,
        streams: { out: link.out !== null, in: link.in !== null },
      });
    }
    return lines;
  }

  /** The links refused either way in the last limits.refusalShownMs, most recent first. */
  refusals(): LinkRefusal[] {
    return this.#refusals.list(this.#opts.env.monoMs());
  }

  /** ERR_CONFIG_MISMATCH while a peer's configuration (or secret, or version) recently differed from ours; else null. */
  configMismatch(): LockError | null {
    return this.#refusals.mismatch(this.#opts.env.monoMs());
  }

  /** Counters since start. */
  stats(): MeshStats {
    return this.#counters.snapshot();
  }

  /**
   * Stops dialing and accepting, cuts every socket. The listener stays bound for the next
   * mesh, unless this mesh owns it (`ownsListener`), which closes it too.
   */
  async close(): Promise<void> {
    if (this.#closing) return;
    this.#closing = true;
    this.#flusher.cancel();
    this.#opts.env.clear(this.#ticker);
    this.#ticker = null;
    this.#dialer.close();
    for (const sock of [...this.#sockets]) sock.terminate('mesh closing');
    this.#acceptor.close();
    if (this.#opts.ownsListener === true) await this.#opts.listener.close();
  }

  /** The bound listening port. */
  port(): number {
    return this.#opts.listener.port;
  }


  #link(peer: number): PeerLink<P> {
    const link = this.#links[peer];
    assert(link !== undefined, `peer ${peer} is configured and is not self`);
    return link;
  }

  #newSocket(raw: RawSocket, remote: string): FrameSocket<P> {
    const sock = new FrameSocket<P>({
      sock: raw,
      env: this.#opts.env,
      isPayload: this.#opts.isPayload,
      logger: this.#log.child({ remote }),
      handshakeMsMax: limits.handshakeMsMax,
      onFail: (reason, err) => this.#socketFailed(remote, reason, err),
    });
    this.#sockets.add(sock);
    return sock;
  }

  /** Counts a socket's failure, and logs it once per remote and reason per interval. */
  #socketFailed(remote: string, reason: string, err: LockError): void {
    this.#opts.onFailure?.(reason);
    const passedOver = this.#failLines.admit(`${remote}\n${reason}`, this.#opts.env.monoMs());
    if (passedOver !== null) this.#log.warn({ code: err.code, reason, remote, passedOver }, `closing connection: ${err.message}`);
  }

  // ---- incarnations -------------------------------------------------------------------

  /** Admits an authenticated incarnation; a new one resets the streams and joins first. */
  #admit(link: PeerLink<P>, inc: Incarnation, clock: number): void {
    // A handshake clock too far ahead of ours is refused before anything adopts it (issue 37).
    if (this.#book.isAhead(clock)) refuse('clock_ahead', `clock ${clock} of incarnation ${formatIncarnation(inc)} is too far ahead of this host's wall clock and clock: set that host's wall clock right (if it is right, move its clock.json away)`);
    this.#refusals.cleared(link.peer.id);
    const news = this.#book.admit(link.peer.index, inc);
    if (news === 'same') return;
    link.dropStreams();
    this.#log.info({ remote: link.peer.id, incarnation: formatIncarnation(inc), restarted: news === 'newer' }, 'peer joined');
    this.#events.onPeerJoined(link.peer.index, inc, clock, news === 'newer');
  }

  #refused(link: PeerLink<P>, frame: RefuseFrame, sock: FrameSocket<P>): void {
    this.#refusals.byPeer(link.peer.id, frame.reason, frame.message, frame.shape, this.#opts.env.monoMs());
    sock.close(1000, 'refused');
    this.#events.onRefused?.(link.peer.index, frame.reason, frame.known, frame.knownEvicted === true);
  }

  /** Tells the runtime when "both sockets up" changed for that peer. */
  #updateConnected(link: PeerLink<P>): void {
    if (link.recheckConnected()) this.#events.onConnection(link.peer.index, link.connected);
  }
}
