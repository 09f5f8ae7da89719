/**
 * The targets of issue 6 (3 peers, medians, same run as the anchors), each checked
 * against what was measured: met, missed, or not measured.
 */
import { fmt, maxOf } from './report.js';
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

/** Every target of issue 6 with its verdict. */
export function checkTargets(results: BenchResults): TargetVerdict[] {
  const ours = results.systems['lamport-lock'];
  const cycle = ours?.a.cycleP50Ms.median;
  const handoffs = ours?.b.realHandoffsPerS.median;
  const fifo = ours?.b.tokenOrderViolations.max;
  const ops = ours?.c.opsPerS.median;
  const p3 = results.scaling.find((p) => p.peers === 3)?.a.cycleP50Ms.median;
  const p9 = results.scaling.find((p) => p.peers === 9)?.a.cycleP50Ms.median;
  const scale = p3 !== undefined && p9 !== undefined ? p9 / p3 : null;
  const high3 = results.scaling.find((p) => p.peers === 3)?.linksHigh.frames?.median;
  const mem = results.memory;
  const waitRss = mem === null ? null : maxOf(Object.values(mem.whileWaiting));
  const idleGrowth = mem === null ? null : idleGrowthMb(mem.baseline, mem.afterIdleNames);
  return [
    { target: '(a) acquire+release p50 ≤ 0.8 ms', measured: `${fmt(cycle)} ms`, verdict: verdict(cycle, (v) => v <= 0.8) },
    { target: '(b) ≥ 1500 real handoffs/s, 8 clients', measured: `${fmt(handoffs)}/s`, verdict: verdict(handoffs, (v) => v >= 1500) },
    { target: '(b) every handoff to the FIFO-next waiter (tokens rise in grant order)', measured: `${fmt(fifo)} violations (max over runs)`, verdict: verdict(fifo, (v) => v === 0) },
    { target: '(c) ≥ 8000 acquire+release/s, 1000 names, 64 workers', measured: `${fmt(ops)}/s`, verdict: verdict(ops, (v) => v >= 8000) },
    { target: '(d) 9-peer acquire+release p50 ≤ 2 × 3-peer', measured: scale === null ? '9 peers not run' : `${fmt(scale)}×`, verdict: verdict(scale, (v) => v <= 2) },
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
