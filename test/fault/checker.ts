/**
 * The checkers of a fault run (docs/design.md section 9, invariants 1, 2 and 4).
 *
 * Every granted hold is checked, whatever faults its peer had, over the interval in which it
 * was surely VALID: from the grant answer to `validUntil` below. A hold is valid while its
 * peer holds its lease (README, Guarantees), and the cluster may hand its lock to someone
 * else only after the peer sent the release of that hold, or after the peer's lease lapsed
 * (eviction, docs/design.md section 5), or once the peer process is dead (a restarted incarnation's
 * peers drop the old one's requests). So the interval ends at the earliest of:
 *   1. the sending of the client's release: the client relies on the hold no longer. When
 *      that release answered 200, this is the end: the peer still held the hold when it
 *      read the release, after it was sent, and a self-fencing peer holds nothing without
 *      its lease; another grant before that is a violation (or a loss the peer never told).
 * For a hold that ended otherwise (404 with a reason, or no answer), it ended earlier, at an
 * instant the client does not see; its interval also ends at the earliest of:
 *   2. the TTL: the peer's TTL timer starts at the grant, after the request was sent, so the
 *      hold cannot expire before invokedAt + ttl_ms (a few ms less for timer rounding);
 *   3. the death of its peer process (kill -9, FaultWindows.downAfter): a dead process holds
 *      no lease;
 *   4. the lease floor: the peer's lease cannot lapse, so the peer cannot end the hold for
 *      lease_lost nor legally be evicted, before the floor proven by the lease samples
 *      (lease-probe.ts): a sample answered before the request, or answered while the floor
 *      so far had not passed (the lease had held without a gap since the grant), proves the
 *      lease until its validUntil; less one heartbeat_ms, because when another peer
 *      restarts or is evicted, this peer forgets that peer's echoes and its lease end can
 *      move back to the next freshest echo (fresh within a heartbeat while the others are
 *      healthy: the nemesis injects one fault at a time).
 *
 * Why the floor, and not "fault start + lease_ms * (1 + clockRateMargin)". That sum is an
 * UPPER bound of how long a faulted peer may believe its lease; an interval checked for
 * overlap must lie INSIDE the real validity, or a correct cluster is flagged: a peer killed
 * and restarted after 1 s is legally replaced at once (its holds end at the kill, rule 3),
 * and a minority peer ends its holds for lease_lost when its lease lapses, about lease_ms
 * after the cut, and its release may reach the majority as soon as the partition heals (after
 * lease_ms), long before the upper bound. The upper bound is what the EVICTION rule must
 * respect (evict_ms > lease_ms * clockRateMargin + heartbeat_ms, src/config.ts), and since
 * eviction then follows the real lapse, the floor is sound too. On one host every process
 * reads one monotonic clock, so no clock-rate margin applies to the floor. A SIGSTOPped
 * peer's holds thus count as valid until its lease would lapse in real time (rule 4), since
 * nothing it sent and no eviction can free them earlier.
 *
 * Observed grant answers lie after the real grants, so two overlapping checked intervals
 * prove two valid holds at once. The fenced register covers the rest: it refuses lower
 * tokens on reads and writes, must never lose an update, and a refusal of an access made
 * before the hold's validUntil means a higher token was granted while it was valid.
 */
import type { HoldRecord } from '../../src/tools/history-check.js';
import { checkHistory } from '../../src/tools/history-check.js';
import type { FaultWindows } from './fault-windows.js';
import type { FencedRegister } from './fenced-register.js';
import type { Op } from './history.js';
import { describeOp } from './history.js';
import type { LeaseEvidence, LeaseSample } from './lease-probe.js';

/** How much earlier than ttl_ms after the request a TTL timer may fire (ms rounding of timers). */
const ttlSlackMs = 5;

/** What the checker knows besides the history. */
export interface CheckEvidence {
  readonly leases: LeaseEvidence;
  /** The ttl_ms every acquire asked for. */
  readonly ttlMs: number;
  readonly heartbeatMs: number;
}

/** Counts and findings of the safety checks. */
export interface SafetyReport {
  readonly grants: number;
  /** Holds checked for overlap (a non-empty valid interval). */
  readonly validHolds: number;
  /** Of those, holds whose peer had a fault window during the hold (excluded before issue 12). */
  readonly faultedHolds: number;
  readonly violations: string[];
}

/**
 * The lease floor of rule 4: until when the lease of the peer that granted a request sent
 * at `requestedAt` surely held without a gap, from `samples` in the order they were sent.
 */
export function leaseFloor(samples: readonly LeaseSample[], requestedAt: number): number {
  let floor = Number.NEGATIVE_INFINITY;
  for (const s of samples) {
    if (s.answeredAt <= requestedAt || s.answeredAt < floor) floor = Math.max(floor, s.validUntil);
    else break; // Evaluated after the floor: the lease may have lapsed and come back since.
  }
  return floor;
}

/** The end of the interval in which a granted hold was surely valid (rules 1-4 above). */
export function validUntil(op: Op, windows: FaultWindows, evidence: CheckEvidence): number {
  const released = op.releasedAt ?? Number.POSITIVE_INFINITY;
  if (op.end === 'released') return released;
  return Math.min(
    released,
    op.invokedAt + evidence.ttlMs - ttlSlackMs,
    windows.downAfter(op.peer, op.invokedAt),
    leaseFloor(evidence.leases.samplesOf(op.peer), op.invokedAt) - evidence.heartbeatMs,
  );
}

interface Checked {
  readonly op: Op;
  readonly start: number;
  readonly end: number;
}

function toRecord(c: Checked): HoldRecord {
  const { op } = c;
  if (op.token === null) throw new Error('a granted hold has a token');
  return { lock: op.lock, token: op.token, mode: op.mode, limit: op.limit, permits: op.permits, start: c.start, end: c.end, who: `${op.client}@${op.peer}` };
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

/** The granted holds with a non-empty valid interval. */
export function checkedHolds(history: readonly Op[], windows: FaultWindows, evidence: CheckEvidence): Checked[] {
  const out: Checked[] = [];
  for (const op of history) {
    if (op.outcome !== 'granted' || op.grantedAt === null) continue;
    const end = validUntil(op, windows, evidence);
    if (end > op.grantedAt) out.push({ op, start: op.grantedAt, end });
  }
  return out;
}

/** Runs every safety check over a finished history. */
export function checkSafety(history: readonly Op[], windows: FaultWindows, registers: readonly FencedRegister[], evidence: CheckEvidence): SafetyReport {
  const checked = checkedHolds(history, windows, evidence);
  const refused = checked.filter((c) => c.op.refusedAt !== null && c.op.refusedAt < c.end);
  const violations = [
    // Overlaps by mode, semaphore permits, and exclusive tokens increasing in grant order.
    ...checkHistory(checked.map(toRecord)),
    ...duplicateTokens(history),
    ...registers.flatMap((r) => r.violations()),
    ...refused.map((c) => `fenced register refused an access of a hold still valid (a higher token was granted first): ${describeOp(c.op)} valid until ${c.end.toFixed(0)}`),
  ];
  return {
    grants: history.filter((op) => op.outcome === 'granted').length,
    validHolds: checked.length,
    faultedHolds: checked.filter((c) => windows.degradedDuring(c.op.peer, c.start, c.end)).length,
    violations,
  };
}

/** Ops of one lock whose activity intersects [start, end]: the excerpt printed beside a violation. */
export function excerpt(history: readonly Op[], lock: string, start: number, end: number): string[] {
  return history
    .filter((op) => op.lock === lock && op.invokedAt <= end && (op.releaseDoneAt ?? op.completedAt) >= start)
    .map(describeOp);
}
