/**
 * Steady-state load of one system for issue 15: load in windows until the CPU per operation
 * settles (the JIT has done its work), then measured load windows and one connection's
 * latency, which bench/floor.ts runs in pairs with the floor's. CPU is the system's
 * processes' (bench/cpu-time.ts), not the load generator's.
 */
import { cpuMsOf, ioCallsOf } from './cpu-time.js';
import { percentile } from './stats.js';
import type { LockSession } from './systems/types.js';

/** A system under load: clients spread over its processes, and the processes' pids. */
export interface LoadTarget {
  readonly name: string;
  readonly sessions: readonly LockSession[];
  readonly pids: readonly number[];
}

/** How long and how hard to load one system. */
export interface SteadyOptions {
  /** Concurrent acquire+release loops during the warm-up and the measured window. */
  readonly connections: number;
  /** Length of one warm-up window. */
  readonly windowMs: number;
  /** The warm-up lasts at least this long, settled or not. */
  readonly warmupMinMs: number;
  /** No window starts past this, settled or not (then the report says so). */
  readonly warmupMaxMs: number;
  /** Settled: two consecutive windows' CPU per operation differ by less than this fraction. */
  readonly settledWithin: number;
  /** One system's measured load window in a pair (bench/floor.ts). */
  readonly measureMs: number;
  /** How long one connection's acquire+release latency is sampled, per system and pair. */
  readonly latencyMs: number;
}

/** The warm-up of one system before its measured window. */
export interface WarmUp {
  readonly ms: number;
  /** CPU ms per acquire+release of each window, in order. */
  readonly windowCpuMsPerOp: readonly number[];
  /** Acquire+release per second of each window, in order. */
  readonly windowOpsPerS: readonly number[];
  /** False when warmupMaxMs ended it before two windows agreed. */
  readonly settled: boolean;
}

/** CPU and system calls of a system's processes so far (a pair's accounting starts and ends with one). */
export interface Counters {
  readonly cpuMs: number;
  readonly reads: number;
  readonly writes: number;
}

/** Reads `target`'s counters now. */
export function countersOf(target: LoadTarget): Counters {
  const io = ioCallsOf(target.pids);
  return { cpuMs: cpuMsOf(target.pids), reads: io.reads, writes: io.writes };
}

/**
 * One system's part of a measured pair (bench/floor.ts): its load window, and its processes'
 * CPU and system calls over the whole pair, the other system's window included (idle work
 * such as heartbeats counts against it), per operation of its window.
 */
export interface PairRun {
  readonly ops: number;
  readonly opsPerS: number;
  /** CPU ms of all the system's processes per acquire+release. */
  readonly cpuMsPerOp: number;
  /** CPU of the processes over wall time during its own window: cores busy. */
  readonly coresBusy: number;
  /** Read- and write-family system calls of all the processes per acquire+release (/proc/<pid>/io). */
  readonly readsPerOp: number;
  readonly writesPerOp: number;
  /** p50 of one connection's acquire+release, alone on the system. */
  readonly p50Ms: number;
}

/** Completed acquire+release cycles of one load window, its wall time and its processes' CPU. */
export interface Window {
  readonly ops: number;
  readonly ms: number;
  readonly cpuMs: number;
}

/** Name of the Nth lock of loop `w`: every loop has its own names, so nothing contends. */
function lockName(tag: string, w: number, i: number): string {
  return `${tag}-${w}-${i % 100}`;
}

/**
 * Runs `connections` acquire+release loops on distinct names for `ms`; the window ends when
 * every loop has finished its last cycle, so the CPU read after it covers every counted op.
 */
export async function loadWindow(target: LoadTarget, connections: number, ms: number, tag: string): Promise<Window> {
  const cpu0 = cpuMsOf(target.pids);
  const start = performance.now();
  const end = start + ms;
  let ops = 0;
  await Promise.all(Array.from({ length: connections }, async (_, w) => {
    const s = target.sessions[w % target.sessions.length];
    if (s === undefined) throw new Error(`${target.name} has no session`);
    for (let i = 0; performance.now() < end; i++) {
      await s.release(await s.acquire(lockName(tag, w, i), 5000));
      ops++;
    }
  }));
  return { ops, ms: performance.now() - start, cpuMs: cpuMsOf(target.pids) - cpu0 };
}

function cpuPerOp(w: Window): number {
  return w.ops === 0 ? Number.NaN : w.cpuMs / w.ops;
}

/** Whether the last two windows' CPU per operation agree within `within` (relative). */
export function settled(perOp: readonly number[], within: number): boolean {
  const last = perOp[perOp.length - 1];
  const before = perOp[perOp.length - 2];
  if (last === undefined || before === undefined || !(before > 0)) return false;
  return Math.abs(last - before) / before < within;
}

/** Loads in windows until the CPU per operation settles (at least warmupMinMs, at most warmupMaxMs). */
export async function warmUntilSettled(target: LoadTarget, opts: SteadyOptions): Promise<WarmUp> {
  const perOp: number[] = [];
  const opsPerS: number[] = [];
  let ms = 0;
  for (let n = 0; ms < opts.warmupMaxMs; n++) {
    const w = await loadWindow(target, opts.connections, opts.windowMs, `warm${n}`);
    ms += w.ms;
    perOp.push(cpuPerOp(w));
    opsPerS.push((w.ops * 1000) / w.ms);
    if (ms >= opts.warmupMinMs && settled(perOp, opts.settledWithin)) return { ms, windowCpuMsPerOp: perOp, windowOpsPerS: opsPerS, settled: true };
  }
  return { ms, windowCpuMsPerOp: perOp, windowOpsPerS: opsPerS, settled: false };
}

/** p50 of one connection's acquire+release for `ms`, nothing else running on the system. */
export async function latencyP50(target: LoadTarget, ms: number, tag: string): Promise<number> {
  const s = target.sessions[0];
  if (s === undefined) throw new Error(`${target.name} has no session`);
  const samples: number[] = [];
  const end = performance.now() + ms;
  for (let i = 0; performance.now() < end; i++) {
    const t = performance.now();
    await s.release(await s.acquire(`${tag}-${i % 100}`, 5000));
    samples.push(performance.now() - t);
  }
  return percentile(samples, 50);
}
