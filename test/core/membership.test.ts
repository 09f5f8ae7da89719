/**
 * Majority-confirmed eviction (docs/design.md section 5), driven with explicit times.
 */
import { Members } from '../../src/core/members.js';
import { afterAll, describe, expect, it } from 'vitest';
import { IncarnationBook } from '../../src/core/incarnations.js';
import { Membership, isMembershipMessage, unknownIncarnation } from '../../src/core/membership.js';
import type { MembershipEffect } from '../../src/core/membership.js';
import type * as MembershipModule from '../../src/core/membership.js';
import type { MutantName, Patch } from '../sim/mutants.js';
import { dropPlanted, patchedModule, plantedModule } from '../sim/planted.js';

const X = { startMs: 1000, nonce: 7 };
const Y = { startMs: 2000, nonce: 1 };
const evictMs = 3000;

/** Membership as the build with a planted bug has it (test/sim/planted.ts). */
async function plantedMembership(bug: MutantName | readonly Patch[]): Promise<typeof Membership> {
  const file = 'src/core/membership.js';
  const mod = typeof bug === 'string' ? await plantedModule<typeof MembershipModule>(bug, file) : await patchedModule<typeof MembershipModule>(bug, file);
  return mod.Membership;
}

function sends(effects: MembershipEffect[]): Array<{ to: number; t: string; peer: number }> {
  return effects.flatMap((e) => (e.type === 'send' ? [{ to: e.to, t: e.msg.t, peer: e.msg.peer }] : []));
}

function evictions(effects: MembershipEffect[]): number[] {
  return effects.flatMap((e) => (e.type === 'evict' ? [e.peer] : []));
}

function three(nowMs = 0): Membership[] {
  return [0, 1, 2].map((self) => new Membership({ members: Members.first(self, 3), evictMs, nowMs }));
}

// The patched copies of the build the planted bugs ran in (test/sim/planted.ts).
afterAll(dropPlanted);

describe('Membership', () => {
  it('suspects a peer silent for evict_ms, and evicts it with a majority of confirmations', () => {
    const [m0, m1] = three();
    for (const m of [m0, m1]) m?.heard(2, X, 0);
    m0?.heard(1, Y, evictMs - 1);
    expect(m0?.tick(evictMs - 1)).toEqual([]);
    const suspect = m0?.tick(evictMs) ?? [];
    expect(sends(suspect)).toEqual([{ to: 1, t: 'suspect', peer: 2 }]);
    const confirm = m1?.onMessage(0, { t: 'suspect', peer: 2, inc: X, at: evictMs }, evictMs) ?? [];
    expect(sends(confirm)).toEqual([{ to: 0, t: 'confirm', peer: 2 }]);
    const evict = m0?.onMessage(1, { t: 'confirm', peer: 2, inc: X, at: evictMs }, evictMs) ?? [];
    expect(evictions(evict)).toEqual([2]);
    expect(sends(evict)).toEqual([{ to: 1, t: 'evict', peer: 2 }]);
    expect(evictions(m1?.onMessage(0, { t: 'evict', peer: 2, inc: X }, evictMs) ?? [])).toEqual([2]);
    expect(m1?.isEvicted(2, X)).toBe(true);
    expect(m1?.isEvicted(2, Y)).toBe(false);
  });

  it('tells an eviction to a leaving member too, which decides none of its own once removed (seed 3 --changes); with the planted bug, to the voters only', async () => {
    const evictOf3 = async (M: typeof Membership): Promise<Array<{ to: number; t: string; peer: number }>> => {
      const m0 = new M({ members: new Members(0, [0, 1, 3]), leaving: [2], evictMs, nowMs: 0 });
      m0.heard(3, X, 0);
      m0.heard(1, Y, evictMs);
      m0.heard(2, Y, evictMs);
      expect(sends(m0.tick(evictMs))).toEqual([{ to: 1, t: 'suspect', peer: 3 }]);
      const evict = m0.onMessage(1, { t: 'confirm', peer: 3, inc: X, at: evictMs }, evictMs);
      expect(evictions(evict)).toEqual([3]);
      return sends(evict);
    };
    expect(await evictOf3(Membership)).toEqual([{ to: 1, t: 'evict', peer: 3 }, { to: 2, t: 'evict', peer: 3 }]);
    expect(await evictOf3(await plantedMembership('evict-to-voters-only'))).toEqual([{ to: 1, t: 'evict', peer: 3 }]);
  });

  it('does not confirm while it still hears the suspect', () => {
    const [, m1] = three();
    m1?.heard(2, X, evictMs - 10);
    expect(m1?.onMessage(0, { t: 'suspect', peer: 2, inc: X, at: evictMs }, evictMs)).toEqual([]);
  });

  it('confirms an incarnation older than the one it tracks only once it has itself existed evict_ms (it never echoed it)', () => {
    const [, m1] = three();
    m1?.heard(2, Y, 10);
    expect(m1?.onMessage(0, { t: 'suspect', peer: 2, inc: X, at: evictMs - 1 }, evictMs - 1)).toEqual([]);
    expect(sends(m1?.onMessage(0, { t: 'suspect', peer: 2, inc: X, at: evictMs }, evictMs) ?? [])).toEqual([{ to: 0, t: 'confirm', peer: 2 }]);
    expect(m1?.onMessage(0, { t: 'suspect', peer: 2, inc: unknownIncarnation, at: evictMs }, evictMs)).toEqual([]);
  });

  it('keeps tracking a live incarnation when a newer one joins: the successor waits for its eviction (issue 12, defect 1)', () => {
    const [m0, m1] = three();
    for (const m of [m0, m1]) m?.heard(2, X, 0);
    m0?.heard(2, Y, 100);
    expect(m0?.predecessorOf(2, Y)).toEqual(X);
    // The predecessor no longer counts as heard, and is lent no lease.
    m0?.heard(2, X, 200);
    expect(m0?.mayEcho(2, X, 200)).toBe(false);
    expect(m0?.mayEcho(2, Y, 200)).toBe(true);
    // A suspicion of the successor is never confirmed while the predecessor is tracked.
    expect(m0?.onMessage(1, { t: 'suspect', peer: 2, inc: Y, at: evictMs }, evictMs)).toEqual([]);
    // The predecessor is suspected (not the successor), and evicted with a majority.
    const suspect = m0?.tick(evictMs) ?? [];
    expect(suspect.flatMap((e) => (e.type === 'send' ? [e.msg.inc] : []))).toEqual([X]);
    const evict = m0?.onMessage(1, { t: 'confirm', peer: 2, inc: X, at: evictMs }, evictMs) ?? [];
    expect(evict.flatMap((e) => (e.type === 'evict' ? [e.inc] : []))).toEqual([X]);
    expect(evict.flatMap((e) => (e.type === 'send' ? [e.msg.inc] : []))).toEqual([X]);
    // From now on the successor is the one tracked, heard from the eviction on.
    expect(m0?.predecessorOf(2, Y)).toBeNull();
    expect(m0?.tick(evictMs + 1)).toEqual([]);
  });

  it('still counts a successor replaced by a newer one as heard: no confirmation of it before it was silent evict_ms (seeds 2042388 and 2048353)', async () => {
    const Z = { startMs: 3000, nonce: 5 };
    const confirmsOfY = (M: typeof Membership, atMs: number): number => {
      const m = new M({ members: Members.first(1, 3), evictMs, nowMs: 0 });
      m.heard(0, X, 0);
      m.heard(0, Y, evictMs + 100); // Y waits as X's successor here; we may echo it
      m.heard(0, Z, evictMs + 200); // Z, newer, replaces it as the successor
      m.onMessage(2, { t: 'evict', peer: 0, inc: X }, evictMs + 300); // Z is tracked from now on
      return sends(m.onMessage(2, { t: 'suspect', peer: 0, inc: Y, at: atMs }, atMs)).length;
    };
    expect(confirmsOfY(Membership, evictMs + 400)).toBe(0);
    expect(confirmsOfY(Membership, 2 * evictMs + 100)).toBe(1); // silent evict_ms since heard
    // The mutant forgets it heard Y: an incarnation older than the tracked one, confirmed at once.
    expect(confirmsOfY(await plantedMembership('forget-successor-heard'), evictMs + 400)).toBe(1);
  });

  it('changes nothing when it hears the tracked incarnation again while its successor waits (issue 39: that one is superseded)', () => {
    const m = new Membership({ members: Members.first(0, 3), evictMs, nowMs: 0 });
    m.heard(2, X, 0);
    m.heard(2, Y, 100);
    // X's frames after Y's handshake (the mesh labels every frame with the newest admitted
    // incarnation, so the session never reports one; the pure membership is safe anyway).
    m.heard(2, X, 2000);
    expect(m.predecessorOf(2, Y)).toEqual(X);
    expect(m.silence(2, 2000)).toEqual({ silentMs: 2000, suspectInMs: evictMs - 2000 });
    expect(m.mayEcho(2, X, 2000)).toBe(false);
    // A suspicion of X is confirmed evict_ms after X was last counted heard, not after 2000.
    expect(sends(m.onMessage(1, { t: 'suspect', peer: 2, inc: X, at: evictMs }, evictMs))).toEqual([{ to: 1, t: 'confirm', peer: 2 }]);
  });

  it('replaces the predecessor at once under the forget-predecessor mutant', async () => {
    const m = new (await plantedMembership('forget-predecessor'))({ members: Members.first(0, 3), evictMs, nowMs: 0 });
    m.heard(2, X, 0);
    m.heard(2, Y, 100);
    expect(m.predecessorOf(2, Y)).toBeNull();
  });

  it('in a two-peer cluster, evicts a superseded incarnation alone once it was silent evict_ms', () => {
    const m = new Membership({ members: Members.first(0, 2), evictMs, nowMs: 0 });
    m.heard(1, X, 0);
    expect(m.tick(evictMs)).toEqual([]); // two peers never evict each other...
    m.heard(1, Y, 10);
    expect(m.tick(evictMs - 1)).toEqual([]);
    expect(evictions(m.tick(evictMs))).toEqual([1]); // ...but a superseded incarnation, yes
    expect(m.isEvicted(1, X)).toBe(true);
    expect(m.isEvicted(1, Y)).toBe(false);
  });

  it('ignores a confirmation that arrives after the suspect was heard again', () => {
    const [m0] = three();
    m0?.heard(2, X, 0);
    m0?.tick(evictMs);
    m0?.heard(2, X, evictMs + 1);
    expect(m0?.onMessage(1, { t: 'confirm', peer: 2, inc: X, at: evictMs }, evictMs + 2)).toEqual([]);
  });

  it('a confirmation is a promise: the confirmer lends the suspect no lease for evict_ms, even after hearing it', () => {
    const [, m1] = three();
    m1?.heard(2, X, 0);
    expect(m1?.mayEcho(2, X, 10)).toBe(true);
    expect(sends(m1?.onMessage(0, { t: 'suspect', peer: 2, inc: X, at: evictMs }, evictMs) ?? [])).toEqual([{ to: 0, t: 'confirm', peer: 2 }]);
    m1?.heard(2, X, evictMs + 1);
    expect(m1?.mayEcho(2, X, evictMs + 1)).toBe(false);
    expect(m1?.mayEcho(2, X, 2 * evictMs - 1)).toBe(false);
    expect(m1?.mayEcho(2, X, 2 * evictMs)).toBe(true);
    expect(m1?.mayEcho(2, Y, evictMs + 1)).toBe(true);
  });

  it('hands its binding promises to the next incarnation of this process, which keeps them (seed 162227)', async () => {
    const [, m1] = three();
    m1?.heard(2, X, 0);
    m1?.onMessage(0, { t: 'suspect', peer: 2, inc: X, at: evictMs }, evictMs);
    // Evicted at evictMs + 1000, this process rejoins as a new incarnation with a fresh
    // membership on a clock of its own (it starts at 50 here).
    const promises = m1?.promises(evictMs + 1000) ?? [];
    expect(promises).toEqual([{ peer: 2, upTo: X, remainingMs: evictMs - 1000 }]);
    const next = new Membership({ members: Members.first(1, 3), evictMs, nowMs: 50, promises });
    next.heard(2, X, 60);
    expect(next.mayEcho(2, X, 60)).toBe(false);
    expect(next.mayEcho(2, X, 50 + evictMs - 1001)).toBe(false);
    expect(next.mayEcho(2, X, 50 + evictMs - 1000)).toBe(true);
    expect(next.mayEcho(2, Y, 60)).toBe(true);
    expect(next.promises(50 + evictMs - 1000)).toEqual([]);
    // The planted bug forgets them: the new incarnation echoes what the old one confirmed silent.
    const planted = new (await plantedMembership('forget-promises-on-rejoin'))({ members: Members.first(1, 3), evictMs, nowMs: 50, promises });
    planted.heard(2, X, 60);
    expect(planted.mayEcho(2, X, 60)).toBe(true);
  });

  it('a promise binds the incarnation it is about and older ones, never a newer one (seed 504945)', async () => {
    const [, m1] = three();
    m1?.heard(2, X, 0);
    // A suspicion of X, the incarnation tracked: the confirmer promises X no lease.
    expect(sends(m1?.onMessage(0, { t: 'suspect', peer: 2, inc: X, at: evictMs }, evictMs) ?? [])).toEqual([{ to: 0, t: 'confirm', peer: 2 }]);
    expect(evictions(m1?.onMessage(0, { t: 'evict', peer: 2, inc: X }, evictMs + 1) ?? [])).toEqual([2]);
    // Y, a newer process with that id, is tracked from now on: the promise about X says
    // nothing of Y's lease, so Y's heartbeats are echoed at once.
    m1?.heard(2, Y, evictMs + 2);
    expect(m1?.mayEcho(2, Y, evictMs + 3)).toBe(true);
    expect(m1?.mayEcho(2, X, evictMs + 3)).toBe(false);
    // The planted bug (a liveness delay, not a safety one: the simulator's liveness bound
    // hides it) withholds Y's echoes for the whole promise.
    const promiseBindsNewer = [{ file: 'src/core/membership.js', from: 'compareIncarnation(inc, t.noEchoUpTo) <= 0', to: 'compareIncarnation(inc, t.inc) <= 0' }];
    const planted = new (await plantedMembership(promiseBindsNewer))({ members: Members.first(1, 3), evictMs, nowMs: 0 });
    planted.heard(2, X, 0);
    planted.onMessage(0, { t: 'suspect', peer: 2, inc: X, at: evictMs }, evictMs);
    planted.onMessage(0, { t: 'evict', peer: 2, inc: X }, evictMs + 1);
    planted.heard(2, Y, evictMs + 2);
    expect(planted.mayEcho(2, Y, evictMs + 3)).toBe(false);
  });

  it('counts a confirmation only while its promise binds the confirmer (evict_ms over the rate margin)', () => {
    const five = (): Membership => {
      const m = new Membership({ members: Members.first(0, 5), evictMs, nowMs: 0 });
      for (const p of [1, 2, 3]) m.heard(p, Y, 100 * evictMs);
      m.heard(4, X, 0);
      m.tick(evictMs);
      return m;
    };
    const stale = five();
    expect(stale.onMessage(1, { t: 'confirm', peer: 4, inc: X, at: evictMs }, evictMs)).toEqual([]);
    expect(evictions(stale.onMessage(2, { t: 'confirm', peer: 4, inc: X, at: evictMs }, evictMs + evictMs / 1.5))).toEqual([]);
    const fresh = five();
    expect(fresh.onMessage(1, { t: 'confirm', peer: 4, inc: X, at: evictMs }, evictMs)).toEqual([]);
    expect(evictions(fresh.onMessage(2, { t: 'confirm', peer: 4, inc: X, at: evictMs }, evictMs + evictMs / 1.5 - 1))).toEqual([4]);
  });

  it('counts a confirmation from when its suspicion was sent, not from when it arrived (seed 248088)', () => {
    const m = new Membership({ members: Members.first(0, 5), evictMs, nowMs: 0 });
    m.heard(4, X, 0);
    for (let at = evictMs; at <= 2 * evictMs; at += 100) {
      for (const p of [1, 2, 3]) m.heard(p, Y, at);
      m.tick(at);
    }
    const late = 2 * evictMs;
    // Peer 1 answered the first suspicion; its answer was held up in a cut connection.
    expect(m.onMessage(1, { t: 'confirm', peer: 4, inc: X, at: evictMs }, late)).toEqual([]);
    expect(evictions(m.onMessage(2, { t: 'confirm', peer: 4, inc: X, at: late }, late))).toEqual([]);
    expect(evictions(m.onMessage(3, { t: 'confirm', peer: 4, inc: X, at: late - 100 }, late))).toEqual([4]);
  });

  it('ignores a confirmation echoing a time it never sent a suspicion at: before it started, or in its future', () => {
    const m = new Membership({ members: Members.first(0, 3), evictMs, nowMs: 500 });
    m.heard(2, X, 500);
    m.tick(500 + evictMs);
    expect(m.onMessage(1, { t: 'confirm', peer: 2, inc: X, at: 499 }, 500 + evictMs)).toEqual([]);
    expect(m.onMessage(1, { t: 'confirm', peer: 2, inc: X, at: 501 + evictMs }, 500 + evictMs)).toEqual([]);
    expect(evictions(m.onMessage(1, { t: 'confirm', peer: 2, inc: X, at: 500 + evictMs }, 500 + evictMs))).toEqual([2]);
  });

  it('does not count a confirmation from an earlier silence once the suspect was heard again (fault run seed 20261122)', () => {
    const m = new Membership({ members: Members.first(0, 5), evictMs, nowMs: 0 });
    m.heard(1, X, 0);
    m.tick(3000);
    expect(evictions(m.onMessage(2, { t: 'confirm', peer: 1, inc: X, at: 3000 }, 3000))).toEqual([]);
    m.heard(1, X, 3500); // Peer 2 may have heard (and echoed) it too: that silence is over.
    expect(evictions([...m.tick(6500), ...m.onMessage(4, { t: 'confirm', peer: 1, inc: X, at: 6500 }, 6500)])).toEqual([]);
    // A majority silent at once still evicts.
    expect(evictions(m.onMessage(2, { t: 'confirm', peer: 1, inc: X, at: 6500 }, 6600))).toEqual([1]);
  });

  it('never evicts in a two-peer cluster', () => {
    const m = new Membership({ members: Members.first(0, 2), evictMs, nowMs: 0 });
    expect(m.tick(10 * evictMs)).toEqual([]);
  });

  it('with the evict-without-majority fault, evicts on its own word (the mutant the simulator must catch)', async () => {
    const m = new (await plantedMembership('evict-without-majority'))({ members: Members.first(0, 3), evictMs, nowMs: 0 });
    expect(evictions(m.tick(evictMs))).toEqual([1, 2]);
  });

  it('marks an eviction `last` only when it knows no newer incarnation of that peer (seed 199 --net link)', () => {
    const [m0, m1] = three();
    m0?.heard(2, X, 0);
    m1?.heard(2, X, 0);
    m0?.tick(evictMs);
    const confirm = m1?.onMessage(0, { t: 'suspect', peer: 2, inc: X, at: evictMs }, evictMs) ?? [];
    expect(sends(confirm)).toEqual([{ to: 0, t: 'confirm', peer: 2 }]);
    const evicted = m0?.onMessage(1, { t: 'confirm', peer: 2, inc: X, at: evictMs }, evictMs + 1) ?? [];
    expect(evicted.filter((e) => e.type === 'send').map((e) => (e.type === 'send' ? e.msg : null))).toEqual([{ t: 'evict', peer: 2, inc: X, last: true }]);
    expect(evicted.find((e) => e.type === 'evict')).toEqual({ type: 'evict', peer: 2, inc: X, last: true });
    // Once a newer incarnation is heard, the notice passed on at a join is not `last`.
    m0?.heard(2, Y, evictMs + 2);
    expect(m0?.evictions(1).map((e) => (e.type === 'send' ? e.msg : null))).toEqual([{ t: 'evict', peer: 2, inc: X, last: false }]);
    // A receiver that knows a newer one applies even a `last` notice as not last.
    const m2 = new Membership({ members: Members.first(1, 3), evictMs, nowMs: 0 });
    m2.heard(2, X, 0);
    m2.heard(2, Y, 1);
    expect(m2.onMessage(0, { t: 'evict', peer: 2, inc: X, last: true }, 2)).toEqual([{ type: 'evict', peer: 2, inc: X, last: false }]);
  });

  it('keeps its evictions in the IncarnationBook it is given, the one the mesh refuses from', () => {
    const book = new IncarnationBook(3);
    const [, m1] = [0, 1].map((self) => new Membership({ members: Members.first(self, 3), evictMs, nowMs: 0, incarnations: self === 1 ? book : undefined }));
    m1?.heard(2, X, 0);
    expect(book.evictedUpTo(2)).toBeNull();
    expect(evictions(m1?.onMessage(0, { t: 'evict', peer: 2, inc: X }, 10) ?? [])).toEqual([2]);
    expect(book.evictedUpTo(2)).toEqual(X);
    expect([m1?.isEvicted(2, X), book.isRefused(2, X)]).toEqual([true, false]); // The session refuses it when it applies the effect.
    expect(m1?.onMessage(0, { t: 'evict', peer: 2, inc: X }, 20)).toEqual([]);
    expect(() => new Membership({ members: Members.first(0, 4), evictMs, nowMs: 0, incarnations: book })).toThrow(/one incarnation record/);
  });

  it('passes its evictions to a peer that joins, except the peer itself', () => {
    const [m0, m1] = three();
    m0?.heard(2, X, 0);
    m0?.tick(evictMs);
    m0?.onMessage(1, { t: 'confirm', peer: 2, inc: X, at: evictMs }, evictMs);
    expect(sends(m0?.evictions(1) ?? [])).toEqual([{ to: 1, t: 'evict', peer: 2 }]);
    expect(sends(m0?.evictions(2) ?? [])).toEqual([]);
    expect(m1).toBeDefined();
  });

  it('knows a newer incarnation one step above an evicted one: its eviction notice is not `last` (a mutation-runner survivor)', () => {
    const [m0] = three();
    const x = { startMs: 1000, nonce: 1 };
    const y = { startMs: 1000, nonce: 2 }; // one step above x: compareIncarnation(y, x) is 1
    m0?.heard(2, x, 0);
    m0?.heard(2, y, 1); // y waits as x's successor
    expect(evictions(m0?.onMessage(1, { t: 'evict', peer: 2, inc: x }, 2) ?? [])).toEqual([2]); // y is tracked from now on
    expect(m0?.knowsNewer(2, x)).toBe(true);
    expect(m0?.evictions(1)).toEqual([{ type: 'send', to: 1, msg: { t: 'evict', peer: 2, inc: x, last: false } }]);
  });

  it('suspects no evicted incarnation again: a tick after its eviction sends and counts nothing (a mutation-runner survivor)', () => {
    const [m0] = three();
    m0?.heard(1, Y, 0);
    m0?.heard(2, X, 0);
    expect(evictions(m0?.onMessage(1, { t: 'evict', peer: 2, inc: X }, 1) ?? [])).toEqual([2]);
    m0?.heard(1, Y, 4 * evictMs);
    expect(m0?.tick(4 * evictMs)).toEqual([]);
    // What it decided is what the simulator's zombie check reads (docs/design.md section 9).
    expect(m0?.decided).toEqual({ suspicions: 0, confirmations: 0, evictions: 0, confirmed: 0 });
  });

  it('confirms a newer incarnation it never heard once the one it tracked is evicted and the peer is silent (a mutation-runner survivor)', () => {
    const [, m1] = three();
    m1?.heard(2, X, 0);
    expect(evictions(m1?.onMessage(0, { t: 'evict', peer: 2, inc: X }, 1) ?? [])).toEqual([2]);
    // Y met only by p0 goes silent: without this confirmation p0 never gathers a majority against it.
    expect(sends(m1?.onMessage(0, { t: 'suspect', peer: 2, inc: Y, at: evictMs + 5 }, evictMs + 5) ?? [])).toEqual([{ to: 0, t: 'confirm', peer: 2 }]);
  });

  it('confirms and counts only between peers at one epoch, and applies no eviction sent two epochs behind its own (docs/reconfiguration.md P4)', () => {
    // p0 counts under the view of epoch 2, p1 is at epoch 4: two voters apart at most, their majorities may not meet.
    const m0 = new Membership({ members: Members.first(0, 3), epoch: 2, evictMs, nowMs: 0 });
    const m1 = new Membership({ members: Members.first(1, 3), epoch: 4, evictMs, nowMs: 0 });
    for (const m of [m0, m1]) m.heard(2, X, 0);
    const suspect = m0.tick(evictMs).flatMap((e) => (e.type === 'send' ? [e.msg] : []));
    expect(suspect).toEqual([{ t: 'suspect', peer: 2, inc: X, at: evictMs, e: 2 }]);
    // A suspicion sent at another epoch is not confirmed; one at ours is, and says our epoch.
    expect(m1.onMessage(0, { t: 'suspect', peer: 2, inc: X, at: evictMs, e: 2 }, evictMs)).toEqual([]);
    expect(m1.onMessage(0, { t: 'suspect', peer: 2, inc: X, at: evictMs, e: 4 }, evictMs)).toEqual([
      { type: 'send', to: 0, msg: { t: 'confirm', peer: 2, inc: X, at: evictMs, e: 4 } },
    ]);
    // A confirmation given at another epoch is not counted; an eviction sent two epochs behind ours is not applied.
    expect(evictions(m0.onMessage(1, { t: 'confirm', peer: 2, inc: X, at: evictMs, e: 4 }, evictMs))).toEqual([]);
    expect(evictions(m1.onMessage(0, { t: 'evict', peer: 2, inc: X, last: true, e: 2 }, evictMs))).toEqual([]);
    expect(m1.isEvicted(2, X)).toBe(false);
    // One epoch behind ours, or ahead of it, is (a notice passed on at a join may be the only news of an eviction).
    for (const e of [3, 5]) {
      const m = new Membership({ members: Members.first(1, 3), epoch: 4, evictMs, nowMs: 0 });
      m.heard(2, X, 0);
      expect(evictions(m.onMessage(0, { t: 'evict', peer: 2, inc: X, last: true, e }, 10))).toEqual([2]);
    }
    // Once p0 is at epoch 4 too, both count.
    m0.setMembers(Members.first(0, 3), evictMs, 4);
    const evict = m0.onMessage(1, { t: 'confirm', peer: 2, inc: X, at: evictMs, e: 4 }, evictMs);
    expect(evictions(evict)).toEqual([2]);
    expect(evict.flatMap((e) => (e.type === 'send' ? [e.msg] : []))).toEqual([{ t: 'evict', peer: 2, inc: X, last: true, e: 4 }]);
    expect(evictions(m1.onMessage(0, { t: 'evict', peer: 2, inc: X, last: true, e: 4 }, evictMs))).toEqual([2]);
  });

  it('names no epoch at epoch 0, as a binary of protocol level 9 sends its messages, and reads one without as epoch 0', () => {
    const [m0, m1] = three();
    for (const m of [m0, m1]) m?.heard(2, X, 0);
    expect(m0?.tick(evictMs).flatMap((e) => (e.type === 'send' ? [e.msg] : []))).toEqual([{ t: 'suspect', peer: 2, inc: X, at: evictMs }]);
    expect(m1?.onMessage(0, { t: 'suspect', peer: 2, inc: X, at: evictMs, e: 1 }, evictMs)).toEqual([]);
    expect(m1?.onMessage(0, { t: 'suspect', peer: 2, inc: X, at: evictMs, e: 0 }, evictMs)).toHaveLength(1);
  });

  it('guards the shape of membership messages', () => {
    expect(isMembershipMessage({ t: 'evict', peer: 1, inc: X, e: 3 })).toBe(true);
    expect(isMembershipMessage({ t: 'confirm', peer: 1, inc: X, at: 5, e: 0 })).toBe(true);
    expect(isMembershipMessage({ t: 'suspect', peer: 1, inc: X, at: 5, e: -1 })).toBe(false);
    expect(isMembershipMessage({ t: 'suspect', peer: 1, inc: X, at: 5, e: 1.5 })).toBe(false);
    expect(isMembershipMessage({ t: 'evict', peer: 1, inc: X, e: '3' })).toBe(false);
    expect(isMembershipMessage({ t: 'evict', peer: 1, inc: X })).toBe(true);
    expect(isMembershipMessage({ t: 'evict', peer: -1, inc: X })).toBe(false);
    expect(isMembershipMessage({ t: 'evict', peer: 1, inc: { startMs: 'x', nonce: 1 } })).toBe(false);
    expect(isMembershipMessage({ t: 'join', peer: 1, inc: X })).toBe(false);
    expect(isMembershipMessage({ t: 'confirm', peer: 1, inc: X, at: 5 })).toBe(true);
    expect(isMembershipMessage({ t: 'confirm', peer: 1, inc: X })).toBe(false);
    expect(isMembershipMessage({ t: 'suspect', peer: 1, inc: X, at: Number.NaN })).toBe(false);
    expect(isMembershipMessage({ t: 'suspect', peer: 1, inc: X, at: '5' })).toBe(false);
    expect(isMembershipMessage([1, 2])).toBe(false);
    // A null payload from the network is refused, not destructured (a mutation-runner survivor).
    expect(isMembershipMessage(null)).toBe(false);
    expect(isMembershipMessage('evict')).toBe(false);
  });
});

describe('Machine and evictions of incarnations it never met', () => {
  it('refuses that incarnation but keeps the peer in its view (seed 150336)', async () => {
    const { Machine } = await import('../../src/core/machine.js');
    const m = new Machine({ members: Members.first(0, 3), clockFloor: 100 });
    m.step({ type: 'joined', peer: 1, inc: X, clock: 5 });
    m.step({ type: 'evicted', peer: 2, inc: X });
    expect(m.view()).toEqual([1, 2]);
    expect(m.synced).toBe(false);
    m.step({ type: 'joined', peer: 2, inc: X, clock: 5 });
    expect(m.lastTs(2)).toBe(0);
    m.step({ type: 'joined', peer: 2, inc: Y, clock: 5 });
    m.step({ type: 'packet', from: 1, inc: X, packet: { c: 200, m: [] } });
    m.step({ type: 'packet', from: 2, inc: Y, packet: { c: 200, m: [] } });
    expect(m.synced).toBe(true);
  });
});

describe('Membership.silence (GET /v1/cluster degraded)', () => {
  it('counts a met peer\'s silence and when it will be suspected, down to 0 once due', () => {
    const [m0] = three();
    m0?.heard(2, X, 500);
    expect(m0?.silence(2, 500)).toEqual({ silentMs: 0, suspectInMs: evictMs });
    expect(m0?.silence(2, 1700)).toEqual({ silentMs: 1200, suspectInMs: evictMs - 1200 });
    expect(m0?.silence(2, 500 + evictMs + 400)).toEqual({ silentMs: evictMs + 400, suspectInMs: 0 });
    expect(m0?.silence(0, 1700)).toBeNull();
    // Hearing it again resets both.
    m0?.heard(2, X, 2000);
    expect(m0?.silence(2, 2100)).toEqual({ silentMs: 100, suspectInMs: evictMs - 100 });
  });

  it('counts a live predecessor silent while its successor is heard, as the eviction does', () => {
    const [m0] = three();
    m0?.heard(2, X, 0);
    m0?.heard(2, Y, 1000);
    m0?.heard(2, Y, 2000);
    expect(m0?.silence(2, 2000)).toEqual({ silentMs: 2000, suspectInMs: evictMs - 2000 });
  });

  it('never promises an eviction this peer will not start: two peers, a peer never met, one evicted', () => {
    const pair = new Membership({ members: Members.first(0, 2), evictMs, nowMs: 0 });
    pair.heard(1, X, 0);
    expect(pair.silence(1, 5000)).toEqual({ silentMs: 5000, suspectInMs: null });
    const [m0] = three(100);
    expect(m0?.silence(1, 600)).toEqual({ silentMs: 500, suspectInMs: null });
    m0?.heard(2, X, 0);
    m0?.onMessage(1, { t: 'evict', peer: 2, inc: X }, 10);
    expect(m0?.silence(2, 20)?.suspectInMs).toBeNull();
  });

  it('in a two-peer cluster, promises the eviction of a superseded incarnation, which it does evict', () => {
    const pair = new Membership({ members: Members.first(0, 2), evictMs, nowMs: 0 });
    pair.heard(1, X, 0);
    pair.heard(1, Y, 100);
    expect(pair.silence(1, 1000)).toEqual({ silentMs: 1000, suspectInMs: evictMs - 1000 });
    expect(evictions(pair.tick(evictMs))).toEqual([1]);
  });
});
