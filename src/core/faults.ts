/**
 * Planted bugs ("mutants") that the deterministic simulator must catch. Each one is a
 * single-line deviation from docs/design.md; production code never sets any of them, and the
 * mutation test asserts that the simulator reports a violation for every one.
 */
export interface MachineFaults {
  /**
   * The ack test off by one tick (`lastTs[j] >= ts - 1` instead of `lastTs[j] > ts`). A plain
   * `>=` would be an equivalent mutant in this core: every peer increments its clock before
   * it issues a request, so no request of j can carry a timestamp j has already sent.
   */
  readonly ackGe: boolean;
  /** Every peer ranks itself first on timestamp ties, so peers disagree on the order. */
  readonly badTiebreak: boolean;
  /** Off-by-one in the semaphore permit sum. */
  readonly semaphoreOvercount: boolean;
  /** A joining peer is not sent our outstanding requests. */
  readonly noStateTransfer: boolean;
  /** A (re)starting peer begins at clock 0 and ignores the clock floor and handshake clocks. */
  readonly clockReset: boolean;
  /** Packets of an evicted or replaced incarnation are still accepted. */
  readonly acceptEvicted: boolean;
  /** A peer whose lease lapses keeps its clients' holds. */
  readonly noSelfFence: boolean;
  /** Synced once every peer handshaked, before its first packet (seed 1371's bug). */
  readonly syncedOnHandshake: boolean;
  /** Requests leave without a lease (seed 276422's bug). */
  readonly issueWithoutLease: boolean;
  /** A lease lapse ends holds but keeps waiting requests (seed 216761's bug). */
  readonly keepWaitersOnLeaseLoss: boolean;
  /** An eviction notice for an incarnation never met takes the peer out of the view (seed 150336's bug). */
  readonly evictUnmetIncarnation: boolean;
  /**
   * Requests are acknowledged before this peer is synced. A new incarnation whose
   * predecessor may still hold a lease is not synced until every peer evicted that
   * predecessor; its acks would let a third peer grant a lock the predecessor holds.
   */
  readonly ackWhileUnsynced: boolean;
  /** Acks once every peer met let us join, without the quorum of others (seed 101577's bug). */
  readonly ackWithoutQuorum: boolean;
  /** A packet sent before its sender may ack (`u`) syncs and acks like any other (seed 202828's bug). */
  readonly syncOnUnready: boolean;
  /** An all-or-nothing request is granted once the mode rule admits it in one of its locks' queues. */
  readonly grantOnOnePart: boolean;
}

/** No planted bug: what production runs. */
export const noFaults: MachineFaults = {
  ackGe: false,
  badTiebreak: false,
  semaphoreOvercount: false,
  noStateTransfer: false,
  clockReset: false,
  acceptEvicted: false,
  noSelfFence: false,
  syncedOnHandshake: false,
  issueWithoutLease: false,
  keepWaitersOnLeaseLoss: false,
  evictUnmetIncarnation: false,
  ackWhileUnsynced: false,
  ackWithoutQuorum: false,
  syncOnUnready: false,
  grantOnOnePart: false,
};

/** The planted bugs of the peer protocol's timing rules (core/protocol.ts) and of the runtime around it. */
export interface RuntimeFaults {
  /** Heartbeats carry the clock even while payloads wait unsent (breaks rule 3a's FIFO premise). */
  readonly heartbeatClockWhilePending: boolean;
  /** The lease is not re-checked before each event and client call, only on its timer. */
  readonly noLeaseCheckBeforeEvent: boolean;
  /** An echo extends the lease from its arrival, not from the heartbeat's send time. */
  readonly leaseFromArrival: boolean;
  /** A suspend of the host is not counted: the lease clock is the bare monotonic clock. */
  readonly noSuspendDetect: boolean;
  /** A suspend is counted by the wall clock alone, though the OS tells a boot clock (a wall clock stepped back during it hides it). */
  readonly ignoreBootClock: boolean;
  /** A waiting successor joins on the eviction of any older incarnation (seed 404471's bug). */
  readonly joinOnOlderEviction: boolean;
  /** A superseded incarnation keeps its lease and its eviction decisions (seed 152084's bug). */
  readonly actWhileSuperseded: boolean;
  /** A superseded incarnation still echoes heartbeats (seed 109815's bug). */
  readonly zombieEchoes: boolean;
  /** A superseded incarnation still confirms suspicions (seed 300379's bug). */
  readonly zombieConfirms: boolean;
  /** A restarted process ignores the promise bound on disk: it echoes at once (the crash-restart hole). */
  readonly forgetPromisesOnRestart: boolean;
  /** A rejoin ends the quiet a restart began: the new incarnation echoes at once (seed 906566's bug). */
  readonly forgetQuietOnRejoin: boolean;
  /** A restart or rejoin lets peers join at once, though an echo of the previous one may still vouch (seed 903454's bug). */
  readonly forgetEchoBound: boolean;
  /** A bound write still under way counts as on disk: a message leaves on it (the slow-disk hole of bounds.ts). */
  readonly countBoundUnderWay: boolean;
  /** The promise bound is written evict_ms ahead, not 2 x evict_ms: a confirmation may leave with evict_ms / 2 of it left. */
  readonly promiseBoundShort: boolean;
  /** The echo bound is written 1.5 x lease_ms ahead, not 2 x 1.5 x lease_ms: an echo may leave with 0.75 x lease_ms of it left. */
  readonly echoBoundShort: boolean;
  /** A restart's incarnation starts at its wall clock alone, not above the high-water mark (seed 1043577's bug). */
  readonly forgetIncarnationFloor: boolean;
  /** A superseded incarnation, once evicted, rejoins above the newer one while that one lives (seed 107362's bug). */
  readonly zombieRejoins: boolean;
  /** A superseded incarnation's lease is still renewed by echoes (its holds outlive its supersession). */
  readonly zombieRenewsLease: boolean;
  /** A superseded incarnation still suspects silent peers (its membership still ticks). */
  readonly zombieSuspects: boolean;
  /** A superseded incarnation still counts the confirmations its suspicions get. */
  readonly zombieCountsConfirmations: boolean;
  /** A superseded incarnation does not fence: its waiters wait for their timeout or its lease. */
  readonly zombieKeepsWaiters: boolean;
  /** A refresh does not cancel the hold's earlier expiry: a refreshed hold ends at its old TTL. */
  readonly refreshKeepsOldExpiry: boolean;
  /** The cluster fingerprint leaves out the order of the peers: a host that lists them in another order is let in. */
  readonly fingerprintIgnoresOrder: boolean;
  /** The cluster fingerprint leaves out heartbeat_ms, lease_ms and evict_ms: a host with other timings is let in. */
  readonly fingerprintIgnoresTimings: boolean;
  /** Every piece of a packet split to fit a frame keeps the packet's mark: the first pieces' clock acks what later pieces bring. */
  readonly piecesAck: boolean;
}
