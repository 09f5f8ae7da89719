/**
 * `npm run bench [-- --quick]`: lamport-lock side by side with etcd and Redis (issue 6).
 * Starts every service itself under a temp dir on free ports of 127.0.0.1, runs the
 * scenarios, stops everything it started (also on failure and on SIGINT), writes
 * bench/results/latest.{json,md,svg} and prints the Markdown report.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { svgChart } from './chart.js';
import { hostCpuName } from './cpu-time.js';
import { measureAgainstFloor } from './floor.js';
import { startFloor } from './floor-system.js';
import type { FloorFigures, FloorSizes } from './floor.js';
import { LinkCostMeter } from './link-cost.js';
import { measureMemory } from './memory.js';
import type { MemoryFigures, MemorySizes } from './memory.js';
import { parseOptions } from './options.js';
import type { BenchOptions } from './options.js';
import { ProcessGroup, deployedPeerNice, fileLimitOf, raiseFileLimit } from './procs.js';
import { markdownReport } from './report.js';
import { resultsJson } from './results.js';
import type { BenchMeta, BenchResults, ScalingPoint } from './results.js';
import { repeatHotLock, repeatManyNames, repeatUncontended, runSuite } from './suite.js';
import type { SystemFigures } from './suite.js';
import { etcdBinary, etcdVersion, startEtcd } from './systems/etcd.js';
import { evictionCount, leaseLossCount, peerBinExists, startLamport } from './systems/lamport.js';
import type { LamportCluster } from './systems/lamport.js';
import { redisBinary, redisVersion, startRedis } from './systems/redis.js';
import type { LockSystem, SystemName } from './systems/types.js';
import { checkTargets, targetTable } from './targets.js';

/** Repository root, from dist/bench/main.js. */
const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const defaultPeerBin = join(repoRoot, 'dist', 'bin', 'lamport-peer.js');
/** Open files wanted for (f): one socket per waiting request, in the client and in the peers. */
const fileLimitWanted = 400_000;

/** Window over which the idle cluster's link traffic is measured. */
const idleWindowMs = 2000;

/** What the parts of one run fill in. */
interface RunState {
  readonly group: ProcessGroup;
  readonly opts: BenchOptions;
  readonly systems: Partial<Record<SystemName, SystemFigures>>;
  readonly clients: Partial<Record<SystemName, string>>;
  readonly versions: Record<string, string>;
  readonly scaling: ScalingPoint[];
  memory: MemoryFigures | null;
  floor: FloorFigures | null;
  readonly notes: string[];
  failed: boolean;
}

function progress(text: string): void {
  process.stderr.write(`[bench] ${text}\n`);
}

/** Runs one part; a failure becomes a note and a non-zero exit, and the other parts still run. */
async function attempt(state: RunState, label: string, part: () => Promise<void>): Promise<void> {
  try {
    await part();
  } catch (err) {
    state.failed = true;
    state.group.keepLogs();
    const message = err instanceof Error ? err.message : String(err);
    state.notes.push(`${label} FAILED: ${message.split('\n')[0] ?? ''} (logs kept in ${state.group.dir})`);
    progress(`${label} failed: ${message}`);
  }
}

async function runAnchor(state: RunState, name: 'etcd' | 'redis'): Promise<void> {
  const binary = name === 'etcd' ? etcdBinary() : redisBinary();
  if (binary === null) {
    const pkg = name === 'etcd' ? 'etcd-server' : 'redis-server';
    state.notes.push(`${name} skipped: not installed (apt-get install ${pkg}); no ${name} figures are shown, none are faked`);
    progress(`${name} not installed, skipped`);
    return;
  }
  state.versions[name] = name === 'etcd' ? etcdVersion(binary) : redisVersion(binary);
  progress(`starting ${name}`);
  const system = name === 'etcd' ? await startEtcd(state.group, binary) : await startRedis(state.group, binary);
  await withSystem(system, async () => {
    state.clients[name] = system.clientNote;
    progress(`${name}: scenarios a, b, c`);
    state.systems[name] = await runSuite(system, state.opts.sizes);
  });
}

async function withSystem(system: LockSystem, body: () => Promise<void>): Promise<void> {
  try {
    await body();
  } finally {
    await system.stop();
  }
}

/** Notes the lease losses and evictions of healthy peers under the load (zero is noted too: issue 15 asks for the count). */
function noteLeaseLosses(state: RunState, label: string, peers: LamportCluster['peers']): void {
  const losses = leaseLossCount(peers);
  const evictions = evictionCount(peers);
  state.notes.push(`${label}: ${losses} lease losses ("no lease: ...", each ending that peer's local holds) and ${evictions} evictions of healthy peers logged under the load`);
}

function peerBinOf(state: RunState): string {
  return state.opts.peerBin ?? defaultPeerBin;
}

/**
 * Runs `body` with the GC-heavy client (bench/gc-client.ts) on `cluster` beside it, when
 * --gc-client asked for one, and notes what the client saw (its grants, failures and GC pauses).
 */
async function withGcClient(state: RunState, cluster: LamportCluster, label: string, body: () => Promise<void>): Promise<void> {
  if (!state.opts.gcClient) return body();
  const bin = join(repoRoot, 'dist', 'bench', 'gc-client.js');
  const proc = state.group.spawn({ label: `gc-client-${label.replace(/\W+/g, '-')}`, command: process.execPath, args: [bin, cluster.peers.map((p) => p.ep.port).join(',')] });
  try {
    await body();
  } finally {
    await state.group.stop(proc);
    const last = readFileSync(proc.logPath, 'utf8').trim().split('\n').pop() ?? '';
    state.notes.push(`${label}: a GC-heavy client ran beside the load (bench/gc-client.ts): ${last.startsWith('{') ? last : `no report (${last})`}`);
  }
}

async function runLamportSize(state: RunState, peerCount: number): Promise<void> {
  progress(`starting lamport-lock with ${peerCount} peers`);
  const cluster = await startLamport(state.group, { peerBin: peerBinOf(state), peerCount });
  let point = null as Omit<ScalingPoint, 'floorA'> | null; // set inside the closure below
  await withSystem(cluster, () => withGcClient(state, cluster, `${peerCount} peers`, async () => {
    state.clients['lamport-lock'] = cluster.clientNote;
    const low = new LinkCostMeter(cluster.peers);
    const high = new LinkCostMeter(cluster.peers);
    const linksIdlePerS = await low.idleRate(idleWindowMs);
    progress(`lamport-lock ${peerCount} peers: scenario a`);
    const a = await repeatUncontended(cluster, state.opts.sizes, low.around);
    progress(`lamport-lock ${peerCount} peers: scenario c`);
    const c = await repeatManyNames(cluster, state.opts.sizes, high.around);
    if (peerCount === 3) {
      progress('lamport-lock 3 peers: scenario b');
      state.systems['lamport-lock'] = { a, b: await repeatHotLock(cluster, state.opts.sizes), c };
    }
    noteLeaseLosses(state, `${peerCount} peers`, cluster.peers);
    point = { peers: peerCount, a, c, linksLow: low.cost(), linksHigh: high.cost(), linksIdlePerS };
    const missing = [...new Set([...low.missingCounters(), ...high.missingCounters()])];
    if (missing.length > 0) state.notes.push(`(e) at ${peerCount} peers: /metrics lacks ${missing.join(', ')}; that link cost is not shown`);
  }));
  if (point === null) return;
  state.scaling.push({ ...point, floorA: state.opts.floor === null ? null : await floorUncontended(state, peerCount) });
}

/**
 * (a) on the floor of `processes` processes (bench/floor-peer.ts), alone on the host: the
 * same message pattern without the algorithm, so the report can set lamport-lock's scaling
 * beside the scaling the bare pattern gets on this CPU.
 */
async function floorUncontended(state: RunState, processes: number): Promise<ScalingPoint['floorA']> {
  progress(`floor with ${processes} processes: scenario a`);
  const floor = await startFloor(state.group, { processes });
  try {
    const session = floor.target.sessions[0];
    if (session === undefined) throw new Error('the floor has no process');
    return await repeatUncontended({ openSession: () => Promise.resolve(session) }, state.opts.sizes);
  } finally {
    await floor.stop();
  }
}

async function runMemory(state: RunState, sizes: MemorySizes): Promise<void> {
  const before = fileLimitOf(process.pid);
  const now = raiseFileLimit(process.pid, fileLimitWanted);
  if (now > before) progress(`open-files limit raised from ${before} to ${now} for (f)`);
  progress(`(f) memory: fresh 3-peer cluster, ${sizes.idleNames} idle names, ${sizes.waiters} waiters`);
  const cluster = await startLamport(state.group, { peerBin: peerBinOf(state), peerCount: 3, nice: state.opts.memoryNice });
  await withSystem(cluster, () => withGcClient(state, cluster, '(f) memory', async () => {
    try {
      state.memory = await measureMemory(state.group, cluster, sizes);
    } finally {
      noteLeaseLosses(state, '(f) memory, 3 peers', cluster.peers);
    }
  }));
}

/** (g): a fresh 3-peer cluster and the 3-process floor, in turns, each in steady state. */
async function runFloor(state: RunState, sizes: FloorSizes): Promise<void> {
  progress(`(g) CPU per operation against the floor: 3 peers and the 3-process floor warmed, then ${sizes.pairs} pair(s) of windows in turns`);
  const floor = await measureAgainstFloor(state.group, { ...sizes, peerBin: peerBinOf(state), progress });
  state.floor = floor;
  if (floor.unsettledWarmUps > 0) {
    state.notes.push(`(g): ${floor.unsettledWarmUps} warm-up(s) reached ${sizes.warmupMaxMs / 1000} s before the CPU per op settled; those figures are not steady state`);
  }
}

async function runLamport(state: RunState): Promise<void> {
  const peerBin = peerBinOf(state);
  if (!peerBinExists(peerBin)) {
    state.notes.push(`lamport-lock skipped: ${peerBin} does not exist (run npm run build once the peer daemon is in)`);
    progress('lamport-lock peer binary missing, skipped');
    return;
  }
  for (const n of state.opts.peerCounts) await attempt(state, `lamport-lock ${n} peers`, () => runLamportSize(state, n));
  const floor = state.opts.floor;
  if (floor !== null) await attempt(state, '(g) CPU against the floor', () => runFloor(state, floor));
  const memory = state.opts.memory;
  if (memory !== null) await attempt(state, '(f) memory', () => runMemory(state, memory));
}

function meta(state: RunState, startedAt: Date): BenchMeta {
  const cpu = cpus();
  return {
    startedAt: startedAt.toISOString(),
    durationS: Math.round((Date.now() - startedAt.getTime()) / 1000),
    mode: state.opts.mode,
    sizes: state.opts.sizes,
    host: { cpus: cpu.length, cpuModel: cpu[0]?.model.trim() ?? 'unknown', cpu: hostCpuName(), node: process.version, platform: process.platform },
    versions: state.versions,
    clients: state.clients,
  };
}

function writeOutputs(results: BenchResults, markdown: string, outDir: string | null): void {
  if (outDir === null) return;
  mkdirSync(outDir, { recursive: true });
  writeFileSync(join(outDir, 'latest.json'), resultsJson(results));
  writeFileSync(join(outDir, 'latest.md'), markdown);
  writeFileSync(join(outDir, 'latest.svg'), svgChart(results));
  progress(`wrote ${join(outDir, 'latest.{json,md,svg}')}`);
}

async function runAll(state: RunState): Promise<void> {
  const wanted = (name: SystemName): boolean => state.opts.systems.includes(name);
  if (wanted('etcd')) await attempt(state, 'etcd', () => runAnchor(state, 'etcd'));
  if (wanted('redis')) await attempt(state, 'redis', () => runAnchor(state, 'redis'));
  if (wanted('lamport-lock')) await runLamport(state);
}

/** How the servers' priorities were set, and whether the machine allowed it. */
function priorityNote(opts: BenchOptions, refusal: string | null): string {
  const parts = [
    `servers under test in (a)-(e) and (g) ran at nice ${opts.serverNice}${opts.serverNice === 0 ? ', the priority of the load generator, which stands in for clients on other hosts' : ''}`,
    `the peers of (f) at nice ${opts.memoryNice}${opts.memoryNice === deployedPeerNice ? ' (Nice= of deploy/lamport-peer.service)' : ''}, the waiter-clients and the GC-heavy client, which stand in for applications on the peers' host, at the load generator's`,
  ];
  return `${parts.join('; ')}${refusal === null ? '' : `; but not every process ran at its nice value: ${refusal}`}`;
}

async function main(): Promise<number> {
  const opts = parseOptions(process.argv);
  const group = new ProcessGroup({ serverNice: opts.serverNice });
  const onSignal = (signal: NodeJS.Signals): void => {
    progress(`${signal}: stopping everything started`);
    void group.stopAll().finally(() => process.exit(130));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  process.once('exit', () => group.killAllNow());
  const state: RunState = {
    group, opts, systems: {}, clients: {}, versions: { node: process.version }, scaling: [], memory: null, floor: null, notes: [], failed: false,
  };
  const startedAt = new Date();
  try {
    await runAll(state);
  } finally {
    await group.stopAll();
  }
  state.notes.push(priorityNote(opts, group.niceRefusal()));
  const results: BenchResults = { meta: meta(state, startedAt), systems: state.systems, scaling: state.scaling, memory: state.memory, floor: state.floor, notes: state.notes };
  const markdown = markdownReport(results, targetTable(checkTargets(results)));
  writeOutputs(results, markdown, opts.write ? (opts.out ?? join(repoRoot, 'bench', 'results')) : null);
  process.stdout.write(markdown);
  return state.failed ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`[bench] ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
