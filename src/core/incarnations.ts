/**
 * The one home of what this incarnation of a peer knows about the incarnations of every
 * other peer (docs/design.md sections 4 and 5; docs/architecture.md section 5, "Incarnations
 * and rejoin"). An incarnation of peer j passes through stages here, and each stage is moved
 * by one part only:
 *
 * 1. **admitted** (`admit`, kept here): a handshake authenticated it, and no older one of j
 *    may associate again ('stale_incarnation'). Moved by the mesh (`Mesh.#admit`).
 * 2. **heard** (Membership's tracked incarnation, or the successor waiting behind it): the
 *    session reports each admitted incarnation heard (`Session.#onPeerJoined`), so the newest
 *    heard is the newest admitted, unless it was evicted already. Moved by Membership.heard.
 * 3. **waiting** (`Session.#pending`, with its clock and buffered packets): admitted and
 *    heard, but kept out of the core while its predecessor may hold a lease
 *    (`Membership.predecessorOf`) or while joins are held after a restart. Moved by the session.
 * 4. **met** (the core's PeerView): it joined the protocol by a 'joined' step. Lags
 *    "admitted" while it waits; the core keeps its own copy because it changes only by its
 *    own steps (docs/style.md convention 2). Moved by Machine.step.
 * 5. **evicted up to** (`evict`, kept here): a majority confirmed it silent, so its lease
 *    lapsed; it and every older incarnation of j are out for good. Moved by Membership alone
 *    (its `#apply`), at the moment it decides; read through Membership.isEvicted (by the
 *    session and the simulator's checker too).
 * 6. **refused up to** (`refuse`, kept here): the links refuse it and its streams are gone.
 *    Moved by the mesh (`Mesh.refuseIncarnation`) when the session executes Membership's
 *    evict effect, so it lags stage 5 only while one batch of membership effects is being
 *    executed (a send to j earlier in that batch is still queued, then dropped with the
 *    streams), and it never moves under the accept-evicted mutant. The core's own evicted
 *    floor (PeerView) moves with the 'evicted' step right after.
 *
 * Stages 1, 5 and 6 are kept here, in one record per peer: the mesh's handshake reads 1 and
 * 6, Membership 5, and 6 follows 5 (see above), so the two floors sit side by side. The
 * session builds the one book and hands it to its Membership and its Mesh; transport sees it
 * through its narrow `IncarnationGate` (src/transport/incarnations.ts). Stages 2 to 4 stay
 * with their movers, since nobody else reads them and each changes with data only its mover
 * has (Membership's silence timers, the session's buffered packets, the core's steps).
 */
import { assert } from '../assert.js';
import type { Incarnation } from './types.js';
import { compareIncarnation } from './types.js';

/**
 * Why an incarnation may not (re)associate. `clock_ahead`: it, or a clock it sent, is too far
 * ahead of this host's time (`clockCeiling` in core/types.ts).
 */
export type IncarnationRefusal = 'stale_incarnation' | 'evicted' | 'clock_ahead';

/** How an admitted incarnation relates to what was known of that peer. */
export type IncarnationNews = 'first' | 'same' | 'newer';

/** Stages 1, 5 and 6 of one peer (see the file's comment); null: none yet. */
interface IncarnationRecord {
  admitted: Incarnation | null;
  evictedUpTo: Incarnation | null;
  refusedUpTo: Incarnation | null;
  /** The newest incarnation refused for a clock too far ahead (`refuseAhead`). */
  aheadUpTo: Incarnation | null;
}

function copy(inc: Incarnation): Incarnation {
  return { startMs: inc.startMs, nonce: inc.nonce };
}

/** Admitted, evicted and refused incarnations of every peer, by peer index. */
function emptyRecord(): IncarnationRecord {
  return { admitted: null, evictedUpTo: null, refusedUpTo: null, aheadUpTo: null };
}

export class IncarnationBook {
  readonly #records: IncarnationRecord[];
  readonly #ceilingMs: () => number;

  /**
   * `ceilingMs`: the latest incarnation start admitted now (`clockCeiling` of core/types.ts,
   * which the session computes from its wall clock and its core's clock); none by default.
   */
  constructor(capacity: number, ceilingMs: () => number = () => Number.POSITIVE_INFINITY) {
    this.#records = Array.from({ length: capacity }, emptyRecord);
    this.#ceilingMs = ceilingMs;
  }

  /** Makes room for ordinals below `capacity` (a member added: docs/reconfiguration.md). */
  grow(capacity: number): void {
    while (this.#records.length < capacity) this.#records.push(emptyRecord());
  }

  /** How many ordinals (self included) this book has a record for: `Members.capacity`. */
  get capacity(): number {
    return this.#records.length;
  }

  // ---- stage 1: admitted by a handshake (the mesh) ---------------------------------------

  /** The newest incarnation of `peer` admitted so far. */
  known(peer: number): Incarnation | null {
    return this.#record(peer).admitted;
  }

  /**
   * The newest incarnation of `peer` admitted or refused: a refused dialer learns it, so its
   * next incarnation starts above it at once (simulator seed 504945 --net link: a peer whose
   * wall clock had stepped far back rejoined a thousand times, 1 ms higher each time, before
   * it passed the evicted one).
   */
  newest(peer: number): Incarnation | null {
    const { admitted, refusedUpTo } = this.#record(peer);
    if (admitted === null || refusedUpTo === null) return admitted ?? refusedUpTo;
    return compareIncarnation(admitted, refusedUpTo) >= 0 ? admitted : refusedUpTo;
  }

  /** Null when `inc` may associate now, else the reason to refuse it. */
  check(peer: number, inc: Incarnation): IncarnationRefusal | null {
    if (this.isRefused(peer, inc)) return 'evicted';
    if (this.isAhead(inc.startMs) || this.isAheadRefused(peer, inc)) return 'clock_ahead';
    const known = this.known(peer);
    if (known !== null && compareIncarnation(inc, known) < 0) return 'stale_incarnation';
    return null;
  }

  /** Admits `inc` (which passed `check`) and says whether it is news. */
  admit(peer: number, inc: Incarnation): IncarnationNews {
    assert(this.check(peer, inc) === null, 'only an admissible incarnation is admitted');
    const r = this.#record(peer);
    const known = r.admitted;
    if (known !== null && compareIncarnation(inc, known) === 0) return 'same';
    r.admitted = copy(inc);
    return known === null ? 'first' : 'newer';
  }

  // ---- stage 5: evicted by a majority (Membership) ----------------------------------------

  /** The newest incarnation of `peer` a majority evicted, if any. */
  evictedUpTo(peer: number): Incarnation | null {
    return this.#record(peer).evictedUpTo;
  }

  /** True when `inc` of `peer` (or a newer one) was evicted. */
  isEvicted(peer: number, inc: Incarnation): boolean {
    const up = this.#record(peer).evictedUpTo;
    return up !== null && compareIncarnation(inc, up) <= 0;
  }

  /** A majority evicted `inc` of `peer` (newer than any evicted before): it and every older one are out. */
  evict(peer: number, inc: Incarnation): void {
    assert(!this.isEvicted(peer, inc), 'an eviction moves the floor up');
    this.#record(peer).evictedUpTo = copy(inc);
  }

  // ---- stage 6: refused by the links (the mesh, executing an eviction) --------------------

  /** True when `inc` of `peer` is refused (it, or a newer one, was). */
  isRefused(peer: number, inc: Incarnation): boolean {
    const floor = this.#record(peer).refusedUpTo;
    return floor !== null && compareIncarnation(inc, floor) <= 0;
  }

  /** Refuses `inc` and every older incarnation of `peer` forever; true if the admitted one is hit. */
  refuse(peer: number, inc: Incarnation): boolean {
    const r = this.#record(peer);
    if (r.refusedUpTo === null || compareIncarnation(inc, r.refusedUpTo) > 0) r.refusedUpTo = copy(inc);
    return r.admitted !== null && this.isRefused(peer, r.admitted);
  }

  /**
   * Refuses `inc` of `peer` and every older incarnation from now on, for a clock it sent too
   * far ahead (`clock_ahead`): not an eviction, which only a majority decides; this peer
   * only stops listening to it, as a partition would. A newer incarnation may come in.
   */
  refuseAhead(peer: number, inc: Incarnation): void {
    const r = this.#record(peer);
    if (r.aheadUpTo === null || compareIncarnation(inc, r.aheadUpTo) > 0) r.aheadUpTo = copy(inc);
  }

  /**
   * Whether `inc` of `peer` is refused for a clock too far ahead of ours (issue 37): `'now'`,
   * for `clock` (the highest clock or incarnation start of what it sent; it is refused from
   * now on, `refuseAhead`), `'before'`, or null. Nothing of it is adopted; the links cut it
   * and refuse it, as a partition would (the majority evicts it if it stays out).
   */
  refusedAhead(peer: number, inc: Incarnation, clock: number): 'now' | 'before' | null {
    if (this.isAheadRefused(peer, inc)) return 'before';
    if (!this.isAhead(clock)) return null;
    this.refuseAhead(peer, inc);
    return 'now';
  }

  /** True when `inc` of `peer` was refused for a clock too far ahead (`refuseAhead`). */
  isAheadRefused(peer: number, inc: Incarnation): boolean {
    const ahead = this.#record(peer).aheadUpTo;
    return ahead !== null && compareIncarnation(inc, ahead) <= 0;
  }

  /** True when `clockOrStartMs`, a clock or an incarnation start another peer sent, is past the ceiling now. */
  isAhead(clockOrStartMs: number): boolean {
    return clockOrStartMs > this.#ceilingMs();
  }

  #record(peer: number): IncarnationRecord {
    const r = this.#records[peer];
    assert(r !== undefined && peer >= 0, 'peer index in range');
    return r;
  }
}
