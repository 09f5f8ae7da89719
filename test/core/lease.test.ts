/**
 * Self-fencing leases (docs/design.md section 5): valid while a majority echoed a heartbeat sent
 * within lease_ms, measured from the send time.
 */
import { Members } from '../../src/core/members.js';
import { describe, expect, it } from 'vitest';
import { LeaseTracker } from '../../src/core/lease.js';

describe('LeaseTracker', () => {
  it('is valid with a majority of echoes and lapses lease_ms after the majority-th send time', () => {
    const lease = new LeaseTracker({ members: Members.first(0, 5), leaseMs: 1000 });
    expect(lease.valid(0)).toBe(false);
    lease.onEcho(1, 100);
    expect(lease.valid(150)).toBe(false);
    lease.onEcho(2, 200);
    expect(lease.valid(250)).toBe(true);
    expect(lease.validUntil()).toBe(1100);
    expect(lease.valid(1099)).toBe(true);
    expect(lease.valid(1100)).toBe(false);
  });

  it('measures from the send time, so a late echo cannot stretch the lease', () => {
    const lease = new LeaseTracker({ members: Members.first(0, 3), leaseMs: 1000 });
    lease.onEcho(1, 0);
    expect(lease.valid(999)).toBe(true);
    lease.onEcho(1, -5);
    expect(lease.validUntil()).toBe(1000);
  });

  it('forgets an evicted or restarted peer', () => {
    const lease = new LeaseTracker({ members: Members.first(0, 3), leaseMs: 1000 });
    lease.onEcho(1, 0);
    lease.forget(1);
    expect(lease.valid(1)).toBe(false);
  });

  it('keeps a learner\'s echo, counted once it is promoted: a promotion while a voter is down does not lapse the lease', () => {
    // Voters 0, 1, 2 (2 down: its echoes stopped long ago); 3 a learner that echoes.
    const lease = new LeaseTracker({ members: new Members(0, [0, 1, 2]), leaseMs: 1000 });
    lease.onEcho(1, 500);
    lease.onEcho(3, 500);
    expect(lease.validUntil()).toBe(1500);
    // 3 promoted: four voters, a majority of three: 0, 1 and 3's echo lent as a learner.
    lease.setMembers(new Members(0, [0, 1, 2, 3]));
    expect(lease.valid(600)).toBe(true);
    expect(lease.validUntil()).toBe(1500);
  });

  it('always holds in a single-peer cluster, never alone in a two-peer one', () => {
    expect(new LeaseTracker({ members: Members.first(0, 1), leaseMs: 1000 }).valid(1e9)).toBe(true);
    expect(new LeaseTracker({ members: Members.first(0, 2), leaseMs: 1000 }).valid(5)).toBe(false);
  });
});
