/**
 * The handshake that opens the stream dialer -> listener (docs/design.md section 4), as two small
 * state machines fed with decoded frames; the sockets live in connection.ts and mesh.ts.
 *
 *   dialer  -> hello     {v, cluster, from, to, inc, clock, nonceD, newest}
 *   listener-> challenge {nonceL}                       (fresh random, one use)
 *   dialer  -> auth      {fp, HMAC(secret, "dialer", hello fields, nonceD, nonceL, fp), newestMac: HMAC(secret, "dialer-newest", nonceD, nonceL, newest)}
 *   listener-> welcome   {inc, clock, delivered, fp, HMAC(secret, "listener", ..., nonceD, nonceL, fp, inc, clock, delivered, fp)}
 *
 * Both sides prove they know the cluster secret, which never crosses the wire. The role
 * label keeps one side's proof from being replayed as the other's; the listener's fresh
 * nonce makes a recorded auth useless on a new connection; the dialer's fresh nonce makes
 * a recorded welcome useless to a new dial. `fp` is each side's cluster fingerprint
 * (src/cluster-shape.ts): a dialer whose fingerprint differs is refused ('wrong_config') with
 * the listener's shape, so it can say what differs; a welcome whose fingerprint differs is
 * refused by the dialer the same way.
 *
 * `v` is the protocol level the dialer runs at, `newest` the newest its binary speaks
 * (transport/codec.ts `protocolLevels`). A build that speaks level 9 only, released before
 * `newest` existed, sends neither `newest` nor `newestMac` (its advertisement is then `v`) and
 * ignores both when it receives them: its guards check the fields they know and no others,
 * and its MAC covers the fields it knows, so `mac` is computed as it computes it and the
 * advertisement has a proof of its own. An advertisement can be stripped by someone on the
 * path (then it reads `v`: a peer looks older than it is, never newer), not forged.
 *
 * Before the dialer proved the secret the listener checks the protocol level and nothing
 * else, and says nothing about the cluster: its name, its peers and their incarnations are
 * checked (and named in refusals) only after the proof. Any refusal throws
 * LockError(ERR_HANDSHAKE_REFUSED) with `details.reason`; the caller sends a refuse frame,
 * logs (rate-limited), and closes that connection only.
 */
import { createHmac, createSecretKey, timingSafeEqual } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { ErrorCode, LockError } from '../errors.js';
import type { Incarnation } from '../core/types.js';
import { RecentMap } from '../recent-map.js';
import type { AuthFrame, ChallengeFrame, HelloFrame, WelcomeFrame } from './codec.js';
import type { ProtocolLevels } from './codec.js';
import { levelsText, speaks } from './codec.js';
import type { IncarnationRefusal } from './incarnations.js';
import type { ClusterShape } from '../cluster-shape.js';

/** Every reason a connection is refused, as sent in refuse frames and logged. */
export type RefuseReason =
  | 'wrong_version'
  | 'wrong_cluster'
  | 'wrong_config'
  | 'unknown_peer'
  | 'removed'
  | 'bad_mac'
  | 'replayed'
  | IncarnationRefusal
  | 'protocol'
  | 'busy';

/**
 * Throws the coded refusal of a handshake; `known`, the newest incarnation of the refused
 * peer's id seen here, rides along with a stale or evicted one, and `knownEvicted` when that
 * one is evicted too (no process of that id is live here).
 */
export function refuse(reason: RefuseReason, message: string, known?: Incarnation, knownEvicted = false): never {
  throw new LockError(ErrorCode.HandshakeRefused, message, known === undefined ? { reason } : { reason, known, ...(knownEvicted ? { knownEvicted } : {}) });
}

/** Throws the refusal of a peer whose cluster shape differs, with ours for it to compare. */
export function refuseConfig(message: string, shape: ClusterShape): never {
  throw new LockError(ErrorCode.HandshakeRefused, message, { reason: 'wrong_config' satisfies RefuseReason, shape });
}

/** The cluster shape a 'wrong_config' refusal carries, if any. */
export function shapeOf(err: LockError): ClusterShape | undefined {
  const shape = err.details['shape'];
  return typeof shape === 'object' && shape !== null ? (shape as ClusterShape) : undefined;
}

/** The incarnation a stale refusal names, if the LockError carries one. */
export function knownOf(err: LockError): Incarnation | undefined {
  const known = err.details['known'];
  return typeof known === 'object' && known !== null ? (known as Incarnation) : undefined;
}

/** Whether the incarnation a refusal names is evicted too. */
export function knownEvictedOf(err: LockError): boolean {
  return err.details['knownEvicted'] === true;
}

/** The refusal reason carried by a LockError, if it is one. */
export function refuseReasonOf(err: LockError): RefuseReason | null {
  const reason = err.details['reason'];
  return err.code === ErrorCode.HandshakeRefused && typeof reason === 'string' ? (reason as RefuseReason) : null;
}

/** What both sides know about themselves. */
export interface HandshakeIdentity {
  readonly cluster: string;
  readonly key: KeyObject;
  readonly selfId: string;
  readonly incarnation: Incarnation;
  /** What this peer holds equal with every other (src/cluster-shape.ts), and its fingerprint. */
  readonly shape: ClusterShape;
  readonly fingerprint: string;
  /** The protocol levels this binary speaks; the one it runs at now is `level()`, one of them. */
  readonly levels: ProtocolLevels;
  /**
   * The protocol level this peer runs at now, told in its hellos: its agreed view's, which a
   * raise moves while the peer runs (docs/reconfiguration.md P9); never below `shape.protocol`.
   */
  readonly level: () => number;
  /** This peer's acceptor id, told in its hellos; none without a data dir. */
  readonly acceptorId?: string | undefined;
  /** Random nonce source (node:crypto randomBytes in production). */
  readonly randomNonce: () => Uint8Array;
}

/** Turns the cluster secret into an HMAC key once. */
export function secretKey(secret: string): KeyObject {
  return createSecretKey(Buffer.from(secret, 'utf8'));
}

const hex = (bytes: Uint8Array): string => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length).toString('hex');

/**
 * The level named in every proof's label: a constant, 9, the level at which this label was
 * made. Raising the running level must not change how a proof is computed: peers at two
 * levels still prove the secret to each other, and are told apart after the proof by their
 * shapes (whose `protocol` is the level they run at).
 */
const proofLabelLevel = 9;

/** HMAC over an unambiguous encoding (a JSON array) of the fields, under a role label. */
function macOf(key: KeyObject, role: 'dialer' | 'listener' | 'dialer-newest' | 'dialer-aid', fields: readonly (string | number)[]): Buffer {
  return createHmac('sha256', key).update(JSON.stringify(['lamport-lock', proofLabelLevel, role, ...fields])).digest();
}

/** The proof of the dialer's acceptor id, bound to this handshake by both nonces. */
function aidMac(key: KeyObject, h: HelloFrame, nonceL: Uint8Array, aid: string): Buffer {
  return macOf(key, 'dialer-aid', [hex(h.nonce), hex(nonceL), aid]);
}

/** The proof of the dialer's advertised newest level, bound to this handshake by both nonces. */
function newestMac(key: KeyObject, h: HelloFrame, nonceL: Uint8Array, newest: number): Buffer {
  return macOf(key, 'dialer-newest', [hex(h.nonce), hex(nonceL), newest]);
}

/** What the dialer's proof covers: the hello, both nonces and the dialer's fingerprint. */
function dialerFields(h: HelloFrame, nonceL: Uint8Array, fp: string): (string | number)[] {
  return [h.cluster, h.from, h.to, h.inc.startMs, h.inc.nonce, h.clock, hex(h.nonce), hex(nonceL), fp];
}

function welcomeMac(key: KeyObject, h: HelloFrame, nonceL: Uint8Array, dialerFp: string, w: Omit<WelcomeFrame, 'mac' | 't'>): Buffer {
  return macOf(key, 'listener', [...dialerFields(h, nonceL, dialerFp), w.inc.startMs, w.inc.nonce, w.clock, w.delivered, w.fp]);
}

function sameMac(expected: Buffer, got: Uint8Array): boolean {
  return expected.length === got.length && timingSafeEqual(expected, got);
}

/** Dialer nonces of accepted handshakes, remembered (bounded) to name replays as such. */
export class NonceBook {
  readonly #seen: RecentMap<string, true>;

  constructor(max: number) {
    this.#seen = new RecentMap(max);
  }

  has(nonce: Uint8Array): boolean {
    return this.#seen.has(hex(nonce));
  }

  /** Remembers `nonce`, forgetting the oldest beyond the bound (a forgotten replay still fails its MAC). */
  add(nonce: Uint8Array): void {
    this.#seen.set(hex(nonce), true);
  }
}

/** What the listener's world answers about a dialer, before and after authentication. */
export interface ListenerGate {
  peerIndex(id: string): number | undefined;
  /** Whether `id` named a member this peer took out (the agreed view retired it). */
  retired?(id: string): boolean;
  check(peer: number, inc: Incarnation): IncarnationRefusal | null;
  /** The newest incarnation of `peer` admitted or refused, named in a refusal. */
  newest(peer: number): Incarnation | null;
  /** Whether `inc` of `peer` is evicted here. */
  isRefused(peer: number, inc: Incarnation): boolean;
  readonly nonces: NonceBook;
  readonly handshakeMsMax: number;
  /** A dialer that proved the secret is refused: `from`, the id it claims (recorded for GET /v1/cluster). */
  refusing(from: string, err: LockError): void;
}

/** A dialer the listener has authenticated. */
export interface AcceptedDialer {
  readonly peer: number;
  readonly inc: Incarnation;
  readonly clock: number;
  /** The newest protocol level its binary advertised (its `v` when it advertised none). */
  readonly newest: number;
  /** Its acceptor id, proved; undefined when it told none. */
  readonly aid: string | undefined;
}

/** Listener side of one connection: hello -> challenge, auth -> accepted, then welcome. */
export class ListenerHandshake {
  readonly #id: HandshakeIdentity;
  readonly #gate: ListenerGate;
  #hello: HelloFrame | null = null;
  #challenge: Uint8Array | null = null;
  #dialerFp = '';
  #issuedAtMs = 0;
  #answered = false;

  constructor(id: HandshakeIdentity, gate: ListenerGate) {
    this.#id = id;
    this.#gate = gate;
  }

  /** Checks the level, then issues a one-use challenge: nothing else is checked, or told, before the proof. */
  onHello(h: HelloFrame, nowMs: number): ChallengeFrame {
    if (this.#hello !== null) refuse('protocol', 'second hello on one connection');
    if (!speaks(this.#id.levels, h.v)) refuse('wrong_version', `peer runs protocol level ${h.v}; this binary speaks ${levelsText(this.#id.levels)}`);
    if (this.#gate.nonces.has(h.nonce)) refuse('replayed', 'this hello was already answered: replayed handshake');
    this.#hello = h;
    this.#challenge = this.#id.randomNonce();
    this.#issuedAtMs = nowMs;
    return { t: 'challenge', nonce: this.#challenge };
  }

  /** Verifies the dialer's proof, then its claims; the challenge is spent whatever the outcome. */
  onAuth(a: AuthFrame, nowMs: number): AcceptedDialer {
    const h = this.#hello;
    const challenge = this.#challenge;
    if (h === null || challenge === null) refuse('protocol', 'auth before hello');
    if (this.#answered) refuse('replayed', 'challenge answered twice');
    this.#answered = true;
    if (nowMs - this.#issuedAtMs > this.#gate.handshakeMsMax) refuse('replayed', 'stale challenge: answered after the handshake deadline');
    if (!sameMac(macOf(this.#id.key, 'dialer', dialerFields(h, challenge, a.fp)), a.mac)) {
      refuse('bad_mac', 'the handshake proof does not match: wrong cluster secret');
    }
    if (h.newest !== undefined && (a.newestMac === undefined || !sameMac(newestMac(this.#id.key, h, challenge, h.newest), a.newestMac))) {
      refuse('bad_mac', 'the proof of the advertised protocol level does not match');
    }
    if (h.aid !== undefined && (a.aidMac === undefined || !sameMac(aidMac(this.#id.key, h, challenge, h.aid), a.aidMac))) {
      refuse('bad_mac', 'the proof of the acceptor id does not match');
    }
    try {
      const peer = this.#checkClaims(h, a.fp);
      this.#gate.nonces.add(h.nonce);
      this.#dialerFp = a.fp;
      return { peer, inc: h.inc, clock: h.clock, newest: h.newest ?? h.v, aid: h.aid };
    } catch (err) {
      if (err instanceof LockError) this.#gate.refusing(h.from, err);
      throw err;
    }
  }

  /** What an authenticated dialer claims: our cluster, our shape, a configured id, a live incarnation. */
  #checkClaims(h: HelloFrame, fp: string): number {
    if (h.cluster !== this.#id.cluster) refuse('wrong_cluster', `peer ${JSON.stringify(h.from)} is in cluster ${JSON.stringify(h.cluster)}, this peer in ${JSON.stringify(this.#id.cluster)}`);
    if (fp !== this.#id.fingerprint) {
      refuseConfig(`peer ${JSON.stringify(h.from)}'s cluster configuration (fingerprint ${fp}) differs from this peer's (${this.#id.fingerprint})`, this.#id.shape);
    }
    const level = this.#id.level();
    if ((h.newest ?? h.v) < level) {
      refuse('wrong_version', `peer ${JSON.stringify(h.from)}'s binary speaks protocol levels up to ${h.newest ?? h.v}; this cluster runs at level ${level}: run a binary that speaks it on that host (docs/operations.md, "Protocol levels")`);
    }
    const peer = this.#gate.peerIndex(h.from);
    if (h.to === this.#id.selfId && peer === undefined && this.#gate.retired?.(h.from) === true) {
      refuse('removed', `peer ${JSON.stringify(h.from)} was removed from the cluster: stop it. To bring the host back, empty its data dir and add it again (lamport-lock member add)`);
    }
    if (h.to !== this.#id.selfId || peer === undefined) {
      refuse('unknown_peer', `peer ${JSON.stringify(h.from)} dialing ${JSON.stringify(h.to)} is not configured here`);
    }
    this.#checkIncarnation(peer, h.inc);
    return peer;
  }

  /** The listener's proof, over the dialer's nonce, with what it tells the dialer. */
  welcome(delivered: number, clock: number): WelcomeFrame {
    const h = this.#hello;
    const challenge = this.#challenge;
    if (h === null || challenge === null || !this.#answered) refuse('protocol', 'welcome before auth');
    const body = { inc: this.#id.incarnation, clock, delivered, fp: this.#id.fingerprint };
    return { t: 'welcome', ...body, mac: welcomeMac(this.#id.key, h, challenge, this.#dialerFp, body) };
  }

  #checkIncarnation(peer: number, inc: Incarnation): void {
    const verdict = this.#gate.check(peer, inc);
    const newest = this.#gate.newest(peer) ?? undefined;
    if (verdict === 'evicted') refuse(verdict, `incarnation ${inc.startMs}.${inc.nonce} is evicted`, newest, newest !== undefined && this.#gate.isRefused(peer, newest));
    if (verdict === 'clock_ahead') refuse(verdict, `incarnation ${inc.startMs}.${inc.nonce} is too far ahead of this host's wall clock and clock: set that host's wall clock right (if it is right, move its clock.json away)`);
    if (verdict !== null) refuse(verdict, `incarnation ${inc.startMs}.${inc.nonce} is older than one already seen`, newest);
  }
}

/** What an authenticated welcome tells the dialer. */
export interface AcceptedListener {
  readonly inc: Incarnation;
  readonly clock: number;
  readonly delivered: number;
}

/** Dialer side of one connection: hello, challenge -> auth, welcome -> accepted. */
export class DialerHandshake {
  readonly #id: HandshakeIdentity;
  readonly #targetId: string;
  #hello: HelloFrame | null = null;
  #challenge: Uint8Array | null = null;

  constructor(id: HandshakeIdentity, targetId: string) {
    this.#id = id;
    this.#targetId = targetId;
  }

  /** The opening frame, with a fresh nonce and the current clock: the level we run at, and the newest we speak. */
  hello(clock: number): HelloFrame {
    const { cluster, selfId, incarnation, levels, acceptorId } = this.#id;
    const hello: HelloFrame = { t: 'hello', v: this.#id.level(), cluster, from: selfId, to: this.#targetId, inc: incarnation, clock, nonce: this.#id.randomNonce(), newest: levels.newest };
    this.#hello = acceptorId === undefined ? hello : { ...hello, aid: acceptorId };
    return this.#hello;
  }

  /** Answers the listener's challenge with our proof. */
  onChallenge(c: ChallengeFrame): AuthFrame {
    if (this.#hello === null || this.#challenge !== null) refuse('protocol', 'unexpected challenge');
    this.#challenge = c.nonce;
    const fp = this.#id.fingerprint;
    const mac = macOf(this.#id.key, 'dialer', dialerFields(this.#hello, c.nonce, fp));
    const { newest, aid } = this.#hello;
    const auth: AuthFrame = newest === undefined ? { t: 'auth', fp, mac } : { t: 'auth', fp, mac, newestMac: newestMac(this.#id.key, this.#hello, c.nonce, newest) };
    return aid === undefined ? auth : { ...auth, aidMac: aidMac(this.#id.key, this.#hello, c.nonce, aid) };
  }

  /** Verifies the listener's proof and its fingerprint; the caller then checks its incarnation. */
  onWelcome(w: WelcomeFrame): AcceptedListener {
    const h = this.#hello;
    const challenge = this.#challenge;
    if (h === null || challenge === null) refuse('protocol', 'welcome before challenge');
    if (!sameMac(welcomeMac(this.#id.key, h, challenge, this.#id.fingerprint, w), w.mac)) {
      refuse('bad_mac', `listener ${JSON.stringify(this.#targetId)} failed to prove the cluster secret`);
    }
    if (w.fp !== this.#id.fingerprint) {
      refuseConfig(`peer ${JSON.stringify(this.#targetId)}'s cluster configuration (fingerprint ${w.fp}) differs from this peer's (${this.#id.fingerprint})`, this.#id.shape);
    }
    // A raise applied while this dial was in its handshake (rule P9): the listener took the level
    // the hello offered, which may be all its binary speaks. The next dial offers the new one.
    const level = this.#id.level();
    if (level > h.v) refuse('wrong_version', `this peer runs at protocol level ${level} now, above the ${h.v} its hello to ${JSON.stringify(this.#targetId)} offered: dialing again at ${level} (the listener may not speak it)`);
    return { inc: w.inc, clock: w.clock, delivered: w.delivered };
  }
}
