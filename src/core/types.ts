/**
 * Shared vocabulary of the protocol core. Peers are named by their index in the cluster
 * configuration (0..N-1): the index breaks timestamp ties and is the low bits of a token.
 */

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

/**
 * The fencing token of a request: `ts * 1024 + peer index`. Exact as a JS number while
 * ts < 2^43 (clock values are wall-clock milliseconds plus message counts, about 1.8e12
 * today), and sent in JSON as a decimal string.
 */
export function tokenOf(ts: number, peer: number): bigint {
  return BigInt(ts) * BigInt(tokenPeerFactor) + BigInt(peer);
}

/** Why a hold or a waiting request ended other than by its client's release. */
export type EndReason = 'released' | 'expired' | 'lease_lost' | 'evicted' | 'shutdown' | 'cancelled' | 'timeout';

/** Shape guard for an incarnation from the network: two non-negative safe integers. */
export function isIncarnation(v: unknown): v is Incarnation {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const { startMs, nonce } = v as Record<string, unknown>;
  return Number.isSafeInteger(startMs) && Number.isSafeInteger(nonce) && (startMs as number) >= 0 && (nonce as number) >= 0;
}
