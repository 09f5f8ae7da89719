/**
 * Self-fencing leases (docs/design.md section 5). A peer's lease is valid while, within the last
 * `leaseMs` of its own monotonic clock, a majority of the members of its view (itself
 * included, core/members.ts) has echoed a heartbeat it sent. The lease is measured from the
 * SEND time of the echoed heartbeat, never from its arrival, so a delayed echo cannot stretch it.
 * Pure: time is an argument, so the simulator can drive it.
 */
import type { Members } from './members.js';

export class LeaseTracker {
  #members: Members;
  readonly #leaseMs: number;
  /** Latest echoed send time per peer, in the owner's monotonic ms; -Infinity when none. */
  readonly #echoedSentAt: number[];
  /**
   * The lease end, recomputed on every echo rather than on every check: this peer always
   * counts for itself, so the lease ends `leaseMs` after the (majority-1)-th most recent
   * echoed send time among the others.
   */
  #until: number;

  constructor(opts: { members: Members; leaseMs: number }) {
    this.#members = opts.members;
    this.#leaseMs = opts.leaseMs;
    this.#echoedSentAt = new Array<number>(opts.members.capacity).fill(Number.NEGATIVE_INFINITY);
    this.#until = this.#alone() ? Number.POSITIVE_INFINITY : Number.NEGATIVE_INFINITY;
  }

  /** A voter that is a majority on its own (a cluster of one): its lease never lapses. */
  #alone(): boolean {
    return this.#members.voter && this.majority === 1;
  }

  /** Number of peers, this one included, that make a majority. */
  get majority(): number {
    return this.#members.majority;
  }

  /**
   * A heartbeat we sent at `sentAtMs` came back from `peer`. A learner's echo is kept too,
   * though it counts only once the learner is a voter: a learner tracks the voters' silence as a
   * voter does, so it confirms no eviction of ours while its echo vouches for our lease, and a
   * promotion while a voter is down does not cost the lease a heartbeat's round trip (which
   * ended every hold of the peer that promoted it).
   */
  onEcho(peer: number, sentAtMs: number): void {
    if (peer === this.#members.self || sentAtMs <= (this.#echoedSentAt[peer] ?? Number.NEGATIVE_INFINITY)) return;
    this.#echoedSentAt[peer] = sentAtMs;
    if (this.#members.has(peer)) this.#recompute();
  }

  /**
   * The view changed (docs/reconfiguration.md): majorities are of `members` from now on. A
   * promoted learner's echoes count from now on; a removed member's vouch for nothing.
   */
  setMembers(members: Members): void {
    this.#members = members;
    while (this.#echoedSentAt.length < members.capacity) this.#echoedSentAt.push(Number.NEGATIVE_INFINITY);
    if (this.#alone()) this.#until = Number.POSITIVE_INFINITY;
    else this.#recompute();
  }

  /** Forgets a peer (evicted or restarted): its old echoes no longer vouch for us. */
  forget(peer: number): void {
    if (peer === this.#members.self) return;
    this.#echoedSentAt[peer] = Number.NEGATIVE_INFINITY;
    this.#recompute();
  }

  #recompute(): void {
    if (this.#alone()) return;
    // A voter counts for itself; a learner or leaving peer needs a majority of the voters' echoes.
    const needed = this.majority - (this.#members.voter ? 1 : 0);
    const others = this.#members.others().map((p) => this.#echoedSentAt[p] ?? Number.NEGATIVE_INFINITY).sort((a, b) => b - a);
    this.#until = (others[needed - 1] ?? Number.NEGATIVE_INFINITY) + this.#leaseMs;
  }

  /** The instant (monotonic ms) until which the lease holds; -Infinity when no majority echoed. */
  validUntil(): number {
    return this.#until;
  }

  /** Peers (this one excluded) none of whose echoes vouch for us at `nowMs`. */
  silentPeers(nowMs: number): number[] {
    return this.#members.others().filter((p) => (this.#echoedSentAt[p] ?? Number.NEGATIVE_INFINITY) + this.#leaseMs <= nowMs);
  }

  /** Whether an echo of `peer` (a learner's too) would vouch for the lease at `nowMs`, were it a voter. */
  echoedBy(peer: number, nowMs: number): boolean {
    return (this.#echoedSentAt[peer] ?? Number.NEGATIVE_INFINITY) + this.#leaseMs > nowMs;
  }

  /** True while the lease holds at `nowMs`. */
  valid(nowMs: number): boolean {
    return this.#until > nowMs;
  }
}
