/**
 * One seed, start to finish: draw the scenario, run the safety phase with faults, then the
 * liveness phase without them, checking the invariants after every event. Everything comes
 * from the seed, so `runSeed` with the same options always returns the same result.
 */
import { Changer, withChanges } from './changer.js';
import { Checker } from './checker.js';
import { Clients } from './clients.js';
import type { ClientRequest } from './clients.js';
import type { SimPeerProcess } from './cluster.js';
import { Cluster } from './cluster.js';
import type { SimEvent } from './events.js';
import { EventQueue } from './event-queue.js';
import { FaultPlan } from './fault-plan.js';
import { LevelCheck } from './level-check.js';
import { MetaCheck } from './meta-check.js';
import type { SimProcess, SimTime } from './host.js';
import { Wire, randomDelays } from './network.js';
import { Prng } from '../support/prng.js';
import type { Scenario } from './scenario.js';
import { drawScenario } from './scenario.js';
import type { ScenarioOverrides } from './scenario.js';
import { SimNetworks } from './sockets.js';
import { Transcript } from './transcript.js';
import { Upgrader } from './upgrader.js';
import { Workload } from './workload.js';

/** What to run. */
export interface RunOptions {
  readonly seed: number;
  readonly peers?: number;
  readonly transcript?: boolean;
  /**
   * Both modes run the production mesh and link over FIFO connections that cuts and the
   * silence watchdog close. 'link' also breaks connections at random (a seed-drawn rate
   * per message): what is in flight is lost with the connection and the link's resume must
   * deliver it exactly once, in order.
   */
  readonly net?: 'fifo' | 'link';
  /**
   * The chance that a holder announces new meta while it holds (META, a leader's new value;
   * a share of them twice), checked by test/sim/meta-check.ts. Off by default, so that the seed runs and their regression seeds stay as they
   * are; drawn from a generator of its own.
   */
  readonly proclaimChance?: number;
  /**
   * The chance that a client's request names two or three locks at once, all-or-nothing.
   * Off by default for the same reason; drawn from a generator of its own.
   */
  readonly multiChance?: number;
  /** Heartbeat, lease and eviction timings instead of the drawn ones (ScenarioOverrides.timing). */
  readonly timing?: ScenarioOverrides['timing'];
  /**
   * Changes of the members drawn among the faults (test/sim/changer.ts): the seed's peers found
   * the cluster beside 1 or 2 spare hosts; and a rolling upgrade across a protocol level
   * (test/sim/upgrader.ts), from a generator of its own too. Off by default, so that the seeds keep meaning what
   * they meant; drawn from a generator of its own.
   */
  readonly changes?: boolean;
}

/** What one seed did. */
export interface RunResult {
  readonly seed: number;
  readonly scenario: Scenario;
  readonly grants: number;
  readonly events: number;
  readonly virtualMs: number;
  readonly violations: readonly string[];
  readonly transcript: Transcript;
  /** META announcements made by holders (proclaimChance). */
  readonly proclaims: number;
  /** Grants of requests naming several locks (multiChance). */
  readonly multiGrants: number;
  /** Changes of the members made (`changes`). */
  readonly changesMade: number;
  /** Peers let wait by design at the end (`excuse`): one sentence each. */
  readonly excused: readonly string[];
  /** Raises of the protocol level made, and starts refused by the level checks (`changes`: test/sim/upgrader.ts). */
  readonly raises: number;
  readonly refusedStarts: number;
}

/** A hard cap on events per seed: a run that needs more is a bug of the simulator. */
const eventsMax = 3_000_000;

/** One simulated world: its event queue, clock, checker, cluster, clients, workload and faults. */
export interface Parts {
  readonly queue: EventQueue<SimEvent>;
  readonly time: SimTime;
  readonly checker: Checker;
  readonly clients: Clients;
  readonly cluster: Cluster;
  readonly workload: Workload;
  readonly faults: FaultPlan;
  readonly transcript: Transcript;
  readonly processes: Map<SimProcess, SimPeerProcess>;
  /** The simulated wire (cuts, delays) and sockets (stalls), for scripted scenarios. */
  readonly wire: Wire;
  readonly net: SimNetworks;
  /** META's promise, after every task of a process (test/sim/meta-check.ts). */
  readonly meta: MetaCheck;
  /** The changes of the members drawn (`RunOptions.changes`), or null. */
  readonly changer: Changer | null;
  /** Why peers were let wait at the end of the liveness phase, by design (`excuse`). */
  readonly excused: string[];
  /** The rolling upgrade drawn beside the changes (test/sim/upgrader.ts), or null. */
  readonly upgrader: Upgrader | null;
  /** Rule P9's promise, after every task of a process (test/sim/level-check.ts). */
  readonly levels: LevelCheck;
}

/** Builds a world for `scenario`; nothing runs until its parts are started. */
export function build(opts: RunOptions, scenario: Scenario, rng: Prng): Parts {
  const queue = new EventQueue<SimEvent>();
  const world = (atMs: number, fn: () => void): void => queue.push(atMs, { k: 'world', fn });
  const time: SimTime = { nowMs: 0 };
  const checker = new Checker();
  const clients = new Clients(checker, time);
  const meta = new MetaCheck(checker, () => time.nowMs);
  clients.onProclaimed = (req, value) => meta.announced(req, value);
  const transcript = new Transcript({ enabled: opts.transcript === true });
  if (transcript.enabled) clients.transcript = transcript;
  const delays = randomDelays(rng.fork(), {
    minMs: scenario.delayMinMs,
    maxMs: scenario.delayMaxMs,
    spikeChance: scenario.delaySpikeChance,
    reorder: false, // the no-fifo mutant (test/sim/mutants.ts) lets frames overtake each other
  });
  // Its own stream, so turning the link mode on does not change what the rest of the seed draws.
  const wireRng = new Prng(opts.seed).fork().fork();
  const breakChance = opts.net === 'link' ? wireRng.pick([0.001, 0.005, 0.02]) : 0;
  const wire = new Wire({ peers: scenario.peers, faults: delays, breakChance });
  const net = new SimNetworks({ wire, rng: wireRng.fork(), time, kernel: world });
  net.log = (peer, what) => transcript.add(time.nowMs, peer, what);
  const schedule = (atMs: number, proc: SimProcess, task: () => void): void => queue.push(atMs, { k: 'task', proc, task });
  const cluster = new Cluster({ scenario, rng: rng.fork(), net, schedule, checker, transcript, time, ...(scenario.founders === undefined ? {} : { founders: scenario.founders }) });
  const processes = new Map<SimProcess, SimPeerProcess>();
  cluster.onStarted = (p) => processes.set(p.proc, p);
  cluster.onCrashed = (procId) => clients.crashed(procId);
  cluster.onZombieTask = (p) => clients.checkZombieWaiters(p);
  const workload = new Workload({ scenario, rng: rng.fork(), cluster, clients, schedule: world, time, proclaim: { chance: opts.proclaimChance ?? 0, rng: new Prng(opts.seed + 0x5eed) },
    multi: { chance: opts.multiChance ?? 0, rng: new Prng(opts.seed + 0x6d17) },
  });
  const plan = new FaultPlan({ scenario, rng: rng.fork(), cluster, wire, net, clients, schedule: world, time, transcript });
  // Its own generator: the seed's other draws stay as they are.
  const changer = scenario.founders === undefined ? null : new Changer({ scenario, rng: new Prng(opts.seed + 0xc4a6e), cluster, schedule: world, time, transcript, proposerFaults: { rng: new Prng(opts.seed + 0xc4a7e), wire, on: new Prng(opts.seed + 0xc4a8e).chance(0.5), race: new Prng(opts.seed + 0xc4a9e), faults: plan } });
  // Its own generator too: the changer's draws stay as they are.
  const upgrader = changer === null ? null : new Upgrader({ scenario, rng: new Prng(opts.seed + 0x1e7e1), cluster, changer, schedule: world, time, transcript, wire });
  const levels = new LevelCheck(checker, cluster, () => time.nowMs);
  return { queue, time, checker, clients, cluster, workload, faults: plan, transcript, processes, wire, net, meta, changer, upgrader, levels, excused: [] };
}

/** Runs one seed to its end: the first violation, or every request resolved after faults. */
export function runSeed(opts: RunOptions): RunResult {
  const rng = new Prng(opts.seed);
  const drawn = drawScenario(rng.fork(), { ...(opts.peers === undefined ? {} : { peers: opts.peers }), ...(opts.timing === undefined ? {} : { timing: opts.timing }) });
  const scenario = opts.changes === true ? withChanges(drawn, new Prng(opts.seed + 0xc4a5e)) : drawn;
  const parts = build(opts, scenario, rng);
  const { queue, time, checker, cluster } = parts;
  cluster.start();
  parts.workload.start();
  parts.faults.start();
  parts.changer?.start();
  parts.upgrader?.start();
  queue.push(scenario.safetyMs, { k: 'liveness' });
  const loop = { deadlineMs: Number.POSITIVE_INFINITY, events: 0 };
  try {
    runLoop(parts, scenario, loop);
  } catch (err) {
    // An assertion inside the runtime or the sim is a bug the seed found, not a crash of the run.
    checker.violations.push(`t=${time.nowMs}ms exception: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  }
  if (checker.violations.length === 0) checkLiveness(parts, loop.deadlineMs, loop.events);
  const { grants, violations } = checker;
  return { seed: opts.seed, scenario, grants, events: loop.events, virtualMs: time.nowMs, violations, transcript: parts.transcript, proclaims: parts.clients.proclaims, multiGrants: parts.clients.multiGrants, changesMade: parts.changer?.made ?? 0,
    raises: parts.upgrader?.raised ?? 0, refusedStarts: parts.cluster.refusedStarts, excused: parts.excused };
}

function runLoop(parts: Parts, scenario: Scenario, loop: { deadlineMs: number; events: number }): void {
  const { queue, time, checker, clients } = parts;
  for (; loop.events < eventsMax; loop.events++) {
    const next = queue.pop();
    if (next === undefined || next.atMs > loop.deadlineMs) break;
    time.nowMs = next.atMs;
    if (next.item.k === 'liveness') loop.deadlineMs = startLiveness(parts, scenario);
    else dispatch(parts, next.item);
    checker.afterEvent(time.nowMs);
    if (checker.violations.length > 0) break;
    if (Number.isFinite(loop.deadlineMs) && clients.unresolved === 0 && parts.workload.unprobed().length === 0) break;
  }
}

/**
 * Runs a scripted world (no liveness phase) until `untilMs` of virtual time, checking the
 * invariants after every event; stops at the first violation.
 */
export function runUntil(parts: Parts, untilMs: number): void {
  const { queue, time, checker } = parts;
  for (let events = 0; events < eventsMax; events++) {
    if (queue.peekMs() > untilMs || checker.violations.length > 0) break;
    const next = queue.pop();
    if (next === undefined) break;
    time.nowMs = next.atMs;
    dispatch(parts, next.item);
    checker.afterEvent(time.nowMs);
  }
  if (checker.violations.length === 0) time.nowMs = Math.max(time.nowMs, untilMs);
}

function dispatch(parts: Parts, ev: SimEvent): void {
  if (ev.k === 'world') return ev.fn();
  if (ev.k !== 'task') return;
  const { proc, task } = ev;
  if (!proc.alive) return;
  if (proc.frozen) return proc.run(task);
  const p = parts.processes.get(proc);
  if (p !== undefined) parts.cluster.beforeTask(p);
  const did = task();
  if (did === false || p === undefined) return;
  parts.cluster.afterTask(p);
  parts.meta.afterTask(p);
  parts.levels.afterTask(p);
}

/**
 * Faults stop, every peer comes back (but maybe one, which the others must evict; a peer
 * that never met the dead one then waits for it forever, see checkLiveness), clients
 * stop asking and stop cancelling. Returns the deadline by which every open request must be
 * granted, refused or ended: time for the watchdogs to drop dead sockets, to evict the dead
 * peer, for evicted peers to rejoin and leases to come back (all in the slowest clock), then
 * for each request that may be ahead of another, one hold plus a few (spiked) round trips.
 */
function startLiveness(parts: Parts, s: Scenario): number {
  parts.changer?.stop();
  parts.upgrader?.stop();
  const dead = parts.faults.heal();
  parts.workload.stopIssuing();
  parts.workload.probe();
  const deadNote = dead === null ? '' : `, p${dead} stays dead`;
  parts.transcript.add(parts.time.nowMs, null, `LIVENESS phase: ${parts.clients.unresolved} request(s) open${deadNote}`);
  const slowest = Math.min(...s.clockRates);
  const roundTripMs = 4 * 11 * s.delayMaxMs + 2 * s.heartbeatMs / slowest;
  // Watchdogs drop dead sockets, the majority evicts the dead peer and every predecessor a
  // restarted or duplicated peer waits for, evicted peers rejoin (their new incarnation
  // waits for that eviction too, redialing every heartbeat), leases come back.
  const recoveryMs = (3 * s.evictMs + 16 * s.heartbeatMs) / slowest + s.connectMaxMs + 6 * roundTripMs;
  const perRequestMs = Math.min(s.holdMaxMs, s.ttlMs) + roundTripMs;
  return parts.time.nowMs + recoveryMs + (parts.clients.openCount + 1) * perRequestMs;
}

function describeStuck(parts: Parts, r: ClientRequest): string {
  const p = r.proc;
  if (!p.proc.alive) return `process ${p.proc.id} dead`;
  if (r.handle === null) return `process ${p.proc.id} never took the request${p.proc.frozen ? ' (frozen)' : ''}`;
  const state = p.runtime.inspect.requestState(r.handle.id);
  const ref = p.runtime.inspect.refOf(r.handle.id);
  const why = ref === undefined ? undefined : p.runtime.inspect.protocol.machine.explain(ref);
  const missing = (why?.missingPeers ?? []).map((q) => {
    const qp = parts.cluster.current(q);
    if (qp === undefined) return `p${q} down`;
    const m = qp.runtime.inspect.protocol.machine;
    const link = qp.runtime.inspect.links().find((l) => l.peer === r.peer);
    return `p${q}#${qp.proc.id}: synced ${m.synced},${parts.changer === null ? '' : ` epoch ${m.clusterView?.epoch ?? '-'},`} clock ${m.clock}, lastTs(p${r.peer}) ${m.lastTs(r.peer)}, link ${link?.connected ?? '-'}; requester's lastTs(p${q}) ${p.runtime.inspect.protocol.machine.lastTs(q)}`;
  });
  const epoch = parts.changer === null ? '' : ` at epoch ${p.runtime.inspect.protocol.machine.clusterView?.epoch ?? '-'} of ${parts.cluster.latestView()?.epoch ?? '-'}`;
  return `process ${p.proc.id}${epoch}: ${String(state)}; ${ref === undefined ? 'no core ref' : parts.cluster.explain(p, ref)} [${missing.join(' | ')}]`;
}

/** Says once in the transcript, and in the run's result, why `peer` is let wait (README, "What is not promised"). */
function excuse(parts: Parts, peer: number, waited: readonly number[]): void {
  const why = `p${peer} waits for ${waited.map((q) => `p${q}`).join(', ')}, down for good (dead, or removed and not retired), which its incarnation never met: by design it waits (README, "What is not promised"); its requests are excused, no one else's`;
  if (parts.excused.includes(why)) return;
  parts.excused.push(why);
  parts.transcript.add(parts.time.nowMs, null, `LIVENESS excused: ${why}`);
}

function checkLiveness(parts: Parts, deadlineMs: number, events: number): void {
  const { checker, clients, time } = parts;
  clients.checkBelieved();
  if (events >= eventsMax) checker.stuck(time.nowMs, [`the run hit the cap of ${eventsMax} events`]);
  // A peer that never met the dead peer waits for it forever, by design (README: a
  // (re)starting peer waits for peers it has not met): its own requests are excused, but
  // every peer that met the dead one must keep granting, and nobody may wait for the excused.
  const dead = parts.faults.dead;
  // With changes, only the voters of the newest view grant: a learner requests nothing (its
  // requests wait for a promotion), a removed member's requests end.
  // And P4's catch-up is not built (docs/reconfiguration.md, "What is built"): a member two or
  // more epochs behind the newest view never applies it (a VIEW that does not follow its own is
  // ignored), so its own requests are excused too; nobody else's.
  const voter = (peer: number): boolean => parts.changer === null || (parts.cluster.isVoter(peer) && !parts.cluster.behind(peer));
  const removed = parts.changer === null ? [] : parts.cluster.removedDown();
  const unmet = (peer: number): boolean => {
    const waited = parts.cluster.cannotSync(peer, dead, removed);
    if (waited === null) return false;
    excuse(parts, peer, waited);
    return true;
  };
  const expected = clients.waiting().filter((r) => voter(r.peer) && !unmet(r.peer) && !parts.cluster.waitsForUnevictable(r.proc, dead));
  const stuck = expected.map((r) => `ref ${r.ref} p${r.peer} ${r.lock} ${r.opts.mode} ${r.state} since ${r.issuedMs}ms (${describeStuck(parts, r)})`);
  // Every peer that can sync grants its probe (Workload.probe); a waiting probe is reported above.
  for (const peer of parts.workload.unprobed()) {
    const p = parts.cluster.current(peer);
    if (p === undefined || peer === dead || !voter(peer) || unmet(peer) || parts.cluster.waitsForUnevictable(p, dead)) continue;
    if (!clients.waiting().some((r) => r.peer === peer && r.opts.owner === 'probe')) stuck.push(`p${peer} granted no probe request of the liveness phase (the last one: ${parts.workload.lastProbeOutcome(peer)})`);
  }
  if (stuck.length > 0) checker.stuck(Math.min(deadlineMs, time.nowMs), stuck);
}
