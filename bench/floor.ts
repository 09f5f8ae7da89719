/**
 * Peer CPU per operation against the floor (issue 15): a 3-peer lamport-lock cluster and the
 * 3-process floor (bench/floor-peer.ts: the message pattern of an acquire and a release, no
 * algorithm), measured in turns in the same run, each in steady state (bench/steady-state.ts).
 * The ratios lamport-lock / floor are taken per round, from figures minutes apart at most,
 * and the report gives their median: the host's other load moves both sides of a round alike,
 * while absolute figures hold only for the CPU they were measured on, which is named.
 *
 * Used by `npm run bench` as part (g) and by `npm run bench:floor` alone.
 */
import { cpuTimeSource, hostCpuName, loadAverage1m } from './cpu-time.js';
import { startFloor, startLamportTarget } from './floor-system.js';
import type { PeerStart, RunningTarget } from './floor-system.js';
import type { ProcessGroup } from './procs.js';
import { spread } from './stats.js';
import type { Spread } from './stats.js';
import { measureSteady } from './steady-state.js';
import type { SteadyOptions, SteadyRun } from './steady-state.js';

/** Sizes of one floor measurement; `--quick` shrinks them. */
export interface FloorSizes extends SteadyOptions {
  /** Rounds; each measures both systems, the first alternating between them. */
  readonly rounds: number;
}

/** Everything measureAgainstFloor needs. */
export interface FloorOptions extends FloorSizes, PeerStart {
  /** Called with a line of progress (the harness writes it to stderr). */
  readonly progress?: (text: string) => void;
}

/** lamport-lock / floor of one round, or of the medians. */
export interface FloorRatios {
  /** Peer CPU per acquire+release; lower is better, 1 is the floor. */
  readonly cpuPerOp: number;
  /** Acquire+release per second; higher is better, 1 is the floor. */
  readonly throughput: number;
  /** One connection's acquire+release p50; lower is better, 1 is the floor. */
  readonly p50: number;
}

/** Both systems measured once, one after the other. */
export interface FloorRound {
  readonly round: number;
  readonly first: 'lamport-lock' | 'floor';
  readonly lamport: SteadyRun;
  readonly floor: SteadyRun;
  readonly ratios: FloorRatios;
}

/** The absolute figures of one system over the rounds. */
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
  readonly rounds: readonly FloorRound[];
  /** Per-round ratios, median (min–max) over the rounds. */
  readonly ratios: { readonly [K in keyof FloorRatios]: Spread };
  readonly lamport: FloorSpreads;
  readonly floor: FloorSpreads;
  /** Warm-ups that reached warmupMaxMs before the CPU per operation settled. */
  readonly unsettledWarmUps: number;
}

function ratiosOf(lamport: SteadyRun, floor: SteadyRun): FloorRatios {
  return { cpuPerOp: lamport.cpuMsPerOp / floor.cpuMsPerOp, throughput: lamport.opsPerS / floor.opsPerS, p50: lamport.p50Ms / floor.p50Ms };
}

function spreadsOf(runs: readonly SteadyRun[]): FloorSpreads {
  return { opsPerS: spread(runs.map((r) => r.opsPerS)), cpuMsPerOp: spread(runs.map((r) => r.cpuMsPerOp)), p50Ms: spread(runs.map((r) => r.p50Ms)) };
}

/** One round: both systems in steady state, lamport-lock first in odd rounds, the floor first in even ones. */
async function measureRound(round: number, lamport: RunningTarget, floor: RunningTarget, opts: FloorOptions): Promise<FloorRound> {
  const first = round % 2 === 1 ? 'lamport-lock' : 'floor';
  const runs = new Map<string, SteadyRun>();
  for (const sys of first === 'lamport-lock' ? [lamport, floor] : [floor, lamport]) {
    opts.progress?.(`(g) round ${round}/${opts.rounds}: ${sys.target.name}, warm-up until CPU per op settles, then ${opts.measureMs / 1000} s measured`);
    const run = await measureSteady(sys.target, opts);
    runs.set(sys.target.name, run);
  }
  const l = runs.get('lamport-lock');
  const f = runs.get('floor');
  if (l === undefined || f === undefined) throw new Error('a round measured only one system');
  return { round, first, lamport: l, floor: f, ratios: ratiosOf(l, f) };
}

function figuresOf(opts: FloorOptions, rounds: readonly FloorRound[], loadStart: number): FloorFigures {
  const pick = (k: keyof FloorRatios): Spread => spread(rounds.map((r) => r.ratios[k]));
  const { progress: _progress, peerBin: _peerBin, profileDir: _profileDir, ...sizes } = opts;
  return {
    cpu: hostCpuName(),
    cpuSource: cpuTimeSource,
    loadAverage: { start: loadStart, end: loadAverage1m() },
    sizes,
    rounds,
    ratios: { cpuPerOp: pick('cpuPerOp'), throughput: pick('throughput'), p50: pick('p50') },
    lamport: spreadsOf(rounds.map((r) => r.lamport)),
    floor: spreadsOf(rounds.map((r) => r.floor)),
    unsettledWarmUps: rounds.flatMap((r) => [r.lamport, r.floor]).filter((r) => !r.warmUp.settled).length,
  };
}

/**
 * Starts a 3-peer cluster and the 3-process floor in `group`, measures both `opts.rounds`
 * times in turns, stops both, and returns every round with the ratios.
 */
export async function measureAgainstFloor(group: ProcessGroup, opts: FloorOptions): Promise<FloorFigures> {
  const loadStart = loadAverage1m();
  const lamport = await startLamportTarget(group, opts);
  try {
    const floor = await startFloor(group, opts);
    try {
      const rounds: FloorRound[] = [];
      for (let r = 1; r <= opts.rounds; r++) rounds.push(await measureRound(r, lamport, floor, opts));
      return figuresOf(opts, rounds, loadStart);
    } finally {
      await floor.stop();
    }
  } finally {
    await lamport.stop();
  }
}
