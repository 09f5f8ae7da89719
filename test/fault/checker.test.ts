/**
 * The fault-run checker on hand-made histories (issue 12): holds of faulted peers are
 * checked up to a sound bound of their validity instead of being excluded, and a correct
 * history with a paused or killed peer passes.
 */
import { describe, expect, it } from 'vitest';
import { checkSafety, leaseFloor } from './checker.js';
import type { CheckEvidence } from './checker.js';
import { FaultWindows } from './fault-windows.js';
import type { PeerStatus } from './fault-windows.js';
import type { HoldEnd, Op, OpMode } from './history.js';
import type { LeaseSample } from './lease-probe.js';

const exclusive: OpMode = { mode: 'exclusive', limit: 1, permits: 1 };

/** A granted hold: requested 10 ms before its grant answer, released at `releasedAt`. */
function hold(who: string, token: bigint, grantedAt: number, releasedAt: number, end: HoldEnd, more: Partial<Op> = {}): Op {
  const [client = '', peer = ''] = who.split('@');
  return {
    client, peer, lock: 'L', ...exclusive, invokedAt: grantedAt - 10, completedAt: grantedAt, outcome: 'granted', status: 200, token, id: `${who}-${token}`,
    grantedAt, releasedAt, releaseDoneAt: releasedAt + 5, end, reason: end === 'lost' ? 'lease_lost' : null, writesAccepted: 0, writesRejected: 0, refusedAt: null,
    ...more,
  };
}

/** Fault windows with the given peer changes at the given times. */
function windowsWith(changes: ReadonlyArray<[number, string, PeerStatus]>): FaultWindows {
  let t = 0;
  const w = new FaultWindows(['a', 'b', 'c'], () => t);
  for (const [at, id, status] of changes) {
    t = at;
    w.setPeer(id, status);
  }
  return w;
}

/** Peer a's lease, sampled at 50 ms (before its client's request): valid until at least 1100 ms. */
const samples: Readonly<Record<string, readonly LeaseSample[]>> = { a: [{ sentAt: 50, answeredAt: 52, validUntil: 1100 }] };
const evidence: CheckEvidence = { leases: { samplesOf: (p) => samples[p] ?? [] }, ttlMs: 3000, heartbeatMs: 100 };

describe('fault-run checker', () => {
  it('flags a grant made while a paused peer could still hold its lease (the old rule excluded that hold)', () => {
    // a is paused at 200 with a lease proven until 1100; b is granted at 700, long before an
    // eviction could be legal; a's client learns at 2000 that its hold was lost.
    const windows = windowsWith([[200, 'a', 'paused'], [3500, 'a', 'up']]);
    const history = [hold('a0@a', 10n, 100, 2000, 'lost'), hold('b0@b', 20n, 700, 720, 'released')];
    const report = checkSafety(history, windows, [], evidence);
    expect(report.violations).toHaveLength(1);
    expect(report.violations[0]).toContain('a0@a exclusive token 10 [100.0, 1000.0] overlaps b0@b exclusive token 20');
    expect(report.faultedHolds).toBe(1);
  });

  it('flags a grant beside a hold whose release answered 200, whatever faults its peer had (a twin)', () => {
    const windows = windowsWith([[150, 'a', 'twinned'], [2000, 'a', 'up']]);
    const history = [hold('a0@a', 10n, 100, 900, 'released'), hold('b0@b', 20n, 600, 650, 'released')];
    expect(checkSafety(history, windows, [], evidence).violations).toHaveLength(1);
  });

  it('passes a paused peer whose hold ends within its lease bound and is granted again after the eviction', () => {
    const windows = windowsWith([[200, 'a', 'paused'], [3500, 'a', 'up']]);
    const history = [hold('a0@a', 10n, 100, 2000, 'lost'), hold('b0@b', 20n, 3300, 3320, 'released')];
    const report = checkSafety(history, windows, [], evidence);
    expect(report.violations).toEqual([]);
    expect(report.validHolds).toBe(2); // Checked up to 1000 ms, not excluded.
  });

  it('passes a killed peer replaced by its restart before its lease would have lapsed: a dead process holds nothing', () => {
    const windows = windowsWith([[300, 'a', 'down'], [1100, 'a', 'up']]);
    const history = [hold('a0@a', 10n, 100, 1500, 'unanswered'), hold('b0@b', 20n, 1200, 1220, 'released')];
    expect(checkSafety(history, windows, [], evidence).violations).toEqual([]);
  });

  it('bounds a hold that expired by its TTL, counted from the request', () => {
    const windows = windowsWith([]);
    const long: CheckEvidence = { ...evidence, leases: { samplesOf: () => [{ sentAt: 0, answeredAt: 1, validUntil: 1e9 }] } };
    const zombie = hold('a0@a', 10n, 100, 5000, 'lost', { reason: 'expired' });
    expect(checkSafety([zombie, hold('b0@b', 20n, 3100, 3120, 'released')], windows, [], long).violations).toEqual([]);
    expect(checkSafety([zombie, hold('b0@b', 20n, 3000, 3120, 'released')], windows, [], long).violations).toHaveLength(1);
  });

  it('flags a fenced refusal only while the refused hold was surely valid', () => {
    const windows = windowsWith([[200, 'a', 'paused'], [3500, 'a', 'up']]);
    const early = hold('a0@a', 10n, 100, 2000, 'lost', { refusedAt: 800, writesRejected: 1 });
    const late = hold('a0@a', 10n, 100, 2000, 'lost', { refusedAt: 1900, writesRejected: 1 });
    expect(checkSafety([early], windows, [], evidence).violations).toHaveLength(1);
    expect(checkSafety([late], windows, [], evidence).violations).toEqual([]);
  });

  it('judges each semaphore holder by its own limit, in token order, and shared only beside shared', () => {
    const windows = windowsWith([]);
    const sem = (who: string, token: bigint, limit: number, permits: number): Op => hold(who, token, 100 + Number(token), 500, 'released', { mode: 'semaphore', limit, permits });
    // Canal lock: a limit-1 holder ahead of a limit-3 holder of 2 permits is legal (1+2 <= 3).
    expect(checkSafety([sem('a0@a', 1n, 1, 1), sem('b0@b', 2n, 3, 2)], windows, [], evidence).violations).toEqual([]);
    // The same two the other way round: the limit-1 holder has 2 permits ahead of it.
    expect(checkSafety([sem('b0@b', 1n, 3, 2), sem('a0@a', 2n, 1, 1)], windows, [], evidence).violations).toHaveLength(1);
    const shared = hold('c0@c', 3n, 110, 400, 'released', { mode: 'shared' });
    expect(checkSafety([hold('a0@a', 1n, 100, 400, 'released', { mode: 'shared' }), shared], windows, [], evidence).violations).toEqual([]);
    expect(checkSafety([sem('a0@a', 1n, 3, 1), shared], windows, [], evidence).violations).toHaveLength(1);
  });

  it('extends the lease floor only with samples evaluated before the floor so far had passed', () => {
    const s: LeaseSample[] = [
      { sentAt: 0, answeredAt: 2, validUntil: 900 },
      { sentAt: 200, answeredAt: 205, validUntil: 1150 },
      { sentAt: 1000, answeredAt: 1160, validUntil: 2000 }, // Answered after 1150: the lease may have lapsed.
    ];
    expect(leaseFloor(s, 100)).toBe(1150);
    expect(leaseFloor(s, 1200)).toBe(2000); // Requested after that answer: a grant then proves nothing older.
    expect(leaseFloor([], 100)).toBe(Number.NEGATIVE_INFINITY);
  });
});
