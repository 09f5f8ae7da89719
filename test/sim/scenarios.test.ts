/**
 * Scripted scenarios on the production runtime in the simulated world: no random faults, no
 * workload, each step chosen by hand, the invariants checked after every event as in the
 * seed runs. They pin down rules the random seeds reach too rarely to guard (issue 12): each
 * is run with the mutant that breaks its rule too, and must fail then.
 */
import { describe, expect, it } from 'vitest';
import { compareIncarnation, formatIncarnation } from '../../src/core/types.js';
import type { Incarnation } from '../../src/core/types.js';
import { Prng } from '../support/prng.js';
import type { MutantName } from './mutants.js';
import type { Parts } from './run.js';
import { build, runUntil } from './run.js';
import type { Scenario } from './scenario.js';
import { drawScenario } from './scenario.js';

/** A quiet world of `peers` peers: 100 / 1000 / 3000 ms timings, equal clocks, 1-2 ms links. */
function quietWorld(peers: number, mutant?: MutantName): Parts {
  const rng = new Prng(1);
  const drawn = drawScenario(rng.fork(), { peers });
  const same = <T>(v: T): T[] => Array.from({ length: peers }, () => v);
  const scenario: Scenario = {
    ...drawn,
    delayMinMs: 1, delayMaxMs: 2, delaySpikeChance: 0, connectMaxMs: 5,
    heartbeatMs: 100, leaseMs: 1000, evictMs: 3000,
    clockRates: same(1), clockOffsetsMs: same(0), skewMs: same(0), clockStyle: 'wall',
    linkBufferBytes: null, lostDiskChance: 0, failingDiskChance: 0, wallStepBackChance: 0,
  };
  const parts = build({ seed: 1, transcript: true, ...(mutant === undefined ? {} : { mutant }) }, scenario, rng);
  parts.cluster.start();
  return parts;
}

/** The incarnation of `peer` that `at`'s current process counts, as text (or 'none'). */
function counted(parts: Parts, at: number, peer: number): string {
  const inc = parts.cluster.current(at)?.runtime.session().machine.incarnation(peer);
  return inc === undefined ? 'none' : formatIncarnation(inc);
}

function incOf(parts: Parts, peer: number, which: 'oldest' | 'newest'): Incarnation {
  const procs = parts.cluster.processes(peer);
  const p = which === 'oldest' ? procs[0] : procs[procs.length - 1];
  if (p === undefined) throw new Error(`no process of p${peer}`);
  return p.runtime.session().incarnation;
}

/**
 * p2's process X is frozen; a second process Y with its id starts (a supervisor replaced a
 * frozen VM). The others evict X, Y joins. X resumes: refused as evicted while Y lives, it
 * must stay out, not rejoin above Y (it was never told it is a zombie before: its first news
 * is its eviction). Then Y dies: once the others evicted Y, X rejoins above it.
 */
function frozenTwinResumes(mutant?: MutantName): { stayedOut: boolean; rejoinedAfter: boolean; violations: readonly string[]; transcript: readonly string[] } {
  const parts = quietWorld(3, mutant);
  const { cluster } = parts;
  runUntil(parts, 1000);
  const x = cluster.processes(2)[0];
  if (x === undefined) throw new Error('no p2');
  const xInc = x.runtime.session().incarnation;
  x.proc.pause();
  cluster.restart(2, { duplicate: true });
  const yInc = incOf(parts, 2, 'newest');
  // X is silent, so the others evict it after evict_ms and let Y join.
  runUntil(parts, 6000);
  expect(counted(parts, 0, 2)).toBe(formatIncarnation(yInc));
  x.proc.thaw();
  runUntil(parts, 9000);
  const xNow = x.proc.alive ? x.runtime.session().incarnation : xInc;
  const stayedOut = compareIncarnation(xNow, xInc) === 0 && counted(parts, 0, 2) === formatIncarnation(yInc) && counted(parts, 1, 2) === formatIncarnation(yInc);
  // Y dies; the others evict it, and X, told so by a refusal, rejoins above it.
  cluster.crash(2, 'newest');
  runUntil(parts, 20_000);
  const xLast = x.runtime.session().incarnation;
  const rejoinedAfter = compareIncarnation(xLast, yInc) > 0 && counted(parts, 0, 2) === formatIncarnation(xLast) && counted(parts, 1, 2) === formatIncarnation(xLast);
  return { stayedOut, rejoinedAfter, violations: parts.checker.violations, transcript: parts.transcript.lines() };
}

describe('scripted scenarios on the production runtime', () => {
  it('a frozen process whose id a newer process took stays out while that one lives, and rejoins once it is evicted (seed 107362)', () => {
    const r = frozenTwinResumes();
    const tail = r.transcript.slice(-30).join('\n');
    expect(r.violations, tail).toEqual([]);
    expect(r.stayedOut, tail).toBe(true);
    expect(r.rejoinedAfter, tail).toBe(true);
  });

  it('fails with the zombie-rejoins mutant: the frozen process rejoins above the live one', () => {
    expect(frozenTwinResumes('zombie-rejoins').stayedOut).toBe(false);
  });
});
