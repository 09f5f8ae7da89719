/**
 * The simulated clients: random acquires in all three modes across a few lock names,
 * bursts of simultaneous acquires on one lock (timestamp ties), semaphore capacities that
 * change while holds are out (the canal-lock case), no-wait requests, holds released after
 * a random time or expired at their TTL, and waits cancelled after a random timeout.
 */
import type { Mode, RequestSpec } from '../../src/core/types.js';
import type { ClientRequest, Clients } from './clients.js';
import type { Cluster, SimTime } from './cluster.js';
import type { Schedule } from './events.js';
import type { Prng } from './prng.js';
import type { Scenario } from './scenario.js';

const modeList: readonly Mode[] = ['exclusive', 'shared', 'semaphore'];

/** What a workload is built from. */
export interface WorkloadOptions {
  readonly scenario: Scenario;
  readonly rng: Prng;
  readonly cluster: Cluster;
  readonly clients: Clients;
  readonly schedule: Schedule;
  readonly time: SimTime;
}

/** Issues requests during the safety phase and releases holds for the whole run. */
export class Workload {
  readonly #o: WorkloadOptions;
  readonly #capacity = new Map<string, number>();
  #issuing = true;

  constructor(o: WorkloadOptions) {
    this.#o = o;
    o.clients.onGranted = (req) => this.#onGranted(req);
  }

  /** Schedules the first arrival of every peer's clients, bursts and capacity redraws. */
  start(): void {
    const { scenario, schedule } = this.#o;
    for (let peer = 0; peer < scenario.peers; peer++) schedule(this.#gap(scenario.acquireEveryMs), { k: 'arrival', peer });
    if (Number.isFinite(scenario.burstEveryMs)) schedule(this.#gap(scenario.burstEveryMs), { k: 'burst' });
    for (const lock of scenario.locks) {
      this.#capacity.set(lock, this.#o.rng.int(1, scenario.capacityMax));
      schedule(this.#gap(scenario.capacityEveryMs), { k: 'capacity', lock });
    }
  }

  /** The liveness phase: no new requests; holds are still released. */
  stopIssuing(): void {
    this.#issuing = false;
  }

  /** One client of `peer` asks for a random lock, then the next arrival is scheduled. */
  onArrival(peer: number): void {
    if (!this.#issuing) return;
    const lock = this.#o.rng.pick(this.#o.scenario.locks);
    this.#acquire(peer, lock, this.#drawMode());
    this.#o.schedule(this.#o.time.nowMs + this.#gap(this.#o.scenario.acquireEveryMs), { k: 'arrival', peer });
  }

  /** Several peers ask for one lock in the same millisecond: their timestamps tend to tie. */
  onBurst(): void {
    if (!this.#issuing) return;
    const { rng, scenario } = this.#o;
    const lock = rng.pick(scenario.locks);
    const mode = this.#drawMode();
    for (let peer = 0; peer < scenario.peers; peer++) if (rng.chance(0.7)) this.#acquire(peer, lock, mode);
    this.#o.schedule(this.#o.time.nowMs + this.#gap(scenario.burstEveryMs), { k: 'burst' });
  }

  /** The canal-lock case: a semaphore's capacity changes while holds are out. */
  onCapacity(lock: string): void {
    this.#capacity.set(lock, this.#o.rng.int(1, this.#o.scenario.capacityMax));
    this.#o.schedule(this.#o.time.nowMs + this.#gap(this.#o.scenario.capacityEveryMs), { k: 'capacity', lock });
  }

  #acquire(peer: number, lock: string, mode: Mode): void {
    const { cluster, clients, rng, schedule, time, scenario } = this.#o;
    if (!cluster.isUp(peer)) return; // A client cannot reach a peer that is down.
    if (clients.openOf(peer) >= scenario.openMaxPerPeer) return; // The waiter limit: refused.
    const spec = this.#spec(lock, mode);
    const noWait = rng.chance(scenario.noWaitChance);
    const req = clients.create({ peer, life: cluster.lifeOf(peer), lock, spec, noWait, nowMs: time.nowMs });
    cluster.handle({ k: 'acquire', peer, ref: req.ref, lock, spec, noWait });
    if (!noWait) schedule(time.nowMs + rng.int(1, scenario.timeoutMaxMs), { k: 'release', peer, ref: req.ref, end: 'cancelled' });
  }

  #spec(lock: string, mode: Mode): RequestSpec {
    const owner = `c${this.#o.rng.int(0, 99)}`;
    if (mode !== 'semaphore') return { mode, limit: 1, permits: 1, owner, meta: null };
    // A request asking for more permits than its own limit could never be admitted; the
    // HTTP API refuses it as a 400, so the workload never makes one.
    const limit = this.#capacity.get(lock) ?? 1;
    return { mode, limit, permits: Math.min(limit, this.#o.rng.int(1, 2)), owner, meta: null };
  }

  /** Holds last a random time; one past the TTL is ended by the runtime as `expired`. */
  #onGranted(req: ClientRequest): void {
    const { rng, schedule, time, scenario } = this.#o;
    const holdMs = rng.int(0, scenario.holdMaxMs);
    const expired = holdMs > scenario.ttlMs;
    const at = time.nowMs + (expired ? scenario.ttlMs : holdMs);
    schedule(at, { k: 'release', peer: req.peer, ref: req.ref, end: expired ? 'expired' : 'released' });
  }

  #drawMode(): Mode {
    const weights = this.#o.scenario.modeWeights;
    const total = weights[0] + weights[1] + weights[2];
    let x = this.#o.rng.float() * total;
    for (let i = 0; i < 3; i++) {
      x -= weights[i] ?? 0;
      if (x < 0) return modeList[i] ?? 'exclusive';
    }
    return 'exclusive';
  }

  /** A roughly exponential gap with the given mean, at least 1 ms. */
  #gap(meanMs: number): number {
    return Math.max(1, Math.round(-Math.log(1 - this.#o.rng.float()) * meanMs));
  }
}
