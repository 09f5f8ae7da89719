/**
 * Self-fencing leases (docs/design.md section 5). A peer's lease is valid while, within the last
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
  /**
   * The lease end, recomputed on every echo rather than on every check: this peer always
   * counts for itself, so the lease ends `leaseMs` after the (majority-1)-th most recent
   * echoed send time among the others.
   */
  #until: number;

  constructor(opts: { self: number; peerCount: number; leaseMs: number }) {
    this.#self = opts.self;
    this.#leaseMs = opts.leaseMs;
    this.#echoedSentAt = new Array<number>(opts.peerCount).fill(Number.NEGATIVE_INFINITY);
    this.#until = this.majority === 1 ? Number.POSITIVE_INFINITY : Number.NEGATIVE_INFINITY;
  }

  /** Number of peers, this one included, that make a majority. */
  get majority(): number {
    return Math.floor(this.#echoedSentAt.length / 2) + 1;
  }

  /** A heartbeat we sent at `sentAtMs` came back from `peer`. */
  onEcho(peer: number, sentAtMs: number): void {
    if (peer === this.#self || sentAtMs <= (this.#echoedSentAt[peer] ?? Number.NEGATIVE_INFINITY)) return;
    this.#echoedSentAt[peer] = sentAtMs;
    this.#recompute();
  }

  /** Forgets a peer (evicted or restarted): its old echoes no longer vouch for us. */
  forget(peer: number): void {
    if (peer === this.#self) return;
    this.#echoedSentAt[peer] = Number.NEGATIVE_INFINITY;
    this.#recompute();
  }

  #recompute(): void {
    if (this.majority === 1) return;
    const others = this.#echoedSentAt.filter((_, p) => p !== this.#self).sort((a, b) => b - a);
    this.#until = (others[this.majority - 2] ?? Number.NEGATIVE_INFINITY) + this.#leaseMs;
  }

  /** The instant (monotonic ms) until which the lease holds; -Infinity when no majority echoed. */
  validUntil(): number {
    return this.#until;
  }

  /** Peers (this one excluded) none of whose echoes vouch for us at `nowMs`. */
  silentPeers(nowMs: number): number[] {
    const out: number[] = [];
    this.#echoedSentAt.forEach((t, p) => {
      if (p !== this.#self && t + this.#leaseMs <= nowMs) out.push(p);
    });
    return out;
  }

  /** True while the lease holds at `nowMs`. */
  valid(nowMs: number): boolean {
    return this.#until > nowMs;
  }
}
