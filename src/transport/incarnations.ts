/**
 * Which incarnation of each peer is current, and which are refused forever (docs/design.md
 * section 4: incarnations are ordered, so a paused zombie of an older process can never
 * re-associate; section 5: an evicted incarnation is refused from then on).
 */
import { assert } from '../assert.js';
import type { Incarnation } from '../core/types.js';
import { compareIncarnation } from '../core/types.js';

/** Why an incarnation may not (re)associate. */
export type IncarnationRefusal = 'stale_incarnation' | 'evicted';

/** How an admitted incarnation relates to what was known of that peer. */
export type IncarnationNews = 'first' | 'same' | 'newer';

/** Current and refused incarnations of every peer, by peer index. */
export class IncarnationBook {
  readonly #known: (Incarnation | null)[];
  readonly #refusedUpTo: (Incarnation | null)[];

  constructor(peerCount: number) {
    this.#known = new Array<Incarnation | null>(peerCount).fill(null);
    this.#refusedUpTo = new Array<Incarnation | null>(peerCount).fill(null);
  }

  /** The newest incarnation of `peer` admitted so far. */
  known(peer: number): Incarnation | null {
    return this.#slot(this.#known, peer);
  }

  /**
   * The newest incarnation of `peer` admitted or refused: a refused dialer learns it, so its
   * next incarnation starts above it at once (simulator seed 504945 --net link: a peer whose
   * wall clock had stepped far back rejoined a thousand times, 1 ms higher each time, before
   * it passed the evicted one).
   */
  newest(peer: number): Incarnation | null {
    const known = this.known(peer);
    const refused = this.#slot(this.#refusedUpTo, peer);
    if (known === null || refused === null) return known ?? refused;
    return compareIncarnation(known, refused) >= 0 ? known : refused;
  }

  /** True when `inc` of `peer` was marked evicted (it or a newer one). */
  isRefused(peer: number, inc: Incarnation): boolean {
    const floor = this.#slot(this.#refusedUpTo, peer);
    return floor !== null && compareIncarnation(inc, floor) <= 0;
  }

  /** Null when `inc` may associate now, else the reason to refuse it. */
  check(peer: number, inc: Incarnation): IncarnationRefusal | null {
    if (this.isRefused(peer, inc)) return 'evicted';
    const known = this.known(peer);
    if (known !== null && compareIncarnation(inc, known) < 0) return 'stale_incarnation';
    return null;
  }

  /** Admits `inc` (which passed `check`) and says whether it is news. */
  admit(peer: number, inc: Incarnation): IncarnationNews {
    assert(this.check(peer, inc) === null, 'only an admissible incarnation is admitted');
    const known = this.known(peer);
    if (known !== null && compareIncarnation(inc, known) === 0) return 'same';
    this.#known[peer] = { startMs: inc.startMs, nonce: inc.nonce };
    return known === null ? 'first' : 'newer';
  }

  /** Refuses `inc` and every older incarnation of `peer` forever; true if the current one is hit. */
  refuse(peer: number, inc: Incarnation): boolean {
    const floor = this.#slot(this.#refusedUpTo, peer);
    if (floor === null || compareIncarnation(inc, floor) > 0) {
      this.#refusedUpTo[peer] = { startMs: inc.startMs, nonce: inc.nonce };
    }
    const known = this.known(peer);
    return known !== null && this.isRefused(peer, known);
  }

  #slot(table: (Incarnation | null)[], peer: number): Incarnation | null {
    assert(peer >= 0 && peer < table.length, 'peer index in range');
    return table[peer] ?? null;
  }
}
