/**
 * Episodes of twins (two processes of one peer id; docs/design.md section 5, "Successors" and
 * "Zombies"), drawn in a fraction of the seeds from a generator of their own
 * (Scenario.twinPairEpisode, issue 39). The scripted scenarios `twinMeetsRestartedOnly`,
 * `unsyncedTwinAsked` and `frozenTwinResumes` (scenarios.ts) play one schedule each; these draw
 * the same schedules' times and routes from the seed, so that a one-line slip of the ack gate of
 * a successor or of a zombie's staying out is caught by random seeds.
 */
import { limits } from '../../src/limits.js';
import type { ClientRequest } from './clients.js';
import type { FaultPlanOptions } from './fault-plan.js';
import { Prng } from '../support/prng.js';
import { SimDisk } from './cluster.js';

/** Which twin episode a seed plays (Scenario.twinPairEpisode). */
export type TwinEpisodeKind = 'restartedMeetsTwin' | 'frozenTwin' | 'twinElsewhere';

/** What a twin episode needs of its fault plan. */
export interface TwinEpisodeHooks {
  /** False once the liveness phase began. */
  readonly active: () => boolean;
  /** True when no other episode plays (nor holds the world for itself). */
  readonly free: () => boolean;
  /** Takes the world until `untilMs` for this episode alone: no random fault, no other episode. */
  readonly hold: (untilMs: number) => void;
}

/**
 * Scenario.twinPairEpisode: in a quarter of the clusters of three to five peers, one of the two
 * kinds (the restarted peer meeting a twin twice as often); in a fifth of the others, a twin on
 * a host of its own (drawn after them, so the seeds that drew one of the first two are as before).
 */
export function drawTwinEpisode(rng: Prng, peers: number): { readonly kind: TwinEpisodeKind; readonly seed: number } | null {
  if (peers < 3 || peers > 5) return null;
  if (rng.chance(0.25)) return { kind: rng.chance(2 / 3) ? 'restartedMeetsTwin' : 'frozenTwin', seed: rng.u32() };
  return rng.chance(0.2) ? { kind: 'twinElsewhere', seed: rng.u32() } : null;
}

/** evict_ms and lease_ms in virtual (global) ms on the slowest host's clock: how long they last at the longest. */
function globalMsOf(s: { readonly evictMs: number; readonly leaseMs: number; readonly clockRates: readonly number[] }): { evictGlobalMs: number; leaseGlobalMs: number } {
  const slowest = Math.min(...s.clockRates);
  return { evictGlobalMs: s.evictMs / slowest, leaseGlobalMs: s.leaseMs / slowest };
}

/** How long, in virtual ms, a twin episode may take from its start: the safety phase leaves it that room. */
export function twinEpisodeSpanMs(s: { readonly evictMs: number; readonly leaseMs: number; readonly heartbeatMs: number; readonly clockRates: readonly number[] }): number {
  const { evictGlobalMs, leaseGlobalMs } = globalMsOf(s);
  return Math.ceil(1.6 * Math.max(evictGlobalMs + 2 * s.heartbeatMs, 3 * leaseGlobalMs) + 3 * evictGlobalMs + 3 * leaseGlobalMs + 4 * s.heartbeatMs);
}

/**
 * Plays the seed's twin episode: once the cluster formed, at a drawn time, when no other
 * episode plays and no cut or stall is under way; it tries again every two heartbeats until a
 * latest start that leaves it room to end.
 */
export function startTwinEpisode(o: FaultPlanOptions, hooks: TwinEpisodeHooks): void {
  const { scenario: s, schedule, time, wire, net } = o;
  const episode = s.twinPairEpisode;
  if (episode === null) return;
  const rng = new Prng(episode.seed);
  const earliest = Math.ceil(s.leaseMs + 4 * s.heartbeatMs);
  const latest = Math.max(earliest, Math.floor(s.safetyMs - twinEpisodeSpanMs(s) - s.leaseMs));
  const play = { restartedMeetsTwin, frozenTwin, twinElsewhere }[episode.kind];
  const attempt = (): void => {
    if (!hooks.active()) return;
    const quiet = hooks.free() && !wire.anyCut(time.nowMs) && !net.anyStall(time.nowMs);
    if (quiet && play(o, hooks, rng)) return;
    if (time.nowMs + 2 * s.heartbeatMs <= latest) schedule(time.nowMs + 2 * s.heartbeatMs, attempt);
  };
  schedule(rng.int(earliest, Math.max(earliest, Math.min(latest, earliest + 8 * s.heartbeatMs))), attempt);
}

const exclusive = { mode: 'exclusive', limit: 1, permits: 1, owner: 'twin-episode', meta: null, hold: 'connection', expectedMs: null } as const;

/** Ends a request of the episode: released if held, left if it waits. */
function end(o: FaultPlanOptions, req: ClientRequest | null): void {
  if (req?.state === 'held') o.clients.release(req);
  else if (req?.state === 'waiting') o.clients.leave(req);
}

/** Each peer runs one process, and is up: the episode's roles are well defined. */
function oneProcessEach(o: FaultPlanOptions): boolean {
  for (let q = 0; q < o.scenario.peers; q++) if (o.cluster.processes(q).length !== 1) return false;
  return true;
}

/**
 * A restarted peer meets a twin, the old process out of its reach (the scripted
 * `twinMeetsRestartedOnly` and `unsyncedTwinAsked` with drawn times and routes). Restarter R
 * crashes while X, the process of peer T, takes lock L (bound to its connection, kept through
 * the episode). R stays down a drawn 1 to 1.6 times what it takes the others to evict it and
 * the bound of its echoes to pass. Just before R restarts, a twin Y of T starts: on an empty
 * data dir in half the episodes (a replaced VM: no bound of X's echoes holds its joins), and in
 * half of them reaching no peer but R for less than evict_ms (longer, X and Y would be two islands of one id: F46). R restarts, never reaches X,
 * meets Y first and asks for L. R never knew X and lets Y in at once; the others track X, live
 * and holding L. Y must ack nothing before every peer it met let it in and a quorum of the
 * others let it in or evicted it at Y (mutants `ack-without-quorum`, `ack-while-unsynced`):
 * else R is granted L while X holds it. Later one of the twins dies.
 */
function restartedMeetsTwin(o: FaultPlanOptions, hooks: TwinEpisodeHooks, rng: Prng): boolean {
  const { cluster, schedule, time, scenario: s, transcript, net, clients } = o;
  if (!oneProcessEach(o)) return false;
  const twin = rng.int(0, s.peers - 1);
  const restarter = (twin + rng.int(1, s.peers - 1)) % s.peers;
  const x = cluster.processes(twin)[0];
  if (x === undefined) return false;
  const { evictGlobalMs, leaseGlobalMs } = globalMsOf(s);
  const t0 = time.nowMs;
  const restartAt = t0 + Math.ceil(Math.max(evictGlobalMs + 2 * s.heartbeatMs, 3 * leaseGlobalMs) * (1 + 0.6 * rng.float()));
  const twinAt = restartAt - rng.int(1, 2 * s.heartbeatMs);
  const endAt = restartAt + Math.ceil((2 + rng.float()) * evictGlobalMs + 3 * leaseGlobalMs);
  const freshDisk = rng.chance(0.5);
  const youngOnlyToR = rng.chance(0.5);
  hooks.hold(endAt);
  const lock = rng.pick(s.locks);
  transcript.add(t0, restarter, `RESTARTED MEETS TWIN: p${restarter} crashes; p${twin} takes ${lock}; a twin of p${twin} starts at ${twinAt}ms${freshDisk ? ' on an empty data dir' : ''}${youngOnlyToR ? ', reaching p' + restarter + ' only' : ''}; p${restarter} restarts at ${restartAt}ms out of the old twin's reach and asks for ${lock}; one twin dies at ${endAt}ms`);
  cluster.crash(restarter);
  const held = clients.acquire(x, lock, { ...exclusive, timeoutMs: limits.timeoutMsMax, ttlMs: 0 }, false, true);
  let asked: ClientRequest | null = null;
  schedule(twinAt, () => {
    if (!hooks.active() || cluster.processes(twin).length !== 1) return;
    if (freshDisk) cluster.hostOf(twin).disk.lose();
    cluster.restart(twin, { duplicate: true });
    const y = cluster.processes(twin)[1];
    if (y === undefined) return;
    net.stallProcess(x.proc, restarter, endAt);
    // Y reaches no peer but R for less than any peer's evict_ms, so it confirms no one silent
    // meanwhile: kept apart for longer, X and Y would make two islands of one id (F46).
    const youngUntil = Math.min(endAt, twinAt + Math.floor(0.6 * s.evictMs / Math.max(...s.clockRates)));
    if (youngOnlyToR) for (let q = 0; q < s.peers; q++) if (q !== twin && q !== restarter) net.stallProcess(y.proc, q, youngUntil);
    schedule(restartAt, () => {
      if (!hooks.active() || cluster.isUp(restarter)) return;
      cluster.restart(restarter);
      const r = cluster.processes(restarter)[0];
      if (r !== undefined) asked = clients.acquire(r, lock, { ...exclusive, hold: 'ttl', timeoutMs: Math.max(1, endAt - time.nowMs), ttlMs: s.ttlMs }, true);
    });
  });
  schedule(endAt - 1, () => {
    end(o, held);
    end(o, asked);
  });
  schedule(endAt, () => {
    if (cluster.processes(twin).length > 1) cluster.crash(twin, rng.chance(0.5) ? 'oldest' : 'newest');
    if (!cluster.isUp(restarter)) cluster.restart(restarter);
  });
  return true;
}

/**
 * A frozen process resumes beside its twin (the scripted `frozenTwinResumes` with drawn
 * times): X, the process of peer T, is frozen (SIGSTOP) and a twin Y starts at once (a
 * supervisor replaced a frozen VM; on an empty data dir in half the episodes); the others evict
 * X and let Y in. X resumes a drawn 1.2 to 2 times evict_ms + lease_ms later: refused as
 * evicted, the refusal naming Y, live, it must stay out, a zombie, and not rejoin above Y
 * (mutant `zombie-rejoins`). In half the episodes Y dies a drawn while later: once the others
 * evicted Y too, X rejoins above it.
 */
function frozenTwin(o: FaultPlanOptions, hooks: TwinEpisodeHooks, rng: Prng): boolean {
  const { cluster, schedule, time, scenario: s, transcript } = o;
  if (!oneProcessEach(o)) return false;
  const twin = rng.int(0, s.peers - 1);
  const x = cluster.processes(twin)[0];
  if (x === undefined) return false;
  const { evictGlobalMs, leaseGlobalMs } = globalMsOf(s);
  const t0 = time.nowMs;
  const thawAt = t0 + Math.ceil((evictGlobalMs + leaseGlobalMs) * (1.2 + 0.8 * rng.float()) + 2 * s.heartbeatMs);
  const youngDies = rng.chance(0.5);
  const endAt = thawAt + Math.ceil((1 + rng.float()) * (evictGlobalMs + leaseGlobalMs));
  const freshDisk = rng.chance(0.5);
  hooks.hold(endAt);
  transcript.add(t0, twin, `FROZEN TWIN: p${twin} (process ${x.proc.id}) freezes, a twin starts${freshDisk ? ' on an empty data dir' : ''}; it resumes at ${thawAt}ms; ${youngDies ? 'the twin dies' : 'one of them dies'} at ${endAt}ms`);
  x.proc.pause();
  if (freshDisk) cluster.hostOf(twin).disk.lose();
  cluster.restart(twin, { duplicate: true });
  schedule(thawAt, () => {
    if (x.proc.alive && x.proc.paused) x.proc.thaw();
  });
  schedule(endAt, () => {
    if (cluster.processes(twin).length > 1) cluster.crash(twin, youngDies || rng.chance(0.5) ? 'newest' : 'oldest');
  });
  return true;
}

/**
 * A twin on a host of its own (test/fault/twin-peer.ts on real processes; fault run seed
 * 27001): Y, a second process with T's id, starts on an empty data dir of its own beside X,
 * reaches only a drawn part of the other peers (at least one, never all) and dies a drawn
 * while later. Y starts at the wall clock: below X when X started at its data dir's mark,
 * then refused, it starts again above the incarnation the refusal names. The peers it reaches
 * let it in behind X and refuse X as stale, so X, synced, is a zombie; the others never meet Y
 * and still hear X. Once Y is dead the cluster must come back (README, "What is not
 * promised": two processes of one id keep each other out only until one is stopped): X is
 * evicted, then Y, and X rejoins above Y (mutant `zombie-heard`).
 */
function twinElsewhere(o: FaultPlanOptions, hooks: TwinEpisodeHooks, rng: Prng): boolean {
  const { cluster, schedule, time, scenario: s, transcript, net } = o;
  if (!oneProcessEach(o)) return false;
  const twin = rng.int(0, s.peers - 1);
  const x = cluster.processes(twin)[0];
  // X synced (else, refused as stale, it starts again above Y), no zombie, of an id never duplicated.
  if (x === undefined || !x.runtime.started || cluster.wasDuplicated(twin)) return false;
  if (x.runtime.inspect.protocol.supersededError !== null || !x.runtime.inspect.protocol.machine.synced) return false;
  const others = rng.shuffle(Array.from({ length: s.peers }, (_, q) => q).filter((q) => q !== twin));
  const reached = others.slice(0, rng.int(1, others.length - 1));
  const unreached = others.filter((q) => !reached.includes(q));
  const { evictGlobalMs, leaseGlobalMs } = globalMsOf(s);
  const t0 = time.nowMs;
  const endAt = t0 + rng.int(4 * s.heartbeatMs, Math.ceil(evictGlobalMs + leaseGlobalMs));
  hooks.hold(endAt + Math.ceil(3 * evictGlobalMs + leaseGlobalMs));
  transcript.add(t0, twin, `TWIN ELSEWHERE: a twin of p${twin} (process ${x.proc.id}) starts on a data dir of its own, reaching ${reached.map((q) => `p${q}`).join(',')} only; it dies at ${endAt}ms`);
  cluster.restart(twin, { duplicate: true, disk: new SimDisk() });
  const y = cluster.processes(twin)[1];
  if (y === undefined) return true;
  for (const q of unreached) net.stallProcess(y.proc, q, endAt);
  schedule(endAt, () => {
    if (y.proc.alive && cluster.processes(twin)[1] === y) cluster.stopDuplicate(twin);
  });
  return true;
}
