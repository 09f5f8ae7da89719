/**
 * The checkers of a fault run (docs/design.md section 9, invariants 1, 2 and 4).
 *
 * What "valid" means, honestly. A client on peer p observes its hold from the grant answer
 * to the sending of its release. The hold is only guaranteed exclusive while p holds its
 * lease (docs/design.md section 5): once p is paused or cut from the majority, the others may
 * evict it after evict_ms and grant the lock again, while p's client, which has not yet
 * tried to release, still believes it holds. That is no violation; it is what fencing is
 * for. So the overlap and token-order checks use only holds that are valid by two rules:
 *   1. the release answered 200 (the peer still held the hold when it released it; a hold
 *      ended by lease loss, eviction, TTL or a dead peer answers 404 or nothing), and
 *   2. the peer had no fault window (FaultWindows: paused, dead, or without a majority of
 *      open outgoing links) at any instant of the observed hold.
 * Every other hold is covered by the fenced register instead: it refuses lower tokens on
 * reads and writes, so a stale holder's read-modify-write is refused, and the register must
 * never lose an update. And since a valid hold was exclusive from its grant to its release,
 * any refusal of one of ITS accesses means a higher token was granted while it held (or
 * before it, out of order): that is a violation too.
 *
 * Observed intervals lie inside the real holds (the grant precedes its answer; the release
 * follows its sending), so two overlapping observed valid holds prove a real overlap.
 */
import type { HoldRecord } from '../../src/tools/history-check.js';
import { checkHistory } from '../../src/tools/history-check.js';
import type { FaultWindows } from './fault-windows.js';
import type { FencedRegister } from './fenced-register.js';
import type { Op } from './history.js';
import { describeOp } from './history.js';

/** Counts and findings of the safety checks. */
export interface SafetyReport {
  readonly grants: number;
  readonly validHolds: number;
  readonly violations: string[];
}

/** The holds the checker trusts to be exclusive (rules 1 and 2 above). */
export function validHolds(history: readonly Op[], windows: FaultWindows): Op[] {
  return history.filter((op) => op.outcome === 'granted' && op.end === 'released' && op.grantedAt !== null && op.releasedAt !== null
    && !windows.degradedDuring(op.peer, op.grantedAt, op.releasedAt));
}

function toRecord(op: Op): HoldRecord {
  if (op.token === null || op.grantedAt === null || op.releasedAt === null) throw new Error('a valid hold has a token and both times');
  return { lock: op.lock, token: op.token, mode: 'exclusive', limit: 1, permits: 1, start: op.grantedAt, end: op.releasedAt, who: `${op.client}@${op.peer}` };
}

/** Two grants of one lock with one token: a token names one grant, valid or not. */
function duplicateTokens(history: readonly Op[]): string[] {
  const seen = new Map<string, Op>();
  const out: string[] = [];
  for (const op of history) {
    if (op.token === null) continue;
    const key = `${op.lock}/${op.token}`;
    const first = seen.get(key);
    if (first !== undefined) out.push(`token granted twice: ${describeOp(first)} and ${describeOp(op)}`);
    else seen.set(key, op);
  }
  return out;
}

/** Runs every safety check over a finished history. */
export function checkSafety(history: readonly Op[], windows: FaultWindows, registers: readonly FencedRegister[]): SafetyReport {
  const valid = validHolds(history, windows);
  const violations = [
    // Overlaps of valid holds, and tokens not increasing in (observed) grant order among them.
    ...checkHistory(valid.map(toRecord)),
    ...duplicateTokens(history),
    ...registers.flatMap((r) => r.violations()),
    ...valid.filter((op) => op.writesRejected > 0).map((op) => `fenced register refused an access of a valid hold (a higher token was granted first): ${describeOp(op)}`),
  ];
  return { grants: history.filter((op) => op.outcome === 'granted').length, validHolds: valid.length, violations };
}

/** Ops of one lock whose activity intersects [start, end]: the excerpt printed beside a violation. */
export function excerpt(history: readonly Op[], lock: string, start: number, end: number): string[] {
  return history
    .filter((op) => op.lock === lock && op.invokedAt <= end && (op.releaseDoneAt ?? op.completedAt) >= start)
    .map(describeOp);
}
