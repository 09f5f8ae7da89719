/**
 * The recorded history of a fault run: one entry per acquire a client invoked, completed
 * as the client observed it (times in ms on the test process's monotonic clock).
 */

/** How an acquire completed. */
export type AcquireOutcome =
  | 'granted'
  /** 423: not granted within timeout_ms (others held or waited ahead). */
  | 'timeout'
  /** 503: not decidable (peers unreachable, no lease, not synced, evicted). */
  | 'unavailable'
  /** No HTTP answer in time, or connection refused: the peer is dead or paused. */
  | 'no-answer'
  /** Any other status. */
  | 'error';

/** How a granted hold ended, as the client learned it from its release. */
export type HoldEnd =
  /** Release answered 200: the peer held the hold until the release. */
  | 'released'
  /** Release answered 404: the hold had ended before (reason: lease_lost, evicted, expired...). */
  | 'lost'
  /** No answer to the release: the peer died or stayed paused. */
  | 'unanswered';

/** The mode of a request as the HTTP API takes it (limit and permits only for semaphores). */
export interface OpMode {
  readonly mode: 'exclusive' | 'shared' | 'semaphore';
  readonly limit: number;
  readonly permits: number;
}

/** One operation of one client. */
export interface Op extends OpMode {
  readonly client: string;
  readonly peer: string;
  readonly lock: string;
  readonly invokedAt: number;
  completedAt: number;
  outcome: AcquireOutcome | null;
  status: number | null;
  token: bigint | null;
  id: string | null;
  /** When the 200 grant answer arrived. */
  grantedAt: number | null;
  /** When the release was sent. */
  releasedAt: number | null;
  releaseDoneAt: number | null;
  end: HoldEnd | null;
  /** The 404 reason, or the error message of a failed request. */
  reason: string | null;
  writesAccepted: number;
  writesRejected: number;
  /** When the fenced register first refused one of this hold's reads or writes. */
  refusedAt: number | null;
}

/** An op as one JSON line (tokens as decimal strings). */
export function opLine(op: Op): string {
  return JSON.stringify(op, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
}

/** A short human-readable line for reports. */
export function describeOp(op: Op): string {
  const grant = op.grantedAt === null ? '' : ` granted@${op.grantedAt.toFixed(0)} token ${op.token}`;
  const rel = op.releasedAt === null ? '' : ` release@${op.releasedAt.toFixed(0)}->${op.end ?? '?'}${op.reason === null ? '' : `(${op.reason})`}`;
  const mode = op.mode === 'exclusive' ? '' : op.mode === 'shared' ? ' shared' : ` semaphore ${op.permits}/${op.limit}`;
  return `${op.client}@${op.peer} ${op.lock}${mode} invoked@${op.invokedAt.toFixed(0)} ${op.outcome ?? 'pending'}${grant}${rel} writes +${op.writesAccepted}/-${op.writesRejected}`;
}
