/**
 * Checks a recorded history of holds as clients observed them (docs/design.md section 9,
 * invariants 1 and 2). A client sees a grant after the peer granted it and sends its
 * release before the peer releases it, so each observed interval lies inside the real
 * hold: two observed intervals that overlap prove two real holds overlapped.
 */

/** One hold as a client observed it (times in ms on one clock). */
export interface HoldRecord {
  readonly lock: string;
  readonly token: bigint;
  readonly mode: string;
  readonly limit: number;
  readonly permits: number;
  /** When the grant answer arrived. */
  readonly start: number;
  /**
   * Until when the hold was surely still valid: when the release was sent, or an earlier
   * bound when the hold ended otherwise (test/fault/checker.ts says how it is derived).
   */
  readonly end: number;
  readonly who: string;
}

function byLock(records: readonly HoldRecord[]): Map<string, HoldRecord[]> {
  const out = new Map<string, HoldRecord[]>();
  for (const r of records) {
    const list = out.get(r.lock) ?? [];
    list.push(r);
    out.set(r.lock, list);
  }
  return out;
}

function describe(r: HoldRecord): string {
  const permits = r.mode === 'semaphore' ? ` ${r.permits}/${r.limit}` : '';
  return `${r.who} ${r.mode}${permits} token ${r.token} [${r.start.toFixed(1)}, ${r.end.toFixed(1)}]`;
}

function overlaps(a: HoldRecord, b: HoldRecord): boolean {
  return a.start < b.end && b.start < a.end;
}

function checkExclusive(lock: string, holds: readonly HoldRecord[], out: string[]): void {
  const exclusive = holds.filter((h) => h.mode === 'exclusive').sort((a, b) => a.start - b.start);
  for (const e of exclusive) {
    for (const other of holds) {
      if (other !== e && overlaps(e, other) && (other.mode !== 'exclusive' || other.start >= e.start)) {
        out.push(`lock ${lock}: ${describe(e)} overlaps ${describe(other)}`);
      }
    }
  }
  for (let i = 1; i < exclusive.length; i++) {
    const prev = exclusive[i - 1];
    const cur = exclusive[i];
    if (prev !== undefined && cur !== undefined && cur.token <= prev.token) {
      out.push(`lock ${lock}: token order broken: ${describe(prev)} then ${describe(cur)}`);
    }
  }
}

/**
 * Semaphore holds: only beside semaphore holds, and for every holder h, the permits of the
 * holders whose request precedes h's (token order is request order: tokens are (ts, peer)),
 * plus h's own, are at most h.limit. That is the rule the peers grant by (src/core/modes.ts)
 * and the one test/sim/checker.ts checks: holders after h are bounded by their own limits,
 * not by h's (the canal-lock case). The set of holds live together only grows when one
 * starts, so checking at every start covers every instant.
 */
function checkSemaphore(lock: string, holds: readonly HoldRecord[], out: string[]): void {
  const sem = holds.filter((h) => h.mode === 'semaphore');
  for (const s of sem) {
    const live = sem.filter((o) => o.start <= s.start && s.start < o.end).sort((a, b) => (a.token < b.token ? -1 : a.token > b.token ? 1 : 0));
    let permits = 0;
    for (const h of live) {
      permits += h.permits;
      if (permits > h.limit) {
        out.push(`lock ${lock}: ${permits} semaphore permits held up to ${describe(h)}, above its limit ${h.limit}: ${live.map(describe).join(', ')}`);
        break;
      }
    }
  }
  for (const h of holds) {
    if (h.mode === 'shared' && sem.some((s) => overlaps(s, h))) out.push(`lock ${lock}: shared ${describe(h)} beside a semaphore hold`);
  }
}

/** Every violation found in the history (empty when it is clean). */
export function checkHistory(records: readonly HoldRecord[]): string[] {
  const out: string[] = [];
  for (const [lock, holds] of byLock(records)) {
    checkExclusive(lock, holds, out);
    checkSemaphore(lock, holds, out);
  }
  return out;
}
