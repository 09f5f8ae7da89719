/**
 * The wire format between peers: msgpack frames (msgpackr), checked at the boundary in
 * the order of docs/style.md convention 8: bytes -> size check -> decode to `unknown` -> shape
 * guard -> typed frame. Everything malformed is a LockError with ERR_FRAME_TOO_LARGE or
 * ERR_FRAME_INVALID and a sentence; the connection that sent it is closed, never the
 * process.
 *
 * Numbers: msgpackr writes integers beyond 32 bits as float64, which holds every integer
 * up to 2^53 exactly, so clocks and timestamps round-trip as numbers. A 64-bit integer
 * from a foreign encoder decodes as a bigint and is refused by the guards.
 */
import { Packr } from 'msgpackr';
import { ErrorCode, LockError } from '../errors.js';
import { limits } from '../limits.js';
import type { Incarnation } from '../core/types.js';
import { isIncarnation, isRecord } from '../core/types.js';
import type { ClusterShape } from '../cluster-shape.js';
import { fingerprintChars, isClusterShape } from '../cluster-shape.js';
import type { DataFrame } from './link.js';

export type { DataFrame } from './link.js';

/**
 * The protocol levels this build speaks, oldest to newest (docs/operations.md, "Protocol
 * levels"). A peer RUNS at one level: the one its data dir records (the cluster shape's
 * `protocol`, src/cluster-memory.ts), `newest` with a new data dir or none. Every peer of a
 * cluster runs at one level (the shape's fingerprint covers it); a binary that also speaks
 * the level below its newest can replace an older one host by host. A level is raised only
 * through the cluster (issue 40), never by a restart.
 *
 * What each level changed: 2: SUSPECT and CONFIRM carry the suspecter's send time. 3: a refusal of a stale
 * incarnation names the one it is older than (a restart after the wall clock stepped back
 * starts again above it). 4: a REQUEST carries `at`, its requester's wall-clock time.
 * 5: a packet sent before its sender may ack is marked `u` (a peer of version 4 would take
 * its clock as an ack and a sync); a refusal of an evicted incarnation says whether the
 * newest one it names is evicted too (`knownEvicted`). 6: META changes a queued request's
 * meta (a leader's new value; a peer of version 5 would refuse the packet). 7: a data frame
 * may carry `ack`, the cumulative ack of the stream its receiver sends (a peer of version 6
 * would keep its resend buffer until the next ack frame). 8: a peer owes no ack for a request
 * its own requests ahead keep out, and a no-wait REQUEST says so (`nw`) to be acked anyway (a
 * peer of version 7 would wait for the holder's release to decide its no-wait requests).
 * 9: the auth and welcome frames carry the cluster fingerprint under their MAC, the listener
 * checks nothing but the version before the dialer proved the secret, and a refusal for a
 * differing configuration carries the refuser's cluster shape (src/cluster-shape.ts).
 * Since level 9 a hello may advertise the newest level its dialer's binary speaks
 * (`HelloFrame.newest`, with its proof in `AuthFrame.newestMac`): optional fields, which a
 * build that speaks only level 9 and knows nothing of them ignores. 10: the peers of a
 * cluster running at 10 change its members through the view lock (docs/reconfiguration.md):
 * HEAD-ACK, ACCEPT, ACCEPTED, VIEW, LEAVE and LEFT, and requests on the view lock, none of
 * which a binary of level 9 reads. Frames are as at 9.
 */
export const protocolLevels: ProtocolLevels = { oldest: 9, newest: 10 };

/** A range of protocol levels, `oldest <= newest`. */
export interface ProtocolLevels {
  readonly oldest: number;
  readonly newest: number;
}

/** Whether `level` is one of `levels`. */
export function speaks(levels: ProtocolLevels, level: number): boolean {
  return level >= levels.oldest && level <= levels.newest;
}

/** A range in words: `9 to 10`. */
export function levelsText(levels: ProtocolLevels): string {
  return `${levels.oldest} to ${levels.newest}`;
}

/** Bytes of the random nonces of the handshake. */
export const nonceBytes = 16;

/** Bytes of an HMAC-SHA256. */
export const macBytes = 32;

/** Dialer -> listener: who I am and what stream I open (the stream dialer -> listener). */
export interface HelloFrame {
  readonly t: 'hello';
  /** The protocol level the dialer runs at. */
  readonly v: number;
  readonly cluster: string;
  readonly from: string;
  readonly to: string;
  readonly inc: Incarnation;
  readonly clock: number;
  readonly nonce: Uint8Array;
  /** The newest level the dialer's binary speaks (>= v); absent from a build that does not say: then `v`. */
  readonly newest?: number;
  /**
   * The dialer's acceptor id (runtime/view-store.ts `ViewRecord.acceptorId`, made with its data
   * dir): absent without a data dir, or from a build before level 10. Proved by `AuthFrame.aidMac`.
   */
  readonly aid?: string;
}

/** Listener -> dialer: a fresh random nonce to answer with the cluster secret. */
export interface ChallengeFrame {
  readonly t: 'challenge';
  readonly nonce: Uint8Array;
}

/** Dialer -> listener: HMAC over the challenge and the hello (handshake.ts). */
export interface AuthFrame {
  readonly t: 'auth';
  /** The dialer's cluster fingerprint (src/cluster-shape.ts), under the MAC. */
  readonly fp: string;
  readonly mac: Uint8Array;
  /** With a hello that advertised `newest`: the proof of that advertisement (handshake.ts), beside `mac`, which covers what a level-9 listener checks. */
  readonly newestMac?: Uint8Array;
  /** With a hello that gave `aid`: its proof (handshake.ts). */
  readonly aidMac?: Uint8Array;
}

/** Listener -> dialer: accepted; the listener's incarnation, clock, last seq delivered, proof. */
export interface WelcomeFrame {
  readonly t: 'welcome';
  readonly inc: Incarnation;
  readonly clock: number;
  readonly delivered: number;
  /** The listener's cluster fingerprint, under the MAC. */
  readonly fp: string;
  readonly mac: Uint8Array;
}

/** Either side -> the other, before closing: why the handshake or the link was refused. */
export interface RefuseFrame {
  readonly t: 'refuse';
  readonly reason: string;
  readonly message: string;
  /** With `stale_incarnation` or `evicted`: the newest incarnation of that peer id the refuser knows. */
  readonly known?: Incarnation;
  /** That newest incarnation is evicted too: no process of that id is live at the refuser. */
  readonly knownEvicted?: true;
  /** With `wrong_config`, to a peer that proved the secret: the refuser's cluster shape, so that the refused side can say what differs. */
  readonly shape?: ClusterShape;
}

/** Listener -> dialer: cumulative ack of the stream carried by this socket. */
export interface AckFrame {
  readonly t: 'ack';
  readonly ack: number;
}

/** Dialer -> listener: liveness, send time to echo, and the clock when it is a safe ack. */
export interface HeartbeatFrame {
  readonly t: 'hb';
  readonly sentAtMs: number;
  readonly clock?: number;
}

/** Listener -> dialer: the heartbeat's send time, echoed for RTT and lease (docs/design.md section 5). */
export interface EchoFrame {
  readonly t: 'hbEcho';
  readonly sentAtMs: number;
}

/** Every frame of the protocol; `P` is the application payload carried by data frames. */
export type Frame<P> =
  | HelloFrame
  | ChallengeFrame
  | AuthFrame
  | WelcomeFrame
  | RefuseFrame
  | DataFrame<P>
  | AckFrame
  | HeartbeatFrame
  | EchoFrame;

/** Guard for the application payloads carried in data frames. */
export type PayloadGuard<P> = (v: unknown) => v is P;

// Maps decode as plain objects (msgpackr guards `__proto__`), no record extension.
const packr = new Packr({ useRecords: false, mapsAsObjects: true, moreTypes: false });

/** Encodes one frame; the caller guarantees its shape (it built it). */
export function encodeFrame<P>(frame: Frame<P>): Buffer {
  return packr.pack(frame);
}

/** Size check, decode, shape check. Throws LockError(FrameTooLarge | FrameInvalid). */
export function decodeFrame<P>(bytes: Uint8Array, isPayload: PayloadGuard<P>): Frame<P> {
  if (bytes.length > limits.frameBytesMax) {
    throw new LockError(ErrorCode.FrameTooLarge, `frame of ${bytes.length} bytes exceeds the limit of ${limits.frameBytesMax}`);
  }
  if (bytes.length === 0) throw new LockError(ErrorCode.FrameInvalid, 'empty frame');
  let value: unknown;
  try {
    value = packr.unpack(bytes);
  } catch (err) {
    throw new LockError(ErrorCode.FrameInvalid, `frame is not valid msgpack: ${(err as Error).message}`);
  }
  const problem = frameProblem(value, isPayload);
  if (problem !== null) throw new LockError(ErrorCode.FrameInvalid, problem);
  return value as Frame<P>;
}

type Rec = Record<string, unknown>;

function isCount(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
}

function isMs(v: unknown): v is number {
  return typeof v === 'number' && Number.isFinite(v) && v >= 0;
}

function isBytes(v: unknown, length: number): boolean {
  return v instanceof Uint8Array && v.length === length;
}

/** A non-empty string of at most `max` characters: the config's bounds on ids and names. */
function isName(v: unknown, max: number): v is string {
  return typeof v === 'string' && v.length > 0 && v.length <= max;
}

/** An acceptor id: 16 to 64 hex digits (runtime/view-store.ts). */
export function isAcceptorId(v: unknown): v is string {
  return typeof v === 'string' && /^[0-9a-f]{16,64}$/.test(v);
}

function isFingerprint(v: unknown): v is string {
  return typeof v === 'string' && v.length === fingerprintChars && /^[0-9a-f]+$/.test(v);
}

/** Shape guard for an incarnation from the network (one guard, in core/types.ts). */
export { isIncarnation };

const handshakeChecks: Record<string, (f: Rec) => boolean> = {
  hello: (f) =>
    isCount(f['v']) && isName(f['cluster'], limits.clusterNameCharsMax) &&
    isName(f['from'], limits.peerIdCharsMax) && isName(f['to'], limits.peerIdCharsMax) &&
    isIncarnation(f['inc']) && isCount(f['clock']) && isBytes(f['nonce'], nonceBytes) &&
    (f['newest'] === undefined || (isCount(f['newest']) && f['newest'] >= f['v'])) && (f['aid'] === undefined || isAcceptorId(f['aid'])),
  challenge: (f) => isBytes(f['nonce'], nonceBytes),
  auth: (f) => isFingerprint(f['fp']) && isBytes(f['mac'], macBytes) && (f['newestMac'] === undefined || isBytes(f['newestMac'], macBytes)) &&
    (f['aidMac'] === undefined || isBytes(f['aidMac'], macBytes)),
  welcome: (f) => isIncarnation(f['inc']) && isCount(f['clock']) && isCount(f['delivered']) && isFingerprint(f['fp']) && isBytes(f['mac'], macBytes),
  refuse: (f) =>
    typeof f['reason'] === 'string' && f['reason'].length <= limits.refuseReasonCharsMax &&
    typeof f['message'] === 'string' && f['message'].length <= limits.refuseMessageCharsMax &&
    (f['known'] === undefined || isIncarnation(f['known'])) && (f['knownEvicted'] === undefined || f['knownEvicted'] === true) &&
    (f['shape'] === undefined || isClusterShape(f['shape'])),
  ack: (f) => isCount(f['ack']),
  hb: (f) => isMs(f['sentAtMs']) && (f['clock'] === undefined || isCount(f['clock'])),
  hbEcho: (f) => isMs(f['sentAtMs']),
};

/** Null when `value` is a well-formed frame, else a sentence saying what is wrong. */
function frameProblem<P>(value: unknown, isPayload: PayloadGuard<P>): string | null {
  if (!isRecord(value)) return 'frame is not a map';
  const t = value['t'];
  if (typeof t !== 'string') return 'frame has no type';
  if (t === 'data') return dataProblem(value, isPayload);
  const check = Object.hasOwn(handshakeChecks, t) ? handshakeChecks[t] : undefined;
  if (check === undefined) return `unknown frame type ${JSON.stringify(t.slice(0, 32))}`;
  return check(value) ? null : `malformed ${t} frame`;
}

function dataProblem<P>(f: Rec, isPayload: PayloadGuard<P>): string | null {
  const { seq, payloads, ack } = f;
  if (!isCount(seq) || seq < 1) return 'data frame has no valid seq';
  if (ack !== undefined && !isCount(ack)) return 'data frame has a malformed ack';
  if (!Array.isArray(payloads) || payloads.length === 0) return 'data frame has no payloads';
  if (payloads.length > limits.frameMessagesMax) {
    return `data frame carries ${payloads.length} payloads, the limit is ${limits.frameMessagesMax}`;
  }
  if (!Number.isSafeInteger(seq + payloads.length)) return 'data frame seq overflows';
  for (let k = 0; k < payloads.length; k++) {
    if (!isPayload(payloads[k])) return `data frame payload ${k} is malformed`;
  }
  return null;
}
