/**
 * The Markdown of part (g), printed by `npm run bench` and `npm run bench:floor` alike: the
 * CPU named first, then the ratios against the same-run floor, then both warm-ups and the
 * absolute figures of every pair.
 */
import { againstName } from './floor.js';
import type { FloorFigures, FloorSpreads } from './floor.js';
import { cell, fmt } from './format.js';
import type { Spread } from './stats.js';
import type { PairRun, WarmUp } from './steady-state.js';

function seconds(ms: number): string {
  return `${Number((ms / 1000).toFixed(2))} s`;
}

function times(s: Spread): string {
  if (!Number.isFinite(s.median)) return '–';
  return fmt(s.min) === fmt(s.max) ? `${fmt(s.median)}×` : `${fmt(s.median)}× (${fmt(s.min)}–${fmt(s.max)})`;
}

/** "7.9 s, 4 windows, settled (0.412 → 0.405 at 2,210/s)": how long it took and the last two windows. */
function warmUpCell(w: WarmUp): string {
  const pair = w.windowCpuMsPerOp.slice(-2).map(fmt).join(' → ');
  const rate = fmt(w.windowOpsPerS[w.windowOpsPerS.length - 1]);
  return `${seconds(w.ms)}, ${w.windowCpuMsPerOp.length} windows, ${w.settled ? 'settled' : '**not settled**'} (${pair} at ${rate}/s)`;
}

function runRow(label: string, system: string, r: PairRun): string {
  return `| ${label} | ${system} | ${fmt(r.cpuMsPerOp)} | ${fmt(r.readsPerOp)} / ${fmt(r.writesPerOp)} | ${fmt(r.coresBusy)} | ${fmt(r.opsPerS)} | ${fmt(r.p50Ms)} |`;
}

function medianRow(system: string, s: FloorSpreads): string {
  return `| median | ${system} | ${cell(s.cpuMsPerOp)} | | | ${cell(s.opsPerS)} | ${cell(s.p50Ms)} |`;
}

function howMeasured(g: FloorFigures): string {
  const z = g.sizes;
  const against = g.against === 'floor'
    ? `the 3-process floor (bench/floor-peer.ts: HTTP in, one message to each other process, one reply each, HTTP out; the same libraries, no algorithm)`
    : `a second cluster of 3 peers of the same build, in the floor's place (a control run: every ratio would be 1 on a quiet host, their spread is the method's and the host's own)`;
  return `3 lamport-lock peers against ${against}. Each is first warmed with ${z.connections} connections in ${seconds(z.windowMs)} windows ` +
    `until two consecutive windows' CPU per op differ by less than ${fmt(z.settledWithin * 100)}% (at least ${seconds(z.warmupMinMs)}, ` +
    `no window started after ${seconds(z.warmupMaxMs)}). Then ${g.pairs.length === 1 ? '1 pair' : `${g.pairs.length} pairs`}, the order alternating: ` +
    `each system loaded for ${seconds(z.measureMs)} with the same ${z.connections} connections on distinct names, one after the other, then one connection ` +
    `alone for ${seconds(z.latencyMs)} each (p50); the ratios are taken per pair, seconds apart. CPU is ${g.cpuSource}, summed over the 3 processes ` +
    `from the start of a pair's first window to the end of its second (what a system spends while the other one is measured counts against it), ` +
    `per operation of its own window; the load generator's is not counted.`;
}

/** The lines of part (g). */
export function floorSection(g: FloorFigures): string[] {
  const unsettled = g.unsettledWarmUps === 0 ? [] : [
    `- ${g.unsettledWarmUps} of the 2 warm-ups reached the maximum before the CPU per op settled: those figures are not steady state, and the targets of (g) count as not measured.`,
  ];
  const other = againstName(g.against);
  return [
    `CPU: ${g.cpu}; 1-minute load average ${fmt(g.loadAverage.start)} before, ${fmt(g.loadAverage.end)} after (the load generator shares the host).`,
    '',
    howMeasured(g),
    '',
    `| lamport-lock / ${other}, same run (median of the per-pair ratios, min–max) | ratio |`,
    '|---|---|',
    `| peer CPU per acquire+release (3 processes; lower is better) | ${times(g.ratios.cpuPerOp)} |`,
    `| acquire+release/s, ${g.sizes.connections} connections (higher is better) | ${times(g.ratios.throughput)} |`,
    `| acquire+release p50, 1 connection (lower is better) | ${times(g.ratios.p50)} |`,
    '',
    `Absolute figures (on this CPU only):`,
    '',
    '| system | warm-up (CPU ms per op of the last two windows, at the rate of the last) |',
    '|---|---|',
    `| lamport-lock | ${warmUpCell(g.warmUps.lamport)} |`,
    `| ${other} | ${warmUpCell(g.warmUps.floor)} |`,
    '',
    '| pair | system | CPU ms per op (3 processes) | read / write system calls per op (3 processes) | cores busy | acquire+release/s | p50 ms (1 connection) |',
    '|---|---|---|---|---|---|---|',
    ...g.pairs.flatMap((r) => {
      const rows = [runRow(String(r.pair), 'lamport-lock', r.lamport), runRow(String(r.pair), other, r.floor)];
      return r.first === 'lamport-lock' ? rows : rows.reverse();
    }),
    ...(g.pairs.length > 1 ? [medianRow('lamport-lock', g.lamport), medianRow(other, g.floor)] : []),
    ...(unsettled.length > 0 ? ['', ...unsettled] : []),
  ];
}
