/**
 * The safety phase's faults, drawn from the seed at the seed's own rate: crashes with
 * state loss (a restart follows after a random down time), pauses (the peer processes
 * nothing and its timers wait; sometimes longer than evict_ms), cuts between two peers,
 * and partitions: two groups (symmetric), some directions cut (asymmetric), or one peer
 * bridging two sides that do not see each other. Some last longer than evict_ms, so the
 * majority evicts and the cut-off peers self-fence and rejoin.
 */
import type { Cluster, SimTime } from './cluster.js';
import type { Schedule } from './events.js';
import type { Wire } from './network.js';
import type { Prng } from './prng.js';
import type { Scenario } from './scenario.js';
import type { Transcript } from './transcript.js';

/** What a fault plan is built from. */
export interface FaultPlanOptions {
  readonly scenario: Scenario;
  readonly rng: Prng;
  readonly cluster: Cluster;
  readonly wire: Wire;
  readonly schedule: Schedule;
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

  /** Schedules the first fault, if the seed has any. */
  start(): void {
    this.#next();
  }

  /** One random fault, then the next one is scheduled. */
  onFault(): void {
    if (!this.#active) return;
    const { scenario: s, rng, cluster } = this.#o;
    const peer = rng.int(0, s.peers - 1);
    const x = rng.float() * (s.crashWeight + s.pauseWeight + s.cutWeight + s.partitionWeight);
    if (x < s.crashWeight) this.#crash(peer);
    else if (x < s.crashWeight + s.pauseWeight) cluster.pause(peer, this.#duration(s.pauseMaxMs));
    else if (x < s.crashWeight + s.pauseWeight + s.cutWeight) this.#cut(peer);
    else this.#partition();
    this.#next();
  }

  /** A scheduled restart; in the liveness phase every peer but the dead one is already back. */
  onRestart(peer: number): void {
    if (peer !== this.#dead) this.#o.cluster.restart(peer);
  }

  /**
   * The liveness phase: no more faults; cuts heal, every peer is restarted and resumed now,
   * except, in some seeds, one peer that stays dead: the others must evict it and go on.
   * Returns the dead peer, if any.
   */
  heal(): number | null {
    this.#active = false;
    const { cluster, wire, time, rng, scenario: s } = this.#o;
    wire.healAll(time.nowMs);
    // Two peers never evict, so a dead one would block the other forever: by design.
    if (s.peers >= 3 && rng.chance(s.deadPeerChance)) {
      // A peer nobody has met cannot be evicted (by design: see Membership.tick), so the dead
      // one is a running peer whose incarnation some other peer knows.
      const candidate = rng.int(0, s.peers - 1);
      if (cluster.isUp(candidate) && cluster.isKnown(candidate)) this.#dead = candidate;
    }
    for (let peer = 0; peer < cluster.size; peer++) {
      if (peer === this.#dead) {
        cluster.crash(peer);
        continue;
      }
      cluster.restart(peer);
      if (cluster.isPaused(peer)) cluster.resume(peer, cluster.lifeOf(peer));
    }
    return this.#dead;
  }

  /** Short, or (at the seed's rate) longer than evict_ms in the slowest clock. */
  #duration(shortMaxMs: number): number {
    const { rng, scenario: s } = this.#o;
    if (!rng.chance(s.longFaultChance)) return rng.int(1, shortMaxMs);
    const evictGlobalMs = s.evictMs / Math.min(...s.clockRates);
    return rng.int(Math.ceil(evictGlobalMs), Math.ceil(3 * evictGlobalMs));
  }

  #crash(peer: number): void {
    const { cluster, rng, schedule, time, scenario } = this.#o;
    if (!cluster.isUp(peer)) return;
    cluster.crash(peer);
    // At least 1 ms down, so the next incarnation's start time is strictly later.
    schedule(time.nowMs + rng.int(1, scenario.downMaxMs), { k: 'restart', peer });
  }

  #cut(a: number): void {
    const { scenario, rng, wire, time } = this.#o;
    if (scenario.peers < 2) return;
    const b = (a + rng.int(1, scenario.peers - 1)) % scenario.peers;
    const until = time.nowMs + this.#duration(scenario.cutMaxMs);
    wire.cut(a, b, until);
    wire.cut(b, a, until);
    this.#o.transcript.add(time.nowMs, null, `CUT p${a}<->p${b} until ${until}ms`);
  }

  /** Symmetric (two groups), asymmetric (some directions), or a bridge. */
  #partition(): void {
    const { scenario: s, rng, wire, time } = this.#o;
    if (s.peers < 2) return;
    const until = time.nowMs + this.#duration(s.cutMaxMs);
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
    const total = s.crashWeight + s.pauseWeight + s.cutWeight + s.partitionWeight;
    if (!Number.isFinite(s.faultEveryMs) || total === 0) return;
    // Fault rates are per evict period at least, so long faults do not pile up endlessly.
    const meanMs = Math.max(s.faultEveryMs, s.evictMs / 8);
    const gap = Math.max(1, Math.round(-Math.log(1 - rng.float()) * meanMs));
    schedule(time.nowMs + gap, { k: 'fault' });
  }
}
