/**
 * The mesh of one simulated incarnation, modelled on src/transport/mesh.ts: one socket per
 * ORDERED pair (we dial j for our stream to j; j's acks and heartbeat echoes come back on
 * it), a handshake that binds each socket to both incarnations, the real reliable link
 * (`LinkSender` / `LinkReceiver`: seq numbers, cumulative acks, resend on resume) over it,
 * heartbeats with echoes on every socket we dialed, the silence watchdog that closes a
 * socket after `heartbeatsMissedMax` silent periods, redials, and refused incarnations.
 *
 * One deliberate difference: when this peer refuses an incarnation (eviction), the socket
 * that incarnation dialed is CLOSING, not gone: frames it sent before it saw our close still
 * arrive and reach the core, as on a real socket (ws delivers messages until the close
 * handshake ends). The real mesh happens to drop most of them at its seq check (its receiver
 * is reset at once); the protocol must not rest on that, so here only the core's own check
 * of the sender's incarnation stands between them and the queue. The accept-evicted mutant
 * turns off both that check and the refusal itself (the runtime never calls
 * `refuseIncarnation`): a zombie then reconnects with its old incarnation and resumes.
 */
import type { Incarnation } from '../../src/core/types.js';
import { compareIncarnation } from '../../src/core/types.js';
import { limits } from '../../src/limits.js';
import { LinkReceiver, LinkSender } from '../../src/transport/link.js';
import type { Conn, Frame, Payload, Schedule } from './events.js';
import type { Wire } from './network.js';
import type { Prng } from './prng.js';

/** What the runtime around a mesh provides and hears (Session's mesh events). */
export interface MeshHost {
  readonly wire: Wire;
  readonly rng: Prng;
  readonly schedule: Schedule;
  readonly heartbeatMs: number;
  nowMs(): number;
  localMs(peer: number): number;
  lifeOf(peer: number): number;
  isUp(peer: number): boolean;
  clockOf(peer: number): number;
  onPeerJoined(self: number, life: number, peer: number, inc: Incarnation, clock: number, restarted: boolean): void;
  onPayload(self: number, life: number, from: number, inc: Incarnation, payload: Payload): void;
  onHeartbeat(self: number, life: number, from: number, inc: Incarnation, clock: number): void;
  onEcho(self: number, life: number, peer: number, sentAtMs: number): void;
  /** Whether `self` may echo a heartbeat of that peer incarnation (Membership.mayEcho). */
  mayEcho(self: number, peer: number, inc: Incarnation): boolean;
  /** A peer refused this incarnation as evicted: the runtime must rejoin. */
  onEvicted(self: number, life: number): void;
  log(peer: number, what: string): void;
}

/** Frame size the link's byte bound counts; the sim never comes near it. */
const payloadBytes = 64;

/** The sockets and streams of one incarnation to every other peer. */
export class SimMesh {
  readonly self: number;
  readonly life: number;
  readonly inc: Incarnation;
  readonly #host: MeshHost;
  readonly #known: (Incarnation | null)[];
  readonly #refusedUpTo: (Incarnation | null)[];
  readonly #senders: LinkSender<Payload>[];
  readonly #receivers: LinkReceiver<Payload>[];
  readonly #out: (Conn | null)[];
  readonly #in: (Conn | null)[];
  readonly #dialing: (Conn | null)[];

  constructor(opts: { self: number; peers: number; life: number; inc: Incarnation; host: MeshHost }) {
    this.self = opts.self;
    this.life = opts.life;
    this.inc = opts.inc;
    this.#host = opts.host;
    const n = opts.peers;
    this.#known = new Array<Incarnation | null>(n).fill(null);
    this.#refusedUpTo = new Array<Incarnation | null>(n).fill(null);
    this.#senders = Array.from({ length: n }, () => new LinkSender<Payload>({ unackedBytesMax: 2 ** 40 }));
    this.#receivers = Array.from({ length: n }, () => new LinkReceiver<Payload>());
    this.#out = new Array<Conn | null>(n).fill(null);
    this.#in = new Array<Conn | null>(n).fill(null);
    this.#dialing = new Array<Conn | null>(n).fill(null);
  }

  /**
   * Mesh.send: into the link's resend buffer, and onto the socket if ours is up. Dropped when
   * the peer's incarnation is unknown or refused: there is no stream to it.
   */
  send(to: number, payload: Payload): void {
    const inc = this.#known[to] ?? null;
    if (inc === null || this.#isRefused(to, inc)) return;
    const frame = this.#sender(to).send([payload], payloadBytes);
    const out = this.#out[to] ?? null;
    if (out !== null && out.state === 'up') this.#sendFrame(out, { t: 'data', seq: frame.seq, payloads: frame.payloads });
  }

  /** Mesh.refuseIncarnation: `inc` and older refused forever; our streams with it end. */
  refuseIncarnation(peer: number, inc: Incarnation): void {
    const floor = this.#refusedUpTo[peer] ?? null;
    if (floor === null || compareIncarnation(inc, floor) > 0) this.#refusedUpTo[peer] = inc;
    const known = this.#known[peer] ?? null;
    if (known === null || !this.#isRefused(peer, known)) return;
    this.#sender(peer).reset();
    for (const c of [this.#out[peer], this.#dialing[peer]]) if (c != null) close(c);
    this.#out[peer] = null;
    this.#dialing[peer] = null;
    const inbound = this.#in[peer] ?? null;
    if (inbound !== null && inbound.state !== 'closed') {
      inbound.state = 'closing';
      this.#sendFrame(inbound, { t: 'close' });
    }
  }

  /** The incarnation of `peer` this mesh has admitted, if any. */
  knownInc(peer: number): Incarnation | null {
    return this.#known[peer] ?? null;
  }

  /** Every socket of this incarnation is cut (crash, or the end of an evicted incarnation). */
  closeAll(): void {
    for (const table of [this.#out, this.#in, this.#dialing]) {
      for (const c of table) if (c !== null) close(c);
      table.fill(null);
    }
  }

  /**
   * The heartbeat period: heartbeats on our sockets, the silence watchdog of every socket
   * and the handshake deadline, then a dial to every peer we have no socket to.
   */
  onTick(localMs: number): void {
    const silenceMs = this.#host.heartbeatMs * limits.heartbeatsMissedMax;
    for (let q = 0; q < this.#out.length; q++) {
      if (q === this.self) continue;
      const out = this.#out[q] ?? null;
      if (out !== null && (out.state === 'closed' || localMs - out.heardByDialerMs >= silenceMs)) this.#drop(this.#out, q, 'silent');
      const inbound = this.#in[q] ?? null;
      if (inbound !== null && (inbound.state === 'closed' || localMs - inbound.heardByListenerMs >= silenceMs)) this.#drop(this.#in, q, 'silent');
      const dialing = this.#dialing[q] ?? null;
      // The handshake deadline is the real mesh's (limits.handshakeMsMax), not the silence
      // bound: with short heartbeats and slow links a round trip may exceed three heartbeats,
      // and a deadline that short kept every handshake failing forever (seed 100442).
      if (dialing !== null && (dialing.state === 'closed' || localMs - dialing.dialedAtMs >= limits.handshakeMsMax)) this.#drop(this.#dialing, q, dialing.state === 'closed' ? 'reset' : 'handshake timeout');
      const live = this.#out[q] ?? null;
      if (live !== null && live.state === 'up') this.#sendFrame(live, { t: 'hb', sentAtMs: localMs, clock: this.#host.clockOf(this.self) });
      else if (this.#dialing[q] === null && this.#host.isUp(q)) this.#dial(q, localMs);
    }
  }

  /** A frame arrived on `conn` (not closed), at this end of it. */
  onFrame(conn: Conn, f: Frame): void {
    const atDialer = conn.dialer === this.self;
    const localMs = this.#host.localMs(this.self);
    if (atDialer) conn.heardByDialerMs = localMs;
    else conn.heardByListenerMs = localMs;
    const peer = atDialer ? conn.listener : conn.dialer;
    switch (f.t) {
      case 'hello':
        return this.#onHello(conn, f.clock);
      case 'welcome':
        return this.#onWelcome(conn, f);
      case 'refuse':
        close(conn);
        if (f.reason === 'evicted') this.#host.onEvicted(this.self, this.life);
        return;
      case 'data':
        return this.#onData(conn, f);
      case 'ack':
        if (this.#out[peer] === conn && f.upTo < this.#sender(peer).nextSeq) this.#sender(peer).ack(f.upTo);
        return;
      case 'hb':
        return this.#onHeartbeat(conn, f.sentAtMs, f.clock);
      case 'echo':
        if (this.#out[peer] === conn && conn.state === 'up') this.#host.onEcho(this.self, this.life, peer, f.sentAtMs);
        return;
      case 'close':
        return this.#onClose(conn, atDialer, peer);
    }
  }

  #dial(q: number, localMs: number): void {
    const conn: Conn = {
      dialer: this.self,
      listener: q,
      dialerLife: this.life,
      listenerLife: this.#host.lifeOf(q),
      dialerInc: this.inc,
      listenerInc: null,
      state: 'handshake',
      heardByDialerMs: localMs,
      heardByListenerMs: Number.NEGATIVE_INFINITY,
      dialedAtMs: localMs,
    };
    this.#dialing[q] = conn;
    this.#sendFrame(conn, { t: 'hello', clock: this.#host.clockOf(this.self) });
  }

  /** Listener side of the handshake (Mesh.#onAuth): refuse, or admit and welcome. */
  #onHello(conn: Conn, clock: number): void {
    const q = conn.dialer;
    conn.heardByListenerMs = this.#host.localMs(this.self);
    const verdict = this.#check(q, conn.dialerInc);
    if (verdict !== null) {
      conn.state = 'closing';
      this.#sendFrame(conn, { t: 'refuse', reason: verdict });
      return;
    }
    this.#admit(q, conn.dialerInc, clock);
    if (conn.state === 'closed') return;
    const old = this.#in[q] ?? null;
    if (old !== null && old !== conn) close(old);
    this.#in[q] = conn;
    this.#sendFrame(conn, { t: 'welcome', inc: this.inc, clock: this.#host.clockOf(this.self), delivered: this.#receiver(q).lastDelivered });
  }

  /** Dialer side (Mesh.#onWelcome): refuse them, or admit, ack the figure, resend the rest. */
  #onWelcome(conn: Conn, f: Extract<Frame, { t: 'welcome' }>): void {
    const q = conn.listener;
    if (this.#dialing[q] !== conn || conn.state !== 'handshake') return;
    conn.listenerInc = f.inc;
    const verdict = this.#check(q, f.inc);
    if (verdict !== null) {
      // We refuse them; they learn it from our refuse frame (onRefused on their side).
      this.#dialing[q] = null;
      conn.state = 'closing';
      this.#sendFrame(conn, { t: 'refuse', reason: verdict });
      return;
    }
    this.#admit(q, f.inc, f.clock);
    const sender = this.#sender(q);
    if (this.#dialing[q] !== conn || f.delivered >= sender.nextSeq) {
      // The streams changed under the handshake: a link-level mismatch ends the socket.
      this.#drop(this.#dialing, q, 'stream mismatch');
      return;
    }
    sender.ack(f.delivered);
    this.#dialing[q] = null;
    this.#out[q] = conn;
    conn.state = 'up';
    for (const frame of sender.resume()) this.#sendFrame(conn, { t: 'data', seq: frame.seq, payloads: frame.payloads });
  }

  #onData(conn: Conn, f: Extract<Frame, { t: 'data' }>): void {
    const q = conn.dialer;
    if (this.#in[q] !== conn) return;
    const receiver = this.#receiver(q);
    if (f.seq > receiver.lastDelivered + 1) {
      this.#drop(this.#in, q, 'link gap'); // ERR_LINK_GAP: the resume closes the gap.
      return;
    }
    const receipt = receiver.receive({ t: 'data', seq: f.seq, payloads: f.payloads });
    for (const payload of receipt.deliver) {
      this.#host.onPayload(this.self, this.life, q, conn.dialerInc, payload);
      if (this.#in[q] !== conn || conn.state === 'closed') return; // That peer changed meanwhile.
    }
    if (conn.state === 'up' || conn.state === 'handshake') this.#sendFrame(conn, { t: 'ack', upTo: receipt.ack });
  }

  /** Mesh: echo on the same socket (not on a closing one: ws sends nothing then), then report. */
  #onHeartbeat(conn: Conn, sentAtMs: number, clock: number): void {
    const q = conn.dialer;
    if (this.#in[q] !== conn) return;
    if (conn.state !== 'closing' && this.#host.mayEcho(this.self, q, conn.dialerInc)) this.#sendFrame(conn, { t: 'echo', sentAtMs });
    this.#host.onHeartbeat(this.self, this.life, q, conn.dialerInc, clock);
  }

  /** The close handshake: the dialer answers the listener's close; the listener's ends it. */
  #onClose(conn: Conn, atDialer: boolean, peer: number): void {
    if (!atDialer) {
      close(conn);
      return;
    }
    if (this.#out[peer] === conn) this.#out[peer] = null;
    if (this.#dialing[peer] === conn) this.#dialing[peer] = null;
    this.#sendFrame(conn, { t: 'close' });
    conn.state = 'closing';
  }

  /** IncarnationBook.check: null when `inc` may associate, else why not. */
  #check(peer: number, inc: Incarnation): 'evicted' | 'stale_incarnation' | null {
    if (this.#isRefused(peer, inc)) return 'evicted';
    const known = this.#known[peer] ?? null;
    return known !== null && compareIncarnation(inc, known) < 0 ? 'stale_incarnation' : null;
  }

  /** Mesh.#admit: a new incarnation resets both streams and joins before any of its payloads. */
  #admit(peer: number, inc: Incarnation, clock: number): void {
    const known = this.#known[peer] ?? null;
    if (known !== null && compareIncarnation(inc, known) === 0) return;
    this.#sender(peer).reset();
    this.#receiver(peer).reset();
    for (const table of [this.#out, this.#in]) {
      const c = table[peer] ?? null;
      if (c !== null) close(c);
      table[peer] = null;
    }
    this.#known[peer] = inc;
    this.#host.log(this.self, `mesh: p${peer} inc=${inc.startMs}.${inc.nonce} ${known === null ? 'joined' : 'restarted'}`);
    this.#host.onPeerJoined(this.self, this.life, peer, inc, clock, known !== null);
  }

  #isRefused(peer: number, inc: Incarnation): boolean {
    const floor = this.#refusedUpTo[peer] ?? null;
    return floor !== null && compareIncarnation(inc, floor) <= 0;
  }

  #drop(table: (Conn | null)[], peer: number, why: string): void {
    const c = table[peer] ?? null;
    if (c === null) return;
    if (c.state !== 'closed') this.#host.log(this.self, `mesh: socket ${c.dialer}->${c.listener} closed (${why})`);
    close(c);
    table[peer] = null;
  }

  /** Puts a frame on the wire in its direction; in `link` mode the socket may break instead. */
  #sendFrame(conn: Conn, f: Frame): void {
    if (conn.state === 'closed') return;
    const { wire, rng, schedule, nowMs } = this.#host;
    if (wire.breakChance > 0 && (f.t === 'data' || f.t === 'hb') && rng.chance(wire.breakChance)) {
      this.#host.log(this.self, `mesh: socket ${conn.dialer}->${conn.listener} broke under a frame`);
      close(conn); // The frames in flight on it are lost with it; the link resends on resume.
      return;
    }
    const atDialer = conn.dialer === this.self;
    const to = atDialer ? conn.listener : conn.dialer;
    const toLife = atDialer ? conn.listenerLife : conn.dialerLife;
    schedule(wire.arrivalMs(this.self, to, nowMs()), { k: 'frame', to, toLife, conn, f });
  }

  #sender(peer: number): LinkSender<Payload> {
    const s = this.#senders[peer];
    if (s === undefined) throw new Error(`no stream to p${peer}`);
    return s;
  }

  #receiver(peer: number): LinkReceiver<Payload> {
    const r = this.#receivers[peer];
    if (r === undefined) throw new Error(`no stream from p${peer}`);
    return r;
  }
}

function close(c: Conn): void {
  c.state = 'closed';
}
