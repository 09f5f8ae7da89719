/**
 * The targets of issue 6 (3 peers, medians, same run as the anchors) and issue 15 (against
 * the same-run floor of part (g)), each checked against what was measured: met, missed, or
 * not measured.
 */
import { fmt } from './format.js';
import { maxOf } from './report.js';
import type { BenchResults } from './results.js';

/** One target and its verdict. */
export interface TargetVerdict {
  readonly target: string;
  readonly measured: string;
  readonly verdict: 'met' | 'missed' | 'not measured';
}

/** Idle names "cost nothing once released": growth per peer under this many MB counts as nothing. */
const idleGrowthMbMax = 10;

function verdict(measured: number | null | undefined, ok: (v: number) => boolean): TargetVerdict['verdict'] {
  if (measured === null || measured === undefined || !Number.isFinite(measured)) return 'not measured';
  return ok(measured) ? 'met' : 'missed';
}

/** Issue 15: peer CPU per acquire+release at most this many times the floor's. */
const floorCpuRatioMax = 1.3;
/** Issue 15: one connection's acquire+release p50 at most this many times the floor's. */
const floorP50RatioMax = 1.25;

/**
 * The targets of (g). They are about steady state: a ratio that includes a warm-up which never
 * settled is shown but counts as not measured, never as met or missed.
 */
function floorTargets(results: BenchResults): TargetVerdict[] {
  const g = results.floor;
  const steady = g !== null && g.unsettledWarmUps === 0;
  const said = (ratio: number | undefined, medians: string): string => {
    if (g === null) return '(g) not run';
    return `${fmt(ratio)}× (${medians})${steady ? '' : `, but ${g.unsettledWarmUps} warm-up(s) did not settle`}`;
  };
  const check = (ratio: number | undefined, max: number): TargetVerdict['verdict'] => (steady ? verdict(ratio, (v) => v <= max) : 'not measured');
  const cpu = g?.ratios.cpuPerOp.median;
  const p50 = g?.ratios.p50.median;
  return [
    {
      target: `(g) peer CPU per acquire+release ≤ ${floorCpuRatioMax} × the same-run floor`,
      measured: said(cpu, g === null ? '' : `medians ${fmt(g.lamport.cpuMsPerOp.median)} against ${fmt(g.floor.cpuMsPerOp.median)} CPU ms per op`),
      verdict: check(cpu, floorCpuRatioMax),
    },
    {
      target: `(g) acquire+release p50 ≤ ${floorP50RatioMax} × the same-run floor (1 connection)`,
      measured: said(p50, g === null ? '' : `medians ${fmt(g.lamport.p50Ms.median)} against ${fmt(g.floor.p50Ms.median)} ms`),
      verdict: check(p50, floorP50RatioMax),
    },
  ];
}

/** Every target of issues 6 and 15 with its verdict. */
export function checkTargets(results: BenchResults): TargetVerdict[] {
  const ours = results.systems['lamport-lock'];
  const cycle = ours?.a.cycleP50Ms.median;
  const handoffs = ours?.b.realHandoffsPerS.median;
  const fifo = ours?.b.tokenOrderViolations.max;
  const ops = ours?.c.opsPerS.median;
  const p3 = results.scaling.find((p) => p.peers === 3)?.a.cycleP50Ms.median;
  const p9 = results.scaling.find((p) => p.peers === 9)?.a.cycleP50Ms.median;
  const scale = p3 !== undefined && p9 !== undefined ? p9 / p3 : null;
  const f3 = results.scaling.find((p) => p.peers === 3)?.floorA?.cycleP50Ms.median;
  const f9 = results.scaling.find((p) => p.peers === 9)?.floorA?.cycleP50Ms.median;
  const floorScale = f3 !== undefined && f9 !== undefined ? f9 / f3 : null;
  const high3 = results.scaling.find((p) => p.peers === 3)?.linksHigh.frames?.median;
  const mem = results.memory;
  const waitRss = mem === null ? null : maxOf(Object.values(mem.whileWaiting));
  const idleGrowth = mem === null ? null : idleGrowthMb(mem.baseline, mem.afterIdleNames);
  return [
    ...floorTargets(results),
    { target: '(a) acquire+release p50 ≤ 0.8 ms', measured: `${fmt(cycle)} ms`, verdict: verdict(cycle, (v) => v <= 0.8) },
    { target: '(b) ≥ 1500 real handoffs/s, 8 clients', measured: `${fmt(handoffs)}/s`, verdict: verdict(handoffs, (v) => v >= 1500) },
    { target: '(b) every handoff to the FIFO-next waiter (tokens rise in grant order)', measured: `${fmt(fifo)} violations (max over runs)`, verdict: verdict(fifo, (v) => v === 0) },
    { target: '(c) ≥ 8000 acquire+release/s, 1000 names, 64 workers', measured: `${fmt(ops)}/s`, verdict: verdict(ops, (v) => v >= 8000) },
    { target: '(d) 9-peer acquire+release p50 ≤ 2 × 3-peer', measured: scale === null ? '9 peers not run' : `${fmt(scale)}×${floorScale === null ? '' : ` (the floor's own, same run: ${fmt(floorScale)}×)`}`, verdict: verdict(scale, (v) => v <= 2) },
    { target: '(e) frames per grant under load < 2(N-1) = 4 (3 peers)', measured: `${fmt(high3)}`, verdict: verdict(high3, (v) => v < 4) },
    {
      target: '(f) < 150 MB RSS per peer with 100000 waiting requests',
      measured: mem === null ? '–' : `${fmt(waitRss === null ? null : waitRss / 1048576)} MB with ${mem.waitersOpened} waiting`,
      verdict: mem !== null && mem.waitersOpened < 100_000 ? 'not measured' : verdict(waitRss, (v) => v < 150 * 1048576),
    },
    {
      target: `(f) idle names cost nothing once released (< ${idleGrowthMbMax} MB growth per peer)`,
      measured: mem === null ? '–' : `+${fmt(idleGrowth)} MB after ${mem.idleNames} names`,
      verdict: verdict(idleGrowth, (v) => v < idleGrowthMbMax),
    },
  ];
}

function idleGrowthMb(before: Readonly<Record<string, number | null>>, after: Readonly<Record<string, number | null>>): number | null {
  const growth = Object.keys(before).map((id) => {
    const b = before[id];
    const a = after[id];
    return a === null || a === undefined || b === null || b === undefined ? null : (a - b) / 1048576;
  });
  return maxOf(growth);
}

/** The targets as Markdown table lines. */
export function targetTable(verdicts: readonly TargetVerdict[]): string[] {
  return ['| target | measured | verdict |', '|---|---|---|', ...verdicts.map((v) => `| ${v.target} | ${v.measured} | ${v.verdict} |`)];
}
