/**
 * Executions a review of the runtime's changes of the view found (issue 40), scripted on the
 * production runtime in the simulated world, the invariants checked after every event: each
 * broke a rule before its fix (test/sim/review-scenarios.test.ts).
 */
import { compareIncarnation } from '../../src/core/types.js';
import type { Parts } from './run.js';
import { runUntil } from './run.js';
import type { ChangeOutcome } from './view-scenarios.js';
import { change, foundedBy, joinHost, views } from './view-scenarios.js';

/** Asks `lock` at peer `at` for a client of its own (the checker follows the hold). */
function ask(parts: Parts, at: number, lock: string): void {
  const p = parts.cluster.current(at);
  if (p === undefined) throw new Error(`p${at} is not running`);
  parts.clients.acquire(p, lock, { mode: 'exclusive', limit: 1, permits: 1, owner: `c${at}`, meta: null, timeoutMs: 30_000, ttlMs: 60_000, hold: 'ttl', expectedMs: null }, false, true);
}

/**
 * p2 is cut off from everyone while the runbook replaces it (add p3, promote, remove p2, retire
 * p2); the cut heals and p2, which never learnt of its removal, asks for a lock p0 holds. Before
 * the members took a retired member out of their links, they echoed its heartbeats and acked its
 * request: two holders.
 */
export function replacedWhileCutOff(): { steps: ChangeOutcome[]; p2Granted: boolean; p2ToldRemoved: boolean; p0Ready: boolean; violations: readonly string[] } {
  const parts = foundedBy(3, 5);
  runUntil(parts, 3000);
  for (const x of [0, 1, 3]) {
    parts.wire.cut(2, x, 27_000);
    parts.wire.cut(x, 2, 27_000);
  }
  runUntil(parts, 9000);
  const steps: ChangeOutcome[] = [];
  let t = 9000;
  const step = (c: Parameters<typeof change>[2]): void => {
    const outcome = change(parts, 0, c);
    runUntil(parts, (t += 3000));
    steps.push(outcome());
  };
  step({ op: 'add', id: 'p3', ws: 'ws://p3:1', http: '127.0.0.1:1003' });
  joinHost(parts, 0, 3);
  runUntil(parts, (t += 3000));
  step({ op: 'promote', id: 'p3' });
  step({ op: 'remove', id: 'p2' });
  step({ op: 'retire', id: 'p2' });
  ask(parts, 0, 'x');
  runUntil(parts, (t = 30_000));
  ask(parts, 2, 'x');
  runUntil(parts, (t += 3000));
  parts.cluster.crash(3);
  runUntil(parts, (t += 500));
  parts.cluster.restart(3);
  runUntil(parts, (t += 8000));
  const p2Granted = parts.transcript.lines().some((l) => / p2 #\d+ GRANT /.test(l));
  const p2ToldRemoved = parts.transcript.lines().some((l) => / p2 #\d+ mesh: peer p0 refused this peer: peer "p2" was removed from the cluster/.test(l));
  const p0Ready = parts.cluster.current(0)?.runtime.ready() === true;
  return { steps, p2Granted, p2ToldRemoved, p0Ready, violations: parts.checker.violations };
}

/**
 * p0's add reaches ACCEPT, then the ACCEPTED replies are cut: its lease lapses and its hold on the
 * view lock ends. Its next try proposes the copy the voters accepted, which is its own change:
 * before the proposal compared views by identity, the run took it for a predecessor's and then
 * answered ERR_CHANGE_REFUSED "p3 is a member already".
 */
export function ownChangeRetried(): { outcome: ChangeOutcome; views: string[]; violations: readonly string[] } {
  const parts = foundedBy(3, 4);
  runUntil(parts, 3000);
  const outcome = change(parts, 0, { op: 'add', id: 'p3', ws: 'ws://p3:1', http: '127.0.0.1:1003' }, 30_000);
  let t = 3000;
  while (parts.cluster.current(0)?.runtime.inspect.protocol.machine.proposal == null && t < 6000) runUntil(parts, ++t);
  parts.wire.cut(1, 0, t + 2500);
  parts.wire.cut(2, 0, t + 2500);
  runUntil(parts, 40_000);
  return { outcome: outcome(), views: views(parts, 3), violations: parts.checker.violations };
}

/** `member remove p2` asked of p2 itself: made, and answered with the view that removes it (was ERR_REMOVED). */
export function removedAsksItself(): { removed: ChangeOutcome; retired: ChangeOutcome; violations: readonly string[] } {
  const parts = foundedBy(3, 3);
  runUntil(parts, 3000);
  const removed = change(parts, 2, { op: 'remove', id: 'p2' });
  runUntil(parts, 8000);
  const retired = change(parts, 0, { op: 'retire', id: 'p2' });
  runUntil(parts, 12_000);
  return { removed: removed(), retired: retired(), violations: parts.checker.violations };
}

/**
 * A twin told of its newer process, then refused as evicted by a peer that never met that one
 * (simulator seed 45 --changes). p0's process X is cut off from p1 while a second process Y with
 * p0's id starts and reaches p1 only; X, back at p1, is refused as stale (naming Y): it is a
 * zombie. p1 and p2 evict X, cut off from p2 meanwhile; then p2 refuses X as evicted, naming X
 * alone (it never met Y); X is held
 * while p2 meets Y. The refusal says nothing of Y: X stays out. Before, it rejoined below Y, and
 * being refused as stale then, above it, so Y became the zombie. Once Y died and was evicted,
 * X rejoins above it.
 */
export function twinRefusedByPeerBlindToNewer(): { toldOfY: boolean; refusedByBlindPeer: boolean; xStayedOut: boolean; ySuperseded: boolean; xRejoinedAboveY: boolean; violations: readonly string[]; transcript: readonly string[] } {
  const parts = foundedBy(3, 3);
  const { cluster, net, transcript } = parts;
  runUntil(parts, 2000);
  const x = cluster.processes(0)[0];
  if (x === undefined) throw new Error('p0 is not running');
  const xInc = x.runtime.inspect.incarnation;
  net.stallProcess(x.proc, 1, 2500);
  net.stallProcess(x.proc, 2, 7000);
  cluster.restart(0, { duplicate: true });
  const y = cluster.processes(0)[1];
  if (y === undefined) throw new Error('the second process of p0 did not start');
  net.stallProcess(y.proc, 2, 60_000);
  const refusal = new RegExp(` p2 #\\d+ mesh: refused peer p0: incarnation ${xInc.startMs}\\.${xInc.nonce} is evicted`);
  let t = 2000;
  while (t < 20_000 && !transcript.lines().some((l) => refusal.test(l)) && parts.checker.violations.length === 0) runUntil(parts, (t += 0.25));
  const refusedByBlindPeer = transcript.lines().some((l) => refusal.test(l));
  const toldOfY = x.runtime.inspect.protocol.supersededError !== null;
  // X is held before the refusal reaches it, while p2 meets Y (the race of seed 45).
  x.proc.pause();
  net.healStalls();
  runUntil(parts, (t += 1000));
  x.proc.thaw();
  runUntil(parts, (t += 8000));
  const xStayedOut = x.proc.alive && compareIncarnation(x.runtime.inspect.incarnation, xInc) === 0;
  const ySuperseded = y.runtime.inspect.protocol.supersededError !== null;
  // Y dies; once the others evicted it, a refusal says so, and X rejoins above it.
  const yInc = y.runtime.inspect.incarnation;
  cluster.crash(0, 'newest');
  runUntil(parts, t + 15_000);
  const xRejoinedAboveY = x.proc.alive && compareIncarnation(x.runtime.inspect.incarnation, yInc) > 0;
  return { toldOfY, refusedByBlindPeer, xStayedOut, ySuperseded, xRejoinedAboveY, violations: parts.checker.violations, transcript: transcript.lines() };
}

/**
 * p1 is removed and leaves (its LEAVE reaches every member), its process still up, not retired
 * yet; then p3 restarts. Its new incarnation learns from p0's state transfer that p1 left, then
 * meets p1 itself (simulator seed 177 --changes). Before, that join put p1 back in its ack set:
 * p3 waited for acks a member that left never sends, and so did every request behind p3's.
 */
export function restartMeetsLeftMember(): { removed: ChangeOutcome; p3Granted: boolean; p0Granted: boolean; violations: readonly string[]; transcript: readonly string[] } {
  const parts = foundedBy(4, 4);
  runUntil(parts, 3000);
  const removed = change(parts, 0, { op: 'remove', id: 'p1' });
  runUntil(parts, 6000);
  parts.cluster.crash(3);
  runUntil(parts, 6500);
  parts.cluster.restart(3);
  // p3 meets p1 only once p0's and p2's state transfers told it that p1 left.
  parts.wire.cut(1, 3, 11_000);
  parts.wire.cut(3, 1, 11_000);
  runUntil(parts, 12_000);
  ask(parts, 3, 'x');
  runUntil(parts, 14_000);
  ask(parts, 0, 'y');
  runUntil(parts, 20_000);
  const granted = (peer: number): boolean => parts.transcript.lines().some((l) => new RegExp(` p${peer} #\\d+ GRANT `).test(l));
  return { removed: removed(), p3Granted: granted(3), p0Granted: granted(0), violations: parts.checker.violations, transcript: parts.transcript.lines() };
}
