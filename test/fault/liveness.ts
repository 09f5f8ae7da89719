/**
 * Liveness after the faults heal (docs/design.md section 9, invariant 4): nothing stuck.
 * Right after the heal, every peer must be ready (lease held, synced with its view) within
 * a bound; once the clients have stopped, an acquire and a release of every lock through
 * every peer must succeed, and then every queue must drain: no holder, no waiter left
 * behind by a dead incarnation or a lost release.
 */
import { performance } from 'node:perf_hooks';
import type { LocalCluster } from '../../src/tools/local-cluster.js';
import { delay } from '../support/wait.js';

/** What a liveness check needs. */
export interface LivenessOptions {
  /** The members to check (a replaced peer stays stopped and is none). */
  readonly ids: readonly string[];
  readonly locks: readonly string[];
  readonly timings: { readonly heartbeatMs: number; readonly leaseMs: number; readonly evictMs: number };
  readonly log: (line: string) => void;
  readonly now: () => number;
  /** The final check (clients stopped): acquire + release everywhere, queues drain. */
  readonly final?: boolean;
}

/**
 * How long every peer may take to be ready after the heal: an evicted peer learns it on
 * reconnect (reconnect backoff is at most 5 s), rejoins and syncs; a peer that was not
 * evicted may still be waiting out an eviction begun just before the heal.
 */
export function readyBoundMs(timings: LivenessOptions['timings']): number {
  return 3 * timings.evictMs + 10_000;
}

async function post(url: string, body: unknown, waitMs: number): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(url, { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' }, signal: AbortSignal.timeout(waitMs) });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

async function everyLockEverywhere(cluster: LocalCluster, opts: LivenessOptions): Promise<string[]> {
  const problems: string[] = [];
  const timeoutMs = opts.timings.evictMs + 10_000;
  for (const id of opts.ids) {
    const p = cluster.peer(id);
    for (const lock of opts.locks) {
      try {
        const a = await post(`${cluster.url(p.id)}/v1/locks/${lock}/acquire`, { timeout_ms: timeoutMs, ttl_ms: 30_000, owner: 'final-check' }, timeoutMs + 5000);
        if (a.status !== 200) {
          problems.push(`final acquire of ${lock} through ${p.id} answered ${a.status} ${JSON.stringify(a.body)}`);
          continue;
        }
        const r = await post(`${cluster.url(p.id)}/v1/locks/${lock}/release`, { id: a.body['id'] }, 5000);
        if (r.status !== 200) problems.push(`final release of ${lock} through ${p.id} answered ${r.status} ${JSON.stringify(r.body)}`);
      } catch (err) {
        problems.push(`final acquire+release of ${lock} through ${p.id} failed: ${(err as Error).message}`);
      }
    }
  }
  return problems;
}

async function queuesDrain(cluster: LocalCluster, ids: readonly string[], boundMs: number): Promise<string[]> {
  const deadline = performance.now() + boundMs;
  let left: string[] = [];
  while (performance.now() < deadline) {
    left = [];
    for (const p of ids.map((id) => cluster.peer(id))) {
      const res = await fetch(`${cluster.url(p.id)}/v1/locks`, { signal: AbortSignal.timeout(2000) }).then((r) => r.json() as Promise<unknown>, () => null);
      const locks = Array.isArray(res) ? res : ((res as Record<string, unknown> | null)?.['locks'] as unknown[] | undefined) ?? [];
      for (const l of locks as Array<{ name: string; holders: unknown[]; waiters: unknown[] }>) {
        if (l.holders.length + l.waiters.length > 0) left.push(`${p.id} still sees ${l.holders.length} holder(s) and ${l.waiters.length} waiter(s) on ${l.name}: ${JSON.stringify([...l.holders, ...l.waiters])}`);
      }
    }
    if (left.length === 0) return [];
    await delay(200);
  }
  return left;
}

/** Runs one liveness phase; returns its problems (empty when live). */
export async function checkLiveness(cluster: LocalCluster, opts: LivenessOptions): Promise<string[]> {
  if (opts.final === true) {
    const problems = await everyLockEverywhere(cluster, opts);
    // TTL holds of clients that gave up waiting for a grant answer may outlive them by ttl_ms.
    problems.push(...(await queuesDrain(cluster, opts.ids, 10_000)));
    opts.log(`final acquire+release of ${opts.locks.length} locks through ${opts.ids.length} peers: ${problems.length === 0 ? 'ok, queues drained' : `${problems.length} problem(s)`}`);
    return problems;
  }
  const healedAt = opts.now();
  const boundMs = readyBoundMs(opts.timings);
  try {
    await cluster.waitReady(boundMs, opts.ids);
    opts.log(`every peer ready ${((opts.now() - healedAt) / 1000).toFixed(1)} s after the heal (bound ${boundMs / 1000} s)`);
    return [];
  } catch (err) {
    return [`not every peer ready within ${boundMs} ms of the heal: ${(err as Error).message}`];
  }
}
