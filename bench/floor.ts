/**
 * Peer CPU per operation against the floor (issue 15): a 3-peer lamport-lock cluster and the
 * 3-process floor (bench/floor-peer.ts: the message pattern of an acquire and a release, no
 * algorithm). Each is warmed until its CPU per operation settles (bench/steady-state.ts); then
 * both are measured in pairs of short windows, one system after the other, the order
 * alternating: a ratio lamport-lock / floor per pair, from figures seconds apart, and the
 * report gives their median. This host's speed drifts by 10-30% within minutes (other guests,
 * frequency); rounds of a warm-up and a 10 s window per system, as before, put up to a minute
 * between the two sides of a ratio and spread one run's ratios from 1.10 to 1.56. A system's
 * CPU in a pair is counted over both windows, so what it spends while the other one is
 * measured (heartbeats, timers, a collection that finishes late) counts against it.
 *
 * Used by `npm run bench` as part (g) and by `npm run bench:floor` alone.
 */
import { cpuTimeSource, hostCpuName, loadAverage1m } from './cpu-time.js';
import { startFloor, startLamportTarget } from './floor-system.js';
import type { PeerStart, RunningTarget } from './floor-system.js';
import type { ProcessGroup } from './procs.js';
import { spread } from './stats.js';
import type { Spread } from './stats.js';
import { countersOf, latencyP50, loadWindow, warmUntilSettled } from './steady-state.js';
import type { Counters, LoadTarget, PairRun, SteadyOptions, WarmUp, Window } from './steady-state.js';

/** Sizes of one floor measurement; `--quick` shrinks them. */
export interface FloorSizes extends SteadyOptions {
  /** Measured pairs, after both warm-ups; lamport-lock first in odd pairs, the floor in even ones. */
  readonly pairs: number;
}

/** Everything measureAgainstFloor needs. */
export interface FloorOptions extends FloorSizes, PeerStart {
  /** Called with a line of progress (the harness writes it to stderr). */
  readonly progress?: (text: string) => void;
  /**
   * A control run: a second lamport-lock cluster of the same build stands where the floor
   * stands, measured the same way. Its ratios would all be 1 on a quiet host; their spread is
   * how far this host and this method move a ratio by themselves (bench/README.md "Control run").
   */
  readonly control?: boolean;
}

/** What part (g) measures lamport-lock against: the floor, or a second cluster of itself. */
export type Against = 'floor' | 'control';

/** The name a report gives the system in the floor's place. */
export function againstName(against: Against): string {
  return against === 'floor' ? 'floor' : 'lamport-lock (control)';
}

/** lamport-lock / floor of one pair, or of the medians. */
export interface FloorRatios {
  /** Peer CPU per acquire+release; lower is better, 1 is the floor. */
  readonly cpuPerOp: number;
  /** Acquire+release per second; higher is better, 1 is the floor. */
  readonly throughput: number;
  /** One connection's acquire+release p50; lower is better, 1 is the floor. */
  readonly p50: number;
}

/** Both systems measured once, one after the other. */
export interface FloorPair {
  readonly pair: number;
  readonly first: 'lamport-lock' | 'floor';
  readonly lamport: PairRun;
  readonly floor: PairRun;
  readonly ratios: FloorRatios;
}

/** The absolute figures of one system over the pairs. */
export interface FloorSpreads {
  readonly opsPerS: Spread;
  readonly cpuMsPerOp: Spread;
  readonly p50Ms: Spread;
}

/** The result of part (g). */
export interface FloorFigures {
  /** The CPU the figures were measured on ("2 × AMD EPYC 7B13"). */
  readonly cpu: string;
  /** Where the processes' CPU time was read (bench/cpu-time.ts). */
  readonly cpuSource: string;
  /** The host's 1-minute load average before and after: how busy it was besides the run. */
  readonly loadAverage: { readonly start: number; readonly end: number };
  readonly sizes: FloorSizes;
  /** The floor, or (a control run) a second lamport-lock cluster in its place. */
  readonly against: Against;
  /** Each system's warm-up, before the first pair. */
  readonly warmUps: { readonly lamport: WarmUp; readonly floor: WarmUp };
  readonly pairs: readonly FloorPair[];
  /** Per-pair ratios, median (min–max) over the pairs. */
  readonly ratios: { readonly [K in keyof FloorRatios]: Spread };
  readonly lamport: FloorSpreads;
  readonly floor: FloorSpreads;
  /** Warm-ups that reached warmupMaxMs before the CPU per operation settled. */
  readonly unsettledWarmUps: number;
}

function ratiosOf(lamport: PairRun, floor: PairRun): FloorRatios {
  return { cpuPerOp: lamport.cpuMsPerOp / floor.cpuMsPerOp, throughput: lamport.opsPerS / floor.opsPerS, p50: lamport.p50Ms / floor.p50Ms };
}

function spreadsOf(runs: readonly PairRun[]): FloorSpreads {
  return { opsPerS: spread(runs.map((r) => r.opsPerS)), cpuMsPerOp: spread(runs.map((r) => r.cpuMsPerOp)), p50Ms: spread(runs.map((r) => r.p50Ms)) };
}

function pairRun(w: Window, before: Counters, after: Counters, p50Ms: number): PairRun {
  const perOp = (v: number): number => (w.ops === 0 ? Number.NaN : v / w.ops);
  return {
    ops: w.ops,
    opsPerS: (w.ops * 1000) / w.ms,
    cpuMsPerOp: perOp(after.cpuMs - before.cpuMs),
    coresBusy: w.cpuMs / w.ms,
    readsPerOp: perOp(after.reads - before.reads),
    writesPerOp: perOp(after.writes - before.writes),
    p50Ms,
  };
}

/**
 * One pair: both systems' load windows, one after the other, then both systems' one-connection
 * p50 in the same order. CPU and system calls are read for both systems before the first
 * window and after the second.
 */
async function measurePair(pair: number, lamport: LoadTarget, floor: LoadTarget, opts: FloorOptions): Promise<FloorPair> {
  const first = pair % 2 === 1 ? 'lamport-lock' : 'floor';
  const order = first === 'lamport-lock' ? [lamport, floor] : [floor, lamport];
  opts.progress?.(`(g) pair ${pair}/${opts.pairs}: ${order.map((t) => t.name).join(' then ')}, ${opts.measureMs / 1000} s each`);
  const before = new Map(order.map((t) => [t.name, countersOf(t)]));
  const windows = new Map<string, Window>();
  for (const t of order) windows.set(t.name, await loadWindow(t, opts.connections, opts.measureMs, `pair${pair}`));
  const after = new Map(order.map((t) => [t.name, countersOf(t)]));
  const p50 = new Map<string, number>();
  for (const t of order) p50.set(t.name, await latencyP50(t, opts.latencyMs, `p50-${pair}`));
  const run = (t: LoadTarget): PairRun => {
    const w = windows.get(t.name);
    const b = before.get(t.name);
    const a = after.get(t.name);
    const p = p50.get(t.name);
    if (w === undefined || b === undefined || a === undefined || p === undefined) throw new Error(`pair ${pair} did not measure ${t.name}`);
    return pairRun(w, b, a, p);
  };
  const l = run(lamport);
  const f = run(floor);
  return { pair, first, lamport: l, floor: f, ratios: ratiosOf(l, f) };
}

function figuresOf(opts: FloorOptions, warmUps: FloorFigures['warmUps'], pairs: readonly FloorPair[], loadStart: number): FloorFigures {
  const pick = (k: keyof FloorRatios): Spread => spread(pairs.map((r) => r.ratios[k]));
  const { progress: _progress, peerBin: _peerBin, profileDir: _profileDir, control, ...sizes } = opts;
  return {
    against: control === true ? 'control' : 'floor',
    cpu: hostCpuName(),
    cpuSource: cpuTimeSource,
    loadAverage: { start: loadStart, end: loadAverage1m() },
    sizes,
    warmUps,
    pairs,
    ratios: { cpuPerOp: pick('cpuPerOp'), throughput: pick('throughput'), p50: pick('p50') },
    lamport: spreadsOf(pairs.map((r) => r.lamport)),
    floor: spreadsOf(pairs.map((r) => r.floor)),
    unsettledWarmUps: [warmUps.lamport, warmUps.floor].filter((w) => !w.settled).length,
  };
}

/** A second cluster of the same build in the floor's place (FloorOptions.control); its profiles go to DIR/control. */
async function startControl(group: ProcessGroup, opts: FloorOptions): Promise<RunningTarget> {
  const running = await startLamportTarget(group, opts, 'control');
  return { ...running, target: { ...running.target, name: againstName('control') } };
}

async function warm(t: RunningTarget, opts: FloorOptions): Promise<WarmUp> {
  opts.progress?.(`(g) ${t.target.name}: warm-up until CPU per op settles`);
  return warmUntilSettled(t.target, opts);
}

/**
 * Starts a 3-peer cluster and the 3-process floor in `group`, warms both, measures them in
 * `opts.pairs` pairs, stops both, and returns every pair with the ratios.
 */
export async function measureAgainstFloor(group: ProcessGroup, opts: FloorOptions): Promise<FloorFigures> {
  const loadStart = loadAverage1m();
  const lamport = await startLamportTarget(group, opts);
  try {
    const floor = opts.control === true ? await startControl(group, opts) : await startFloor(group, opts);
    try {
      const warmUps = { lamport: await warm(lamport, opts), floor: await warm(floor, opts) };
      const pairs: FloorPair[] = [];
      for (let p = 1; p <= opts.pairs; p++) pairs.push(await measurePair(p, lamport.target, floor.target, opts));
      return figuresOf(opts, warmUps, pairs, loadStart);
    } finally {
      await floor.stop();
    }
  } finally {
    await lamport.stop();
  }
}
