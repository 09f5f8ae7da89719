/**
 * A Jepsen-style fault run against real peer processes (issue 5): 5 peers, every ordered
 * link through its own TCP fault proxy, clients on every peer working on a few locks and
 * their fenced registers, a seeded nemesis, then the heal and the checks. Shared by the
 * CI test (test/fault/jepsen.test.ts) and the long-run script (test/fault/run.ts).
 */
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { LocalCluster } from '../../src/tools/local-cluster.js';
import { Prng } from '../support/prng.js';
import { delay } from '../support/wait.js';
import { checkSafety, excerpt } from './checker.js';
import { Client } from './clients.js';
import { FaultWindows } from './fault-windows.js';
import { FencedRegister } from './fenced-register.js';
import { LeaseProbe } from './lease-probe.js';
import type { Op } from './history.js';
import { opLine } from './history.js';
import { checkLiveness } from './liveness.js';
import type { FaultKind } from './nemesis.js';
import { Nemesis } from './nemesis.js';

/** Peer timings of a run (config keys heartbeat_ms, lease_ms, evict_ms). */
export interface RunTimings {
  readonly heartbeatMs: number;
  readonly leaseMs: number;
  readonly evictMs: number;
}

/** The short timings of the fault tests. */
export const shortTimings: RunTimings = { heartbeatMs: 100, leaseMs: 1000, evictMs: 3000 };

/** What a run does. */
export interface RunOptions {
  readonly seed: number;
  /** How long the nemesis injects faults. */
  readonly faultMs: number;
  readonly peers?: number;
  readonly clientsPerPeer?: number;
  readonly locks?: number;
  readonly timings?: RunTimings;
  /** The fault kinds drawn (all by default). */
  readonly faultKinds?: readonly FaultKind[];
  /** Progress lines (nemesis events, phases). */
  readonly log?: (line: string) => void;
}

/** What a run found. */
export interface RunResult {
  readonly seed: number;
  readonly faults: Readonly<Record<FaultKind, number>>;
  readonly faultsTotal: number;
  readonly grants: number;
  /** Grants by the peer that granted them (new hosts of `replace` faults included). */
  readonly grantsByPeer: Readonly<Record<string, number>>;
  /** The members at the end (a replaced peer is not one, its replacement is). */
  readonly members: readonly string[];
  readonly validHolds: number;
  /** Checked holds whose peer had a fault window during the hold. */
  readonly faultedHolds: number;
  readonly writesAccepted: number;
  readonly writesRejected: number;
  readonly violations: readonly string[];
  readonly liveness: readonly string[];
  /** The summary, one line each: what a runner prints last. */
  readonly summary: readonly string[];
  /** Where the peers' logs and the history (history.jsonl) are. */
  readonly dir: string;
}

function countBy<T>(items: readonly T[], key: (t: T) => string | null): string {
  const counts = new Map<string, number>();
  for (const item of items) {
    const k = key(item);
    if (k !== null) counts.set(k, (counts.get(k) ?? 0) + 1);
  }
  return [...counts].sort((a, b) => b[1] - a[1]).map(([k, n]) => `${k} ${n}`).join(', ');
}

function grantsByPeer(history: readonly Op[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const op of history) if (op.outcome === 'granted') out[op.peer] = (out[op.peer] ?? 0) + 1;
  return out;
}

/** Violation lines followed by the history of the locks and times they name. */
function explain(history: readonly Op[], violations: readonly string[]): string[] {
  const out: string[] = [];
  for (const v of violations.slice(0, 10)) {
    out.push(`VIOLATION: ${v}`);
    const tokens = [...v.matchAll(/token (\d+)/g)].map((m) => m[1]);
    const ops = history.filter((op) => op.token !== null && tokens.includes(op.token.toString()));
    const first = ops[0];
    if (first === undefined) continue;
    const start = Math.min(...ops.map((op) => op.invokedAt)) - 2000;
    const end = Math.max(...ops.map((op) => op.releaseDoneAt ?? op.completedAt)) + 500;
    out.push(...excerpt(history, first.lock, start, end).map((line) => `  ${line}`));
  }
  return out;
}

/** ttl_ms of every acquire: the checker bounds the validity of expired holds by it. */
const ttlMs = 3000;

function startClients(cluster: LocalCluster, rng: Prng, opts: { perPeer: number; registers: Map<string, FencedRegister>; history: Op[]; timings: RunTimings }): Client[] {
  const clients: Client[] = [];
  for (const p of cluster.peers) {
    for (let i = 0; i < opts.perPeer; i++) {
      const name = `${p.id}${i}`;
      clients.push(new Client(name, p.id, rng.fork(), {
        cluster, registers: opts.registers, history: opts.history,
        acquireTimeoutMs: 2000, ttlMs, answerGraceMs: opts.timings.leaseMs, releaseWaitMs: 2 * opts.timings.evictMs + 3000,
      }));
    }
  }
  for (const c of clients) c.start();
  return clients;
}

/** Runs the whole thing: start, work under faults, heal, check, stop. */
export async function runJepsen(opts: RunOptions): Promise<RunResult> {
  const log = opts.log ?? (() => undefined);
  const timings = opts.timings ?? shortTimings;
  const rng = new Prng(opts.seed);
  // One clock for everything: the history, the fault windows and the nemesis log.
  const now = (): number => performance.now();
  const t0 = now();
  // The admin token lets the nemesis change the members (`replace`) with the CLI.
  const cluster = await LocalCluster.start({ peers: opts.peers ?? 5, linkProxies: true, adminToken: randomBytes(16).toString('hex'), ...timings });
  log(`cluster up in ${((now() - t0) / 1000).toFixed(1)} s; logs under ${cluster.dir}`);
  const windows = new FaultWindows(cluster.peers.map((p) => p.id), now);
  // Sampled twice a heartbeat: the lease floors of the checker trail by at most that.
  const leases = new LeaseProbe(cluster, Math.max(50, timings.heartbeatMs * 2));
  let clients: Client[] = [];
  const hooks = {
    started: (id: string): void => leases.watch(id),
    replaced: (old: string, neu: string): void => {
      for (const c of clients) if (c.peer === old) c.moveTo(neu);
    },
  };
  const nemesis = new Nemesis({ cluster, windows, rng: rng.fork(), timings, now, log, hooks, ...(opts.faultKinds === undefined ? {} : { kinds: opts.faultKinds }) });
  try {
    leases.start();
    const registers = new Map(Array.from({ length: opts.locks ?? 3 }, (_, i) => [`lock-${i}`, new FencedRegister(`lock-${i}`)]));
    const history: Op[] = [];
    clients = startClients(cluster, rng.fork(), { perPeer: opts.clientsPerPeer ?? 2, registers, history, timings });
    await delay(1000);
    await nemesis.run(now() + opts.faultMs);
    const liveness = await checkLiveness(cluster, { ids: nemesis.members, locks: [...registers.keys()], timings, log, now });
    await delay(2000); // The clients work a little on the healed cluster before they stop.
    await Promise.all(clients.map((c) => c.stop()));
    await leases.stop();
    liveness.push(...(await checkLiveness(cluster, { ids: nemesis.members, locks: [...registers.keys()], timings, log, now, final: true })));
    liveness.push(...nemesis.changeProblems.map((p) => `replace stopped: ${p}`));
    writeFileSync(join(cluster.dir, 'history.jsonl'), history.map(opLine).join('\n') + '\n');
    writeFileSync(join(cluster.dir, 'leases.jsonl'), leases.lines().join('\n') + '\n');
    const safety = checkSafety(history, windows, [...registers.values()], { leases, ttlMs, heartbeatMs: timings.heartbeatMs });
    const summary = [
      ...explain(history, safety.violations),
      `faults: ${Object.entries(nemesis.counts).map(([k, n]) => `${k} ${n}`).join(', ')} (total ${nemesis.total}) in ${(opts.faultMs / 1000).toFixed(0)} s`,
      `acquires: ${history.length} (${countBy(history, (op) => op.outcome)}; modes ${countBy(history, (op) => (op.outcome === 'granted' ? op.mode : null))})`,
      `grants: ${safety.grants}; holds checked for overlap: ${safety.validHolds} (${safety.faultedHolds} on a faulted peer); lease samples ${leases.count}; hold ends: ${countBy(history, (op) => (op.end === null ? null : op.end === 'lost' ? `lost:${op.reason ?? '?'}` : op.end))}`,
      `fenced writes: accepted ${[...registers.values()].reduce((s, r) => s + r.accepted, 0)}, refused ${[...registers.values()].reduce((s, r) => s + r.rejected, 0)}; registers ${[...registers.values()].map((r) => `${r.lock}=${r.value}`).join(' ')}`,
      `liveness: ${liveness.length === 0 ? 'ok' : liveness.join('; ')}${nemesis.slowRestarts.length === 0 ? '' : `; slow restarts: ${nemesis.slowRestarts.join(', ')}`}`,
      `violations: ${safety.violations.length}`,
      `reproduce with FAULT_SEED=${opts.seed}`,
    ];
    return {
      seed: opts.seed, faults: nemesis.counts, faultsTotal: nemesis.total, grants: safety.grants, members: [...nemesis.members],
      grantsByPeer: grantsByPeer(history),
      validHolds: safety.validHolds, faultedHolds: safety.faultedHolds,
      writesAccepted: [...registers.values()].reduce((s, r) => s + r.accepted, 0), writesRejected: [...registers.values()].reduce((s, r) => s + r.rejected, 0),
      violations: safety.violations, liveness, summary, dir: cluster.dir,
    };
  } finally {
    await leases.stop();
    await nemesis.dispose();
    await cluster.stop();
  }
}
