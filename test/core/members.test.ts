/**
 * The members of a view by ordinal (src/core/members.ts), and the quorums of the core counted
 * over them when the ordinals have gaps (a member removed: docs/reconfiguration.md).
 */
import { describe, expect, it } from 'vitest';
import { LeaseTracker } from '../../src/core/lease.js';
import { Members } from '../../src/core/members.js';
import { Membership } from '../../src/core/membership.js';
import { PeerView } from '../../src/core/peer-view.js';

const X = { startMs: 1000, nonce: 7 };
const evictMs = 3000;

describe('Members', () => {
  it('counts majorities over the members, not over the ordinals', () => {
    const m = new Members(2, [0, 2, 5]);
    expect(m.size).toBe(3);
    expect(m.capacity).toBe(6);
    expect(m.majority).toBe(2);
    expect(m.isPair).toBe(false);
    expect(m.meetsEveryMajority).toBe(2);
    expect(m.others()).toEqual([0, 5]);
    expect(m.has(5)).toBe(true);
    expect(m.has(1)).toBe(false);
  });

  it('gives a config file of N peers the ordinals 0..N-1', () => {
    expect(Members.first(1, 4).all()).toEqual([0, 1, 2, 3]);
    expect(Members.first(0, 2).isPair).toBe(true);
    expect(Members.first(0, 1).isPair).toBe(true);
    expect(Members.first(0, 5).meetsEveryMajority).toBe(3);
    expect(Members.first(0, 2).meetsEveryMajority).toBe(1);
  });

  it('refuses ordinals out of order, repeated or out of range', () => {
    expect(() => new Members(0, [0, 0])).toThrow();
    expect(() => new Members(0, [2, 0])).toThrow();
    expect(() => new Members(0, [0, 1024])).toThrow();
    expect(() => new Members(1024, [0, 1])).toThrow();
    expect(() => new Members(0, [])).toThrow();
  });

  it('a learner or leaving peer counts majorities of the voters without itself', () => {
    const m = new Members(3, [0, 1, 2]);
    expect([m.voter, m.size, m.majority, m.capacity]).toEqual([false, 3, 2, 4]);
    expect(m.others()).toEqual([0, 1, 2]);
    const lease = new LeaseTracker({ members: m, leaseMs: 1000 });
    lease.onEcho(0, 100);
    expect(lease.valid(200)).toBe(false);
    lease.onEcho(2, 150);
    expect(lease.validUntil()).toBe(1100);
    expect(new LeaseTracker({ members: new Members(1, [0]), leaseMs: 1000 }).valid(5)).toBe(false);
  });
});

describe('quorums over ordinals with gaps', () => {
  it('the lease needs a majority of the members: one echo of three members, not two of six ordinals', () => {
    const lease = new LeaseTracker({ members: new Members(2, [0, 2, 5]), leaseMs: 1000 });
    lease.onEcho(5, 100);
    expect(lease.validUntil()).toBe(1100);
    expect(lease.silentPeers(1200)).toEqual([0, 5]);
    lease.onEcho(3, 900); // not a member: vouches for nothing
    expect(lease.validUntil()).toBe(1100);
  });

  it('a suspicion goes to the members only, and their majority evicts', () => {
    const m = new Membership({ members: new Members(0, [0, 3, 7]), evictMs, nowMs: 0 });
    m.heard(7, X, 0);
    const tick = m.tick(evictMs);
    expect(tick.flatMap((e) => (e.type === 'send' ? [e.to] : []))).toEqual([3]);
    const confirmed = m.onMessage(3, { t: 'confirm', peer: 7, inc: X, at: evictMs }, evictMs + 1);
    expect(confirmed.some((e) => e.type === 'evict' && e.peer === 7)).toBe(true);
  });

  it('the join rule counts the other members: two of four, with ordinals 1, 4, 6 beside this one', () => {
    const v = new PeerView(new Members(0, [0, 1, 4, 6]));
    expect(v.members()).toEqual([1, 4, 6]);
    v.admit(4, X);
    v.heard(4, 10);
    expect(v.joinedByQuorum).toBe(false);
    v.admit(6, X);
    v.heard(6, 10);
    expect(v.joinedByQuorum).toBe(true);
  });
});

describe('a view that changes', () => {
  it('the lease counts the new majority at once: one more member needs one more echo', () => {
    const lease = new LeaseTracker({ members: Members.first(0, 3), leaseMs: 1000 });
    lease.onEcho(1, 100);
    expect(lease.valid(500)).toBe(true);
    lease.setMembers(new Members(0, [0, 1, 2, 3]));
    expect(lease.valid(500)).toBe(false);
    lease.onEcho(3, 200);
    expect(lease.validUntil()).toBe(1100);
    lease.setMembers(new Members(0, [0, 3]));
    expect(lease.validUntil()).toBe(1200);
    lease.setMembers(new Members(0, [0]));
    expect(lease.valid(1e9)).toBe(true);
  });

  it('an added member is tracked and suspected once heard; a removed one still is, until forgotten', () => {
    const m = new Membership({ members: Members.first(0, 3), evictMs, nowMs: 0 });
    m.setMembers(new Members(0, [0, 1, 3]), 100, 1);
    m.heard(3, X, 100);
    m.heard(2, X, 100);
    const tick = m.tick(100 + evictMs);
    const sent = tick.flatMap((e) => (e.type === 'send' && e.msg.t === 'suspect' ? [[e.to, e.msg.peer]] : []));
    expect(sent).toEqual([[1, 2], [3, 2], [1, 3]]);
    m.forget(2);
    expect(m.silence(2, 0)).toBeNull();
    m.forget(3); // a member: kept
    expect(m.silence(3, 200 + evictMs)?.silentMs).toBe(evictMs + 100);
  });

  it('a learner is heard once met, never waited for; promoted, it is waited for; a leaving member is waited for until it leaves', () => {
    const v = new PeerView(Members.first(0, 3));
    v.setMembers(Members.first(0, 3), [], [3]);
    v.admit(3, X);
    expect([v.members(), v.listeners(), v.isLive(3, X)]).toEqual([[1, 2], [3], true]);
    v.setMembers(new Members(0, [0, 1, 3]), [2]);
    expect([v.members(), v.listeners()]).toEqual([[1, 2, 3], []]);
    expect(v.missingAcks(0)).toEqual([1, 2, 3]);
    v.leave(2);
    v.setMembers(new Members(0, [0, 1, 3]), [2]);
    expect(v.members()).toEqual([1, 3]);
    v.setMembers(new Members(0, [0, 1, 3]));
    expect(v.members()).toEqual([1, 3]);
  });
});

describe('a leaving member', () => {
  it('is tracked from the start by a new incarnation, and evicted by a majority of the voters (F64)', () => {
    const m = new Membership({ members: new Members(0, [0, 1]), leaving: [2], evictMs, nowMs: 0 });
    m.heard(2, X, 0);
    const tick = m.tick(evictMs);
    expect(tick.flatMap((e) => (e.type === 'send' && e.msg.t === 'suspect' ? [[e.to, e.msg.peer]] : []))).toEqual([[1, 2]]);
    const out = m.onMessage(1, { t: 'confirm', peer: 2, inc: X, at: evictMs }, evictMs + 1);
    expect(out.some((e) => e.type === 'evict' && e.peer === 2)).toBe(true);
  });
});
