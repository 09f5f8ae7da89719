/**
 * Self-fencing leases (DESIGN section 5). A peer's lease is valid while, within the last
 * `leaseMs` of its own monotonic clock, a majority of the configured peers (itself
 * included) has echoed a heartbeat it sent. The lease is measured from the SEND time of
 * the echoed heartbeat, never from its arrival, so a delayed echo cannot stretch it.
 * Pure: time is an argument, so the simulator can drive it.
 */
export class LeaseTracker {
  readonly #self: number;
  readonly #leaseMs: number;
  /** Latest echoed send time per peer, in the owner's monotonic ms; -Infinity when none. */
  readonly #echoedSentAt: number[];

  constructor(opts: { self: number; peerCount: number; leaseMs: number }) {
    this.#self = opts.self;
    this.#leaseMs = opts.leaseMs;
    this.#echoedSentAt = new Array<number>(opts.peerCount).fill(Number.NEGATIVE_INFINITY);
  }

  /** Number of peers, this one included, that make a majority. */
  get majority(): number {
    return Math.floor(this.#echoedSentAt.length / 2) + 1;
  }

  /** A heartbeat we sent at `sentAtMs` came back from `peer`. */
  onEcho(peer: number, sentAtMs: number): void {
    if (sentAtMs > (this.#echoedSentAt[peer] ?? Number.NEGATIVE_INFINITY)) this.#echoedSentAt[peer] = sentAtMs;
  }

  /** Forgets a peer (evicted or restarted): its old echoes no longer vouch for us. */
  forget(peer: number): void {
    this.#echoedSentAt[peer] = Number.NEGATIVE_INFINITY;
  }

  /**
   * The instant (monotonic ms) until which the lease holds: the majority-th most recent
   * echoed send time plus `leaseMs`. -Infinity when no majority ever echoed.
   */
  validUntil(nowMs: number): number {
    const times = this.#echoedSentAt.map((t, p) => (p === this.#self ? nowMs : t)).sort((a, b) => b - a);
    const kth = times[this.majority - 1] ?? Number.NEGATIVE_INFINITY;
    return kth === nowMs && this.majority === 1 ? Number.POSITIVE_INFINITY : kth + this.#leaseMs;
  }

  /** True while the lease holds at `nowMs`. */
  valid(nowMs: number): boolean {
    return this.validUntil(nowMs) > nowMs;
  }
}
