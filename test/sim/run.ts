/**
 * One seed, start to finish: draw the scenario, run the safety phase with faults, then the
 * liveness phase without them, checking the invariants after every event. Everything comes
 * from the seed, so `runSeed` with the same options always returns the same result.
 */
import { Checker } from './checker.js';
import { Clients } from './clients.js';
import type { SimTime } from './cluster.js';
import { Cluster } from './cluster.js';
import type { DriverEvent, SimEvent } from './events.js';
import { EventQueue } from './event-queue.js';
import { FaultPlan } from './fault-plan.js';
import type { MutantName } from './mutants.js';
import { machineFaultsOf, membershipFaultsOf, refusesEvicted, reordersLinks } from './mutants.js';
import { Wire, randomDelays } from './network.js';
import { Prng } from './prng.js';
import type { Scenario } from './scenario.js';
import { drawScenario } from './scenario.js';
import { Transcript } from './transcript.js';
import { Workload } from './workload.js';

/** What to run. */
export interface RunOptions {
  readonly seed: number;
  readonly peers?: number;
  readonly mutant?: MutantName;
  readonly transcript?: boolean;
  /**
   * Both modes run the real link (src/transport/link.ts) over FIFO connections that cuts
   * and the silence watchdog close. 'link' also breaks connections at random (a seed-drawn
   * rate per frame): the frames in flight are lost with the connection and the link's
   * resume must deliver them exactly once, in order.
   */
  readonly net?: 'fifo' | 'link';
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
}

/** A hard cap on events per seed: a run that needs more is a bug of the simulator. */
const eventsMax = 2_000_000;

interface Parts {
  readonly queue: EventQueue<SimEvent>;
  readonly time: SimTime;
  readonly checker: Checker;
  readonly clients: Clients;
  readonly cluster: Cluster;
  readonly workload: Workload;
  readonly faults: FaultPlan;
  readonly transcript: Transcript;
}

function build(opts: RunOptions, scenario: Scenario, rng: Prng): Parts {
  const queue = new EventQueue<SimEvent>();
  const schedule = (atMs: number, ev: SimEvent): void => queue.push(atMs, ev);
  const time: SimTime = { nowMs: 0 };
  const checker = new Checker();
  const clients = new Clients(checker);
  const transcript = new Transcript({ enabled: opts.transcript === true });
  const delays = randomDelays(rng.fork(), {
    minMs: scenario.delayMinMs,
    maxMs: scenario.delayMaxMs,
    spikeChance: scenario.delaySpikeChance,
    reorder: reordersLinks(opts.mutant),
  });
  // Its own stream, so turning the link mode on does not change what the rest of the seed draws.
  const wireRng = new Prng(opts.seed).fork().fork();
  const breakChance = opts.net === 'link' ? wireRng.pick([0.001, 0.005, 0.02]) : 0;
  const wire = new Wire({ peers: scenario.peers, faults: delays, breakChance });
  const faults = machineFaultsOf(opts.mutant);
  const membershipFaults = membershipFaultsOf(opts.mutant);
  const refuseEvicted = refusesEvicted(opts.mutant);
  const cluster = new Cluster({ scenario, rng: rng.fork(), faults, membershipFaults, refuseEvicted, wire, schedule, clients, checker, transcript, time });
  const workload = new Workload({ scenario, rng: rng.fork(), cluster, clients, schedule, time });
  const plan = new FaultPlan({ scenario, rng: rng.fork(), cluster, wire, schedule, time, transcript });
  return { queue, time, checker, clients, cluster, workload, faults: plan, transcript };
}

/** Runs one seed to its end: the first violation, or every request resolved after faults. */
export function runSeed(opts: RunOptions): RunResult {
  const rng = new Prng(opts.seed);
  const scenario = drawScenario(rng.fork(), opts.peers === undefined ? {} : { peers: opts.peers });
  const parts = build(opts, scenario, rng);
  const { queue, time, checker, cluster } = parts;
  cluster.start();
  parts.workload.start();
  parts.faults.start();
  queue.push(scenario.safetyMs, { k: 'liveness' });
  const loop = { deadlineMs: Number.POSITIVE_INFINITY, events: 0 };
  try {
    runLoop(parts, scenario, loop);
  } catch (err) {
    // An assertion inside the core or the sim is a bug the seed found, not a crash of the run.
    checker.violations.push(`t=${time.nowMs}ms exception: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  }
  if (checker.violations.length === 0) checkLiveness(parts, loop.deadlineMs, loop.events);
  const { grants, violations } = checker;
  return { seed: opts.seed, scenario, grants, events: loop.events, virtualMs: time.nowMs, violations, transcript: parts.transcript };
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
    if (Number.isFinite(loop.deadlineMs) && clients.unresolved === 0) break;
  }
}

function dispatch(parts: Parts, ev: SimEvent): void {
  switch (ev.k) {
    case 'frame':
    case 'tick':
    case 'leaseTick':
    case 'acquire':
    case 'release':
      return parts.cluster.handle(ev);
    default:
      return drive(parts, ev);
  }
}

function drive(parts: Parts, ev: DriverEvent): void {
  switch (ev.k) {
    case 'fault':
      return parts.faults.onFault();
    case 'restart':
      return parts.faults.onRestart(ev.peer);
    case 'resume':
      return parts.cluster.resume(ev.peer, ev.life);
    case 'arrival':
      return parts.workload.onArrival(ev.peer);
    case 'burst':
      return parts.workload.onBurst();
    case 'capacity':
      return parts.workload.onCapacity(ev.lock);
    case 'liveness':
      return;
  }
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
  const dead = parts.faults.heal();
  parts.workload.stopIssuing();
  parts.cluster.cancelsEnabled = false;
  const deadNote = dead === null ? '' : `, p${dead} stays dead`;
  parts.transcript.add(parts.time.nowMs, null, `LIVENESS phase: ${parts.clients.unresolved} request(s) open${deadNote}`);
  const slowest = Math.min(...s.clockRates);
  const roundTripMs = 4 * 11 * s.delayMaxMs + 2 * s.heartbeatMs / slowest;
  const recoveryMs = (2 * s.evictMs + 12 * s.heartbeatMs) / slowest + s.connectMaxMs + 4 * roundTripMs;
  const perRequestMs = Math.min(s.holdMaxMs, s.ttlMs) + roundTripMs;
  return parts.time.nowMs + recoveryMs + (parts.clients.openCount + 1) * perRequestMs;
}

function checkLiveness(parts: Parts, deadlineMs: number, events: number): void {
  const { checker, clients, time } = parts;
  if (events >= eventsMax) checker.stuck(time.nowMs, [`the run hit the cap of ${eventsMax} events`]);
  // A peer that never met the dead peer waits for it forever, by design (README: a
  // (re)starting peer waits for peers it has not met): its own requests are excused, but
  // every peer that met the dead one must keep granting, and nobody may wait for the excused.
  const dead = parts.faults.dead;
  const expected = clients.waiting().filter((r) => !parts.cluster.cannotSync(r.peer, dead));
  const stuck = expected.map((r) => `ref ${r.ref} p${r.peer} ${r.lock} ${r.spec.mode} ${r.state} since ${r.issuedMs}ms (${parts.cluster.explain(r.peer, r.ref)})`);
  if (stuck.length > 0) checker.stuck(Math.min(deadlineMs, time.nowMs), stuck);
}
