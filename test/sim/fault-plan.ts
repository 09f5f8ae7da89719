/**
 * The safety phase's faults, drawn from the seed at the seed's own rate: crashes with
 * state loss (a restart follows after a random down time), pauses (everything aimed at the
 * peer waits) and cuts between two peers (traffic held back until the cut heals).
 */
import type { Cluster, SimTime } from './cluster.js';
import type { Schedule } from './events.js';
import type { SimNetwork } from './network.js';
import type { Prng } from './prng.js';
import type { Scenario } from './scenario.js';

/** What a fault plan is built from. */
export interface FaultPlanOptions {
  readonly scenario: Scenario;
  readonly rng: Prng;
  readonly cluster: Cluster;
  readonly network: SimNetwork;
  readonly schedule: Schedule;
  readonly time: SimTime;
}

/** Draws faults until the liveness phase, then heals everything. */
export class FaultPlan {
  readonly #o: FaultPlanOptions;
  #active = true;

  constructor(o: FaultPlanOptions) {
    this.#o = o;
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
    const x = rng.float() * (s.crashWeight + s.pauseWeight + s.cutWeight);
    if (x < s.crashWeight) this.#crash(peer);
    else if (x < s.crashWeight + s.pauseWeight) cluster.pause(peer, rng.int(1, s.pauseMaxMs));
    else this.#cut(peer);
    this.#next();
  }

  /** A scheduled restart; in the liveness phase every peer is already back. */
  onRestart(peer: number): void {
    this.#o.cluster.restart(peer);
  }

  /** The liveness phase: no more faults; every peer restarted and resumed now. */
  heal(): void {
    this.#active = false;
    const { cluster } = this.#o;
    for (let peer = 0; peer < cluster.size; peer++) {
      cluster.restart(peer);
      if (cluster.isPaused(peer)) cluster.resume(peer, cluster.lifeOf(peer));
    }
  }

  #crash(peer: number): void {
    const { cluster, rng, schedule, time, scenario } = this.#o;
    if (!cluster.isUp(peer)) return;
    cluster.crash(peer);
    // At least 1 ms down, so the next incarnation's start time is strictly later.
    schedule(time.nowMs + rng.int(1, scenario.downMaxMs), { k: 'restart', peer });
  }

  #cut(a: number): void {
    const { scenario, rng, network, time } = this.#o;
    if (scenario.peers < 2) return;
    const b = (a + rng.int(1, scenario.peers - 1)) % scenario.peers;
    network.cut(a, b, time.nowMs + rng.int(1, scenario.cutMaxMs));
  }

  #next(): void {
    const { scenario, rng, schedule, time } = this.#o;
    if (!Number.isFinite(scenario.faultEveryMs) || scenario.crashWeight + scenario.pauseWeight + scenario.cutWeight === 0) return;
    const gap = Math.max(1, Math.round(-Math.log(1 - rng.float()) * scenario.faultEveryMs));
    schedule(time.nowMs + gap, { k: 'fault' });
  }
}
