/**
 * Executions a review of the runtime's changes of the view found (issue 40), scripted on the
 * production runtime in the simulated world, the invariants checked after every event: each
 * broke a rule before its fix (test/sim/review-scenarios.test.ts).
 */
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
