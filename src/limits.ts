/**
 * A limit on everything (docs/style.md convention 9). Relations between limits are asserted
 * at load, so a bad edit fails at start, not under load.
 */
import { assert } from './assert.js';

/** Hard limits of one peer process. */
export const limits = {
  /** Lock names are 1 to this many bytes of UTF-8 (docs/design.md section 6). */
  lockNameBytesMax: 256,
  /** Largest decoded WebSocket frame between peers. */
  frameBytesMax: 1024 * 1024,
  /** Largest HTTP request body; a larger one is answered 413 (ERR_BODY_TOO_LARGE). */
  httpBodyBytesMax: 64 * 1024,
  /**
   * Bytes of an oversized body read and dropped after the 413 is sent, so the client gets
   * the answer instead of a reset; past this the connection is cut.
   */
  httpBodyDrainBytesMax: 1024 * 1024,
  /** Length bounds of an API token (the text of a --token-file, whitespace trimmed). */
  apiTokenBytesMin: 16,
  apiTokenBytesMax: 4096,
  /** Largest `owner` string. */
  ownerBytesMax: 256,
  /** Largest `meta` object, JSON-encoded. */
  metaBytesMax: 4096,
  /** Requests in one lock's queue, cluster-wide, as seen by one peer. */
  queuedPerLockMax: 100_000,
  /** Live local requests (waiting or held) on one peer. */
  localRequestsMax: 200_000,
  /** Unacknowledged bytes kept for resend per link before backpressure. */
  linkUnackedBytesMax: 64 * 1024 * 1024,
  /** Messages in one frame between peers. */
  frameMessagesMax: 4096,
  /** Longest wait a client may ask for. */
  timeoutMsMax: 24 * 3600 * 1000,
  /** Longest TTL a client may ask for. */
  ttlMsMax: 7 * 24 * 3600 * 1000,
  /** Largest semaphore limit. */
  semaphoreLimitMax: 1_000_000,
  /** Peers in one cluster; the token reserves 10 bits for the peer index. */
  peersMax: 1024,
  /** How long an inbound stream may wait before it acks what it received (acks are cumulative). */
  linkAckDelayMs: 5,
  /** Reconnect backoff bounds. */
  backoffMsMin: 50,
  backoffMsMax: 5000,
  /** A peer connection must finish its handshake within this, or it is cut. */
  handshakeMsMax: 5000,
  /** Inbound connections still in their handshake; more are refused ('busy'). */
  handshakesPendingMax: 256,
  /** Dialer nonces remembered by a listener to name replayed handshakes. */
  replayNoncesMax: 4096,
  /** Heartbeat intervals of silence after which a peer connection is presumed half-open. */
  heartbeatsMissedMax: 3,
  /**
   * A jump of the wall clock ahead of the monotonic clock larger than this, between two
   * reads, is taken for a suspend of the host and counted as elapsed (runtime/lease-clock.ts).
   */
  suspendDetectMs: 10,
  /** After a failed write of the clock high-water mark, the next attempt waits this long. */
  clockStoreRetryMs: 1000,
} as const;

assert(limits.frameBytesMax < limits.linkUnackedBytesMax, 'a frame must fit in the resend buffer');
assert(limits.ownerBytesMax + limits.metaBytesMax + limits.lockNameBytesMax < limits.frameBytesMax, 'one request must fit in a frame');
assert(limits.httpBodyBytesMax < limits.httpBodyDrainBytesMax, 'an oversized body is drained past the limit before the cut');
assert(limits.apiTokenBytesMin < limits.apiTokenBytesMax, 'token length bounds are ordered');
assert(limits.backoffMsMin < limits.backoffMsMax, 'backoff bounds are ordered');
