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
  /** When the release was sent (or the loss was noticed). */
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
  return `${r.who} ${r.mode} token ${r.token} [${r.start.toFixed(1)}, ${r.end.toFixed(1)}]`;
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

function checkSemaphore(lock: string, holds: readonly HoldRecord[], out: string[]): void {
  const sem = holds.filter((h) => h.mode === 'semaphore');
  for (const h of sem) {
    const live = sem.filter((o) => o.start <= h.start && h.start < o.end);
    const permits = live.reduce((s, o) => s + o.permits, 0);
    const limit = Math.max(...live.map((o) => o.limit));
    if (permits > limit) out.push(`lock ${lock}: ${permits} semaphore permits held at once, above every holder's limit (${limit}) at ${describe(h)}`);
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
