/**
 * The workloads of issue 6, each one run against any `LockSystem`: (a) uncontended
 * latency, (b) one hot lock with 8 clients, (c) 1000 lock names with 64 workers. Every
 * loop is bounded both by a count and by a deadline.
 */
import { nowMs, percentile } from './stats.js';
import type { Grant, LockSession, LockSystem } from './systems/types.js';

/** Server-side wait asked for in every acquire of the scenarios. */
export const acquireTimeoutMs = 20_000;
/** Acquires one worker may make in one timed run, whatever the duration. */
const iterationsPerWorkerMax = 1_000_000;

/** Result of one run of (a). */
export interface UncontendedRun {
  readonly acquireP50Ms: number;
  readonly acquireP99Ms: number;
  readonly cycleP50Ms: number;
  readonly cycleP99Ms: number;
  readonly grants: number;
}

/** (a) One client, one lock, nobody else: acquire latency and acquire+release latency. */
export async function runUncontended(system: Pick<LockSystem, 'openSession'>, opts: { iterations: number; warmup: number; tag: string }): Promise<UncontendedRun> {
  const session = await system.openSession(0);
  const lock = `bench-a-${opts.tag}`;
  const acquireMs: number[] = [];
  const cycleMs: number[] = [];
  try {
    for (let i = 0; i < opts.warmup + opts.iterations; i++) {
      const t0 = nowMs();
      const grant = await session.acquire(lock, acquireTimeoutMs);
      const t1 = nowMs();
      await session.release(grant);
      const t2 = nowMs();
      if (i < opts.warmup) continue;
      acquireMs.push(t1 - t0);
      cycleMs.push(t2 - t0);
    }
  } finally {
    await session.close();
  }
  return {
    acquireP50Ms: percentile(acquireMs, 50),
    acquireP99Ms: percentile(acquireMs, 99),
    cycleP50Ms: percentile(cycleMs, 50),
    cycleP99Ms: percentile(cycleMs, 99),
    grants: opts.warmup + opts.iterations,
  };
}

/** Result of one run of (b). */
export interface HotLockRun {
  readonly handoffsPerS: number;
  /** Grants to a different client than the previous holder, per second. */
  readonly realHandoffsPerS: number;
  readonly waitP50Ms: number;
  readonly waitP99Ms: number;
  /** Failed SET NX polls per real handoff (polling clients only; 0 otherwise). */
  readonly failedPollsPerHandoff: number;
  /** Grants whose token was not above the previous grant's (NaN when there are no tokens). */
  readonly tokenOrderViolations: number;
  /** Grants seen while another client still held the lock. */
  readonly overlaps: number;
  readonly grants: number;
}

/** Everything the workers of (b) record, in the order the client saw the grants. */
interface HotLockLog {
  holder: number | null;
  lastWorker: number | null;
  lastToken: bigint | null;
  grants: number;
  realHandoffs: number;
  failedPolls: number;
  tokenViolations: number;
  tokensSeen: number;
  overlaps: number;
  readonly waitMs: number[];
}

/**
 * (b) One hot lock, `workers` clients spread over the members, each acquiring and at
 * once releasing in a loop. A grant seen after the previous holder sent its release is a
 * real handoff; tokens must rise strictly in the order grants are seen, which is FIFO
 * order for a service whose token is the request timestamp.
 */
export async function runHotLock(system: LockSystem, opts: { workers: number; durationMs: number; tag: string }): Promise<HotLockRun> {
  const sessions = await Promise.all(Array.from({ length: opts.workers }, (_, w) => system.openSession(w)));
  const lock = `bench-b-${opts.tag}`;
  const log: HotLockLog = {
    holder: null, lastWorker: null, lastToken: null, grants: 0, realHandoffs: 0,
    failedPolls: 0, tokenViolations: 0, tokensSeen: 0, overlaps: 0, waitMs: [],
  };
  const start = nowMs();
  const end = start + opts.durationMs;
  try {
    await Promise.all(sessions.map((s, w) => hotLockWorker(s, { worker: w, lock, end, log })));
  } finally {
    await Promise.all(sessions.map((s) => s.close()));
  }
  const elapsedS = (nowMs() - start) / 1000;
  return {
    handoffsPerS: log.grants / elapsedS,
    realHandoffsPerS: log.realHandoffs / elapsedS,
    waitP50Ms: percentile(log.waitMs, 50),
    waitP99Ms: percentile(log.waitMs, 99),
    failedPollsPerHandoff: log.realHandoffs === 0 ? Number.NaN : log.failedPolls / log.realHandoffs,
    tokenOrderViolations: log.tokensSeen === 0 ? Number.NaN : log.tokenViolations,
    overlaps: log.overlaps,
    grants: log.grants,
  };
}

async function hotLockWorker(session: LockSession, ctx: { worker: number; lock: string; end: number; log: HotLockLog }): Promise<void> {
  const { log } = ctx;
  for (let i = 0; i < iterationsPerWorkerMax && nowMs() < ctx.end; i++) {
    const t0 = nowMs();
    const grant = await session.acquire(ctx.lock, acquireTimeoutMs);
    log.waitMs.push(nowMs() - t0);
    recordGrant(log, ctx.worker, grant);
    log.holder = null;
    await session.release(grant);
  }
}

function recordGrant(log: HotLockLog, worker: number, grant: Grant): void {
  if (log.holder !== null) log.overlaps++;
  log.holder = worker;
  log.grants++;
  log.failedPolls += grant.failedPolls;
  if (log.lastWorker !== null && log.lastWorker !== worker) log.realHandoffs++;
  log.lastWorker = worker;
  if (grant.token !== null) {
    log.tokensSeen++;
    if (log.lastToken !== null && grant.token <= log.lastToken) log.tokenViolations++;
    log.lastToken = grant.token;
  }
}

/** Result of one run of (c). */
export interface ManyNamesRun {
  readonly opsPerS: number;
  readonly cycleP50Ms: number;
  readonly cycleP99Ms: number;
  readonly grants: number;
}

/** (c) `names` lock names, `workers` clients, each acquiring and releasing random names. */
export async function runManyNames(
  system: LockSystem,
  opts: { workers: number; names: number; durationMs: number; tag: string },
): Promise<ManyNamesRun> {
  const sessions = await Promise.all(Array.from({ length: opts.workers }, (_, w) => system.openSession(w)));
  const cycleMs: number[] = [];
  const start = nowMs();
  const end = start + opts.durationMs;
  const worker = async (session: LockSession): Promise<void> => {
    for (let i = 0; i < iterationsPerWorkerMax && nowMs() < end; i++) {
      const lock = `bench-c-${opts.tag}-${Math.floor(Math.random() * opts.names)}`;
      const t0 = nowMs();
      const grant = await session.acquire(lock, acquireTimeoutMs);
      await session.release(grant);
      cycleMs.push(nowMs() - t0);
    }
  };
  try {
    await Promise.all(sessions.map(worker));
  } finally {
    await Promise.all(sessions.map((s) => s.close()));
  }
  const elapsedS = (nowMs() - start) / 1000;
  return {
    opsPerS: cycleMs.length / elapsedS,
    cycleP50Ms: percentile(cycleMs, 50),
    cycleP99Ms: percentile(cycleMs, 99),
    grants: cycleMs.length,
  };
}
