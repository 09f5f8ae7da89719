/**
 * Episodes of restarts (docs/design.md section 5, "Successors"; section 4, "Incarnations"),
 * drawn from the seed (issue 39, finding F55): the scripted scenarios `steppedBackBelowEvicted`
 * and `replacedSuccessorSuspected` (scenarios.ts) play one schedule each; these draw the same
 * schedules' roles and times, so a one-line slip of the rule each one protects is caught by
 * random seeds too. Each episode starts once the cluster formed and is quiet (no cut, no
 * stall, one ready process per peer), and holds off random faults and other episodes until
 * it ends.
 */
import { limits } from '../../src/limits.js';
import type { Incarnation } from '../../src/core/types.js';
import type { FaultPlanOptions } from './fault-plan.js';
import type { Scenario } from './scenario.js';
import { Prng } from '../support/prng.js';

/** Which restart episode a seed plays (Scenario.restartEpisode). */
export type RestartEpisodeKind = 'steppedBack' | 'replacedSuccessor';

/**
 * Scenario.restartEpisode: in two-peer clusters a restart stepped back below an eviction, in
 * three-peer ones a replaced successor, each in a third of the seeds that fit.
 */
export function drawRestartEpisode(rng: Prng, peers: number): { kind: RestartEpisodeKind; seed: number } | null {
  const kind: RestartEpisodeKind | null = peers === 2 ? 'steppedBack' : peers === 3 ? 'replacedSuccessor' : null;
  return kind !== null && rng.chance(1 / 3) ? { kind, seed: rng.u32() } : null;
}

/** What the fault plan lends a restart episode. */
export interface RestartEpisodeHost {
  readonly o: FaultPlanOptions;
  /** False once the liveness phase began. */
  readonly active: () => boolean;
  /** Until when other episodes (and random faults) hold the world. */
  readonly busyUntil: () => number;
  /** Holds the world (no random fault, no other episode) until `untilMs`. */
  readonly hold: (untilMs: number) => void;
}

/** An episode's view of the world; `claim` takes it until `untilMs`, false when it is not free. */
interface EpisodeContext {
  readonly o: FaultPlanOptions;
  readonly active: () => boolean;
  readonly claim: (untilMs: number) => boolean;
}

/**
 * Starts the seed's restart episode (Scenario.restartEpisode), as the fault plan starts its
 * bound episode: at a drawn time once the cluster formed, trying again every two heartbeats
 * until a latest start that leaves it room to end; from its first free try it holds off
 * random faults and other episodes.
 */
export function startRestartEpisode(host: RestartEpisodeHost): void {
  const { scenario: s, schedule, time } = host.o;
  const drawn = s.restartEpisode;
  if (drawn === null) return;
  const rng = new Prng(drawn.seed);
  const evictGlobalMs = s.evictMs / Math.min(...s.clockRates);
  const earliest = Math.ceil(s.leaseMs + 4 * s.heartbeatMs);
  const latest = Math.max(earliest, Math.floor(s.safetyMs - 7 * evictGlobalMs - s.leaseMs));
  const play = { steppedBack, replacedSuccessor }[drawn.kind];
  let reserved = false;
  let played = false;
  const free = (): boolean => time.nowMs >= host.busyUntil();
  const ctx: EpisodeContext = {
    o: host.o,
    active: host.active,
    claim: (untilMs) => {
      if (!reserved && !free()) return false;
      host.hold(untilMs);
      played = true;
      return true;
    },
  };
  const attempt = (): void => {
    if (!host.active()) return;
    if (!reserved && free()) {
      reserved = true;
      host.hold(latest);
    }
    play(ctx, rng);
    if (!played && time.nowMs + 2 * s.heartbeatMs <= latest) schedule(time.nowMs + 2 * s.heartbeatMs, attempt);
  };
  schedule(rng.int(earliest, Math.min(latest, earliest + 4 * s.heartbeatMs)), attempt);
}

/** True when the world is quiet: no cut, no stall, one process per peer, running, ready (lease held, synced). */
function quiet(ctx: EpisodeContext): boolean {
  const { cluster, time, scenario: s, net, wire } = ctx.o;
  if (!ctx.active() || wire.anyCut(time.nowMs) || net.anyStall(time.nowMs)) return false;
  for (let q = 0; q < s.peers; q++) {
    if (cluster.processes(q).length !== 1 || cluster.isFrozen(q) || cluster.current(q)?.runtime.ready() !== true) return false;
  }
  return true;
}

/** The current incarnation of `peer`'s oldest process, if it runs. */
function incarnationOf(ctx: EpisodeContext, peer: number): Incarnation | undefined {
  const p = ctx.o.cluster.processes(peer)[0];
  return p?.runtime.started === true ? p.runtime.inspect.incarnation : undefined;
}

/**
 * A restart whose wall clock stepped back below an eviction a frozen peer still owes (two
 * peers; the scripted `steppedBackBelowEvicted` with drawn roles and times; seeds 1043577
 * and 1143197 --net link). R's process X crashes and restarts at once (X2); A, the other
 * peer's process, meets X2 as X's successor and is frozen a drawn while later, before it
 * evicts X. X2 crashes, R's wall clock is stepped back past X's start, and R restarts as Y;
 * a second process B with A's id starts (a supervisor replaced the frozen VM), and Y is
 * leased through B. A thaws once X has been silent for evict_ms of its clock, finds X silent
 * with a successor waiting and evicts it alone (the two-peer rule). Y must sort above X (the
 * clock high-water mark on disk); started at its wall clock alone (mutant
 * `forget-incarnation-floor`) it sorts below, and that eviction covers Y while its lease holds.
 */
function steppedBack(ctx: EpisodeContext, rng: Prng): void {
  const { cluster, schedule, time, scenario: s, transcript } = ctx.o;
  if (s.peers !== 2 || !quiet(ctx)) return;
  const restarter = rng.int(0, 1);
  const other = 1 - restarter;
  const x = incarnationOf(ctx, restarter);
  const a = cluster.processes(other)[0];
  if (x === undefined || a === undefined) return;
  const rateA = s.clockRates[other] ?? 1;
  const evictGlobalMs = s.evictMs / Math.min(...s.clockRates);
  const fastMs = s.evictMs / Math.max(...s.clockRates);
  const t0 = time.nowMs;
  const pauseAt = t0 + rng.int(Math.max(2 * s.heartbeatMs, 4 * s.connectMaxMs), Math.max(2 * s.heartbeatMs + 1, Math.floor(0.6 * fastMs)));
  const thawAt = t0 + Math.ceil((s.evictMs + s.heartbeatMs) / rateA) + rng.int(1, Math.ceil(evictGlobalMs));
  const endAt = thawAt + Math.ceil(2 * evictGlobalMs + 2 * s.leaseMs / Math.min(...s.clockRates));
  if (!ctx.claim(endAt)) return;
  transcript.add(t0, restarter, `STEPPED BACK: p${restarter} restarts; p${other} (process ${a.proc.id}) freezes at ${pauseAt}ms, p${restarter} restarts again with its wall clock stepped back past ${x.startMs}, a second process of p${other} starts; p${other}'s first process thaws at ${thawAt}ms`);
  cluster.crash(restarter);
  cluster.restart(restarter);
  schedule(pauseAt, () => {
    if (!ctx.active() || !a.proc.alive) return;
    a.proc.pause();
    cluster.crash(restarter);
    const clock = cluster.hostOf(restarter).clock;
    const backMs = clock.wallMs(time.nowMs) - x.startMs + rng.int(1, s.evictMs);
    clock.stepWall(-backMs);
    transcript.add(time.nowMs, restarter, `STEPPED BACK: p${other} (process ${a.proc.id}) frozen; p${restarter}'s wall clock steps back ${backMs} ms`);
    cluster.restart(restarter);
    cluster.restart(other, { duplicate: true });
  });
  schedule(thawAt, () => {
    if (a.proc.alive) a.proc.thaw();
  });
  schedule(endAt, () => {
    if (cluster.processes(other).length > 1) cluster.crash(other, 'oldest');
  });
}

/** The roles and times of a replaced-successor episode. */
interface SuccessorPlan {
  readonly twin: number;
  readonly restarter: number;
  readonly echoer: number;
  readonly restartAt: number;
  readonly reachE: number;
  readonly leaveR: number;
  readonly zAt: number;
}

/**
 * The times of `replacedSuccessor` for these roles, or null when the clocks leave no window:
 * X's eviction at E (by reachE + evictE + hbE + 2d, d a message's delay) before R's suspicion
 * of Y reaches E (after leaveR + evictR + d); Z at E before E may suspect X (reachE +
 * evictE); E's last echo of Y (from zAt - hbY - d) keeps Y leased past R's eviction (by
 * leaveR + evictR + 2d after its tick), beyond the checker's margin. R confirms X's eviction
 * only once its membership is evict_ms old: Y reaches E late enough.
 */
function successorPlan(s: Scenario, roles: { twin: number; restarter: number; echoer: number }, draws: { restartAt: number; reachE: number; leaveR: number; zAt: number }): SuccessorPlan | null {
  const rate = (p: number): number => s.clockRates[p] ?? 1;
  const hb = s.heartbeatMs;
  const evictE = s.evictMs / rate(roles.echoer);
  const evictR = s.evictMs / rate(roles.restarter);
  const hbE = hb / rate(roles.echoer);
  const hbY = hb / rate(roles.twin);
  const leaseY = s.leaseMs / rate(roles.twin);
  const d = s.delayMaxMs + 1;
  const margin = limits.suspendDetectMs + 2;
  const { restartAt } = draws;
  const reachE = restartAt + Math.ceil(Math.max(4 * hb, evictR - evictE + 2 * hbE)) + draws.reachE;
  const leaveMin = Math.max(reachE + 1, reachE + Math.ceil(evictE - evictR + hbE + 2 * d));
  const leaveMax = reachE + Math.floor(evictE - evictR + leaseY - hbY - 6 * d - margin);
  if (leaveMax < leaveMin) return null;
  const leaveR = leaveMin + Math.floor(draws.leaveR * (leaveMax - leaveMin + 1));
  const zMin = Math.max(leaveR + 1, leaveR + Math.ceil(evictR - leaseY + hbY + 3 * d + margin));
  const zMax = reachE + Math.floor(evictE - 2 * d);
  if (zMax < zMin) return null;
  return { ...roles, restartAt, reachE, leaveR, zAt: zMin + Math.floor(draws.zAt * (zMax - zMin + 1)) };
}

/**
 * A replaced successor suspected (three peers; the scripted `replacedSuccessorSuspected` with
 * drawn roles and times; seeds 2042388 and 2048353 of a 100,000-seed run). R crashes; a
 * second process Y with T's id starts on an empty data dir, T's first process X never
 * reaches R again; R restarts on an empty data dir and meets Y first. Y reaches E from
 * `reachE` on (E keeps it waiting as X's successor and echoes it; X is refused there and
 * falls silent), and stops reaching R at `leaveR`. At `zAt` a third process Z with T's id
 * starts, reaching E only, and Y stops reaching E: Z replaces Y as X's successor at E, Y's
 * lease running a lease_ms past E's last echo. E evicts X (R confirms: it never tracked X)
 * and tracks Z. Then R, silent from Y for evict_ms, suspects it: E heard Y as a successor
 * until `zAt` and may confirm only evict_ms later, once Y's lease lapsed. Forgetting that
 * (mutant `forget-successor-heard`), E confirms at once and R evicts Y while its lease
 * holds. The times are drawn inside the window where that happens: X evicted at E before R
 * suspects Y, Z before X's eviction, Y's lease past R's suspicion.
 */
function replacedSuccessor(ctx: EpisodeContext, rng: Prng): void {
  const { cluster, schedule, time, scenario: s, transcript, net } = ctx.o;
  if (s.peers !== 3 || !quiet(ctx)) return;
  const t0 = time.nowMs;
  // The first order of roles (in a drawn order) whose clocks leave the schedule a window.
  const orders = rng.shuffle([[0, 1, 2], [0, 2, 1], [1, 0, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0]]);
  const draws = { restartAt: t0 + rng.int(1, 2 * s.heartbeatMs), reachE: rng.int(0, 4 * s.heartbeatMs), leaveR: rng.float(), zAt: rng.float() };
  let plan: SuccessorPlan | null = null;
  for (const [twin = 0, restarter = 1, echoer = 2] of orders) {
    plan ??= successorPlan(s, { twin, restarter, echoer }, draws);
  }
  const x = plan === null ? undefined : cluster.processes(plan.twin)[0];
  if (plan === null || x === undefined) return;
  const { twin, restarter, echoer, restartAt, reachE, leaveR, zAt } = plan;
  const endAt = zAt + Math.ceil(2.5 * s.evictMs / Math.min(...s.clockRates));
  if (!ctx.claim(endAt)) return;
  transcript.add(t0, twin, `REPLACED SUCCESSOR: p${restarter} crashes, a twin Y of p${twin} starts, reaches p${restarter} from ${restartAt}ms to ${leaveR}ms and p${echoer} from ${reachE}ms; a third process Z replaces it at p${echoer} at ${zAt}ms; two of them die at ${endAt}ms`);
  cluster.crash(restarter);
  cluster.hostOf(twin).disk.lose();
  cluster.restart(twin, { duplicate: true });
  const y = cluster.processes(twin)[1];
  if (y === undefined) return;
  net.stallProcess(x.proc, restarter, endAt);
  net.stallProcess(y.proc, echoer, reachE);
  schedule(restartAt, () => {
    if (!ctx.active()) return;
    cluster.hostOf(restarter).disk.lose();
    cluster.restart(restarter);
  });
  schedule(leaveR, () => net.stallProcess(y.proc, restarter, endAt));
  schedule(zAt, () => {
    if (!ctx.active() || cluster.processes(twin).length !== 2) return;
    net.stallProcess(y.proc, echoer, endAt);
    cluster.restart(twin, { duplicate: true });
    const z = cluster.processes(twin)[2];
    if (z !== undefined) net.stallProcess(z.proc, restarter, endAt);
  });
  schedule(endAt, () => {
    while (cluster.processes(twin).length > 1) cluster.crash(twin, 'oldest');
  });
}
