/**
 * The safety phase's faults, drawn from the seed at the seed's own rate: crashes (kill -9;
 * the restart may find its data dir gone or unwritable, or its wall clock stepped back),
 * pauses (SIGSTOP: the process runs nothing, its clocks run on), host suspends (the
 * monotonic clock stops too, the wall clock does not), a second process started with a
 * live peer's id, windows in which the clock file cannot be written, cuts between two
 * peers, and partitions: two groups (symmetric), some directions cut (asymmetric), or one
 * peer bridging two sides that do not see each other. Durations are short, longer than
 * evict_ms, or placed around the lease and eviction deadlines, where timing bugs live.
 */
import { limits } from '../../src/limits.js';
import type { Clients } from './clients.js';
import type { Cluster } from './cluster.js';
import type { ScheduleWorld } from './events.js';
import type { SimTime } from './host.js';
import type { Wire } from './network.js';
import type { SimNetworks } from './sockets.js';
import type { ClusterConfig } from '../../src/config.js';
import type { MisconfigKind, Scenario } from './scenario.js';
import type { Transcript } from './transcript.js';
import { Prng } from '../support/prng.js';
import { confirmerCrashesOnShortBound, echoerCrashesBesideTwin, hiddenSuspend, lateFastConfirmation } from './bound-episodes.js';
import { startRestartEpisode } from './restart-episodes.js';
import { startTwinEpisode } from './twin-episodes.js';

/** What a fault plan is built from. */
export interface FaultPlanOptions {
  readonly scenario: Scenario;
  readonly rng: Prng;
  readonly cluster: Cluster;
  readonly wire: Wire;
  readonly net: SimNetworks;
  /** The episodes' own clients (a hold kept through a twin episode). */
  readonly clients: Clients;
  readonly schedule: ScheduleWorld;
  readonly time: SimTime;
  readonly transcript: Transcript;
}

/** Draws faults until the liveness phase, then heals everything. */
export class FaultPlan {
  readonly #o: FaultPlanOptions;
  #active = true;
  /** A peer kept dead through the liveness phase (the majority must evict it), or null. */
  #dead: number | null = null;

  constructor(o: FaultPlanOptions) {
    this.#o = o;
  }

  /** The peer kept dead through the liveness phase, or null. */
  get dead(): number | null {
    return this.#dead;
  }

  /** Schedules the first fault, if the seed has any, and the seed's episodes. */
  start(): void {
    this.#next();
    this.#startBoundEpisode();
    startRestartEpisode({ o: this.#o, active: () => this.#active, busyUntil: () => Math.max(this.#episodeUntilMs, this.#twinUntilMs), hold: (untilMs) => {
      this.#episodeUntilMs = untilMs;
      this.#twinUntilMs = untilMs;
    } });
    // Scenario.twinPairEpisode (twin-episodes.ts): plays when no other episode does, then alone.
    startTwinEpisode(this.#o, { active: () => this.#active, free: () => this.#o.time.nowMs >= Math.max(this.#episodeUntilMs, this.#twinUntilMs), hold: (untilMs) => {
      this.#episodeUntilMs = Math.max(this.#episodeUntilMs, untilMs);
      this.#twinUntilMs = Math.max(this.#twinUntilMs, untilMs);
    } });
    const { scenario: s, rng, schedule } = this.#o;
    if (!s.zombieEpisode && !s.lateConfirmEpisode && !s.twinEpisode && !s.isolatedTwinEpisode && s.misconfigEpisode === null && !s.waitingSuccessorEpisode) return;
    const episodes = rng.fork();
    const evictGlobalMs = s.evictMs / Math.min(...s.clockRates);
    // Each episode takes up to about three eviction periods: it starts early enough to end
    // inside the safety phase.
    // After the cluster has formed (leases held), early enough to end inside the safety phase.
    const earliest = Math.ceil(s.leaseMs + 4 * s.heartbeatMs);
    const at = (spanEvicts: number): number => {
      const latest = Math.floor(s.safetyMs - spanEvicts * evictGlobalMs - s.leaseMs - 4 * s.heartbeatMs);
      return latest <= earliest ? earliest : episodes.int(earliest, latest);
    };
    if (s.zombieEpisode) {
      const peer = episodes.int(0, s.peers - 1);
      schedule(at(2.3), () => this.#zombie(peer, episodes));
    }
    if (s.lateConfirmEpisode) {
      const peer = episodes.int(0, s.peers - 1);
      schedule(at(3.7), () => this.#lateConfirmations(peer, episodes));
    }
    if (s.twinEpisode) {
      const peer = episodes.int(0, s.peers - 1);
      schedule(at(4), () => this.#twinMetFirst(peer, episodes));
    }
    if (s.isolatedTwinEpisode) {
      const peer = episodes.int(0, s.peers - 1);
      schedule(at(4), () => this.#twinMetFirst(peer, episodes, true));
    }
    const misconfig = s.misconfigEpisode;
    if (misconfig !== null) {
      const peer = episodes.int(0, s.peers - 1);
      schedule(at(6), () => this.#misconfigure(peer, misconfig, episodes));
    }
    if (s.waitingSuccessorEpisode) {
      // Its own generator, drawn last: the other episodes of its seed draw as before.
      const own = episodes.fork();
      const peer = own.int(0, s.peers - 1);
      schedule(at(4), () => this.#waitingSuccessor(peer, own));
    }
  }

  /**
   * The seed's bound episode (Scenario.boundEpisode), from a generator of its own: it starts
   * once the cluster formed, at a drawn time, when no cut, stall or other episode is under way
   * (from its first try it holds off random faults and other episodes, and tries again every
   * two heartbeats until a latest start that leaves it room to end).
   */
  #startBoundEpisode(): void {
    const { scenario: s, schedule, time } = this.#o;
    const bound = s.boundEpisode;
    if (bound === null) return;
    const rng = new Prng(bound.seed);
    const evictGlobalMs = s.evictMs / Math.min(...s.clockRates);
    const earliest = Math.ceil(s.leaseMs + 4 * s.heartbeatMs);
    const latest = Math.max(earliest, Math.floor(s.safetyMs - 7 * evictGlobalMs - s.leaseMs));
    const play = { echoer: echoerCrashesBesideTwin, confirmer: confirmerCrashesOnShortBound, fastConfirmer: lateFastConfirmation, hiddenSuspend }[bound.kind];
    // Once free, the episode holds off random faults and other episodes (`reserved`) while the
    // cuts, stalls and second processes of earlier faults end.
    let reserved = false;
    let played = false;
    const free = (): boolean => time.nowMs >= this.#episodeUntilMs && time.nowMs >= this.#twinUntilMs;
    const hold = (untilMs: number): void => {
      this.#episodeUntilMs = untilMs;
      this.#twinUntilMs = untilMs;
    };
    const ctx = {
      o: this.#o,
      active: () => this.#active,
      claim: (untilMs: number): boolean => {
        if (!reserved && !free()) return false;
        hold(untilMs);
        played = true;
        return true;
      },
    };
    const attempt = (): void => {
      if (!this.#active) return;
      if (!reserved && free()) {
        reserved = true;
        hold(latest);
      }
      play(ctx, rng);
      if (!played && time.nowMs + 2 * s.heartbeatMs <= latest) schedule(time.nowMs + 2 * s.heartbeatMs, attempt);
    };
    // Early, ahead of the seed's other episodes (which skip their turn while it plays).
    schedule(rng.int(earliest, Math.min(latest, earliest + 4 * s.heartbeatMs)), attempt);
  }

  /**
   * A successor suspected while it waits (Scenario.waitingSuccessorEpisode; the scripted
   * `waitingSuccessorSuspected` of scenarios.ts with drawn times). Three peers: restarter R
   * crashes; a second process Y with `twin`'s id starts on an empty data dir, beside the old
   * process X, which never reaches R again; R restarts (empty data dir too) and meets Y first.
   * Y stops reaching R, then (within evict_ms / 1.5) reaches echoer E, which keeps it waiting
   * as X's successor and echoes it (Y's lease), while X falls silent there. The route E-R is
   * held up from just before R suspects Y until just after E suspects X: E gets R's SUSPECT(Y)
   * before R's confirmation of X, with X silent and not evicted. E must not confirm Y.
   */
  #waitingSuccessor(twin: number, rng: Prng): void {
    const { cluster, schedule, time, scenario: s, transcript, net, wire } = this.#o;
    if (!this.#active || s.peers !== 3 || cluster.processes(twin).length !== 1 || time.nowMs < this.#twinUntilMs) return;
    if (time.nowMs < this.#episodeUntilMs || wire.anyCut(time.nowMs) || net.anyStall(time.nowMs)) return;
    if (cluster.otherDuplicated(twin, time.nowMs - 2 * s.evictMs / Math.min(...s.clockRates))) return;
    const restarter = (twin + rng.int(1, 2)) % 3;
    const echoer = 3 - twin - restarter;
    if (!cluster.isUp(restarter) || !cluster.isUp(echoer)) return;
    const x = cluster.processes(twin)[0];
    if (x === undefined) return;
    const slowMs = s.evictMs / Math.min(...s.clockRates);
    const fastMs = s.evictMs / Math.max(...s.clockRates);
    const hb = s.heartbeatMs;
    const t0 = time.nowMs;
    const restartAt = t0 + rng.int(1, 2 * hb);
    const leaveRAt = restartAt + rng.int(4 * hb, Math.ceil(0.5 * fastMs) + 4 * hb);
    const reachEAt = leaveRAt + rng.int(hb, Math.max(hb + 1, Math.floor(fastMs / 1.5) - 3 * hb));
    const holdFrom = leaveRAt + Math.floor(fastMs) - rng.int(hb, 3 * hb);
    const holdUntil = reachEAt + Math.ceil(slowMs) + rng.int(hb, 3 * hb);
    const endAt = holdUntil + Math.ceil(2 * slowMs);
    this.#episodeUntilMs = Math.max(this.#episodeUntilMs, endAt);
    this.#twinUntilMs = endAt;
    transcript.add(t0, twin, `WAITING SUCCESSOR: p${restarter} crashes, a twin of p${twin} starts, reaches p${restarter} from ${restartAt}ms to ${leaveRAt}ms and p${echoer} from ${reachEAt}ms; p${echoer}<->p${restarter} held ${holdFrom}..${holdUntil}ms; one twin dies at ${endAt}ms`);
    cluster.crash(restarter);
    cluster.hostOf(twin).disk.lose();
    cluster.restart(twin, { duplicate: true });
    const young = cluster.processes(twin)[1];
    if (young === undefined) return;
    net.stallProcess(x.proc, restarter, endAt);
    net.stallProcess(young.proc, echoer, reachEAt);
    schedule(restartAt, () => {
      if (!this.#active) return;
      cluster.hostOf(restarter).disk.lose();
      cluster.restart(restarter);
    });
    schedule(leaveRAt, () => net.stallProcess(young.proc, restarter, endAt));
    schedule(holdFrom, () => {
      if (!this.#active) return;
      wire.cut(echoer, restarter, holdUntil);
      wire.cut(restarter, echoer, holdUntil);
    });
    schedule(endAt, () => {
      if (cluster.processes(twin).length > 1) cluster.crash(twin, rng.chance(0.5) ? 'oldest' : 'newest');
    });
  }

  /** Peers running with a config of their own (a misconfiguration episode): the heal restarts them with the cluster's. */
  readonly #misconfigured = new Set<number>();

  /**
   * A host restarted with a config of its own (Scenario.misconfigEpisode): every link must
   * refuse it, so it never holds a lease. To give a mutant that lets it in (a fingerprint
   * that leaves out the order or the timings) its chance, it runs a while, then is cut off
   * from every other peer for longer than their eviction (with a longer lease of its own, it
   * would hold on after they granted), then runs with the cluster's config again.
   */
  #misconfigure(peer: number, kind: MisconfigKind, rng: Prng): void {
    const { cluster, wire, schedule, time, scenario: s, transcript } = this.#o;
    if (!this.#active || cluster.processes(peer).length !== 1 || time.nowMs < this.#episodeUntilMs) return;
    const config = misconfigOf(cluster.config, peer, kind, rng);
    if (config === null) return;
    const evictGlobalMs = s.evictMs / Math.min(...s.clockRates);
    // It joins once the others evicted its previous process (about evict_ms), and once its
    // own echoes of that process lapsed (about 1.5 lease_ms): it runs joined a while after that.
    const joinedAt = time.nowMs + Math.ceil(1.5 * evictGlobalMs + 1.5 * s.leaseMs);
    const cutAt = joinedAt + rng.int(Math.ceil(4 * s.heartbeatMs), Math.ceil(2 * evictGlobalMs));
    const healAt = cutAt + rng.int(Math.ceil(1.2 * evictGlobalMs), Math.ceil(2 * evictGlobalMs));
    const fixAt = healAt + rng.int(1, Math.ceil(evictGlobalMs));
    this.#episodeUntilMs = Math.max(this.#episodeUntilMs, fixAt);
    transcript.add(time.nowMs, peer, `MISCONFIG (${kind}): restarted with a config of its own, cut off from ${cutAt}ms to ${healAt}ms, the cluster's config again at ${fixAt}ms`);
    cluster.crash(peer);
    cluster.restart(peer, { config });
    this.#misconfigured.add(peer);
    schedule(cutAt, () => {
      for (let q = 0; q < s.peers; q++) {
        if (q === peer) continue;
        wire.cut(peer, q, healAt);
        wire.cut(q, peer, healAt);
      }
    });
    schedule(fixAt, () => this.#fixConfig(peer));
  }

  /** The misconfigured peer runs with the cluster's config again (an operator mended its file). */
  #fixConfig(peer: number): void {
    if (!this.#misconfigured.delete(peer)) return;
    const { cluster } = this.#o;
    while (cluster.isUp(peer)) cluster.crash(peer);
    cluster.restart(peer);
  }

  #weights(): number[] {
    const s = this.#o.scenario;
    return [s.crashWeight, s.pauseWeight, s.suspendWeight, s.cutWeight, s.partitionWeight, s.duplicateWeight, s.diskFaultWeight];
  }

  /** The lock the old twin holds in a twin episode. */
  #twinLock: string | null = null;

  /**
   * While a twin episode plays out (either kind), no other episode starts: another episode's
   * stall (the late confirmations') would keep the new twin from peers the old one still
   * reaches over their own connections, two islands of one id, which nothing promises
   * (seed 507713).
   */
  #twinUntilMs = 0;

  /** While an episode plays out, no random fault: each of its steps lands as planned. */
  #episodeUntilMs = 0;

  /** No random fault until `untilMs`: a fault of the changes (test/sim/proposer-faults.ts) plays out as drawn. */
  holdOff(untilMs: number): void {
    this.#episodeUntilMs = Math.max(this.#episodeUntilMs, untilMs);
  }

  /** Whether no episode is under way, nor any cut or stall of the network. */
  calm(): boolean {
    const { net, time, wire } = this.#o;
    return time.nowMs >= Math.max(this.#episodeUntilMs, this.#twinUntilMs) && !wire.anyCut(time.nowMs) && !net.anyStall(time.nowMs);
  }

  /** One random fault, then the next one is scheduled. */
  #onFault(): void {
    if (!this.#active) return;
    if (this.#o.time.nowMs < this.#episodeUntilMs) {
      this.#next();
      return;
    }
    const { scenario: s, rng } = this.#o;
    const peer = rng.int(0, s.peers - 1);
    const weights = this.#weights();
    let x = rng.float() * weights.reduce((a, b) => a + b, 0);
    let kind = 0;
    while (kind < weights.length - 1 && x >= (weights[kind] ?? 0)) x -= weights[kind++] ?? 0;
    [
      () => this.#crash(peer),
      () => this.#pause(peer),
      () => this.#suspend(peer),
      () => this.#cut(peer),
      () => this.#partition(),
      () => this.#duplicate(peer),
      () => this.#diskFault(peer),
    ][kind]?.();
    this.#next();
  }

  /**
   * The liveness phase: no more faults; cuts heal, disks work, duplicates are gone, every
   * peer runs, except, in some seeds, one that stays dead: the others must evict it and go
   * on. Returns the dead peer, if any.
   */
  heal(): number | null {
    this.#active = false;
    const { cluster, wire, time, rng, scenario: s } = this.#o;
    const changing = cluster.founders < cluster.size;
    wire.healAll(time.nowMs);
    this.#o.net.healStalls();
    // Two peers never evict, so a dead one would block the other forever: by design.
    if (s.peers >= 3 && rng.chance(s.deadPeerChance)) {
      // A peer nobody has met cannot be evicted (by design: see Membership.tick), so the dead
      // one is a running peer whose incarnation some other peer knows.
      const candidate = rng.int(0, s.peers - 1);
      // Known by a peer the heal leaves running: one of a duplicated id is restarted below,
      // and its new incarnation never meets the dead one (seed 301430).
      const staysUp = (q: number): boolean => cluster.processes(q).length === 1 && !cluster.wasDuplicated(q);
      // With changes, a voter of three or more: the other voters evict it.
      const evictable = !changing || (cluster.isVoter(candidate) && cluster.voterPeers().length >= 3 && cluster.keepsMajoritiesWithout(candidate));
      if (evictable && cluster.isUp(candidate) && cluster.processes(candidate).length === 1 && cluster.isKnown(candidate, staysUp)) this.#dead = candidate;
    }
    for (const peer of [...this.#misconfigured]) this.#fixConfig(peer);
    for (let peer = 0; peer < cluster.size; peer++) {
      cluster.hostOf(peer).disk.failing = false;
      // Two processes with one id make each other unavailable (safely): the operator stops
      // both and starts one.
      if (cluster.processes(peer).length > 1 || cluster.wasDuplicated(peer)) while (cluster.isUp(peer)) cluster.crash(peer);
      if (peer === this.#dead) {
        cluster.crash(peer);
        continue;
      }
      // A member removed stays stopped (with changes: test/sim/changer.ts).
      if (changing && cluster.removed(peer)) continue;
      cluster.restart(peer);
      cluster.wake(peer);
      cluster.resume(peer);
    }
    return this.#dead;
  }

  /** Short, longer than evict_ms, or ending near a lease or eviction deadline (in that host's clock). */
  #duration(shortMaxMs: number, peer: number): number {
    const { rng, scenario: s } = this.#o;
    const rate = s.clockRates[peer] ?? 1;
    if (rng.chance(s.longFaultChance)) {
      const evictGlobalMs = s.evictMs / Math.min(...s.clockRates);
      return rng.int(Math.ceil(evictGlobalMs), Math.ceil(3 * evictGlobalMs));
    }
    if (rng.chance(0.3)) {
      const deadline = rng.pick([s.leaseMs, s.evictMs, s.leaseMs * 1.5]) / rate;
      return Math.max(1, Math.round(deadline + rng.int(-s.heartbeatMs, s.heartbeatMs)));
    }
    return rng.int(1, shortMaxMs);
  }

  #crash(peer: number): void {
    const { cluster, rng, schedule, time, scenario: s, transcript } = this.#o;
    if (!cluster.isUp(peer)) return;
    cluster.crash(peer);
    const host = cluster.hostOf(peer);
    // Between incarnations only: a step while another process of that id runs on the host
    // (a duplicate) could fall inside a suspend and hide it (README: assumptions).
    if (rng.chance(s.wallStepBackChance) && !cluster.isUp(peer)) {
      const stepMs = rng.int(1, 3 * s.evictMs);
      host.clock.stepWall(-stepMs);
      transcript.add(time.nowMs, peer, `WALL CLOCK stepped back ${stepMs} ms`);
    }
    // A lost data dir is survivable while every other peer runs, synced: the restarted one
    // learns their clocks before it issues anything. A cluster that loses every clock at
    // once starts over from the wall clock (README, "What is not promised").
    // Nor in seeds whose disks fail: a peer whose clock file could not be written restarts
    // below the clock it used, so it cannot carry the clock for a peer that lost its own.
    // And between incarnations only: the process of that id still running (a duplicate's
    // twin) would keep its clock, high above the empty disk, only until it crashes too
    // (seed 268294: both peers of a two-peer cluster restarted from empty disks).
    // And the peer stays down until the bounds its data dir held have passed (README: a peer
    // whose data dir is lost waits 2 x evict_ms before it starts): a promise or an echo of
    // the crashed process may bind until then, and nothing else remembers it.
    const disksFail = s.diskFaultWeight > 0 || s.failingDiskChance > 0;
    let downMinMs = 1;
    if (rng.chance(s.lostDiskChance) && !cluster.isUp(peer) && cluster.othersSynced(peer) && !disksFail) {
      downMinMs = Math.max(1, Math.ceil((host.disk.boundsUntilWallMs() - host.clock.wallMs(time.nowMs)) / host.clock.rate) + 1);
      host.disk.lose();
      transcript.add(time.nowMs, peer, `DATA DIR lost (down ${downMinMs} ms at least)`);
    }
    const failing = rng.chance(s.failingDiskChance);
    schedule(time.nowMs + Math.max(downMinMs, rng.int(1, s.downMaxMs)), () => {
      if (!this.#active && peer === this.#dead) return;
      if (failing && this.#active) this.#diskFault(peer);
      cluster.restart(peer);
    });
  }

  #pause(peer: number): void {
    const { cluster, schedule, time } = this.#o;
    if (!cluster.isUp(peer) || cluster.isFrozen(peer)) return;
    cluster.pause(peer);
    schedule(time.nowMs + this.#duration(this.#o.scenario.pauseMaxMs, peer), () => cluster.resume(peer));
  }

  /** A host sleeps (a laptop lid, a VM frozen by its hypervisor): at least 20 ms, so it shows. */
  #suspend(peer: number): void {
    const { cluster, schedule, time } = this.#o;
    if (!cluster.isUp(peer) || cluster.isFrozen(peer)) return;
    cluster.suspend(peer);
    schedule(time.nowMs + Math.max(20, this.#duration(this.#o.scenario.pauseMaxMs, peer)), () => cluster.wake(peer));
  }

  /**
   * A second process with the id of a live one; later one of the two dies. One peer id at a
   * time: duplicating every id of a cluster at once starts a second copy of the cluster,
   * which nothing can tell from the first (README, "What is not promised").
   */
  #duplicate(peer: number): void {
    const { cluster, schedule, time, rng, scenario: s } = this.#o;
    if (cluster.processes(peer).length !== 1) return;
    // One duplicated id at a time, also for the lease_ms a dead twin's echoes still vouch.
    if (cluster.otherDuplicated(peer, time.nowMs - 2 * s.evictMs / Math.min(...s.clockRates))) return;
    cluster.restart(peer, { duplicate: true });
    schedule(time.nowMs + rng.int(1, 3 * s.evictMs), () => {
      if (cluster.processes(peer).length > 1) cluster.crash(peer, rng.chance(0.5) ? 'oldest' : 'newest');
    });
  }

  /** The clock file cannot be written for a while (disk full, read-only remount). */
  #diskFault(peer: number): void {
    const { cluster, schedule, time, transcript } = this.#o;
    const disk = cluster.hostOf(peer).disk;
    if (disk.failing) return;
    disk.failing = true;
    const until = time.nowMs + this.#duration(this.#o.scenario.cutMaxMs, peer);
    transcript.add(time.nowMs, peer, `DISK cannot be written until ${until}ms`);
    schedule(until, () => {
      disk.failing = false;
    });
  }

  /**
   * A zombie (a host cut off, its peers' rack losing power meanwhile): `peer` is cut off from
   * every other peer until after the majority has evicted it; then every other peer crashes
   * at once and restarts, forgetting the eviction, before the cut heals. The cut-off peer
   * comes back with its old incarnation to peers that never met it: nothing it kept from
   * before its eviction (a request issued or kept waiting without a lease) may be granted
   * below what its evictors granted meanwhile (mutants issue-without-lease and
   * keep-waiters-on-lease-loss; simulator seeds 216761 and 276422 of an earlier simulator).
   */
  #zombie(peer: number, rng: Prng): void {
    const { cluster, wire, schedule, time, scenario: s, transcript } = this.#o;
    if (!this.#active || s.peers < 3 || !cluster.isUp(peer) || time.nowMs < this.#twinUntilMs) return;
    const evictGlobalMs = s.evictMs / Math.min(...s.clockRates);
    const crashAt = time.nowMs + Math.ceil(evictGlobalMs * (1.2 + rng.float()) + 4 * s.heartbeatMs);
    const restartAt = crashAt + rng.int(1, s.downMaxMs);
    const healAt = restartAt + rng.int(1, Math.ceil(s.leaseMs));
    this.#episodeUntilMs = Math.max(this.#episodeUntilMs, healAt);
    for (let q = 0; q < s.peers; q++) {
      if (q === peer) continue;
      wire.cut(peer, q, healAt);
      wire.cut(q, peer, healAt);
    }
    transcript.add(time.nowMs, peer, `ZOMBIE: cut off until ${healAt}ms; every other peer crashes at ${crashAt}ms, restarts at ${restartAt}ms`);
    schedule(crashAt, () => {
      if (!this.#active) return;
      const crashed: number[] = [];
      for (let q = 0; q < s.peers; q++) {
        if (q === peer) continue;
        while (cluster.isUp(q)) cluster.crash(q);
        crashed.push(q);
      }
      schedule(restartAt, () => {
        for (const q of crashed) cluster.restart(q);
      });
    });
  }

  /**
   * Late confirmations: `suspect` is cut off from a suspecter S for long, and for about
   * evict_ms from a majority's worth of confirmers C, which then confirm S's suspicion; the
   * connections C opens to S stall from just before they confirm until after they hear the
   * suspect again and lend it a lease (S's own connections to C carry on, so S and C keep
   * hearing each other), so the confirmations arrive late. A confirmation counts from when its suspicion was sent, never from its
   * arrival: else S evicts a suspect whose lease holds (mutant confirm-from-arrival;
   * simulator seed 248088 of an earlier simulator).
   */
  #lateConfirmations(suspect: number, rng: Prng): void {
    const { wire, net, time, scenario: s, transcript } = this.#o;
    const majority = Math.floor(s.peers / 2) + 1;
    if (!this.#active || s.peers < 3 || time.nowMs < this.#twinUntilMs) return;
    // Nor beside a random duplicate: its stalls would keep the twins apart as above.
    for (let q = 0; q < s.peers; q++) if (this.#o.cluster.processes(q).length > 1) return;
    const others = rng.shuffle(Array.from({ length: s.peers }, (_, i) => i).filter((p) => p !== suspect));
    const [suspecter, ...rest] = others;
    if (suspecter === undefined) return;
    const confirmers = rest.slice(0, majority - 1);
    const evictGlobalMs = s.evictMs / Math.min(...s.clockRates);
    const t0 = time.nowMs;
    const healConfirmersAt = t0 + Math.ceil(evictGlobalMs * (1.05 + 0.3 * rng.float()) + 2 * s.heartbeatMs);
    const holdFrom = t0 + Math.floor(evictGlobalMs * 0.8);
    const holdUntil = healConfirmersAt + Math.ceil(evictGlobalMs * (1.3 + 0.5 * rng.float()) + s.leaseMs * rng.float());
    const suspecterCutUntil = holdUntil + Math.ceil(0.5 * evictGlobalMs);
    this.#episodeUntilMs = Math.max(this.#episodeUntilMs, suspecterCutUntil);
    wire.cut(suspect, suspecter, suspecterCutUntil);
    wire.cut(suspecter, suspect, suspecterCutUntil);
    for (const c of confirmers) {
      wire.cut(suspect, c, healConfirmersAt);
      wire.cut(c, suspect, healConfirmersAt);
    }
    this.#o.schedule(holdFrom, () => {
      if (this.#active) for (const c of confirmers) net.stall(c, suspecter, holdUntil);
    });
    transcript.add(t0, suspect, `LATE CONFIRMATIONS: cut from p${suspecter} until ${suspecterCutUntil}ms and from ${confirmers.map((c) => `p${c}`).join(',')} until ${healConfirmersAt}ms; their connections to p${suspecter} stall ${holdFrom}..${holdUntil}ms`);
  }

  /**
   * A twin met first by a restarted peer: peer B crashes and stays down until the others
   * have evicted it (their redial backoff has grown meanwhile); then a second process starts
   * with the id of `twin`, a live peer, and B restarts right after: B's new incarnation dials the twin's address, which leads to the
   * newer process, and meets it before the old one redials. The new twin must not ack B's
   * requests before every peer that knew the old twin let it join: else B grants a lock the
   * old twin still validly holds (mutant ack-while-unsynced). A client of the old twin takes
   * one lock, bound to its connection, and keeps it through the episode, so that the
   * restarted peer's clients ask for a lock the old twin holds. Later one of the twins dies.
   */
  #twinMetFirst(twin: number, rng: Prng, isolated = false): void {
    const { cluster, schedule, time, scenario: s, transcript } = this.#o;
    if (!this.#active || s.peers < 3 || cluster.processes(twin).length !== 1 || time.nowMs < this.#twinUntilMs) return;
    // A twin episode plays alone: another episode's cuts or stalls, a cut still healing or a
    // second twin would make two islands, or two duplicated ids, neither of which is promised.
    if (time.nowMs < this.#episodeUntilMs || this.#o.wire.anyCut(time.nowMs) || this.#o.net.anyStall(time.nowMs)) return;
    if (cluster.otherDuplicated(twin, time.nowMs - 2 * s.evictMs / Math.min(...s.clockRates))) return;
    const restarter = (twin + rng.int(1, s.peers - 1)) % s.peers;
    if (!cluster.isUp(restarter)) return;
    const evictGlobalMs = s.evictMs / Math.min(...s.clockRates);
    const twinAt = time.nowMs + rng.int(Math.ceil(1.3 * evictGlobalMs + 4 * s.heartbeatMs), Math.ceil(2 * evictGlobalMs + 4 * s.heartbeatMs));
    const restartAt = twinAt + rng.int(1, s.connectMaxMs + 5);
    const endAt = restartAt + rng.int(Math.ceil(evictGlobalMs), Math.ceil(2 * evictGlobalMs));
    this.#episodeUntilMs = Math.max(this.#episodeUntilMs, endAt);
    this.#twinUntilMs = endAt;
    transcript.add(time.nowMs, twin, `TWIN MET FIRST${isolated ? ' (isolated)' : ''}: p${restarter} crashes, a twin of p${twin} starts at ${twinAt}ms, p${restarter} restarts at ${restartAt}ms, one twin dies at ${endAt}ms`);
    cluster.crash(restarter);
    // Once the crashed peer is evicted and just before the twin starts, so that it is held.
    schedule(twinAt - Math.max(10, 2 * s.heartbeatMs), () => {
      const holder = cluster.processes(twin)[0];
      if (!this.#active || holder === undefined) return;
      const lock = rng.pick(s.locks);
      this.#twinLock = lock;
      const req = this.#o.clients.acquire(holder, lock, {
        mode: 'exclusive', limit: 1, permits: 1, owner: 'twin-episode', meta: null, timeoutMs: limits.timeoutMsMax, ttlMs: 0, hold: 'connection', expectedMs: null,
      }, false, true);
      transcript.add(time.nowMs, twin, `TWIN MET FIRST: ref ${req.ref} asks p${twin} for ${lock}, bound to its connection, until ${endAt - 1}ms`);
      schedule(endAt - 1, () => {
        if (req.state === 'held') this.#o.clients.release(req);
        else if (req.state === 'waiting') this.#o.clients.leave(req);
      });
    });
    schedule(twinAt, () => {
      if (!this.#active) return;
      if (cluster.processes(twin).length === 1) cluster.restart(twin, { duplicate: true });
      const [old, young] = cluster.processes(twin);
      // The new twin reaches no peer but the restarted one for a while, shorter than any
      // peer's evict_ms: so it confirms no one silent meanwhile (both twins reach the same
      // peers in the end, as README's promise assumes; two processes with one id each cut off
      // with a different part of the cluster make two islands of a majority of ids each,
      // which no rule of majorities tells from a healthy cluster). The restarted peer asks
      // for the lock the old twin holds within that while; the old twin, refused by it as
      // older than the new one, fences itself, but its holds last as long as its lease.
      const youngUntil = twinAt + Math.floor(0.6 * s.evictMs / Math.max(...s.clockRates));
      const askAt = restartAt + rng.int(Math.ceil(2 * s.heartbeatMs), Math.max(Math.ceil(2 * s.heartbeatMs) + 1, youngUntil - restartAt - Math.ceil(s.heartbeatMs)));
      if (isolated && old !== undefined && young !== undefined) {
        for (let q = 0; q < s.peers; q++) if (q !== twin && q !== restarter) this.#o.net.stallProcess(young.proc, q, Math.min(endAt, youngUntil));
      }
      schedule(restartAt, () => cluster.restart(restarter));
      if (isolated) {
        schedule(askAt, () => {
          const asker = cluster.processes(restarter)[0];
          if (!this.#active || asker === undefined || this.#twinLock === null) return;
          const req = this.#o.clients.acquire(asker, this.#twinLock, {
            mode: 'exclusive', limit: 1, permits: 1, owner: 'twin-episode', meta: null, timeoutMs: Math.max(1, endAt - time.nowMs), ttlMs: s.ttlMs, hold: 'ttl', expectedMs: null,
          }, true);
          transcript.add(time.nowMs, restarter, `TWIN MET FIRST: ref ${req.ref} asks p${restarter} for ${this.#twinLock}`);
        });
      }
      schedule(endAt, () => {
        if (cluster.processes(twin).length > 1) cluster.crash(twin, rng.chance(0.5) ? 'oldest' : 'newest');
      });
    });
  }

  #cut(a: number): void {
    const { scenario, rng, wire, time } = this.#o;
    if (scenario.peers < 2) return;
    const b = (a + rng.int(1, scenario.peers - 1)) % scenario.peers;
    const until = time.nowMs + this.#duration(scenario.cutMaxMs, a);
    wire.cut(a, b, until);
    wire.cut(b, a, until);
    this.#o.transcript.add(time.nowMs, null, `CUT p${a}<->p${b} until ${until}ms`);
  }

  /** Symmetric (two groups), asymmetric (some directions), or a bridge. */
  #partition(): void {
    const { scenario: s, rng, wire, time } = this.#o;
    if (s.peers < 2) return;
    const until = time.nowMs + this.#duration(s.cutMaxMs, 0);
    const side = Array.from({ length: s.peers }, () => rng.chance(0.5));
    const kind = rng.int(0, 2);
    const bridge = kind === 2 ? rng.int(0, s.peers - 1) : -1;
    const oneWay = kind === 1;
    const cuts: string[] = [];
    for (let a = 0; a < s.peers; a++) {
      for (let b = 0; b < s.peers; b++) {
        if (a === b || side[a] === side[b] || a === bridge || b === bridge) continue;
        if (oneWay && (!side[a] || !rng.chance(0.7))) continue; // Only some links, one way.
        wire.cut(a, b, until);
        cuts.push(`p${a}->p${b}`);
      }
    }
    this.#o.transcript.add(time.nowMs, null, `PARTITION ${['symmetric', 'one-way', `bridge p${bridge}`][kind] ?? ''} until ${until}ms: ${cuts.join(' ')}`);
  }

  #next(): void {
    const { scenario: s, rng, schedule, time } = this.#o;
    const total = this.#weights().reduce((a, b) => a + b, 0);
    if (!Number.isFinite(s.faultEveryMs) || total === 0) return;
    // Fault rates are per evict period at least, so long faults do not pile up endlessly.
    const meanMs = Math.max(s.faultEveryMs, s.evictMs / 8);
    const gap = Math.max(1, Math.round(-Math.log(1 - rng.float()) * meanMs));
    schedule(time.nowMs + gap, () => this.#onFault());
  }
}

/**
 * The cluster's config as one host's file may differ from it: `order`, the host swapped with
 * one listed before it (both indexes change; none for the first peer); `left_out`, another peer missing
 * (not the only other one); `added`,
 * a peer that never runs; `timings`, lease and eviction three times as long. Null when the
 * cluster is too small for that kind.
 */
function misconfigOf(config: ClusterConfig, peer: number, kind: MisconfigKind, rng: Prng): ClusterConfig | null {
  const peers = [...config.peers];
  const others = peers.map((_, i) => i).filter((i) => i !== peer);
  if (kind === 'timings') {
    const leaseMs = 3 * config.leaseMs;
    return { ...config, leaseMs, evictMs: Math.ceil(leaseMs * 1.5 + config.heartbeatMs) + rng.int(0, config.heartbeatMs) };
  }
  if (kind === 'added') return { ...config, peers: [...peers, { id: `p${peers.length}`, ws: `ws://p${peers.length}:1`, http: '127.0.0.1:0' }] };
  if (others.length === 0) return null;
  if (kind === 'left_out') {
    // Not down to itself alone: a file that lists only its own host is a cluster of one, which
    // needs nobody's answer, so no link can refuse it (README, "What is not promised").
    if (others.length < 2) return null;
    const gone = rng.pick(others);
    return { ...config, peers: peers.filter((_, i) => i !== gone) };
  }
  // Ahead of a peer that ranks before it everywhere else: on a tie of timestamps, each of the
  // two then ranks its own request first (the other way round, each would wait for the other).
  const ahead = others.filter((i) => i < peer);
  const other = ahead.length > 0 ? rng.pick(ahead) : null;
  const self = peers[peer];
  const swapped = other === null ? undefined : peers[other];
  if (other === null || self === undefined || swapped === undefined) return null;
  peers[peer] = swapped;
  peers[other] = self;
  return { ...config, peers };
}
