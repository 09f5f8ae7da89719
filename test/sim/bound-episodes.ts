/**
 * Episodes of the bounds a promise or an echo keeps (docs/design.md section 5, "Eviction" and
 * "Successors"; src/runtime/bounds.ts): a host whose disk writes slowly crashes while the
 * bound of the promises or echoes it gave runs short, and the next process of its peer must
 * honour that bound; or a confirmation reaches its suspecter after its confirmer's promise
 * ended. The scripted scenarios `slowConfirmerDiskCrashes`, `echoerCrashesOnShortBound`,
 * `slowEchoerDiskMeetsTwin` and `lateConfirmationFastConfirmer` (scenarios.ts) play one
 * schedule each; these draw the same schedules' times from the seed (issue 39), so a bound
 * written too short, a write counted before it is done, a bound the restarted process
 * ignores, or a confirmation counted too long is caught by random seeds.
 * The clocks are biased as the rules' margins allow: the peer whose promise or echo must
 * outlive the crash runs on the fastest clock, the peer that counts on it on the slowest.
 */
import { limits } from '../../src/limits.js';
import { clockRateMargin } from '../../src/config.js';
import type { FaultPlanOptions } from './fault-plan.js';
import type { Prng } from '../support/prng.js';

/** What a bound episode needs of its fault plan. */
export interface BoundEpisodeContext {
  readonly o: FaultPlanOptions;
  /** False once the liveness phase began. */
  readonly active: () => boolean;
  /** Takes the world until `untilMs` for this episode alone (no random fault, no other episode); false when it is not free. */
  readonly claim: (untilMs: number) => boolean;
}

/** Which bound episode a seed plays (Scenario.boundEpisode). */
export type BoundEpisodeKind = 'confirmer' | 'echoer' | 'fastConfirmer' | 'hiddenSuspend';

/** The peers with the slowest and the fastest clock, distinct (the lowest index first on a tie). */
function clockEnds(rates: readonly number[]): { slow: number; fast: number } {
  let slow = 0;
  let fast = rates.length - 1;
  rates.forEach((r, i) => {
    if (r < (rates[slow] ?? 1)) slow = i;
    if (r > (rates[fast] ?? 1)) fast = i;
  });
  if (fast === slow) fast = (slow + 1) % rates.length;
  return { slow, fast };
}

/** The host's disk writes bounds in the background `latencyMs` (virtual) late, until `untilMs`. */
function slowDisk(ctx: BoundEpisodeContext, peer: number, latencyMs: number, untilMs: number): void {
  const { cluster, schedule, time } = ctx.o;
  const disk = cluster.hostOf(peer).disk;
  disk.slowWrites = { latencyMs, schedule: (ms, fn) => schedule(time.nowMs + ms, fn) };
  schedule(untilMs, () => {
    disk.slowWrites = null;
  });
}

/**
 * An echoer that crashes as its echo bound runs short, beside a twin (two peers; the
 * scripted `echoerCrashesOnShortBound` and `slowEchoerDiskMeetsTwin` with drawn times).
 * X, the process of the slower-clocked peer, takes a lock, bound to its connection; the
 * disk of echoer E (the faster clock) writes its bounds a drawn 0.5 to 3.5 lease_ms late.
 * E crashes once its echo bound on disk reaches less than a drawn 0.55 to 0.95 lease_ms
 * ahead (or at a deadline), and restarts at once; a twin Y of X starts on an empty data dir
 * and asks for the lock, X never reaches E again. E's last echo may keep X leased for
 * lease_ms of X's clock; the restarted E holds Y's join until its echo bound on disk passes.
 * A bound that reached less than 1.5 x lease_ms past an echo (written short: mutant
 * `echo-bound-short`; counted while its write was under way: `count-bound-under-way`;
 * ignored by the restarted process: `forget-echo-bound`) lets Y in, and Y is granted the
 * lock while X holds it.
 */
export function echoerCrashesBesideTwin(ctx: BoundEpisodeContext, rng: Prng): void {
  const { cluster, schedule, time, scenario: s, transcript, net, wire, clients } = ctx.o;
  if (s.peers !== 2 || !ctx.active() || wire.anyCut(time.nowMs) || net.anyStall(time.nowMs)) return;
  const { slow: twin, fast: echoer } = clockEnds(s.clockRates);
  if (cluster.processes(twin).length !== 1 || cluster.processes(echoer).length !== 1) return;
  const x = cluster.processes(twin)[0];
  if (x === undefined) return;
  const leaseGlobalMs = s.leaseMs / Math.min(...s.clockRates);
  const evictGlobalMs = s.evictMs / Math.min(...s.clockRates);
  const t0 = time.nowMs;
  const deadline = t0 + Math.ceil(3.5 * leaseGlobalMs);
  const endAt = deadline + Math.ceil(2 * evictGlobalMs + 2 * leaseGlobalMs);
  if (!ctx.claim(endAt)) return;
  const latencyMs = Math.ceil(s.leaseMs * (0.5 + 3 * rng.float()));
  const shortMs = s.leaseMs * (0.55 + 0.4 * rng.float());
  const lock = rng.pick(s.locks);
  transcript.add(t0, echoer, `ECHOER CRASHES BESIDE TWIN: p${twin} takes ${lock}; p${echoer}'s disk writes ${latencyMs} ms late; p${echoer} crashes once its echo bound is less than ${Math.round(shortMs)} ms ahead (by ${deadline}ms), a twin of p${twin} starts and asks for ${lock}; one twin dies at ${endAt}ms`);
  slowDisk(ctx, echoer, latencyMs, endAt);
  const held = clients.acquire(x, lock, {
    mode: 'exclusive', limit: 1, permits: 1, owner: 'bound-episode', meta: null, timeoutMs: limits.timeoutMsMax, ttlMs: 0, hold: 'connection', expectedMs: null,
  }, false, true);
  schedule(endAt - 1, () => {
    if (held.state === 'held') clients.release(held);
    else if (held.state === 'waiting') clients.leave(held);
  });
  const { disk, clock } = cluster.hostOf(echoer);
  const pollMs = Math.max(1, Math.floor(s.heartbeatMs / 8));
  const poll = (): void => {
    if (!ctx.active() || !cluster.isUp(echoer)) return;
    if (time.nowMs < deadline && disk.bounds.echo - clock.wallMs(time.nowMs) >= shortMs) {
      schedule(time.nowMs + pollMs, poll);
      return;
    }
    transcript.add(time.nowMs, echoer, `ECHOER CRASHES BESIDE TWIN: p${echoer} crashes with its echo bound ${disk.bounds.echo - clock.wallMs(time.nowMs)} ms ahead`);
    cluster.crash(echoer);
    cluster.restart(echoer);
    cluster.hostOf(twin).disk.lose();
    cluster.restart(twin, { duplicate: true });
    net.stallProcess(x.proc, echoer, endAt);
    const y = cluster.processes(twin)[1];
    if (y !== undefined) {
      clients.acquire(y, lock, {
        mode: 'exclusive', limit: 1, permits: 1, owner: 'bound-episode', meta: null, timeoutMs: Math.max(1, endAt - time.nowMs), ttlMs: s.ttlMs, hold: 'ttl', expectedMs: null,
      }, true);
    }
  };
  schedule(t0 + s.heartbeatMs, poll);
  schedule(endAt, () => {
    if (cluster.processes(twin).length > 1) cluster.crash(twin, rng.chance(0.5) ? 'oldest' : 'newest');
  });
}

/**
 * The roles of an episode in a quiet odd cluster of `minPeers` or more, each process alone:
 * the suspecter S on the slowest clock, the confirmer C on the fastest, a suspect, and the
 * rest in a drawn order; null when the cluster does not fit or is not quiet now.
 */
function oddClusterRoles(ctx: BoundEpisodeContext, rng: Prng, minPeers: number): { suspecter: number; confirmer: number; suspect: number; rest: number[]; majority: number } | null {
  const { cluster, time, scenario: s, net, wire } = ctx.o;
  if (s.peers < minPeers || s.peers % 2 === 0 || !ctx.active() || wire.anyCut(time.nowMs) || net.anyStall(time.nowMs)) return null;
  for (let q = 0; q < s.peers; q++) if (cluster.processes(q).length !== 1) return null;
  const { slow: suspecter, fast: confirmer } = clockEnds(s.clockRates);
  const others = rng.shuffle(Array.from({ length: s.peers }, (_, i) => i).filter((p) => p !== suspecter && p !== confirmer));
  const [suspect, ...rest] = others;
  return suspect === undefined ? null : { suspecter, confirmer, suspect, rest, majority: Math.floor(s.peers / 2) + 1 };
}

/**
 * A confirmer that crashes while its promise bound runs short (an odd cluster of five or
 * more; the scripted `slowConfirmerDiskCrashes` with drawn times). Suspect P is cut off
 * from the suspecter S (the slowest clock) and from m - 2 confirmers A (m: a majority) for
 * the whole episode, and from confirmer C (the fastest clock) until just after C's crash;
 * the others (B) reach P throughout, but they are too few to lease it alone. Nothing of C
 * reaches the A (they would confirm C's own suspicion), and nothing of the A reaches S until
 * a drawn release: S counts C's confirmations at once, the A's only then. C's disk writes
 * its bounds a drawn 0.3 to 1.5 evict_ms late; C crashes at a drawn 0.35 to 1.6 evict_ms
 * after its first confirmation (while a background write may be under way, its bound on
 * disk shortest), restarts at once and echoes P once its promise bound on disk passes: P
 * is leased through C and B. The release comes a drawn 0.55 to 1 of a confirmation's count
 * (evict_ms / margin of S's clock) after the crash: S counts C's last confirmation with the
 * A's and evicts P. With the rule, C's last confirmation left with evict_ms of bound on
 * disk, so the restarted C echoes P only after S stopped counting it. A confirmation that
 * left on a shorter bound (written evict_ms ahead: mutant `promise-bound-short`; counted
 * while its write was under way: `count-bound-under-way`), or a restarted process that
 * ignores the bound (`forget-promises-on-restart`), lets S evict P while its lease holds.
 * In a third of the episodes a second process of C starts beside the restarted one (the
 * scripted `confirmerRejoins` with a twin): the first, refused as older, rejoins within its
 * quiet, which must go on (`forget-quiet-on-rejoin`).
 */
export function confirmerCrashesOnShortBound(ctx: BoundEpisodeContext, rng: Prng): void {
  const { cluster, schedule, time, scenario: s, transcript, wire } = ctx.o;
  const roles = oddClusterRoles(ctx, rng, 5);
  if (roles === null) return;
  const { suspecter, confirmer, suspect, rest, majority } = roles;
  const held = rest.slice(0, majority - 2);
  const rateS = s.clockRates[suspecter] ?? 1;
  const rateC = s.clockRates[confirmer] ?? 1;
  const evictGlobalMs = s.evictMs / Math.min(...s.clockRates);
  const t0 = time.nowMs;
  // S suspects P once P was silent for evict_ms of S's clock, at its next tick; C confirms at once.
  const firstConfirmAt = t0 + Math.ceil((s.evictMs + s.heartbeatMs) / rateS);
  const crashAt = firstConfirmAt + Math.ceil(s.evictMs * (0.35 + 1.25 * rng.float()) / rateC);
  const countsMs = s.evictMs / clockRateMargin / rateS;
  const releaseAt = crashAt + Math.ceil(countsMs * (0.55 + 0.45 * rng.float()));
  const endAt = releaseAt + Math.ceil(2 * evictGlobalMs);
  if (!ctx.claim(endAt)) return;
  const latencyMs = Math.ceil(s.evictMs * (0.3 + 1.2 * rng.float()) / rateC);
  transcript.add(t0, suspect, `CONFIRMER CRASHES ON A SHORT BOUND: cut from p${suspecter},${held.map((a) => `p${a}`).join(',')} until ${endAt}ms and from p${confirmer} until just after its crash at ${crashAt}ms; p${confirmer}'s disk writes ${latencyMs} ms late; p${held.join(',p')}->p${suspecter} cut until ${releaseAt}ms`);
  const cutBoth = (a: number, b: number, until: number): void => {
    wire.cut(a, b, until);
    wire.cut(b, a, until);
  };
  cutBoth(suspect, suspecter, endAt);
  for (const a of held) {
    cutBoth(suspect, a, endAt);
    wire.cut(confirmer, a, endAt);
    wire.cut(a, suspecter, releaseAt);
  }
  cutBoth(suspect, confirmer, crashAt + rng.int(1, s.heartbeatMs));
  slowDisk(ctx, confirmer, latencyMs, endAt);
  // Drawn last: in a third of the episodes a supervisor starts two processes at the restart.
  const twin = rng.chance(1 / 3);
  schedule(crashAt, () => {
    if (!ctx.active() || !cluster.isUp(confirmer)) return;
    const { disk, clock } = cluster.hostOf(confirmer);
    transcript.add(time.nowMs, confirmer, `CONFIRMER CRASHES ON A SHORT BOUND: p${confirmer} crashes with its promise bound ${disk.bounds.promise - clock.wallMs(time.nowMs)} ms ahead${twin ? ', and restarts twice' : ''}`);
    cluster.crash(confirmer);
    cluster.restart(confirmer);
    if (!twin) return;
    cluster.restart(confirmer, { duplicate: true });
    schedule(endAt, () => {
      if (cluster.processes(confirmer).length > 1) cluster.crash(confirmer, rng.chance(0.5) ? 'oldest' : 'newest');
    });
  });
}

/**
 * A late confirmation from a fast confirmer (an odd cluster; the scripted
 * `lateConfirmationFastConfirmer` with drawn times). Suspect X is cut off from the suspecter
 * S (the slowest clock) for the whole episode, and from m - 1 confirmers (m: a majority; C,
 * the fastest clock, among them) until a drawn 1 to 4 heartbeats after S began to suspect
 * it; the others reach X throughout (with X and C, a majority). Every connection a confirmer
 * opens to S stalls from before the first confirmation until a drawn 0.5 to 1 evict_ms of
 * S's clock after the confirmers heard X again. C's promise runs evict_ms of C's clock from
 * its last confirmation: it then echoes X, and X is leased through C and the others. S
 * counts a confirmation for evict_ms / margin of its own clock from its suspicion, which
 * ends before C's promise however far apart the clocks are (within the margin); counted for
 * evict_ms (mutant `confirm-for-evict-ms`), a confirmation delivered between C's promise's
 * end and evict_ms of S's clock evicts X while its lease holds.
 */
export function lateFastConfirmation(ctx: BoundEpisodeContext, rng: Prng): void {
  const { schedule, time, scenario: s, transcript, net, wire } = ctx.o;
  const roles = oddClusterRoles(ctx, rng, 3);
  if (roles === null) return;
  const { suspecter, confirmer, suspect, rest, majority } = roles;
  const confirmers = [confirmer, ...rest.slice(0, majority - 2)];
  const rateS = s.clockRates[suspecter] ?? 1;
  const evictGlobalMs = s.evictMs / Math.min(...s.clockRates);
  const t0 = time.nowMs;
  const suspectsAt = t0 + Math.ceil((s.evictMs + s.heartbeatMs) / rateS);
  const holdFrom = t0 + Math.floor(0.8 * s.evictMs / rateS);
  const healAt = suspectsAt + rng.int(s.heartbeatMs, 4 * s.heartbeatMs);
  const holdUntil = healAt + Math.ceil(s.evictMs * (0.5 + 0.5 * rng.float()) / rateS);
  const endAt = holdUntil + Math.ceil(2 * evictGlobalMs);
  if (!ctx.claim(endAt)) return;
  transcript.add(t0, suspect, `LATE FAST CONFIRMATION: cut from p${suspecter} until ${endAt}ms and from ${confirmers.map((c) => `p${c}`).join(',')} until ${healAt}ms; their connections to p${suspecter} stall ${holdFrom}..${holdUntil}ms`);
  for (const [a, b, until] of [[suspect, suspecter, endAt], ...confirmers.map((c) => [suspect, c, healAt] as const)] as const) {
    wire.cut(a, b, until);
    wire.cut(b, a, until);
  }
  schedule(holdFrom, () => {
    if (ctx.active()) for (const c of confirmers) net.stall(c, suspecter, holdUntil);
  });
}

/**
 * A suspend hidden by a wall clock stepped back (three peers or more; the scripted
 * `suspendHiddenByWallStep` with drawn times). H, an even peer (its host tells a boot clock:
 * cluster.ts), takes a lock bound to its connection, then its host sleeps for a drawn 1.2 to 2
 * times evict_ms + lease_ms; soon after it falls asleep its wall clock is stepped back by the
 * whole sleep, so that on waking the wall clock alone shows no gap. Halfway through, another
 * peer asks for the lock: the others evicted H meanwhile and grant it. H must count the sleep
 * by its boot clock and end its hold on waking; counted by the wall clock alone (mutant
 * `ignore-boot-clock`), H wakes believing its lease held and holds beside the new holder.
 * (A host without a boot clock cannot tell such a sleep: the README's guarantee table says so.)
 */
export function hiddenSuspend(ctx: BoundEpisodeContext, rng: Prng): void {
  const { cluster, schedule, time, scenario: s, transcript, net, wire, clients } = ctx.o;
  if (s.peers < 3 || !ctx.active() || wire.anyCut(time.nowMs) || net.anyStall(time.nowMs)) return;
  for (let q = 0; q < s.peers; q++) if (cluster.processes(q).length !== 1) return;
  const sleeper = 2 * rng.int(0, Math.floor((s.peers - 1) / 2));
  const other = rng.pick(Array.from({ length: s.peers }, (_, i) => i).filter((p) => p !== sleeper));
  const x = cluster.processes(sleeper)[0];
  const y = cluster.processes(other)[0];
  if (x === undefined || y === undefined) return;
  const leaseGlobalMs = s.leaseMs / Math.min(...s.clockRates);
  const evictGlobalMs = s.evictMs / Math.min(...s.clockRates);
  const sleepMs = Math.ceil((evictGlobalMs + leaseGlobalMs) * (1.2 + 0.8 * rng.float()));
  const t0 = time.nowMs;
  const holdBy = t0 + Math.ceil(4 * leaseGlobalMs);
  const endAt = holdBy + sleepMs + Math.ceil(2 * evictGlobalMs + 2 * leaseGlobalMs);
  if (!ctx.claim(endAt)) return;
  const lock = rng.pick(s.locks);
  const exclusive = { mode: 'exclusive', limit: 1, permits: 1, owner: 'bound-episode', meta: null, timeoutMs: limits.timeoutMsMax, ttlMs: 0, hold: 'connection', expectedMs: null } as const;
  transcript.add(t0, sleeper, `HIDDEN SUSPEND: p${sleeper} takes ${lock}, then sleeps ${sleepMs} ms with its wall clock stepped back as much; p${other} asks for ${lock} meanwhile`);
  const held = clients.acquire(x, lock, exclusive, false, true);
  let asked: ReturnType<typeof clients.acquire> | null = null;
  const sleep = (): void => {
    if (!ctx.active()) return;
    if (held.state !== 'held') {
      if (held.state === 'waiting' && time.nowMs < holdBy) schedule(time.nowMs + s.heartbeatMs, sleep);
      return;
    }
    transcript.add(time.nowMs, sleeper, `HIDDEN SUSPEND: p${sleeper}'s host sleeps until ${time.nowMs + sleepMs}ms`);
    const start = time.nowMs;
    cluster.suspend(sleeper);
    schedule(start + Math.min(100, Math.floor(sleepMs / 10)), () => cluster.hostOf(sleeper).clock.stepWall(-sleepMs));
    schedule(start + Math.ceil(sleepMs / 2), () => {
      if (cluster.processes(other)[0] === y) asked = clients.acquire(y, lock, exclusive, false, true);
    });
    schedule(start + sleepMs, () => cluster.wake(sleeper));
  };
  schedule(t0 + s.heartbeatMs, sleep);
  schedule(endAt - 1, () => {
    for (const req of [held, asked]) {
      if (req === null) continue;
      if (req.state === 'held') clients.release(req);
      else if (req.state === 'waiting') clients.leave(req);
    }
  });
}
