/**
 * Everything a seed decides before the run starts: cluster size, network timing, fault
 * rates and the workload's shape. Rates are drawn per seed (TigerBeetle's VOPR habit), so
 * across seeds the simulator visits calm clusters, stormy ones, tie-heavy ones and
 * restart-heavy ones without any seed needing to be hand-written.
 */
import { clockRateMargin } from '../../src/config.js';
import type { Prng } from '../support/prng.js';
import type { BoundEpisodeKind } from './bound-episodes.js';
import type { RestartEpisodeKind } from './restart-episodes.js';
import { drawRestartEpisode } from './restart-episodes.js';
import type { TwinEpisodeKind } from './twin-episodes.js';
import { drawTwinEpisode, twinEpisodeSpanMs } from './twin-episodes.js';

/** How peers pick their first clock: wall-clock milliseconds, or tiny floors that tie. */
export type ClockStyle = 'wall' | 'tiny';

/** The parameters of one seed's run. */
export interface Scenario {
  readonly peers: number;
  readonly locks: readonly string[];
  /** Per-message delay bounds on a link, in virtual ms. */
  readonly delayMinMs: number;
  readonly delayMaxMs: number;
  /** Chance that one message takes up to ten times the maximum delay. */
  readonly delaySpikeChance: number;
  /** Heartbeat period of every peer, in its own local ms (docs/design.md section 4). */
  readonly heartbeatMs: number;
  /** Lease and eviction timings (docs/design.md section 5), respecting the config's relation. */
  readonly leaseMs: number;
  readonly evictMs: number;
  /**
   * Each peer's monotonic clock rate (local ms per virtual ms) and offset. Any two rates
   * differ by at most `clockRateMargin`, the bound the config assumes.
   */
  readonly clockRates: readonly number[];
  readonly clockOffsetsMs: readonly number[];
  /** Handshake latency after a (re)start, per pair. */
  readonly connectMaxMs: number;
  /** Length of the safety phase (faults on), then the liveness phase starts. */
  readonly safetyMs: number;
  /** Mean ms between fault draws for the whole cluster; Infinity for a calm seed. */
  readonly faultEveryMs: number;
  readonly crashWeight: number;
  readonly pauseWeight: number;
  readonly cutWeight: number;
  /** Partitions: two groups (symmetric), some links cut one way (asymmetric), a bridge. */
  readonly partitionWeight: number;
  /** Host suspends: the monotonic clock stops, the wall clock runs on (issue 12, defect 4). */
  readonly suspendWeight: number;
  /** A second process started with a live peer's id (issue 12, defect 1). */
  readonly duplicateWeight: number;
  /** A window in which the clock high-water mark cannot be written (issue 12, defect 3). */
  readonly diskFaultWeight: number;
  /**
   * Episodes: faults of several steps, one of each kind at most per seed, placed in the
   * safety phase so that they play out before it ends (fault-plan.ts). A zombie: one peer
   * cut off past its eviction, then every other peer crashes at once and restarts,
   * forgetting the eviction, before the cut heals. Late confirmations: a peer cut off from
   * a suspecter and, for evict_ms, from the peers that then confirm its silence, whose
   * confirmations reach the suspecter only after the confirmers hear it again. Drawn last,
   * so the seeds without them draw everything else as before they existed.
   */
  readonly zombieEpisode: boolean;
  readonly lateConfirmEpisode: boolean;
  /**
   * A twin met first by a restarted peer: one peer restarts while a second process starts
   * with another live peer's id, so the restarted one meets the newer twin before the old.
   */
  readonly twinEpisode: boolean;
  /**
   * The same, with the routes of the two processes kept apart: the new twin reaches only the
   * restarted peer, the old twin every peer but it, so the restarted peer meets one twin and
   * the others the other, and the restarted peer asks for the lock the old twin holds.
   * Drawn after everything else (its seeds alone change).
   */
  readonly isolatedTwinEpisode: boolean;
  /**
   * Each link's resend buffer bound in bytes, or null for the production bound (64 MiB, never
   * reached in a run): small in some seeds, so that a cut or a stall fills it, sends wait
   * for acks (backpressure) and a session whose buffer overflows rejoins. Drawn last.
   */
  readonly linkBufferBytes: number | null;
  /**
   * A host restarted with a config of its own (docs/design.md section 4, "One agreed cluster"):
   * the peers in another order, one of them left out, one added that never runs, or other
   * timings; later cut off from the others for longer than their eviction, then restarted
   * with the cluster's config. Every link must refuse it. Drawn after everything else (its
   * seeds alone change).
   */
  readonly misconfigEpisode: MisconfigKind | null;
  /**
   * Three peers: a successor waits at one peer, which echoes it, behind a live predecessor
   * that has fallen silent there, while the restarted peer that met the successor first
   * suspects it, and the route between those two is held up so that the suspicion arrives
   * before the predecessor's eviction (fault-plan.ts, `#waitingSuccessor`; issue 39, scripted
   * as `waitingSuccessorSuspected`). Drawn after everything else (its seeds alone change).
   */
  readonly waitingSuccessorEpisode: boolean;
  /**
   * The links' frame limit in bytes, or null for production's (1 MiB, which the simulator's
   * packets never reach): 256 in some seeds, room for two or three of the simulator's
   * requests, so that state transfers and merged packets leave in pieces (docs/design.md
   * section 4, "Pieces"). Drawn after everything else (its seeds alone change).
   */
  readonly frameBytes: number | null;
  /**
   * A host whose disk writes slowly crashes while the bound of its promises or echoes runs
   * short (bound-episodes.ts): a confirmer in an odd cluster of five or more, an echoer beside
   * a twin in a cluster of two; or a fast confirmer's confirmation reaches a slow suspecter
   * late, in an odd cluster. `seed` seeds the episode's own generator. Drawn after
   * everything else, from a generator of its own (its seeds alone change).
   */
  readonly boundEpisode: { readonly kind: BoundEpisodeKind; readonly seed: number } | null;
  /**
   * A restart the rules of docs/design.md section 5 must survive (restart-episodes.ts): one
   * whose wall clock stepped back below an eviction a frozen peer still owes (two peers), or
   * a replaced successor suspected (three peers). Drawn last, from a generator of its own, in
   * seeds without a bound episode.
   */
  readonly restartEpisode: { readonly kind: RestartEpisodeKind; readonly seed: number } | null;
  /**
   * Twins that break a successor's ack gate or a zombie's staying out without their rules: a
   * restarted peer that meets a twin out of the old process's reach, or a frozen process that
   * resumes beside its twin (twin-episodes.ts). Drawn from a generator of its own, right after
   * the bound episode's (its seeds alone change).
   */
  readonly twinPairEpisode: { readonly kind: TwinEpisodeKind; readonly seed: number } | null;
  /** At a restart: chances that the data dir is gone, that it cannot be written, that the wall clock stepped back. */
  readonly lostDiskChance: number;
  readonly failingDiskChance: number;
  readonly wallStepBackChance: number;
  /** Chance that a request asks for a connection-bound hold. */
  readonly connectionHoldChance: number;
  /** Chance that a pause, a cut or a partition outlasts evict_ms (eviction territory). */
  readonly longFaultChance: number;
  /** Chance that the liveness phase keeps one peer dead: the others must evict it. */
  readonly deadPeerChance: number;
  readonly downMaxMs: number;
  readonly pauseMaxMs: number;
  readonly cutMaxMs: number;
  /** Open requests and holds one peer's clients may have at once (a waiter limit). */
  readonly openMaxPerPeer: number;
  /** Mean ms between acquires of one peer's clients. */
  readonly acquireEveryMs: number;
  /** Mean ms between bursts: several peers acquiring one lock in the same ms. */
  readonly burstEveryMs: number;
  /** Relative weights of exclusive, shared and semaphore requests. */
  readonly modeWeights: readonly [number, number, number];
  readonly noWaitChance: number;
  readonly holdMaxMs: number;
  /** A hold longer than its TTL is ended by the sim's runtime with reason `expired`. */
  readonly ttlMs: number;
  readonly timeoutMaxMs: number;
  /** Mean ms between redraws of one semaphore lock's capacity (the canal-lock case). */
  readonly capacityEveryMs: number;
  readonly capacityMax: number;
  readonly clockStyle: ClockStyle;
  /** Each peer's wall clock offset from virtual time, in ms. */
  readonly skewMs: readonly number[];
  /**
   * With `--changes` (test/sim/changer.ts): hosts 0..founders-1 found the cluster, the others
   * are spares a change may add. Unset: every host founds it, and no change is drawn.
   */
  readonly founders?: number;
}

/** Options a CLI user may force; everything else comes from the seed. */
export interface ScenarioOverrides {
  readonly peers?: number;
  /**
   * Heartbeat, lease and eviction timings to use instead of the drawn ones (`--timing`, e.g.
   * the config's defaults). The draws are made all the same, so everything else in the seed
   * is what it would be; what derives from the timings (the safety phase) follows them.
   */
  readonly timing?: Pick<Scenario, 'heartbeatMs' | 'leaseMs' | 'evictMs'>;
}

/** Draws one seed's scenario; the same generator state always yields the same scenario. */
/** How the misconfigured host's file differs (Scenario.misconfigEpisode). */
export type MisconfigKind = 'order' | 'left_out' | 'added' | 'timings';

export function drawScenario(rng: Prng, overrides: ScenarioOverrides = {}): Scenario {
  const drawn = drawBase(rng, overrides);
  // Episodes are drawn last, so a seed without them is the scenario it was before they
  // existed; a seed with one gets a safety phase long enough for it to play out.
  const zombieEpisode = rng.chance(0.25);
  const lateConfirmEpisode = rng.chance(0.25);
  const twinEpisode = rng.chance(0.25);
  const linkBufferBytes = rng.chance(0.25) ? rng.pick([8192, 16384, 32768]) : null;
  const isolatedTwinEpisode = drawn.peers >= 3 && rng.chance(0.2);
  const evictGlobalMs = drawn.evictMs / Math.min(...drawn.clockRates);
  const misconfigEpisode = rng.chance(0.25) ? rng.pick<MisconfigKind>(['order', 'order', 'left_out', 'added', 'timings', 'timings']) : null;
  const frameBytes = rng.chance(0.25) ? 256 : null;
  const waitingSuccessorEpisode = drawn.peers === 3 && rng.chance(0.3);
  const episodes = zombieEpisode || lateConfirmEpisode || twinEpisode || isolatedTwinEpisode || misconfigEpisode !== null || waitingSuccessorEpisode;
  const boundEpisode = drawBoundEpisode(rng.fork(), drawn.peers);
  const twinPairEpisode = drawTwinEpisode(rng.fork(), drawn.peers);
  const restartEpisode = boundEpisode === null ? drawRestartEpisode(rng.fork(), drawn.peers) : null;
  let safetyMs = episodes ? Math.max(drawn.safetyMs, Math.round(6 * evictGlobalMs + 2 * drawn.leaseMs)) : drawn.safetyMs;
  if (boundEpisode !== null || restartEpisode !== null) safetyMs = Math.max(safetyMs, Math.round(11 * evictGlobalMs + 2 * drawn.leaseMs));
  if (twinPairEpisode !== null) safetyMs = Math.max(safetyMs, Math.round(twinEpisodeSpanMs(drawn) + 4 * evictGlobalMs + 2 * drawn.leaseMs));
  // Not with 256-byte frames: a partition stretched with evict_ms leaves a backlog of thousands
  // of frames, which the link network's break chance per message never lets through in one
  // resend (finding F58).
  const wideDrawn = overrides.timing === undefined ? drawWideEviction(rng.fork(), boundEpisode !== null) : 1;
  const wide = frameBytes === null ? wideDrawn : 1;
  const stretched = wide === 1 ? {} : { evictMs: Math.ceil(drawn.evictMs * wide), safetyMs: Math.round(safetyMs * wide) };
  return { ...drawn, safetyMs, zombieEpisode, lateConfirmEpisode, twinEpisode, isolatedTwinEpisode, linkBufferBytes, misconfigEpisode, frameBytes, waitingSuccessorEpisode, boundEpisode, twinPairEpisode, restartEpisode, ...stretched };
}

/**
 * How much longer than drawn `evict_ms` is, drawn last from a generator of its own (finding
 * F58): drawTiming puts it within two heartbeats of its floor (1.5 x lease_ms + heartbeat_ms),
 * where a bound that is written too short for a longer evict_ms still covers; a config may set
 * it far above. 1.5 to 3 times longer, the safety phase with it (the episodes read it when
 * they play), in half of the seeds with a bound episode (the bounds on disk are what a longer
 * evict_ms stretches) and a sixth of the others (not with `--timing`); otherwise 1, and the
 * seed is what it was.
 */
function drawWideEviction(rng: Prng, bounds: boolean): number {
  return rng.chance(bounds ? 1 / 2 : 1 / 6) ? 1.5 + 1.5 * rng.float() : 1;
}

/**
 * Scenario.boundEpisode: a crash on a short bound in a third of the clusters it fits (two
 * peers; five, seven or nine), else a late confirmation from a fast confirmer in a quarter of
 * the odd clusters (drawn after the first, so its seeds alone change), else a sleep hidden by a
 * wall clock stepped back in a fifth of the clusters of three or more (drawn last).
 */
function drawBoundEpisode(rng: Prng, peers: number): Scenario['boundEpisode'] {
  const kind: BoundEpisodeKind | null = peers === 2 ? 'echoer' : peers >= 5 && peers % 2 === 1 ? 'confirmer' : null;
  if (kind !== null && rng.chance(1 / 3)) return { kind, seed: rng.u32() };
  if (peers % 2 === 1 && rng.chance(0.25)) return { kind: 'fastConfirmer', seed: rng.u32() };
  // Drawn last, so that the seeds of the others stay as they were.
  return peers >= 3 && rng.chance(0.2) ? { kind: 'hiddenSuspend', seed: rng.u32() } : null;
}

function drawBase(rng: Prng, overrides: ScenarioOverrides): Omit<Scenario, 'zombieEpisode' | 'lateConfirmEpisode' | 'twinEpisode' | 'isolatedTwinEpisode' | 'linkBufferBytes' | 'misconfigEpisode' | 'frameBytes' | 'waitingSuccessorEpisode' | 'boundEpisode' | 'twinPairEpisode' | 'restartEpisode'> {
  const peers = overrides.peers ?? drawPeers(rng);
  const delayMinMs = rng.int(0, 3);
  const calm = rng.chance(0.1);
  const pauseMaxMs = rng.int(5, 120);
  const timing = { ...drawTiming(rng, peers), ...overrides.timing };
  const safetyMs = Math.max(rng.int(300, 1200), Math.round(rng.int(3, 6) * timing.evictMs));
  // The workload's rate scales down with a longer safety phase: about as many requests per seed.
  const slow = Math.max(1, safetyMs / 1500);
  return {
    ...timing,
    peers,
    locks: Array.from({ length: rng.int(2, 6) }, (_, i) => `L${i}`),
    delayMinMs,
    delayMaxMs: delayMinMs + rng.pick([1, 4, 10, 25]),
    delaySpikeChance: rng.pick([0, 0, 0.01, 0.05]),
    connectMaxMs: rng.int(1, 30),
    safetyMs,
    faultEveryMs: calm ? Number.POSITIVE_INFINITY : rng.pick([20, 50, 100, 250]),
    crashWeight: rng.pick([0, 1, 2, 4]),
    pauseWeight: rng.pick([0, 1, 2]),
    cutWeight: rng.pick([0, 1, 2]),
    partitionWeight: rng.pick([0, 1, 2, 4]),
    longFaultChance: rng.pick([0, 0.1, 0.3, 0.6]),
    suspendWeight: rng.pick([0, 1, 2]),
    duplicateWeight: rng.pick([0, 0, 1]),
    diskFaultWeight: rng.pick([0, 0, 1]),
    lostDiskChance: rng.pick([0, 0.2, 0.5]),
    failingDiskChance: rng.pick([0, 0, 0.2]),
    wallStepBackChance: rng.pick([0, 0.2, 0.5]),
    connectionHoldChance: rng.pick([0, 0.2, 0.5]),
    deadPeerChance: rng.pick([0, 0.5]),
    downMaxMs: rng.int(2, 150),
    pauseMaxMs,
    cutMaxMs: rng.int(5, 100),
    openMaxPerPeer: rng.pick([1, 2, 4, 8]),
    acquireEveryMs: rng.pick([3, 10, 20, 60]) * Math.max(1, peers / 4) * slow,
    burstEveryMs: rng.pick([15, 40, 100, Number.POSITIVE_INFINITY]) * slow,
    modeWeights: rng.pick<[number, number, number]>([
      [1, 0, 0],
      [2, 1, 1],
      [1, 2, 0],
      [1, 0, 2],
      [0, 0, 1],
    ]),
    noWaitChance: rng.pick([0, 0.1, 0.3]),
    holdMaxMs: rng.pick([2, 10, 40, 100]),
    ttlMs: rng.pick([5, 30, 1000]),
    timeoutMaxMs: rng.pick([10, 50, 200, 1000]),
    capacityEveryMs: rng.pick([20, 100, 400]),
    capacityMax: rng.int(1, 5),
    clockStyle: rng.chance(0.5) ? 'tiny' : 'wall',
    skewMs: Array.from({ length: peers }, () => rng.int(-50, 50)),
  };
}

/**
 * heartbeat, lease = 4..8 heartbeats, evict at the config's floor (lease * margin +
 * heartbeat) or a little above, and clock rates spread within the margin (sometimes all
 * equal, sometimes right at the bound).
 */
function drawTiming(rng: Prng, peers: number): Pick<Scenario, 'heartbeatMs' | 'leaseMs' | 'evictMs' | 'clockRates' | 'clockOffsetsMs'> {
  const heartbeatMs = rng.pick([20, 25, 50, 50, 100, 200]);
  const leaseMs = heartbeatMs * rng.int(4, 8);
  const evictMs = Math.ceil(leaseMs * clockRateMargin + heartbeatMs) + rng.pick([0, 0, 1, heartbeatMs]);
  const spread = rng.pick([1, 1.2, clockRateMargin, clockRateMargin]);
  const slowest = 0.8;
  const clockRates = Array.from({ length: peers }, (_, i) => {
    // At the bound, pin one peer at each end so the worst pair really occurs.
    if (spread === clockRateMargin && i < 2) return i === 0 ? slowest : slowest * spread;
    return slowest * (1 + rng.float() * (spread - 1));
  });
  const clockOffsetsMs = Array.from({ length: peers }, () => rng.int(0, 1_000_000));
  return { heartbeatMs, leaseMs, evictMs, clockRates, clockOffsetsMs };
}

function drawPeers(rng: Prng): number {
  // Small clusters are where ties and restarts bite hardest; larger ones still get a share.
  return rng.pick([2, 2, 3, 3, 3, 4, 4, 5, 6, 7, 8, 9]);
}
