/**
 * A limit on everything (docs/style.md convention 9). Relations between limits are asserted
 * at load, so a bad edit fails at start, not under load.
 */
import { assert } from './assert.js';

/** Hard limits of one peer process. */
export const limits = {
  /**
   * Lock names are 1 to this many bytes of UTF-8 (docs/design.md section 6), judged by one rule
   * at the HTTP boundary and in the peer-link guard (`lockNameProblem` in core/types.ts).
   */
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
  /**
   * Shortest cluster secret (src/secret.ts). An HMAC handshake recorded without TLS lets
   * anyone search for the secret offline: 32 characters of `openssl rand -hex 32` are 128 bits.
   */
  secretCharsMin: 32,
  /** Length bounds of an API token (the text of a --token-file, whitespace trimmed). */
  apiTokenBytesMin: 16,
  apiTokenBytesMax: 4096,
  /** Largest `owner` string. */
  ownerBytesMax: 256,
  /** Largest `meta` object, JSON-encoded. */
  metaBytesMax: 4096,
  /**
   * Requests in one lock's queue, cluster-wide, as seen by one peer: a local acquire on a lock
   * whose queue here already holds this many (issued requests of every peer, plus this peer's
   * own not issued yet) is refused with ERR_LIMIT_EXCEEDED. Requests of other peers are always
   * queued: refusing one would break the agreement on the order.
   */
  queuedPerLockMax: 100_000,
  /**
   * Queue entries a peer looks at, from the head, to find requests of its own that keep a
   * request it just received out (docs/design.md section 3, rule 2: no ack owed then); past
   * them it acks, as it always may.
   */
  ackSkipScanMax: 64,
  /** Locks one all-or-nothing request may name (POST /v1/acquire `locks`). */
  multiLocksMax: 16,
  /** Live local requests (waiting or held) on one peer. */
  localRequestsMax: 200_000,
  /** Ended hold ids remembered, so a late release or refresh is answered with its reason. */
  endedIdsMax: 10_000,
  /** Hold ids in a release or refresh body are at most this long (the peer makes 24-character ids). */
  holdIdCharsMax: 64,
  /** A no-wait request (timeout_ms 0) waits at most this long for the acks that decide it. */
  noWaitAckBoundMs: 2000,
  /** A stopping peer waits at most this long for its releases to be acknowledged. */
  stopDrainMs: 2000,
  /** A stop that takes longer than this exits 1 (bin/lamport-peer.ts). */
  stopMsMax: 10_000,
  /** Unacknowledged bytes kept for resend per link before backpressure. */
  linkUnackedBytesMax: 64 * 1024 * 1024,
  /** Messages in one frame between peers. */
  frameMessagesMax: 4096,
  /**
   * Messages one packet may gather when consecutive packets for a peer are merged before
   * they are framed (core/messages.ts `mergePackets`): each merge copies the lists, so the
   * bound keeps a turn of many small packets linear. A packet over a frame, merged or not,
   * leaves in pieces (docs/design.md section 4, "Pieces").
   */
  packetMessagesMergedMax: 128,
  /** Longest wait a client may ask for. */
  timeoutMsMax: 24 * 3600 * 1000,
  /** Longest TTL a client may ask for. */
  ttlMsMax: 7 * 24 * 3600 * 1000,
  /** Largest semaphore limit. */
  semaphoreLimitMax: 1_000_000,
  /** Peers in one cluster; the token reserves 10 bits for the peer index (core/types.ts). */
  peersMax: 1024,
  /** Peer ids in the config and in a handshake. */
  peerIdCharsMax: 64,
  /** The cluster name, in the config and in a handshake. */
  clusterNameCharsMax: 128,
  /** A member's `ws` URL or `http` address in a view (core/view.ts). */
  addressCharsMax: 256,
  /** Bounds of `heartbeat_ms`, `lease_ms` and `evict_ms` in the config. */
  timingMsMin: 10,
  timingMsMax: 3_600_000,
  /** A `refuse` frame's reason and sentence; the sender cuts its sentence to fit. */
  refuseReasonCharsMax: 64,
  refuseMessageCharsMax: 1024,
  /** A WebSocket closed gracefully is cut if the other side has not closed within this. */
  wsCloseGraceMs: 1000,
  /** Largest HTTP request head (Node's maxHeaderSize). */
  httpHeaderBytesMax: 16 * 1024,
  /** An idle keep-alive HTTP connection is closed after this. */
  httpKeepAliveMs: 30_000,
  /** Sockets the typed client keeps open to its peer. */
  clientSocketsMax: 256,
  /** Dashboard streams (GET /v1/events) served at once; more are answered 503. */
  dashboardStreamsMax: 16,
  /** Grants and ends the dashboard remembers for a page that connects. */
  dashboardActivityMax: 200,
  /** Locks listed in one dashboard snapshot (the rest are counted). */
  dashboardLocksMax: 500,
  /** Waiters listed per lock in one dashboard snapshot (the rest are counted). */
  dashboardWaitersPerLockMax: 100,
  /**
   * Holders the dashboard looks at per lock, beside its waiters: the feed reads only the
   * first holders + waiters entries of each queue (its activity does not see deeper), so a
   * burst of waiters costs it nothing per push.
   */
  dashboardHoldersPerLockMax: 100,
  /** Clients gone (closed connections) whose requests a peer withdraws in one event-loop turn; the rest wait for the next turns. */
  clientsGonePerTurnMax: 256,
  /**
   * Waiters a peer answers in one event-loop turn after the core ended them (a lease lost);
   * the rest are answered in the next turns. Each answer is an HTTP response written and a
   * connection ended; 19,000 of them in one turn kept the heartbeats waiting for seconds.
   */
  waitersFailedPerTurnMax: 256,
  /**
   * Connections of waiting requests a peer reads as usual; past this many, the others are
   * paused and swept (src/http/parked-sockets.ts): 19,000 waiting clients closing at once
   * were one event-loop turn of about a second per peer, and every peer lost its lease. A
   * burst of this many ends costs about a tenth of a second.
   */
  waitingSocketsLiveMax: 1024,
  /**
   * Parked connections read in one sweep, at most: the ends a sweep can bring into one turn.
   * The sweeps start at the minimum and adapt (src/http/parked-sockets.ts): plus the minimum
   * after a sweep on time that found clients gone, half after a late one.
   */
  parkedSocketsSweptPerTurnMax: 512,
  parkedSocketsSweptPerTurnMin: 32,
  /**
   * Interval of the sweeps. With 19,000 parked connections and the loop keeping up, a client
   * that left is noticed within about 4.5 s (32, 64, ... 512 per sweep), later while the peer
   * is short of CPU. Each sweep resumes and pauses its sockets (~10 us a pair here).
   */
  parkedSocketsSweepMs: 100,
  /** A sweep that fires this much late (the loop was busy) halves the next one. */
  parkedSocketsSweepLateMs: 50,
  /** How far back the dashboard's timeline reaches. */
  dashboardTimelineMs: 5 * 60_000,
  /** Locks the dashboard's timeline draws (those with the latest activity). */
  dashboardTimelineLocksMax: 30,
  /** Watch streams (GET /v1/locks/{name}/watch, /v1/watch) served at once; more are answered 429. */
  watchStreamsMax: 64,
  /** Unsent bytes a watch stream may hold, beyond its first `state`, before it ends with ERR_WATCH_BEHIND. */
  watchBufferBytesMax: 1024 * 1024,
  /**
   * Watch events written per event-loop turn (one event to one stream is one write); the
   * rest wait for the next turn, so heartbeats and echoes run between batches.
   */
  watchWritesPerTurnMax: 2048,
  /**
   * How long an inbound stream may wait before it acks what it received on its own (acks are
   * cumulative, and ride on any data frame going the other way before then).
   */
  linkAckDelayMs: 50,
  /** How long a payload that may wait (a release nobody waits for) waits for a payload to ride with. */
  lazyPayloadDelayMs: 5,
  /** Reconnect backoff bounds. */
  backoffMsMin: 50,
  backoffMsMax: 5000,
  /** A peer's redials wait at most this many heartbeat intervals (when shorter than backoffMsMax). */
  redialHeartbeatsMax: 4,
  /** A peer connection must finish its handshake within this, or it is cut. */
  handshakeMsMax: 5000,
  /**
   * Inbound connections still in their handshake, in all and from one address. A new one
   * beyond either bound cuts the oldest pending handshake of the address with the most
   * (mesh-acceptor.ts): a flood of strangers displaces its own connections, while a peer's
   * handshake, done within a round trip or two, is almost never the oldest.
   */
  handshakesPendingMax: 1024,
  handshakesPendingPerAddressMax: 64,
  /** One log line per peer (or address) and refusal reason per this; the next says how many were passed over. */
  refusalLogEveryMs: 60_000,
  /** Peers and addresses whose refusals are remembered for that. */
  refusalLogKeysMax: 1024,
  /** How long a refused link stays listed in GET /v1/cluster after its last refusal. */
  refusalShownMs: 15_000,
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
  /**
   * How far ahead of the clock the persisted high-water mark reaches; it is rewritten when
   * the clock comes within half of it (docs/design.md section 4, "Clock floor").
   */
  clockReserveAheadTicks: 1_000_000,
  /**
   * How far a clock or an incarnation another peer sends (handshake, packets, heartbeats,
   * membership messages, refusals) may be ahead of the later of this host's wall clock and
   * its own Lamport clock: 30 days. One further ahead is refused (`clock_ahead`), never
   * adopted: one host with an absurd wall clock would otherwise push every clock and
   * high-water mark of the cluster with it (issue 37, point 4). It is measured from this
   * peer's own clock too, since the Lamport clock runs ahead of the wall clock under load
   * (10.5 ticks per wall ms at 6,500 acquire+release/s on 3 peers).
   */
  clockAheadMsMax: 30 * 24 * 3600 * 1000,
  /**
   * The largest clock a peer uses, adopts or loads (2^50, about the year 37,600): a wall
   * clock, a clock.json or a peer's clock past it is refused. Tokens (`ts * 1024 + index`)
   * stay below 2^60, within a signed 64-bit column, and the clock stays a safe integer: from
   * here it would take 25,000 years at 10 ticks per ms to reach 2^53.
   */
  clockValueMax: 2 ** 50,
} as const;

assert(limits.frameBytesMax < limits.linkUnackedBytesMax, 'a frame must fit in the resend buffer');
// A packet of many messages is split to fit a frame, one message never is: one REQUEST at its
// largest must fit. msgpack takes up to 9 bytes for what JSON writes in 4 ("0.5," is a float64).
assert(limits.ownerBytesMax + Math.ceil((limits.metaBytesMax * 9) / 4) + limits.lockNameBytesMax + 256 < limits.frameBytesMax / 2, 'one request at its largest fits in a frame, with room to spare');
assert(limits.httpBodyBytesMax < limits.httpBodyDrainBytesMax, 'an oversized body is drained past the limit before the cut');
assert(limits.apiTokenBytesMin < limits.apiTokenBytesMax, 'token length bounds are ordered');
assert(limits.backoffMsMin < limits.backoffMsMax, 'backoff bounds are ordered');
assert(limits.timingMsMin < limits.timingMsMax, 'timing bounds are ordered');
assert(limits.queuedPerLockMax >= 1 && limits.endedIdsMax >= 1, 'queues and the ended log hold something');
assert(limits.noWaitAckBoundMs <= limits.timeoutMsMax, 'a no-wait request waits no longer than any request may');
assert(limits.stopDrainMs < limits.stopMsMax, 'the stop drains its releases within the stop bound');
assert(limits.clockValueMax * 1024 * 8 <= 2 ** 63, 'a token of the largest clock fits in a signed 64-bit column, 8 times over');
assert(limits.refuseMessageCharsMax * 3 < limits.frameBytesMax, 'a refuse sentence fits in a frame (3 bytes of UTF-8 per character at most)');
