/**
 * Scripted scenarios on the production runtime in the simulated world: no random faults, no
 * workload, each step chosen by hand, the invariants checked after every event as in the
 * seed runs. They pin down rules the random seeds reach too rarely to guard (issue 12): each
 * also runs in the build of the mutant that breaks its rule (test/sim/planted.ts `simFor`),
 * and must fail there (test/sim/scenarios.test.ts checks each in detail; the mutation table of
 * `npm run sim -- --mutants` runs them through `scenarioFor`).
 */
import { compareIncarnation, formatIncarnation } from '../../src/core/types.js';
import type { PeerProtocol } from '../../src/core/protocol.js';
import type { Incarnation } from '../../src/core/types.js';
import { Prng } from '../support/prng.js';
import type { ClientRequest } from './clients.js';
import type { SimPeerProcess } from './cluster.js';
import type { MutantName } from './mutants.js';
import type { Parts } from './run.js';
import { build, runUntil } from './run.js';
import type { Scenario } from './scenario.js';
import { drawScenario } from './scenario.js';
import { restartMeetsLeftMember, twinRefusedByPeerBlindToNewer } from './review-scenarios.js';
import { behindWhileHolderRestarts, gateSkippedPastLaggard, promotedWhileVoterDown, racedBallotsOvertaken, removedTellsSuccessorLate, staleCountAcrossTwoEpochs } from './view-scenarios.js';

/**
 * A quiet world of `peers` peers: 100 / 1000 / 3000 ms timings, 1-2 ms links, equal clocks
 * unless `clockRates` (local ms per virtual ms) says otherwise; started unless `start` is false;
 * `founders`: the hosts that found the cluster (ClusterOptions.founders), when some are spares.
 */
export function quietWorld(peers: number, clockRates?: readonly number[], start = true, founders?: number): Parts {
  const rng = new Prng(1);
  const drawn = drawScenario(rng.fork(), { peers });
  const same = <T>(v: T): T[] => Array.from({ length: peers }, () => v);
  const scenario: Scenario = {
    ...drawn,
    delayMinMs: 1, delayMaxMs: 2, delaySpikeChance: 0, connectMaxMs: 5,
    heartbeatMs: 100, leaseMs: 1000, evictMs: 3000,
    clockRates: clockRates ?? same(1), clockOffsetsMs: same(0), skewMs: same(0), clockStyle: 'wall',
    linkBufferBytes: null, frameBytes: null, lostDiskChance: 0, failingDiskChance: 0, wallStepBackChance: 0,
    ...(founders === undefined ? {} : { founders }),
  };
  const parts = build({ seed: 1, transcript: true }, scenario, rng);
  if (start) parts.cluster.start();
  return parts;
}

/** The incarnation of `peer` that `at`'s current process counts, as text (or 'none'). */
function counted(parts: Parts, at: number, peer: number): string {
  const inc = parts.cluster.current(at)?.runtime.inspect.protocol.machine.incarnation(peer);
  return inc === undefined ? 'none' : formatIncarnation(inc);
}

/** Process `k` (in start order) of `peer`; the scenario started it, so it is there. */
function processOf(parts: Parts, peer: number, k: number): SimPeerProcess {
  const p = parts.cluster.processes(peer)[k];
  if (p === undefined) throw new Error(`no process ${k} of p${peer}`);
  return p;
}

function incOf(parts: Parts, peer: number, which: 'oldest' | 'newest'): Incarnation {
  const procs = parts.cluster.processes(peer);
  const p = which === 'oldest' ? procs[0] : procs[procs.length - 1];
  if (p === undefined) throw new Error(`no process of p${peer}`);
  return p.runtime.inspect.incarnation;
}

/**
 * p2's process X is frozen; a second process Y with its id starts (a supervisor replaced a
 * frozen VM). The others evict X, Y joins. X resumes: refused as evicted while Y lives, it
 * must stay out, not rejoin above Y (it was never told it is a zombie before: its first news
 * is its eviction). Then Y dies: once the others evicted Y, X rejoins above it.
 */
export function frozenTwinResumes(): { stayedOut: boolean; rejoinedAfter: boolean; violations: readonly string[]; transcript: readonly string[] } {
  const parts = quietWorld(3);
  const { cluster } = parts;
  runUntil(parts, 1000);
  const x = processOf(parts, 2, 0);
  const xInc = x.runtime.inspect.incarnation;
  x.proc.pause();
  cluster.restart(2, { duplicate: true });
  const yInc = incOf(parts, 2, 'newest');
  // X is silent, so the others evict it after evict_ms and let Y join.
  runUntil(parts, 6000);
  if (counted(parts, 0, 2) !== formatIncarnation(yInc)) throw new Error(`p0 does not count the newer process: ${counted(parts, 0, 2)}`);
  x.proc.thaw();
  runUntil(parts, 9000);
  const xNow = x.proc.alive ? x.runtime.inspect.incarnation : xInc;
  const stayedOut = compareIncarnation(xNow, xInc) === 0 && counted(parts, 0, 2) === formatIncarnation(yInc) && counted(parts, 1, 2) === formatIncarnation(yInc);
  // Y dies; the others evict it, and X, told so by a refusal, rejoins above it.
  cluster.crash(2, 'newest');
  runUntil(parts, 20_000);
  const xLast = x.runtime.inspect.incarnation;
  const rejoinedAfter = compareIncarnation(xLast, yInc) > 0 && counted(parts, 0, 2) === formatIncarnation(xLast) && counted(parts, 1, 2) === formatIncarnation(xLast);
  return { stayedOut, rejoinedAfter, violations: parts.checker.violations, transcript: parts.transcript.lines() };
}

/** Cuts both directions between `a` and each of `others` until `untilMs`. */
function cutBoth(parts: Parts, a: number, others: readonly number[], untilMs: number): void {
  for (const b of others) {
    parts.wire.cut(a, b, untilMs);
    parts.wire.cut(b, a, untilMs);
  }
}

/**
 * Five peers: P (p0) is cut off from i (p1), k (p2) and a (p3), and reaches b (p4) only; k
 * reaches i only. i suspects P, k confirms at once, a's confirmation is held up on its way
 * to i. Meanwhile b, a and P evict k; k's process rejoins as a new incarnation, which P can
 * reach again. If that incarnation forgot the promise k's confirmation gave, it echoes P, and
 * P (with b) holds a lease again when a's confirmation arrives and i evicts it.
 */
export function confirmerRejoins(crashAtMs?: number, twin = false): { rejoined: boolean; evictedP: boolean; violations: readonly string[]; transcript: readonly string[] } {
  const parts = quietWorld(5);
  runUntil(parts, 1000);
  const k = parts.cluster.processes(2)[0];
  if (k === undefined) throw new Error('no p2');
  const kInc = k.runtime.inspect.incarnation;
  const pInc = incOf(parts, 0, 'oldest');
  cutBoth(parts, 0, [1, 3], 20_000);
  cutBoth(parts, 0, [2], 4150);
  parts.wire.cut(2, 3, 20_000);
  parts.wire.cut(2, 4, 20_000);
  runUntil(parts, 3900);
  parts.wire.cut(3, 1, 4500);
  if (crashAtMs !== undefined) {
    // Instead of rejoining, k's process crashes right after it confirmed, and restarts.
    runUntil(parts, crashAtMs);
    parts.cluster.crash(2);
    parts.cluster.restart(2);
    // A second copy starts with its id at once (a supervisor that started two): the first
    // restarted process, never synced, is refused as older than the copy and rejoins above
    // it at once, its quiet still due.
    if (twin) parts.cluster.restart(2, { duplicate: true });
  }
  runUntil(parts, 8000);
  const kNow = incOf(parts, 2, 'newest');
  const rejoined = compareIncarnation(kNow, kInc) > 0;
  const evictedP = parts.cluster.current(1)?.runtime.inspect.protocol.isEvicted(0, pInc) === true;
  return { rejoined, evictedP, violations: parts.checker.violations, transcript: parts.transcript.lines() };
}

/**
 * Three peers: P (p0) can no longer reach i (p2), which then sleeps; meanwhile a second
 * process Y with p1's id starts, which P meets, so P refuses p1's old process X: X is a
 * zombie. P is leased through Y's echoes. Y dies just before i wakes; i finds P silent for
 * longer than evict_ms and asks X, the only p1 it knows, to confirm: a zombie must not, P's
 * lease from Y's last echoes still holding (seed 300379).
 */
export function zombieAsked(): { violations: readonly string[]; transcript: readonly string[] } {
  const parts = quietWorld(3);
  const { cluster } = parts;
  runUntil(parts, 1000);
  parts.wire.cut(0, 2, 20_000);
  // i sleeps for less than evict_ms, so nobody suspects it; P has been silent to it longer.
  runUntil(parts, 2100);
  cluster.suspend(2);
  runUntil(parts, 2150);
  cluster.restart(1, { duplicate: true });
  // Y dies just before i wakes: i never meets it, while P's lease from Y's echoes still holds.
  runUntil(parts, 4950);
  cluster.crash(1, 'newest');
  runUntil(parts, 5000);
  cluster.wake(2);
  runUntil(parts, 9000);
  return { violations: parts.checker.violations, transcript: parts.transcript.lines() };
}

/**
 * Records, for each CONFIRM that reaches `p`'s protocol from now on, whether `p` was a zombie
 * then. An observer only: the payload goes on to the protocol unchanged.
 */
function confirmsReaching(p: SimPeerProcess): boolean[] {
  const protocol = p.runtime.inspect.protocol as PeerProtocol;
  const take = protocol.payload.bind(protocol);
  const zombie: boolean[] = [];
  protocol.payload = (from, inc, payload, nowMs) => {
    if ('t' in payload && payload.t === 'confirm') zombie.push(protocol.supersededError !== null);
    return take(from, inc, payload, nowMs);
  };
  return zombie;
}

/**
 * Four peers; p2 falls silent to p0 and to p1's process X (not to p3: no majority evicts it),
 * so both suspect it at 4.1 s, and p0 confirms X's suspicion at once. That CONFIRM is held on
 * the wire (p0 -> p1 cut from 4.05 s to 4.3 s, shorter than the silence that cuts a socket),
 * while a second process Y with p1's id starts at 4.11 s, reaching p3 but not p0: p3 refuses X
 * as older than Y, and X is a zombie at ~4.18 s. The CONFIRM then reaches it on the same
 * connection: a zombie decides no eviction, so it must not count it (finding F82 made zombies
 * silent, and no seed has reached this since). Returns whether X was a zombie at each
 * CONFIRM that reached it.
 */
export function zombieConfirmedLate(): { zombieAtConfirms: readonly boolean[]; violations: readonly string[]; transcript: readonly string[] } {
  const parts = quietWorld(4);
  const { cluster, net, wire } = parts;
  runUntil(parts, 1000);
  wire.cut(2, 1, 20_000);
  wire.cut(2, 0, 20_000);
  const zombieAtConfirms = confirmsReaching(processOf(parts, 1, 0));
  runUntil(parts, 4050);
  wire.cut(0, 1, 4300);
  runUntil(parts, 4110);
  cluster.restart(1, { duplicate: true });
  net.stallProcess(processOf(parts, 1, 1).proc, 0, 20_000);
  runUntil(parts, 4500);
  return { zombieAtConfirms, violations: parts.checker.violations, transcript: parts.transcript.lines() };
}

const exclusive = { mode: 'exclusive', limit: 1, permits: 1, owner: 'scenario', meta: null, timeoutMs: 30_000, ttlMs: 60_000, hold: 'ttl', expectedMs: null } as const;

/**
 * Three peers. R (p2) crashes and is evicted. A second process Y with p1's id starts, reaching
 * only R, and R restarts, reaching Y and p0 but not p1's old process X: R meets Y first and
 * asks for lock L. X, which evicted R's old incarnation and never met the new one, grants L
 * five times meanwhile, then dies; once p0 evicts it, Y joins everywhere and R's request is
 * granted. If R synced on Y's packets sent before Y could ack, its request sorts below X's
 * grants: token order breaks (seed 202828).
 */
export function twinMetFirstByRestarted(): { violations: readonly string[]; rGranted: boolean; transcript: readonly string[] } {
  const parts = quietWorld(3);
  const { cluster, clients, net } = parts;
  runUntil(parts, 1000);
  cluster.crash(2);
  runUntil(parts, 4500);
  const x = processOf(parts, 1, 0);
  cluster.restart(1, { duplicate: true });
  const y = processOf(parts, 1, 1);
  net.stallProcess(y.proc, 0, 10_000);
  net.stallProcess(x.proc, 2, 30_000);
  runUntil(parts, 4505);
  cluster.restart(2);
  runUntil(parts, 4600);
  const r = processOf(parts, 2, 0);
  const asked = clients.acquire(r, 'L', exclusive, false, true);
  // Y shares p1's data dir, where X keeps the bound of its echoes: Y lets nobody in before it
  // passes (at most 3 x lease_ms), and sends R nothing before. X grants after that.
  for (let i = 0; i < 5; i++) {
    runUntil(parts, 7600 + 40 * i);
    clients.acquire(x, 'L', exclusive, true);
  }
  runUntil(parts, 7900);
  cluster.crash(1, 'oldest');
  runUntil(parts, 15_000);
  return { violations: parts.checker.violations, rGranted: asked.state === 'held', transcript: parts.transcript.lines() };
}

/**
 * Two peers. p1's process X holds lock L, leased through p0's echoes. p0 crashes and restarts
 * at once, and a second process Y with p1's id starts; X cannot reach p0 any more. The new p0
 * never knew X and would let Y in at once, Y's ack quorum (p0 alone) would be met, and Y would
 * be granted L while X's lease from p0's last echo still holds (seed 903454 --net link). The
 * bound of p0's echoes on disk holds every join until X's lease has lapsed. Returns whether
 * Y got L in the end.
 */
export function restartedEchoerMeetsTwin(): { violations: readonly string[]; yGranted: boolean; transcript: readonly string[] } {
  const parts = quietWorld(2);
  const { asked } = echoerRestartsBesideTwin(parts, { crashAtMs: 1050, freshTwinDisk: false });
  runUntil(parts, 8000);
  return { violations: parts.checker.violations, yGranted: asked.state === 'held', transcript: parts.transcript.lines() };
}

/**
 * p1's process X takes L at 1 s; at `crashAtMs` p0 crashes and restarts at once, a second
 * process Y with p1's id starts (on an empty data dir with `freshTwinDisk`) and asks for L,
 * and X cannot reach p0 any more. Returns Y's request and whether X's lease held just before
 * the crash.
 */
function echoerRestartsBesideTwin(parts: Parts, opts: { crashAtMs: number; freshTwinDisk: boolean; beforeCrash?: () => void }): { asked: ClientRequest; xLeasedAtCrash: boolean } {
  const { cluster, clients, net } = parts;
  runUntil(parts, 1000);
  const x = processOf(parts, 1, 0);
  const held = clients.acquire(x, 'L', exclusive, false, true);
  runUntil(parts, 1050);
  if (held.state !== 'held') throw new Error(`X does not hold L: ${held.state}`);
  runUntil(parts, opts.crashAtMs);
  opts.beforeCrash?.();
  const xLeasedAtCrash = x.runtime.inspect.protocol.machine.leaseValid;
  cluster.crash(0);
  cluster.restart(0);
  // A fresh data dir (a replaced VM): the bound of X's own echoes holds Y nobody.
  if (opts.freshTwinDisk) cluster.hostOf(1).disk.lose();
  cluster.restart(1, { duplicate: true });
  net.stallProcess(x.proc, 0, 30_000);
  const y = processOf(parts, 1, 1);
  return { asked: clients.acquire(y, 'L', exclusive, false, true), xLeasedAtCrash };
}

/**
 * restartedEchoerMeetsTwin on a slow disk: p0's background writes of its echo bound take 4 s.
 * Its first bound (written at once, 3 s ahead) runs short at 1.5 s of its reach; from then on
 * p0 must echo nothing until the next bound is on disk, so X's lease lapses. p0 crashes at
 * 2.7 s with that write still under way, and restarts with the old bound: it holds joins only
 * until that bound passes. Y starts on an empty data dir, so p0's bound alone holds it. Had
 * p0 counted the write under way, it would have echoed on, X's lease would outlast the old bound, and Y would be granted L while X holds it. Returns
 * whether X's lease held just before the crash and whether Y held L at 4 s.
 */
export function slowEchoerDiskMeetsTwin(): { violations: readonly string[]; xLeasedAtCrash: boolean; yGranted: boolean; transcript: readonly string[] } {
  const parts = quietWorld(2);
  const { queue, time } = parts;
  parts.cluster.hostOf(0).disk.slowWrites = { latencyMs: 4000, schedule: (ms, fn) => queue.push(time.nowMs + ms, { k: 'world', fn }) };
  const { asked, xLeasedAtCrash } = echoerRestartsBesideTwin(parts, { crashAtMs: 2700, freshTwinDisk: true });
  runUntil(parts, 4000);
  const yGranted = asked.state === 'held';
  // The new p0's background writes are slow too: Y's lease lapses once its bound runs short.
  runUntil(parts, 8000);
  return { violations: parts.checker.violations, xLeasedAtCrash, yGranted, transcript: parts.transcript.lines() };
}

/**
 * restartedEchoerMeetsTwin, with p0's disk slowed (4 s per background write) once X holds L
 * at 1.05 s, and p0 crashing as soon as its echo bound on disk reaches less than 800 ms
 * ahead: a write is under way then, and p0 echoed last when the bound still covered an echo
 * (1.5 x lease_ms ahead, written 2 x 1.5 x lease_ms ahead: 700 ms before the crash or more,
 * so X's lease from it lapses before the restarted p0 lets Y in). Written only 1.5 x
 * lease_ms ahead (mutant `echo-bound-short`), an echo leaves with 750 ms of bound left: p0
 * echoed within 100 ms of the crash, holds joins for under 800 ms, and Y is granted L
 * while X's lease from that echo holds. Returns whether Y held L at 4.5 s.
 */
export function echoerCrashesOnShortBound(): { violations: readonly string[]; yGranted: boolean; transcript: readonly string[] } {
  const parts = quietWorld(2);
  const { queue, time } = parts;
  const { disk, clock } = parts.cluster.hostOf(0);
  const beforeCrash = (): void => {
    disk.slowWrites = { latencyMs: 4000, schedule: (ms, fn) => queue.push(time.nowMs + ms, { k: 'world', fn }) };
    for (let t = time.nowMs + 5; t < 6000 && disk.bounds.echo - clock.wallMs(time.nowMs) > 800; t += 5) runUntil(parts, t);
  };
  const { asked } = echoerRestartsBesideTwin(parts, { crashAtMs: 1050, freshTwinDisk: true, beforeCrash });
  runUntil(parts, 4500);
  const yGranted = asked.state === 'held';
  // The new p0's background writes are slow too: Y's lease lapses once its bound runs short.
  runUntil(parts, 8000);
  return { violations: parts.checker.violations, yGranted, transcript: parts.transcript.lines() };
}

/**
 * Two peers; p0's data dir stops taking writes at 1 s and takes them again at 5 s. Once its
 * echo bound on disk runs short, p0 echoes nothing (an echo whose bound is not on disk could
 * outlive a crash), so p1's lease lapses; it comes back with the first write that succeeds.
 */
export function echoerDiskFails(): { p1LeaseAt: (ms: number) => boolean; violations: readonly string[]; transcript: readonly string[] } {
  const parts = quietWorld(2);
  const { cluster } = parts;
  const leases: Array<{ at: number; valid: boolean }> = [];
  const sample = (until: number): void => {
    for (let t = parts.time.nowMs + 50; t <= until; t += 50) {
      runUntil(parts, t);
      leases.push({ at: t, valid: cluster.current(1)?.runtime.inspect.protocol.machine.leaseValid === true });
    }
  };
  sample(1000);
  cluster.hostOf(0).disk.failing = true;
  sample(5000);
  cluster.hostOf(0).disk.failing = false;
  sample(7000);
  const p1LeaseAt = (ms: number): boolean => leases.find((l) => l.at >= ms)?.valid ?? false;
  return { p1LeaseAt, violations: parts.checker.violations, transcript: parts.transcript.lines() };
}

/** p2 crashes at 1 s (evicted, and no echo bound of it left, by 4.9 s); p1's process X takes L meanwhile and holds it at 4.9 s. */
function xHoldsWhileP2Down(parts: Parts): { x: SimPeerProcess; held: ClientRequest } {
  runUntil(parts, 1000);
  parts.cluster.crash(2);
  const x = processOf(parts, 1, 0);
  const held = parts.clients.acquire(x, 'L', exclusive, false, true);
  runUntil(parts, 4900);
  if (held.state !== 'held') throw new Error(`X does not hold L: ${held.state}`);
  return { x, held };
}

/**
 * Three peers. p2 is down long enough to be evicted and to hold no echo bound any more; p1's
 * process X holds lock L meanwhile, leased through p0. A second process Y with p1's id starts,
 * reaching p2 only, and p2 comes back, reaching p0 and Y but not X: the new p2 never knew X
 * and lets Y in. Y has met p2 alone; if every peer it met were enough, Y would ack p2's
 * request for L, and p2 would be granted L while X holds it (seed 101577).
 */
export function twinMeetsRestartedOnly(): { violations: readonly string[]; transcript: readonly string[] } {
  const parts = quietWorld(3);
  const { cluster, clients, net } = parts;
  const { x } = xHoldsWhileP2Down(parts);
  cluster.restart(1, { duplicate: true });
  const y = processOf(parts, 1, 1);
  net.stallProcess(y.proc, 0, 30_000);
  net.stallProcess(x.proc, 2, 30_000);
  runUntil(parts, 5000);
  cluster.restart(2);
  const r = processOf(parts, 2, 0);
  clients.acquire(r, 'L', exclusive, false, true);
  runUntil(parts, 10_000);
  return { violations: parts.checker.violations, transcript: parts.transcript.lines() };
}

/**
 * Three peers, as `twinMeetsRestartedOnly` but Y reaches p0 too: p2 is down long enough to be
 * evicted and to hold no echo bound any more; p1's process X holds lock L meanwhile, leased
 * through p0. A second process Y with p1's id starts, and p2 comes back, reaching p0 and Y but
 * not X: the new p2 never knew X and lets Y in. Y has met every peer, but p0 still counts X,
 * so Y is not synced: X may hold a lease, and what Y has not seen of X's (L) is not in its
 * queue. If Y acked anyway, p2's request for L would have every ack and be granted while X
 * holds L (what seed 6298 found; pinned here so that a change of timing cannot lose it).
 */
export function unsyncedTwinAsked(): { violations: readonly string[]; xEndedAtMs: number | null; rGranted: boolean; transcript: readonly string[] } {
  const parts = quietWorld(3);
  const { cluster, clients, net } = parts;
  const { x, held } = xHoldsWhileP2Down(parts);
  // A fresh data dir (a replaced VM): the bound of X's own echoes holds Y nobody.
  cluster.hostOf(1).disk.lose();
  cluster.restart(1, { duplicate: true });
  net.stallProcess(x.proc, 2, 30_000);
  runUntil(parts, 5000);
  cluster.restart(2);
  const r = processOf(parts, 2, 0);
  const asked = clients.acquire(r, 'L', exclusive, false, true);
  let xEndedAtMs: number | null = null;
  for (let ms = 5100; ms <= 10_000; ms += 100) {
    runUntil(parts, ms);
    if (xEndedAtMs === null && held.state !== 'held') xEndedAtMs = ms;
  }
  return { violations: parts.checker.violations, xEndedAtMs, rGranted: asked.state === 'held', transcript: parts.transcript.lines() };
}

/**
 * What a zombie's clients hear. Three peers; p0 holds W. p1's process X asks for W and waits.
 * A second process Y with p1's id starts on an empty data dir and reaches p0, which then
 * refuses X as older than Y: X is a zombie, its lease still running. Its waiter ends at once
 * and a request made after is refused, both with ERR_SUPERSEDED (not ERR_LEASE_LOST: the lease
 * holds), and X is not ready. Returns the two outcomes, X's readiness and lease at 1.5 s.
 */
export function zombieAnswers(): { waiterOutcome: string; askedOutcome: string; ready: boolean; leaseValid: boolean; violations: readonly string[]; transcript: readonly string[] } {
  const parts = quietWorld(3);
  const { cluster, clients } = parts;
  runUntil(parts, 1000);
  clients.acquire(processOf(parts, 0, 0), 'W', exclusive, false, true);
  runUntil(parts, 1100);
  const x = processOf(parts, 1, 0);
  const waiter = clients.acquire(x, 'W', exclusive);
  runUntil(parts, 1200);
  cluster.hostOf(1).disk.lose();
  cluster.restart(1, { duplicate: true });
  runUntil(parts, 1400);
  const asked = clients.acquire(x, 'Z', exclusive);
  runUntil(parts, 1500);
  const session = x.runtime.inspect.protocol;
  return { waiterOutcome: waiter.outcome, askedOutcome: asked.outcome, ready: x.runtime.ready(), leaseValid: session.machine.leaseValid, violations: parts.checker.violations, transcript: parts.transcript.lines() };
}

/**
 * The opening both successor scenarios share: at 1 s p2 crashes and a second process Y with
 * p0's id starts on an empty data dir; p0's first process X never reaches p2 again, Y reaches
 * p1 only from `yReachesP1AtMs`; at 1.1 s p2 restarts on an empty data dir and meets Y first.
 */
function twinMetByRestartedP2(parts: Parts, yReachesP1AtMs: number): { x: SimPeerProcess; y: SimPeerProcess } {
  const { cluster, net } = parts;
  runUntil(parts, 1000);
  const x = processOf(parts, 0, 0);
  cluster.crash(2);
  cluster.hostOf(0).disk.lose();
  cluster.restart(0, { duplicate: true });
  const y = processOf(parts, 0, 1);
  net.stallProcess(x.proc, 2, 60_000);
  net.stallProcess(y.proc, 1, yReachesP1AtMs);
  runUntil(parts, 1100);
  cluster.hostOf(2).disk.lose();
  cluster.restart(2);
  return { x, y };
}

/**
 * Three peers. At 1 s p2 crashes and a second process Y with p0's id starts on an empty data
 * dir (a replaced VM; so Y holds no joins), reaching p2 but not p1 until 3 s; p0's first
 * process X cannot reach p2 again. p2 restarts (empty data dir too) and meets Y first: it
 * tracks Y. At 3 s Y reaches p1, which keeps Y waiting as X's successor and echoes it; X's
 * stream to p1 is replaced, X is refused as stale and falls silent there. At 3.3 s Y stops
 * reaching p2. At 5.7 s a third process Z with p0's id starts, reaching p1 only: Z replaces Y
 * as X's successor there, and Y stops reaching p1 (so it is not refused, and keeps its
 * incarnation), its lease running until a lease_ms past p1's last echo (6.6 s). At 6 s p1
 * evicts X (p2 confirms: it never tracked X) and tracks Z. At 6.3 s p2, silent from Y for
 * evict_ms, suspects it: p1 heard Y as a successor until 5.7 s and may confirm only from 8.7 s
 * on, when Y's lease has lapsed. The `forget-successor-heard` mutant forgets that p1 heard
 * the replaced successor, confirms at once, and Y is evicted while its lease holds (what
 * seeds 2042388 and 2048353 of a 100,000-seed run found, pinned here so that a change of
 * timing, which moves every seed's trajectory, cannot lose it). Returns when p2 evicted Y.
 */
export function replacedSuccessorSuspected(): { violations: readonly string[]; yEvictedAtMs: number | null; yLeaseLapsedAtMs: number | null; transcript: readonly string[] } {
  const parts = quietWorld(3);
  const { cluster, net } = parts;
  const { y } = twinMetByRestartedP2(parts, 3000);
  runUntil(parts, 3300);
  net.stallProcess(y.proc, 2, 60_000);
  runUntil(parts, 5700);
  net.stallProcess(y.proc, 1, 60_000);
  cluster.restart(0, { duplicate: true });
  const z = processOf(parts, 0, 2);
  net.stallProcess(z.proc, 2, 60_000);
  runUntil(parts, 10_000);
  const lines = parts.transcript.lines();
  const yInc = formatIncarnation(y.runtime.inspect.incarnation);
  const at = (pred: (l: string) => boolean): number | null => {
    const line = lines.find(pred);
    return line === undefined ? null : Number.parseFloat(line);
  };
  return {
    violations: parts.checker.violations,
    yEvictedAtMs: at((l) => l.includes(' p2 ') && l.includes('peer evicted by a majority') && l.includes(yInc)),
    yLeaseLapsedAtMs: at((l) => l.includes(` p0 #${y.proc.id} session: no lease`) && Number.parseFloat(l) > 3000),
    transcript: lines,
  };
}

/**
 * Three peers; the schedule that breaks safety if a peer confirms a suspicion of the successor
 * waiting behind the live incarnation it tracks (issue 39, mutant `confirm-waiting-successor`):
 *
 * - 1 s: p2 crashes; a second process Y with p0's id starts on an empty data dir (so it holds
 *   no joins); p0's first process X never reaches p2 again, Y reaches p1 only from 3.5 s.
 * - 1.1 s: p2 restarts on an empty data dir and meets Y first: p2 tracks Y, never knew X.
 * - 2 s: Y stops reaching p2 for good.
 * - 3.5 s: Y reaches p1, which keeps it waiting as X's successor and echoes it: Y is leased
 *   through p1 (Y and p1 are a majority of three). X, refused as stale, falls silent at p1.
 * - 4.9 s to 6.6 s: everything between p2 and p1 is held up (a stalled route both ways).
 * - 5 s: p2, silent from Y for evict_ms, suspects Y: SUSPECT(Y) leaves for p1, held up.
 * - 6.5 s: X has been silent at p1 for evict_ms; p1 suspects it at its next tick (6.6 s).
 * - 6.6 s: the route frees; FIFO, p1 gets SUSPECT(Y) (at 5 s) before anything later of p2's.
 *   p1 still tracks X, not evicted, silent for evict_ms, while it echoed Y 100 ms ago. The
 *   rule refuses: p1 never echoed X since, but it did echo Y. A confirmation here (the mutant)
 *   reaches p2 1.6 s after its suspicion, inside evict_ms / 1.5, and p2 (itself and p1, a
 *   majority) evicts Y while p1's last echo keeps Y's lease for another lease_ms.
 *   With the rule, p2 confirms X instead, p1 evicts X and Y joins; nobody evicts Y.
 *
 * Returns whether p1 let Y join (it evicted X) and whether p2 evicted Y.
 */
export function waitingSuccessorSuspected(): { violations: readonly string[]; yJoinedAtP1: boolean; yEvicted: boolean; transcript: readonly string[] } {
  const parts = quietWorld(3);
  const { net } = parts;
  const { y } = twinMetByRestartedP2(parts, 3500);
  runUntil(parts, 2000);
  net.stallProcess(y.proc, 2, 60_000);
  runUntil(parts, 4900);
  cutBoth(parts, 1, [2], 6600);
  runUntil(parts, 8000);
  const yInc = y.runtime.inspect.incarnation;
  const yJoinedAtP1 = counted(parts, 1, 0) === formatIncarnation(yInc);
  const yEvicted = parts.cluster.current(2)?.runtime.inspect.protocol.isEvicted(0, yInc) === true;
  return { violations: parts.checker.violations, yJoinedAtP1, yEvicted, transcript: parts.transcript.lines() };
}

/**
 * Three peers; p2 is down for 19 s, long enough for the others' redials to it to back off to
 * their longest wait (`redialMsMax`: 400 ms at this world's 100 ms heartbeat, limits.backoffMsMax
 * of 5 s before the twentieth session). When it comes back and dials them, they must dial it
 * back at once, not when their backoff runs out: otherwise nothing of theirs reaches it for
 * up to that long (seed 258, when it was seconds). Returns which of p0 and p1 linked to it
 * within 30 ms (a dial and its handshake take about 10 here).
 */
export function downLongThenBack(): { linked: boolean[]; violations: readonly string[] } {
  const parts = quietWorld(3);
  const { cluster } = parts;
  runUntil(parts, 1000);
  cluster.crash(2);
  runUntil(parts, 20_000);
  cluster.restart(2);
  const back = incOf(parts, 2, 'newest');
  runUntil(parts, 20_030);
  const linked = [0, 1].map((q) => cluster.current(q)?.runtime.inspect.links().some((l) => l.peer === 2 && l.connected && l.incarnation !== null && compareIncarnation(l.incarnation, back) === 0) === true);
  return { linked, violations: parts.checker.violations };
}

/**
 * Three peers: P (p0) can no longer reach i (p2); a second process Y with p1's id starts,
 * which i meets (so i refuses p1's old process X: X is a zombie) and P does not. i finds P
 * silent for evict_ms and Y, which never heard P, confirms: a zombie's echoes must not keep
 * P leased meanwhile (seed 109815).
 */
export function zombieEchoes(): { violations: readonly string[]; evictedP: boolean; transcript: readonly string[] } {
  const parts = quietWorld(3);
  const { cluster } = parts;
  runUntil(parts, 1000);
  const pInc = incOf(parts, 0, 'oldest');
  parts.wire.cut(0, 2, 20_000);
  cluster.restart(1, { duplicate: true });
  const y = processOf(parts, 1, 1);
  parts.net.stallProcess(y.proc, 0, 20_000);
  runUntil(parts, 6000);
  const evictedP = cluster.current(2)?.runtime.inspect.protocol.isEvicted(0, pInc) === true;
  return { violations: parts.checker.violations, evictedP, transcript: parts.transcript.lines() };
}

/**
 * Two peers. p1 restarts (X2) and p0's process A, which met X2 as the successor of p1's first
 * process X, is frozen before X is evicted. p1 crashes again, and its wall clock steps back 5 s
 * before it restarts as Y. A second process B with p0's id starts (a supervisor replaced the
 * frozen VM); Y and B join, and Y is granted L, leased through B's echoes. A thaws, finds X
 * silent with a successor waiting and evicts it alone (the two-peer rule). Y must sort above X:
 * if its incarnation came from its wall clock alone, that eviction would cover Y while Y holds
 * its lease, and pass on at A's next join to any peer that counts Y (seed 1043577).
 */
export function steppedBackBelowEvicted(): { violations: readonly string[]; yAboveX: boolean; yGranted: boolean; transcript: readonly string[] } {
  const parts = quietWorld(2);
  const { cluster, clients } = parts;
  runUntil(parts, 1000);
  const a = processOf(parts, 0, 0);
  const xInc = incOf(parts, 1, 'oldest');
  cluster.crash(1);
  cluster.restart(1);
  runUntil(parts, 1100);
  a.proc.pause();
  cluster.crash(1);
  cluster.hostOf(1).clock.stepWall(-5000);
  cluster.restart(1);
  const y = cluster.current(1);
  if (y === undefined) throw new Error('no Y');
  cluster.restart(0, { duplicate: true });
  runUntil(parts, 4000);
  const asked = clients.acquire(y, 'L', exclusive, false, true);
  runUntil(parts, 4300);
  const yGranted = asked.state === 'held';
  a.proc.thaw();
  runUntil(parts, 6000);
  const yAboveX = compareIncarnation(y.runtime.inspect.incarnation, xInc) > 0;
  return { violations: parts.checker.violations, yAboveX, yGranted, transcript: parts.transcript.lines() };
}

/**
 * Three peers; `peer` takes L, then its host sleeps 5 s, and during the sleep its wall clock
 * is stepped back 5 s (NTP after a resume, an operator): by the wall clock, no time passed.
 * The others evict it and p0 (or p1) takes L. Its host tells a boot clock when `peer` is even
 * (test/sim/cluster.ts): then the suspend is counted and its hold ends before it does
 * anything else; without one, it believes its lease (README: assumptions). Issue 37.
 */
export function suspendHiddenByWallStep(peer: number): { violations: readonly string[]; otherGranted: boolean; transcript: readonly string[] } {
  const parts = quietWorld(3);
  const { cluster, clients } = parts;
  runUntil(parts, 1000);
  const held = clients.acquire(processOf(parts, peer, 0), 'L', exclusive, false, true);
  runUntil(parts, 1100);
  if (held.state !== 'held') throw new Error(`p${peer} does not hold L: ${held.state}`);
  cluster.suspend(peer);
  runUntil(parts, 1200);
  cluster.hostOf(peer).clock.stepWall(-5000);
  runUntil(parts, 5500);
  const other = processOf(parts, peer === 0 ? 1 : 0, 0);
  const asked = clients.acquire(other, 'L', exclusive, false, true);
  runUntil(parts, 6100);
  cluster.wake(peer);
  runUntil(parts, 9000);
  return { violations: parts.checker.violations, otherGranted: asked.state === 'held', transcript: parts.transcript.lines() };
}

/**
 * Three peers at the edge of the clock-rate margin: X (p0) at rate 1, the suspecter S (p1)
 * slow at 0.8, the confirmer C (p2) fast at 1.2 (1.5 times S's). A confirmation binds C for
 * evict_ms of C's clock (2.5 s here) from when C gave it; S counts it for evict_ms / 1.5 of
 * S's clock from when S sent the suspicion (also 2.5 s). Counted for evict_ms of S's clock
 * (3.75 s, mutant `confirm-for-evict-ms`), it outlives C's promise by 1.25 s:
 *
 * - 1 s: X and S stop reaching each other (for good); 2.3 s: X and C, until 5.5 s. S falls
 *   silent on X from about 4.75 s, C from about 4.8 s.
 * - 4.6 s to 8.6 s: everything C sends S is held up (a stalled route), so neither C's own
 *   suspicions nor its confirmations reach S before then.
 * - From about 4.8 s: S suspects X every tick, C confirms each (held up), until C hears X
 *   again at 5.5 s; its last promise binds it until about 8 s, then it echoes X: X is leased
 *   through C again (X and C, a majority of three).
 * - 8.6 s: the route frees; S gets C's confirmations, the newest 3.1 s after its suspicion:
 *   past evict_ms / 1.5 of S's clock (2.48 s of it), refused; counted for evict_ms (the
 *   mutant), S (itself and C, a majority) evicts X while C's echoes keep X's lease.
 *
 * Returns whether X was leased when the route freed and whether S evicted X.
 */
export function lateConfirmationFastConfirmer(): { violations: readonly string[]; xLeasedAtHeal: boolean; xEvicted: boolean; transcript: readonly string[] } {
  const parts = quietWorld(3, [1, 0.8, 1.2]);
  runUntil(parts, 1000);
  const xInc = incOf(parts, 0, 'oldest');
  cutBoth(parts, 0, [1], 60_000);
  runUntil(parts, 2300);
  cutBoth(parts, 0, [2], 5500);
  runUntil(parts, 4600);
  parts.net.stall(2, 1, 8600);
  runUntil(parts, 8599);
  const xLeasedAtHeal = parts.cluster.current(0)?.runtime.inspect.protocol.machine.leaseValid === true;
  runUntil(parts, 12_000);
  const xEvicted = parts.cluster.current(1)?.runtime.inspect.protocol.isEvicted(0, xInc) === true;
  return { violations: parts.checker.violations, xLeasedAtHeal, xEvicted, transcript: parts.transcript.lines() };
}

/**
 * Five peers, as `confirmerRejoins` with a crash, on a slow disk: P (p0) is cut off from i
 * (p1) and a (p3) for good and from k (p2) until just after k's crash; b (p4) reaches P
 * throughout; from 3.8 s nothing of k's reaches a (a would confirm k's own suspicion of P).
 * From 3.9 s k's background writes take 1 s, and a's confirmations are held up on their way
 * to i until 7.2 s. From about 4 s i suspects P every tick and k
 * confirms each: its first confirmation writes the promise bound 2 x evict_ms ahead (10 s),
 * the next write starts only once 1.5 x evict_ms is left. k crashes at 5.45 s right after a
 * confirmation, and restarts: it echoes nothing before that bound (4.55 s). At 7.2 s a's
 * confirmations reach i, which counts k's latest (1.8 s old) with them and evicts P: P's
 * lease lapsed long ago. Written only evict_ms ahead (mutant `promise-bound-short`), the
 * bound on disk (7 s) reaches 1.55 s past the crash, less than the promise k gave: the
 * restarted k echoes P from 7 s, P (with b) is leased again, and i evicts it within its
 * lease. Returns whether i evicted P.
 */
export function slowConfirmerDiskCrashes(timing: ConfirmerCrashTiming = shortBoundTiming): { violations: readonly string[]; evictedP: boolean; transcript: readonly string[] } {
  const parts = quietWorld(5);
  const { queue, time } = parts;
  runUntil(parts, 1000);
  const pInc = incOf(parts, 0, 'oldest');
  cutBoth(parts, 0, [1, 3], 60_000);
  cutBoth(parts, 0, [2], timing.crashAtMs + 150);
  runUntil(parts, 3800);
  parts.wire.cut(2, 3, 60_000);
  runUntil(parts, 3900);
  parts.wire.cut(3, 1, timing.aHeldUntilMs);
  parts.cluster.hostOf(2).disk.slowWrites = { latencyMs: timing.writeMs, schedule: (ms, fn) => queue.push(time.nowMs + ms, { k: 'world', fn }) };
  runUntil(parts, timing.crashAtMs);
  parts.cluster.crash(2);
  parts.cluster.restart(2);
  runUntil(parts, timing.aHeldUntilMs + 2000);
  const evictedP = parts.cluster.current(1)?.runtime.inspect.protocol.isEvicted(0, pInc) === true;
  return { violations: parts.checker.violations, evictedP, transcript: parts.transcript.lines() };
}

/** When k's background writes take, when it crashes, and until when a's confirmations are held up. */
export interface ConfirmerCrashTiming {
  readonly writeMs: number;
  readonly crashAtMs: number;
  readonly aHeldUntilMs: number;
}

const shortBoundTiming: ConfirmerCrashTiming = { writeMs: 1000, crashAtMs: 5450, aHeldUntilMs: 7200 };

/**
 * slowConfirmerDiskCrashes with a 6 s write: k's second bound write starts at about 5.6 s
 * and lands at 11.6 s; the first bound (10.1 s) covers a confirmation only until 7.1 s, so k
 * confirms nothing from then on. k crashes at 9.05 s (quiet until 10.1 s) and a's
 * confirmations reach i at 10.5 s, when k's last one (7.1 s) no longer counts: i does not
 * evict P. Had k counted its write under way (mutant `count-bound-under-way`), it would have
 * confirmed until the crash, promising past its bound on disk: i counts that confirmation at
 * 10.5 s and evicts P, leased again through the restarted k's echoes.
 */
export const boundUnderWayTiming: ConfirmerCrashTiming = { writeMs: 6000, crashAtMs: 9050, aHeldUntilMs: 10_500 };

/** A scripted scenario that catches a mutant: whether its rule held in one run. */
export interface MutantScenario {
  readonly name: string;
  /** True when the run kept the rule: in the plain build it must, in the mutant's (test/sim/planted.ts) it must not. */
  readonly held: () => boolean;
}

const noViolation = (name: string, run: () => { readonly violations: readonly string[] }): MutantScenario =>
  ({ name, held: () => run().violations.length === 0 });

/** The scenario that catches each mutant the seeds reach too rarely (and a few they do reach). */
export const scenarioFor: Partial<Readonly<Record<MutantName, MutantScenario>>> = {
  'zombie-echoes': noViolation('zombieEchoes', zombieEchoes),
  'ignore-boot-clock': noViolation('suspendHiddenByWallStep(p2)', () => suspendHiddenByWallStep(2)),
  'act-while-superseded': noViolation('zombieAsked', zombieAsked),
  'zombie-confirms': noViolation('zombieAsked', zombieAsked),
  'zombie-counts-confirmations': noViolation('zombieConfirmedLate', zombieConfirmedLate),
  'no-dial-now': { name: 'downLongThenBack', held: () => downLongThenBack().linked.every((l) => l) },
  'sync-on-unready': noViolation('twinMetFirstByRestarted', twinMetFirstByRestarted),
  'forget-echo-bound': noViolation('restartedEchoerMeetsTwin', restartedEchoerMeetsTwin),
  'count-bound-under-way': noViolation('slowEchoerDiskMeetsTwin', slowEchoerDiskMeetsTwin),
  'ack-without-quorum': noViolation('twinMeetsRestartedOnly', twinMeetsRestartedOnly),
  'ack-while-unsynced': noViolation('unsyncedTwinAsked', unsyncedTwinAsked),
  'forget-promises-on-rejoin': noViolation('confirmerRejoins', () => confirmerRejoins()),
  'forget-promises-on-restart': noViolation('confirmerRejoins(crash)', () => confirmerRejoins(4102)),
  'forget-quiet-on-rejoin': noViolation('confirmerRejoins(crash, twin)', () => confirmerRejoins(4102, true)),
  'zombie-rejoins': { name: 'frozenTwinResumes', held: () => frozenTwinResumes().stayedOut },
  'forget-incarnation-floor': noViolation('steppedBackBelowEvicted', steppedBackBelowEvicted),
  'forget-successor-heard': noViolation('replacedSuccessorSuspected', replacedSuccessorSuspected),
  'confirm-waiting-successor': noViolation('waitingSuccessorSuspected', waitingSuccessorSuspected),
  'confirm-for-evict-ms': noViolation('lateConfirmationFastConfirmer', lateConfirmationFastConfirmer),
  'promise-bound-short': noViolation('slowConfirmerDiskCrashes', () => slowConfirmerDiskCrashes()),
  'echo-bound-short': noViolation('echoerCrashesOnShortBound', echoerCrashesOnShortBound),
  // No invariant of a seed run flags a lease lapsed needlessly (test/sim/view-scenarios.ts).
  'learner-echoes-dropped': { name: 'promotedWhileVoterDown', held: () => {
    const r = promotedWhileVoterDown();
    return r.held && r.violations.length === 0;
  } },
  // Two requests on the view lock reach an acceptor out of order (no seed of 1..200 did).
  'accept-without-promise': noViolation('racedBallotsOvertaken', racedBallotsOvertaken),
  // No seed of 1..200 on either network reaches it: it needs streams of one pair held apart (F81).
  'membership-across-epochs': noViolation('staleCountAcrossTwoEpochs', staleCountAcrossTwoEpochs),
  // Seed 626 --changes shows a stall; the scenario shows the harm: two majorities that do not meet (F84).
  'gate-without-every-head-ack': noViolation('gateSkippedPastLaggard', gateSkippedPastLaggard),
  // A peer behind every other member's restart or removal (F85): liveness, which the scenario checks.
  'held-view-kept': { name: 'behindWhileHolderRestarts', held: () => {
    const r = behindWhileHolderRestarts();
    return r.p1Granted && r.p0Granted && r.violations.length === 0;
  } },
  // A timing rule no seed shows a harm of: a removed member's LEAVE to a successor it holds
  // waits for its last echo to stop vouching (rule P6); the scenario times it.
  'leave-before-echoes-lapse': { name: 'removedTellsSuccessorLate', held: () => {
    const r = removedTellsSuccessorLate();
    return r.toldAfterMs !== null && r.toldAfterMs >= r.vouchMs && r.violations.length === 0;
  } },
  // The review's executions of changes of the view (test/sim/review-scenarios.ts); seeds catch them too.
  'left-member-rejoins-ack-set': { name: 'restartMeetsLeftMember', held: () => {
    const r = restartMeetsLeftMember();
    return r.p3Granted && r.p0Granted && r.violations.length === 0;
  } },
  'zombie-forgets-newer': { name: 'twinRefusedByPeerBlindToNewer', held: () => {
    const r = twinRefusedByPeerBlindToNewer();
    return r.xStayedOut && r.violations.length === 0;
  } },
};
