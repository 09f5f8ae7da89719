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
