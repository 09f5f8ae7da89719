/**
 * Shared vocabulary of the protocol core. Peers are named by their index in the cluster
 * configuration (0..N-1): the index breaks timestamp ties and is the low bits of a token.
 */
import { assert } from '../assert.js';
import { limits } from '../limits.js';

/** Grant modes of docs/design.md section 3. A request with a `limit` is a semaphore request. */
export type Mode = 'exclusive' | 'shared' | 'semaphore';

/** The modes, for validation at the boundary. */
export const modes: readonly Mode[] = ['exclusive', 'shared', 'semaphore'];

/** Free-form JSON object attached to a request by its client. */
export type Meta = { readonly [key: string]: unknown };

/** What a client asks for, before the core timestamps it. */
export interface RequestSpec {
  readonly mode: Mode;
  /** Semaphore capacity as this requester sees it; 1 for the other modes. */
  readonly limit: number;
  /** Semaphore permits taken; 1 for the other modes. */
  readonly permits: number;
  readonly owner: string;
  readonly meta: Meta | null;
  /**
   * When its client asked, in epoch ms on the requesting peer's wall clock. It travels with
   * the request, in the state transfer too, so every peer shows the same `since` for it
   * (docs/design.md section 6); no rule of the protocol reads it.
   */
  readonly requestedAtMs: number;
}

/**
 * One lock a request names, and how it asks for it there. A request names one lock or
 * several (all-or-nothing: docs/design.md section 3, "Multi-lock"), each at most once.
 */
export interface RequestPart {
  readonly lock: string;
  readonly spec: RequestSpec;
}

/** A request as every peer queues it: identified by `(ts, peer)`. */
export interface QueuedRequest extends RequestSpec {
  readonly lock: string;
  readonly ts: number;
  readonly peer: number;
}

/**
 * A process incarnation: (start time in ms, random), compared in that order, so a paused
 * zombie of an older process can never re-associate (docs/design.md section 4).
 */
export interface Incarnation {
  readonly startMs: number;
  readonly nonce: number;
}

/** Negative, zero or positive as `a` is older than, the same as, or newer than `b`. */
export function compareIncarnation(a: Incarnation, b: Incarnation): number {
  return a.startMs !== b.startMs ? a.startMs - b.startMs : a.nonce - b.nonce;
}

/** Readable form for logs and the HTTP API. */
export function formatIncarnation(inc: Incarnation): string {
  return `${inc.startMs}.${inc.nonce}`;
}

/** Bits of a token reserved for the peer index (docs/design.md section 3: ts * 1024 + index). */
export const tokenPeerFactor = 1024;

assert(limits.peersMax <= tokenPeerFactor, 'every peer index fits in the low bits of a token');

/**
 * The fencing token of a request: `ts * 1024 + peer index`. Exact as a JS number while
 * ts < 2^43 (clock values are wall-clock milliseconds plus message counts, about 1.8e12
 * today), and sent in JSON as a decimal string. No peer uses a clock past
 * `limits.clockValueMax` (2^50), so tokens stay below 2^60: a signed 64-bit column holds them.
 */
export function tokenOf(ts: number, peer: number): bigint {
  return BigInt(ts) * BigInt(tokenPeerFactor) + BigInt(peer);
}

/**
 * The highest clock or incarnation start another peer may send, given this host's wall
 * clock and its own Lamport clock (`limits.clockAheadMsMax` ahead of the later one, never
 * past `limits.clockValueMax`). Pure: the runtime passes the time in.
 */
export function clockCeiling(wallMs: number, clock: number): number {
  return Math.min(Math.max(wallMs, clock) + limits.clockAheadMsMax, limits.clockValueMax);
}

/** Why a hold or a waiting request ended other than by its client's release. */
export type EndReason = 'released' | 'expired' | 'lease_lost' | 'evicted' | 'removed' | 'shutdown' | 'cancelled' | 'timeout';

/**
 * Shape guard for a JSON or msgpack object: not null, not an array, not a byte array (msgpack
 * decodes binary as one). The one guard of this shape for the wire, HTTP and the config.
 */
export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Uint8Array);
}

/** Shape guard for an incarnation from the network: two non-negative safe integers. */
export function isIncarnation(v: unknown): v is Incarnation {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const { startMs, nonce } = v as Record<string, unknown>;
  return Number.isSafeInteger(startMs) && Number.isSafeInteger(nonce) && (startMs as number) >= 0 && (nonce as number) >= 0;
}

/**
 * Bytes `s` takes in UTF-8, without encoding it; a lone surrogate counts 3, as TextEncoder
 * (and msgpackr) write U+FFFD for it. The HTTP API and the peer-link guards measure with it.
 */
export function utf8Length(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      n += 4;
      i++;
    } else n += 3;
  }
  return n;
}

/** A lone (unpaired) surrogate: what no valid UTF-8 decodes to. */
const loneSurrogate = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/**
 * Why `name` is not a lock name, or null when it is one (docs/design.md section 6): 1 to
 * `limits.lockNameBytesMax` bytes of UTF-8, no control characters (C0, DEL, C1), and valid
 * UTF-8 (no U+FFFD, which a decoder puts for invalid bytes, and no lone surrogate). The HTTP
 * API and the peer-link guard judge names by this one rule, so a name one peer admits is
 * never a malformed frame to another.
 */
export function lockNameProblem(name: string): string | null {
  const bytes = utf8Length(name);
  if (bytes === 0 || bytes > limits.lockNameBytesMax) return `lock name must be 1 to ${limits.lockNameBytesMax} bytes of UTF-8, got ${bytes}`;
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f-\u009f]/.test(name)) return 'lock name must not contain control characters';
  if (name.includes('\uFFFD') || loneSurrogate.test(name)) return 'lock name must be valid UTF-8';
  return null;
}
