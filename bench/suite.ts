/**
 * Runs scenarios (a), (b) and (c) several times against one system and reduces each
 * figure to median / min / max over the runs.
 */
import { runHotLock, runManyNames, runUncontended } from './scenarios.js';
import type { HotLockRun, ManyNamesRun, UncontendedRun } from './scenarios.js';
import { spreadOf } from './stats.js';
import type { Spread } from './stats.js';
import type { LockSystem } from './systems/types.js';

/** Sizes of the scenarios; `quick` mode shrinks them. */
export interface Sizes {
  readonly runs: number;
  readonly uncontendedIterations: number;
  readonly uncontendedWarmup: number;
  readonly hotWorkers: number;
  readonly hotDurationMs: number;
  readonly names: number;
  readonly namesWorkers: number;
  readonly namesDurationMs: number;
}

/** Per-figure spreads of one scenario. */
export type Figures<R> = { readonly [K in keyof R]: Spread };

/** The figures of (a), (b), (c) for one system. */
export interface SystemFigures {
  readonly a: Figures<UncontendedRun>;
  readonly b: Figures<HotLockRun>;
  readonly c: Figures<ManyNamesRun>;
}

export const uncontendedKeys = ['acquireP50Ms', 'acquireP99Ms', 'cycleP50Ms', 'cycleP99Ms', 'grants'] as const;
export const hotLockKeys = [
  'handoffsPerS', 'realHandoffsPerS', 'waitP50Ms', 'waitP99Ms', 'failedPollsPerHandoff', 'tokenOrderViolations', 'overlaps', 'grants',
] as const;
export const manyNamesKeys = ['opsPerS', 'cycleP50Ms', 'cycleP99Ms', 'grants'] as const;

/** Runs (a) `sizes.runs` times, calling `around` around each run (for metric scrapes). */
export async function repeatUncontended(
  system: Pick<LockSystem, 'openSession'>,
  sizes: Sizes,
  around: <T extends { grants: number }>(run: () => Promise<T>) => Promise<T> = (run) => run(),
): Promise<Figures<UncontendedRun>> {
  const runs: UncontendedRun[] = [];
  for (let r = 0; r < sizes.runs; r++) {
    const opts = { iterations: sizes.uncontendedIterations, warmup: sizes.uncontendedWarmup, tag: `${r}` };
    runs.push(await around(() => runUncontended(system, opts)));
  }
  return spreadOf(runs, uncontendedKeys);
}

/** Runs (b) `sizes.runs` times. */
export async function repeatHotLock(system: LockSystem, sizes: Sizes): Promise<Figures<HotLockRun>> {
  const runs: HotLockRun[] = [];
  for (let r = 0; r < sizes.runs; r++) {
    runs.push(await runHotLock(system, { workers: sizes.hotWorkers, durationMs: sizes.hotDurationMs, tag: `${r}` }));
  }
  return spreadOf(runs, hotLockKeys);
}

/** Runs (c) `sizes.runs` times, calling `around` around each run. */
export async function repeatManyNames(
  system: LockSystem,
  sizes: Sizes,
  around: <T extends { grants: number }>(run: () => Promise<T>) => Promise<T> = (run) => run(),
): Promise<Figures<ManyNamesRun>> {
  const runs: ManyNamesRun[] = [];
  for (let r = 0; r < sizes.runs; r++) {
    const opts = { workers: sizes.namesWorkers, names: sizes.names, durationMs: sizes.namesDurationMs, tag: `${r}` };
    runs.push(await around(() => runManyNames(system, opts)));
  }
  return spreadOf(runs, manyNamesKeys);
}

/** (a), (b), (c) against one system. */
export async function runSuite(system: LockSystem, sizes: Sizes): Promise<SystemFigures> {
  const a = await repeatUncontended(system, sizes);
  const b = await repeatHotLock(system, sizes);
  const c = await repeatManyNames(system, sizes);
  return { a, b, c };
}
