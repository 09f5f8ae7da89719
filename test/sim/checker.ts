/**
 * The global invariants of docs/design.md section 9, checked over the whole cluster after every
 * event (invariants 1 to 3) and at the end of the liveness phase (invariant 4). The checker
 * sees what no single peer sees: every valid hold in the cluster at once, and every
 * exclusive grant of the run, across restarts.
 */
import type { Mode } from '../../src/core/types.js';

/**
 * A hold granted by a core and not released or ended. It counts for invariant 1 only while
 * it is VALID: its peer's lease has held without a gap since the grant (`validity`).
 */
export interface Hold {
  readonly ref: number;
  readonly peer: number;
  /** Its peer's ordinal in the agreed view (docs/reconfiguration.md): the tie-break; the peer's index without changes. */
  readonly ordinal: number;
  /** The incarnation counter of the peer that granted it. */
  readonly life: number;
  /** Virtual ms of the grant. */
  readonly grantedMs: number;
  readonly lock: string;
  readonly ts: number;
  readonly mode: Mode;
  readonly limit: number;
  readonly permits: number;
  readonly token: bigint;
}

interface Grant {
  readonly ts: number;
  readonly peer: number;
  readonly ordinal: number;
  readonly token: bigint;
  readonly ref: number;
}

/** The agreed order of docs/design.md section 3: by timestamp, ties broken by the peer's ordinal (its index in a config file). */
function precedes(a: { ts: number; ordinal: number }, b: { ts: number; ordinal: number }): boolean {
  return a.ts !== b.ts ? a.ts < b.ts : a.ordinal < b.ordinal;
}

function describe(h: Hold): string {
  return `ref ${h.ref} (p${h.peer} ts=${h.ts} ${h.mode}${h.mode === 'semaphore' ? ` ${h.permits}/${h.limit}` : ''})`;
}

/** Collects violations; a run stops at its first one. */
export class Checker {
  readonly violations: string[] = [];
  grants = 0;
  readonly #holders = new Map<string, Map<number, Hold>>();
  readonly #lastExclusive = new Map<string, Grant>();
  readonly #dirty = new Set<string>();
  /** Whether a hold is still valid at a time (the cluster knows the leases); all by default. */
  validity: (h: Hold, nowMs: number) => boolean = () => true;

  /** A core granted a hold: record it, and check invariants 2 and 3 for exclusive grants. */
  grant(h: Hold, nowMs: number): void {
    this.grants += 1;
    let holders = this.#holders.get(h.lock);
    if (holders === undefined) {
      holders = new Map();
      this.#holders.set(h.lock, holders);
    }
    holders.set(h.ref, h);
    this.#dirty.add(h.lock);
    if (h.mode === 'exclusive') this.#checkExclusiveOrder(h, nowMs);
  }

  /** A hold ended (release, expiry, lease loss, crash): it no longer counts. */
  end(lock: string, ref: number): void {
    this.#holders.get(lock)?.delete(ref);
  }

  /** The holders of one lock, for transcripts. */
  holders(lock: string): readonly Hold[] {
    return [...(this.#holders.get(lock)?.values() ?? [])];
  }

  /** Invariant 1 on every lock whose holders grew during the event just run. */
  afterEvent(nowMs: number): void {
    for (const lock of this.#dirty) this.#checkHolders(lock, nowMs);
    this.#dirty.clear();
  }

  /** The promise that a holder is told when and why its hold ended was broken. */
  told(nowMs: number, what: string): void {
    this.#fail(nowMs, `told: ${what}`);
  }

  /** The self-fencing rule of docs/design.md section 5 was broken. */
  selfFence(nowMs: number, what: string): void {
    this.#fail(nowMs, `self-fencing: ${what}`);
  }

  /** The eviction rule of docs/design.md section 5: an incarnation's lease lapses before anyone evicts it. */
  evictedWithLease(nowMs: number, what: string): void {
    this.#fail(nowMs, `eviction: ${what}`);
  }

  /** A hold ended as expired before the expiry its last grant or refresh set (docs/design.md section 9, "TTL"). */
  expiredEarly(nowMs: number, what: string): void {
    this.#fail(nowMs, `ttl: ${what}`);
  }

  /** A superseded incarnation (a zombie) acted: renewed its lease, decided on evictions, or kept a waiter waiting. */
  zombie(nowMs: number, what: string): void {
    this.#fail(nowMs, `zombie: ${what}`);
  }

  /** META's promise was broken: a holder's meta did not reach a peer that heard past it, or an older one replaced it (test/sim/meta-check.ts). */
  meta(nowMs: number, what: string): void {
    this.#fail(nowMs, `meta: ${what}`);
  }

  /** Two views chosen for one epoch, or an ordinal given to two members (docs/reconfiguration.md A1, A4). */
  view(nowMs: number, what: string): void {
    this.#fail(nowMs, `view: ${what}`);
  }

  /** A peer runs at a protocol level its binary does not speak, or has a link up to a binary that does not speak it (rule P9; test/sim/level-check.ts). */
  levels(nowMs: number, what: string): void {
    this.#fail(nowMs, `levels: ${what}`);
  }

  /** Invariant 4: requests neither granted, refused, cancelled nor ended by the bound. */
  stuck(nowMs: number, refs: readonly string[]): void {
    if (refs.length > 0) this.#fail(nowMs, `liveness: ${refs.length} request(s) stuck: ${refs.slice(0, 8).join('; ')}`);
  }

  #checkExclusiveOrder(h: Hold, nowMs: number): void {
    const last = this.#lastExclusive.get(h.lock);
    if (last !== undefined) {
      if (h.token <= last.token) {
        this.#fail(nowMs, `${h.lock}: exclusive token ${h.token} of ${describe(h)} not above the previous grant's ${last.token} (ref ${last.ref})`);
      }
      if (!precedes(last, h)) {
        this.#fail(nowMs, `${h.lock}: exclusive grant ${describe(h)} out of (ts, peer) order after ref ${last.ref} (p${last.peer} ts=${last.ts})`);
      }
    }
    this.#lastExclusive.set(h.lock, { ts: h.ts, peer: h.peer, ordinal: h.ordinal, token: h.token, ref: h.ref });
  }

  /**
   * Invariant 1. Exclusive: alone. Shared: only beside shared. Semaphore: only beside
   * semaphore holders, and for every semaphore holder h, the permits of the holders whose
   * request precedes h's in the (ts, peer) order, plus h's own, are at most h.limit. That is
   * exactly what the design promises: h was admitted when the permits of every request ahead
   * of it (granted or not) plus its own fit in its own limit, and the ack rule over FIFO
   * links guarantees every earlier request still held was in h's queue at that moment.
   * Holders after h are bounded by their own limits, not by h's (the canal-lock case).
   */
  #checkHolders(lock: string, nowMs: number): void {
    const all = this.#holders.get(lock);
    if (all === undefined || all.size < 2) return;
    const holders = [...all.values()].filter((h) => this.validity(h, nowMs));
    if (holders.length < 2) return;
    const first = holders[0];
    if (first === undefined) return;
    const mixed = holders.find((h) => h.mode !== first.mode);
    if (mixed !== undefined) {
      this.#fail(nowMs, `${lock}: modes mixed: ${describe(first)} and ${describe(mixed)}`);
      return;
    }
    if (first.mode === 'exclusive') {
      this.#fail(nowMs, `${lock}: ${holders.length} exclusive holders: ${holders.map(describe).join(', ')}`);
      return;
    }
    if (first.mode === 'semaphore') this.#checkPermits(lock, holders, nowMs);
  }

  #checkPermits(lock: string, holders: Hold[], nowMs: number): void {
    holders.sort((a, b) => (precedes(a, b) ? -1 : 1));
    let permits = 0;
    for (const h of holders) {
      permits += h.permits;
      if (permits > h.limit) {
        this.#fail(nowMs, `${lock}: ${permits} permits held up to ${describe(h)}, above its limit: ${holders.map(describe).join(', ')}`);
        return;
      }
    }
  }

  #fail(nowMs: number, what: string): void {
    this.violations.push(`t=${nowMs}ms ${what}`);
  }
}
