/**
 * Changes of the view between real cores (docs/reconfiguration.md, rules M2 to M6), each
 * interleaving stated by hand (test/core/harness.ts): the view lock's head acks, the holder's
 * view, a joiner, a removed member that leaves after its releases.
 */
import { describe, expect, it } from 'vitest';
import { viewLock } from '../../src/core/messages.js';
import type { AgreedView, ViewChange } from '../../src/core/view.js';
import { ViewChanges } from '../../src/core/view-changes.js';
import { applyChange, firstView, membersOf } from '../../src/core/view.js';
import { Net, outcomes, spec } from './harness.js';

const v0 = firstView(['a', 'b', 'c'].map((id, i) => ({ id, ws: `ws://127.0.0.1:${7000 + i}`, http: `127.0.0.1:${8000 + i}` })), 10);
const addD: ViewChange = { op: 'add', id: 'd', ws: 'ws://127.0.0.1:7003', http: '127.0.0.1:8003' };

function next(v: AgreedView, change: ViewChange): AgreedView {
  const out = applyChange(v, change);
  if (typeof out === 'string') throw new Error(out);
  return out;
}

/** The REQUESTs queued from `from` to `to`. */
function requestsFrom(net: Net, from: number, to: number): string[] {
  return net.pending(from, to).flatMap((p) => p.m.filter((m) => m.t === 'req').map((m) => m.t));
}

/** Three peers of v0, joined; peer `holder` holds the view lock (ref 100). */
function holding(holder = 0): Net {
  const net = new Net(3, { view: v0 });
  net.joinAll();
  net.acquire(holder, 100, viewLock);
  expect(net.settle()).toEqual([`p${holder} granted 100`]);
  return net;
}

describe('changes of the view', () => {
  it('adds a learner, which syncs through the state transfers and requests nothing until a second change promotes it', () => {
    const net = holding();
    const v1 = next(v0, addD);
    net.step(0, { type: 'propose', view: v1 });
    expect(net.machine(0).viewAcked).toBe(false);
    expect(net.machine(0).proposal?.own).toBe(true);
    net.settle();
    expect([0, 1, 2].map((p) => net.machine(p).clusterView?.epoch)).toEqual([1, 1, 1]);
    expect(net.machine(0).viewAcked).toBe(true);
    expect(net.machine(1).members.size).toBe(3);
    // Rule N5: a learner is in no ack set, met or not.
    net.acquire(1, 1, 'x');
    expect(net.settle()).toEqual(['p1 granted 1']);
    const first = net.machine(1).queue('x')[0]?.token ?? 0n;
    net.release(0, 100);
    net.settle();
    net.restart(3, 5, 0, v1);
    for (const p of [0, 1, 2]) net.join(p, 3);
    net.settle();
    expect(net.machine(3).synced).toBe(true);
    expect(net.machine(3).queue('x').map((e) => e.peer)).toEqual([1]);
    net.acquire(3, 7, 'x');
    expect(net.settle()).toEqual([]);
    expect(net.pending(3, 0)).toEqual([]);
    net.acquire(0, 101, viewLock);
    expect(net.settle()).toEqual(['p0 granted 101']);
    net.step(0, { type: 'propose', view: next(v1, { op: 'promote', id: 'd' }) });
    expect(net.settle()).toEqual([]);
    expect(net.machine(1).members.size).toBe(4);
    net.release(1, 1);
    expect(net.settle()).toEqual(['p3 granted 7']);
    // Its request was stamped above everything it received: its token is above the one before.
    const held = net.machine(0).queue('x')[0];
    expect(held?.peer).toBe(3);
    expect((held?.token ?? 0n) > first).toBe(true);
    expect(Number((held?.token ?? 0n) % 1024n)).toBe(3);
  });

  it('a promoted voter requests nothing until every member of its ack set sent it the view that promotes it (F67)', () => {
    const net = holding();
    const v1 = next(v0, addD);
    net.step(0, { type: 'propose', view: v1 });
    net.settle();
    net.release(0, 100);
    net.settle();
    net.restart(3, 5, 0, v1);
    for (const p of [0, 1, 2]) net.join(p, 3);
    net.settle();
    net.acquire(0, 101, viewLock);
    expect(net.settle()).toEqual(['p0 granted 101']);
    net.step(0, { type: 'propose', view: next(v1, { op: 'promote', id: 'd' }) });
    for (const p of [1, 2]) net.deliver(0, p); // ACCEPT
    for (const p of [1, 2]) net.deliver(p, 0); // ACCEPTED: chosen, VIEW out
    while (net.pending(0, 3).length > 0) net.deliver(0, 3); // peer 3 is a voter now; peer 2 is still at the epoch before
    expect(net.machine(3).members.voter).toBe(true);
    net.acquire(3, 7, 'x');
    expect([0, 1, 2].flatMap((p) => requestsFrom(net, 3, p))).toEqual([]);
    while (net.pending(0, 1).length > 0) net.deliver(0, 1);
    while (net.pending(1, 3).length > 0) net.deliver(1, 3);
    expect([0, 1, 2].flatMap((p) => requestsFrom(net, 3, p))).toEqual([]);
    while (net.pending(0, 2).length > 0) net.deliver(0, 2);
    while (net.pending(2, 3).length > 0) net.deliver(2, 3);
    expect(requestsFrom(net, 3, 2)).toEqual(['req']);
    expect(net.settle()).toEqual(['p3 granted 7']);
  });

  it('removes a live member: its hold ends "removed", its release comes before its LEAVE, and the others stop waiting for it', () => {
    const net = new Net(3, { view: v0 });
    net.joinAll();
    net.acquire(2, 9, 'a');
    expect(net.settle()).toEqual(['p2 granted 9']);
    net.acquire(0, 100, viewLock);
    expect(net.settle()).toEqual(['p0 granted 100']);
    const v1 = next(v0, { op: 'remove', id: 'c' });
    net.step(0, { type: 'propose', view: v1 });
    net.deliver(0, 1); // ACCEPT
    net.deliver(1, 0); // ACCEPTED: 2 of 3 voters, chosen; VIEW goes out
    expect(net.machine(0).proposal?.chosen).toBe(true);
    net.deliver(0, 1); // peer 1 has v1 first: c is out of its majorities, not yet out of its ack set
    expect(net.machine(1).members.size).toBe(2);
    net.acquire(1, 1, 'a');
    net.deliver(0, 2); // ACCEPT (too late to count)
    expect(outcomes(net.deliver(0, 2))).toEqual(['ended 9 removed']);
    expect(net.machine(2).removed).toBe(true);
    expect(net.pending(2, 1)[0]?.m.map((m) => m.t)).toEqual(['rel', 'leave']);
    expect(net.settle()).toEqual(['p1 granted 1']);
    expect(net.machine(1).view()).toEqual([0]);
    expect(net.machine(0).viewAcked).toBe(true);
    net.acquire(0, 2, 'b');
    expect(net.settle()).toEqual(['p0 granted 2']);
  });

  it('a LEAVE that comes before the view removing its sender counts once the view comes; a restarted member learns LEFT in the state transfer (F72)', () => {
    const net = holding();
    const v1 = next(v0, { op: 'remove', id: 'c' });
    net.step(0, { type: 'propose', view: v1 });
    net.deliver(0, 2); // ACCEPT
    net.deliver(2, 0); // ACCEPTED: chosen, VIEW out
    net.deliver(0, 2); // peer 2 applies its removal: releases, LEAVE
    while (net.pending(2, 1).length > 0) net.deliver(2, 1); // its LEAVE reaches peer 1 before any view
    expect(net.machine(1).view()).toEqual([0, 2]);
    while (net.pending(0, 1).length > 0) net.deliver(0, 1);
    expect(net.machine(1).view()).toEqual([0]);
    net.settle();
    net.restart(1, 50, 0, v1); // a new incarnation of peer 1 counts by v1: it would wait for peer 2
    expect(net.machine(1).view()).toEqual([0, 2]);
    net.join(0, 1);
    net.settle();
    expect(net.machine(1).view()).toEqual([0]);
    expect(net.machine(1).synced).toBe(true);
  });

  it('a request that waits only for a member that left is issued when LEFT comes (simulator seed 7 --changes --net link)', () => {
    const net = holding();
    const v1 = next(v0, { op: 'remove', id: 'c' });
    net.step(0, { type: 'propose', view: v1 });
    net.deliver(0, 1);
    net.deliver(1, 0); // chosen at peer 0; peer 2 has not heard of it yet
    net.restart(1, 50, 0, v1); // a new incarnation of peer 1 counts by v1: it waits for peer 2 too
    net.acquire(1, 7, 'b');
    net.join(0, 1);
    while (net.pending(0, 1).length > 0 || net.pending(1, 0).length > 0) {
      if (net.pending(0, 1).length > 0) net.deliver(0, 1);
      if (net.pending(1, 0).length > 0) net.deliver(1, 0);
    }
    expect(net.machine(1).explain(7)).toEqual({ state: 'pending', position: 0, missingPeers: [2] });
    while (net.pending(0, 2).length > 0) net.deliver(0, 2); // peer 2 applies its removal: LEAVE
    while (net.pending(2, 0).length > 0) net.deliver(2, 0); // peer 0 passes LEFT on to peer 1
    expect(net.settle()).toEqual(['p1 granted 7']);
  });

  it('a member that hears a LEAVE passes LEFT on to every peer it met (F74)', () => {
    const net = holding();
    const v1 = next(v0, { op: 'remove', id: 'c' });
    net.step(0, { type: 'propose', view: v1 });
    net.deliver(0, 1);
    net.deliver(1, 0); // chosen at peer 0
    while (net.pending(0, 1).length > 0) net.deliver(0, 1); // peer 1 applies v1
    while (net.pending(0, 2).length > 0) net.deliver(0, 2); // peer 2 applies its removal: LEAVE to 0 and 1
    while (net.pending(2, 0).length > 0) net.deliver(2, 0); // its LEAVE reaches peer 0 only
    expect(net.pending(0, 1).flatMap((p) => p.m.map((m) => m.t))).toContain('left');
    while (net.pending(0, 1).length > 0) net.deliver(0, 1);
    expect(net.machine(1).view()).toEqual([0]);
  });

  it('the holder counts its view applied by a peer only when the peer passed it back, never on a later clock alone (F77)', () => {
    const net = holding();
    net.step(0, { type: 'propose', view: next(v0, addD) });
    net.deliver(0, 1);
    net.deliver(1, 0); // chosen: VIEW queued to peers 1 and 2
    for (const p of [1, 2]) net.step(0, { type: 'packet', from: p, inc: net.inc(p), packet: { c: 10_000 + p, m: [] } });
    expect(net.machine(0).viewAcked).toBe(false);
    net.settle();
    expect(net.machine(0).viewAcked).toBe(true);
  });

  it('grants the view lock only once every peer head-acked: a peer that still has the previous holder at its head holds it back', () => {
    const net = holding(1);
    net.acquire(0, 100, viewLock);
    net.release(1, 100);
    net.deliver(1, 0); // the release reaches peer 0, not yet peer 2
    while (net.pending(0, 2).length > 0) net.deliver(0, 2);
    const fromTwo = net.pending(2, 0).flatMap((p) => p.m.map((m) => m.t));
    expect(fromTwo).not.toContain('hack');
    while (net.pending(2, 0).length > 0) expect(outcomes(net.deliver(2, 0))).toEqual([]);
    expect(net.settle()).toEqual(['p0 granted 100']);
  });

  it('the next holder proposes the view its predecessor had accepted by a majority, not its own (the predecessor died before anyone knew)', () => {
    const net = holding(1);
    const v1 = next(v0, addD);
    net.step(1, { type: 'propose', view: v1 });
    net.deliver(1, 2); // peer 2 accepts: with peer 1, a majority; the ACCEPTED never reaches peer 1
    for (const p of [0, 2]) net.step(p, { type: 'evicted', peer: 1, inc: net.inc(1) });
    net.acquire(0, 100, viewLock);
    expect(net.settle().filter((o) => !o.startsWith('p1'))).toEqual(['p0 granted 100']);
    net.step(0, { type: 'propose', view: next(v0, { op: 'remove', id: 'c' }) });
    expect(net.machine(0).proposal?.own).toBe(false);
    net.settle();
    expect([0, 2].map((p) => net.machine(p).clusterView?.members.at(-1)?.id)).toEqual(['d', 'd']);
    expect([0, 2].map((p) => net.machine(p).clusterView?.epoch)).toEqual([1, 1]);
  });

  it('a holder that heard too few promises proposes nothing, and an acceptor refuses an ACCEPT below its promise', () => {
    const net = holding(1);
    net.acquire(0, 100, viewLock); // behind peer 1's: peer 2 promises peer 1's ballot only
    net.settle();
    net.step(2, { type: 'packet', from: 0, inc: net.inc(0), packet: { c: 1, m: [{ t: 'accept', ts: 1, view: next(v0, addD) }] } });
    expect(net.machine(2).clusterView?.epoch).toBe(0);
    expect(net.pending(2, 0).flatMap((p) => p.m.map((m) => m.t))).not.toContain('accepted');
    const changes = new ViewChanges(v0, 10);
    for (const from of [1, 2]) changes.onHeadAck(from, { t: 'hack', ts: 50, view: v0, speaks: 10, promised: from === 1, accepted: null });
    expect(changes.propose(50, next(v0, addD), membersOf(v0, 0))).not.toBeNull();
    const refused = new ViewChanges(v0, 10);
    for (const from of [1, 2]) refused.onHeadAck(from, { t: 'hack', ts: 50, view: v0, speaks: 10, promised: false, accepted: null });
    expect(refused.propose(50, next(v0, addD), membersOf(v0, 0))).toBeNull();
    expect(refused.proposal).toBeNull();
  });

  it('a new incarnation of a member its view removes is removed from the start: it requests nothing (a rejoin after its removal)', () => {
    const net = holding();
    net.step(0, { type: 'propose', view: next(v0, { op: 'remove', id: 'c' }) });
    net.settle();
    const v1 = net.machine(0).clusterView;
    if (v1 === null) throw new Error('no view');
    expect(net.machine(2).removed).toBe(true);
    // p2 rejoins (an eviction, a link overflow): its new core starts from the view that removes it.
    net.restart(2, 50, 0, v1);
    for (const p of [0, 1]) net.join(p, 2);
    net.settle();
    expect(net.machine(2).removed).toBe(true);
    net.acquire(2, 9, 'x');
    expect(net.settle()).toEqual([]);
    expect(requestsFrom(net, 2, 0)).toEqual([]);
    expect(net.machine(0).queue('x')).toEqual([]);
  });

  it('counts no vote of a member whose data dir was replaced, its own included once a member tells it so (F70, F76)', () => {
    const promiseFrom = (c: ViewChanges, from: number, replaced = false): void => {
      c.onHeadAck(from, { t: 'hack', ts: 50, view: v0, speaks: 10, promised: true, accepted: null, ...(replaced ? { replaced: true as const } : {}) });
    };
    // p1 runs on another data dir than the one it voted with: its promise does not count.
    const holder = new ViewChanges(v0, 10);
    holder.trustAcceptor(1, false);
    promiseFrom(holder, 1);
    expect(holder.propose(50, next(v0, addD), membersOf(v0, 0))).toBeNull();
    promiseFrom(holder, 2);
    expect(holder.propose(50, next(v0, addD), membersOf(v0, 0))).not.toBeNull();
    // Nor its acceptance: p2's makes the majority with the holder's own.
    expect(holder.onAccepted(1, { t: 'accepted', ts: 50, epoch: 1 }, membersOf(v0, 0))).toBeNull();
    expect(holder.onAccepted(2, { t: 'accepted', ts: 50, epoch: 1 }, membersOf(v0, 0))).toEqual(next(v0, addD));
    // The replaced member, as holder, is told so in a head ack: its own vote no longer counts.
    const wiped = new ViewChanges(v0, 10);
    promiseFrom(wiped, 1, true);
    expect(wiped.propose(50, next(v0, addD), membersOf(v0, 0))).toBeNull();
    promiseFrom(wiped, 2);
    expect(wiped.propose(50, next(v0, addD), membersOf(v0, 0))).not.toBeNull();
    expect(wiped.onAccepted(1, { t: 'accepted', ts: 50, epoch: 1 }, membersOf(v0, 0))).toBeNull();
    expect(wiped.onAccepted(2, { t: 'accepted', ts: 50, epoch: 1 }, membersOf(v0, 0))).toEqual(next(v0, addD));
    // A member tells a replaced head so in its head ack.
    const teller = new ViewChanges(v0, 10);
    teller.trustAcceptor(0, false);
    expect(teller.headAck({ ts: 50, peer: 0 }, 1, () => true)?.msg.replaced).toBe(true);
  });

  it('a holder whose next proposal heard too few promises shows no proposal, not its previous chosen one (simulator seed 1 --changes)', () => {
    const changes = new ViewChanges(v0, 10);
    for (const from of [1, 2]) changes.onHeadAck(from, { t: 'hack', ts: 50, view: v0, speaks: 10, promised: true, accepted: null });
    const v1 = next(v0, addD);
    expect(changes.propose(50, v1, membersOf(v0, 0))).not.toBeNull();
    expect(changes.onAccepted(1, { t: 'accepted', ts: 50, epoch: 1 }, membersOf(v0, 0))).toEqual(v1);
    changes.apply(v1);
    // The next change: the voters promised a rival's ballot, so the holder must ask again. A
    // stale proposal (own, chosen, at epoch 1) read as this one's made the runtime report the
    // change made (runtime/view-change.ts) though it was never proposed.
    for (const from of [1, 2]) changes.onHeadAck(from, { t: 'hack', ts: 60, view: v1, speaks: 10, promised: false, accepted: null });
    expect(changes.propose(60, next(v1, { op: 'remove', id: 'c' }), membersOf(v1, 0))).toBeNull();
    expect(changes.proposal).toBeNull();
  });

  it('a learner removed before its host joined is not let in: its handshake reaches the core, which counts it for nothing (simulator seed 27 --changes)', () => {
    const net = holding();
    const v1 = next(v0, addD);
    net.step(0, { type: 'propose', view: v1 });
    net.settle();
    net.release(0, 100);
    net.acquire(0, 101, viewLock);
    expect(net.settle()).toEqual(['p0 granted 101']);
    net.step(0, { type: 'propose', view: next(v1, { op: 'remove', id: 'd' }) });
    net.settle();
    expect([0, 1, 2].map((p) => net.machine(p).clusterView?.epoch)).toEqual([2, 2, 2]);
    // d's host starts from the ticket of the add (view 1) and its link is admitted: the core
    // asserted 'joined peer is in the view' (an assertion reached from the network).
    net.restart(3, 5, 0, v1);
    expect(() => net.join(1, 3)).not.toThrow();
    expect(net.machine(1).view()).toEqual([0, 2]);
    expect(net.machine(1).incarnation(3)).toBeUndefined();
    net.acquire(1, 1, 'x');
    expect(net.settle()).toEqual(['p1 granted 1']);
  });

  it('jumps to a chosen view several epochs ahead (a peer down through several changes), and ignores an older one and a LEAVE from a member', () => {
    const pair = firstView(v0.members.slice(0, 2), 10);
    const net = new Net(2, { view: pair });
    net.joinAll();
    const v1 = next(pair, addD);
    const v2 = next(v1, { op: 'remove', id: 'd' });
    net.step(0, { type: 'packet', from: 1, inc: net.inc(1), packet: { c: 50, m: [{ t: 'view', view: v2 }, { t: 'view', view: v1 }, { t: 'leave' }] } });
    expect(net.machine(0).clusterView?.epoch).toBe(2);
    expect(net.machine(0).view()).toEqual([1]);
    net.acquire(0, 1, 'a', spec());
    expect(net.settle()).toEqual(['p0 granted 1']);
  });
});

describe('evictions with learners', () => {
  it("a learner's own suspicion is no vote: it evicts only with a majority of the voters' confirmations (simulator seed 242 --changes --net link)", async () => {
    const { Membership } = await import('../../src/core/membership.js');
    const { Members } = await import('../../src/core/members.js');
    const X = { startMs: 1000, nonce: 7 };
    // Learner 3 beside voters 0, 1, 2: a majority is two voters.
    const m = new Membership({ members: new Members(3, [0, 1, 2]), evictMs: 3000, nowMs: 0 });
    m.heard(1, X, 0);
    const suspected = m.tick(3000);
    expect(suspected.flatMap((e) => (e.type === 'send' ? [e.to] : []))).toEqual([0, 2]);
    // Voter 2 echoes 1 (its lease), so only voter 0 confirms: counted with the learner's own
    // suspicion that made two, and 1 was evicted while its lease held.
    expect(m.onMessage(0, { t: 'confirm', peer: 1, inc: X, at: 3000 }, 3000).some((e) => e.type === 'evict')).toBe(false);
    expect(m.onMessage(2, { t: 'confirm', peer: 1, inc: X, at: 3000 }, 3000).some((e) => e.type === 'evict')).toBe(true);
  });
});

describe('a protocol that takes part in changes', () => {
  it('writes its acceptance before the ACCEPTED that depends on it leaves, and a chosen view before its packets', async () => {
    const { PeerProtocol } = await import('../../src/core/protocol.js');
    const { IncarnationBook } = await import('../../src/core/incarnations.js');
    const inc = (startMs: number): { startMs: number; nonce: number } => ({ startMs, nonce: 1 });
    const p = new PeerProtocol({
      self: 1, peerIds: ['a', 'b', 'c'], leaseMs: 1000, evictMs: 1700, clockRateMargin: 1.5, incarnation: inc(10), clockFloor: 0, nowMs: 0,
      incarnations: new IncarnationBook(3), view: v0, speaks: 10,
    });
    p.peerJoined(0, inc(5), 1, false, 0);
    const proposed = next(v0, addD);
    const out = p.payload(0, inc(5), { c: 20, m: [{ t: 'req', lock: viewLock, ts: 20, mode: 'exclusive', limit: 1, permits: 1, owner: 'op', meta: null, at: 0 }] }, 1);
    const promised = out.findIndex((o) => o.type === 'acceptor');
    const headAck = out.findIndex((o) => o.type === 'send' && 'm' in o.payload && o.payload.m.some((m) => m.t === 'hack'));
    expect(promised).toBeGreaterThanOrEqual(0);
    expect(headAck).toBeGreaterThan(promised);
    const accepted = p.payload(0, inc(5), { c: 21, m: [{ t: 'accept', ts: 20, view: proposed }] }, 2);
    const types = accepted.flatMap((o) => (o.type === 'acceptor' ? ['acceptor'] : o.type === 'send' && 'm' in o.payload && o.payload.m.length > 0 ? [o.payload.m[0]?.t] : []));
    expect(types).toEqual(['acceptor', 'accepted']);
    const applied = p.payload(0, inc(5), { c: 22, m: [{ t: 'view', view: proposed }] }, 3);
    expect(applied[0]?.type).toBe('view');
  });

  it('confirms a suspicion only from a peer at its epoch, and counts its membership by each view it applies (P4)', async () => {
    const { PeerProtocol } = await import('../../src/core/protocol.js');
    const { IncarnationBook } = await import('../../src/core/incarnations.js');
    const inc = (startMs: number): { startMs: number; nonce: number } => ({ startMs, nonce: 1 });
    const v1 = next(v0, addD);
    const p = new PeerProtocol({
      self: 1, peerIds: ['a', 'b', 'c', 'd'], leaseMs: 1000, evictMs: 1700, clockRateMargin: 1.5, incarnation: inc(10), clockFloor: 0, nowMs: 0,
      incarnations: new IncarnationBook(4), view: v1, speaks: 10,
    });
    for (const q of [0, 2]) p.peerJoined(q, inc(5), 1, false, 0);
    const confirms = (out: readonly { type: string; payload?: unknown }[]): unknown[] =>
      out.flatMap((o) => (o.type === 'send' && typeof o.payload === 'object' && o.payload !== null && 't' in o.payload && o.payload.t === 'confirm' ? [o.payload] : []));
    // c is silent from 0 on; a asks at epoch 2 (ahead of us), then at ours.
    p.payload(0, inc(5), { c: 2, m: [] }, 1700);
    const suspect = { t: 'suspect', peer: 2, inc: inc(5), at: 1700 } as const;
    expect(confirms(p.payload(0, inc(5), { ...suspect, e: 2 }, 1700))).toEqual([]);
    expect(confirms(p.payload(0, inc(5), { ...suspect, e: 1 }, 1700))).toEqual([{ ...suspect, t: 'confirm', e: 1 }]);
    // The view of epoch 2 arrives: from now on a suspicion at epoch 2 is confirmed, one at 1 is not.
    p.payload(0, inc(5), { c: 3, m: [{ t: 'view', view: next(v1, { op: 'remove', id: 'd' }) }] }, 1701);
    expect(confirms(p.payload(0, inc(5), { ...suspect, at: 1701, e: 1 }, 1701))).toEqual([]);
    expect(confirms(p.payload(0, inc(5), { ...suspect, at: 1701, e: 2 }, 1701))).toEqual([{ ...suspect, t: 'confirm', at: 1701, e: 2 }]);
  });

  it('fences at once when a view leaves too few of its voters echoing: no hold outlives its event without a lease (simulator seed 9 --changes)', async () => {
    const { PeerProtocol } = await import('../../src/core/protocol.js');
    const { IncarnationBook } = await import('../../src/core/incarnations.js');
    const inc = (startMs: number): { startMs: number; nonce: number } => ({ startMs, nonce: 1 });
    const five = firstView(['a', 'b', 'c', 'd', 'e'].map((id, i) => ({ id, ws: `ws://127.0.0.1:${7000 + i}`, http: `127.0.0.1:${8000 + i}` })), 10);
    const p = new PeerProtocol({
      self: 0, peerIds: ['a', 'b', 'c', 'd', 'e'], leaseMs: 1000, evictMs: 1700, clockRateMargin: 1.5, incarnation: inc(10), clockFloor: 0, nowMs: 0,
      incarnations: new IncarnationBook(5), view: five, speaks: 10,
    });
    for (const q of [1, 2, 3, 4]) p.peerJoined(q, inc(5), 1, false, 0);
    for (const q of [1, 2, 3, 4]) p.payload(q, inc(5), { c: 2, m: [] }, 1);
    // b and e echo: two others of five voters, a lease.
    p.echo(1, 10, 10);
    p.echo(4, 10, 10);
    expect(p.machine.leaseValid).toBe(true);
    p.local({ type: 'acquire', ref: 1, parts: [{ lock: 'x', spec: spec() }], noWait: false }, 20);
    for (const q of [1, 2, 3, 4]) p.payload(q, inc(5), { c: 100, m: [] }, 21);
    expect(p.machine.stats().granted).toBe(1);
    // e is removed: of the voters a, b, c, d only b echoed, and a majority needs two others.
    const out = p.payload(1, inc(5), { c: 101, m: [{ t: 'view', view: next(five, { op: 'remove', id: 'e' }) }] }, 30);
    expect(p.machine.clusterView?.epoch).toBe(1);
    expect(p.machine.leaseValid).toBe(false);
    expect(p.machine.stats().granted).toBe(0);
    expect(out.some((o) => o.type === 'local' && o.effect.type === 'ended')).toBe(true);
  });
});
