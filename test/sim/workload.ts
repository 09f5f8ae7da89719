/**
 * The simulated clients' behaviour: random acquires in all three modes across a few lock
 * names, bursts of simultaneous acquires on one lock (timestamp ties), semaphore
 * capacities that change while holds are out (the canal-lock case), no-wait requests,
 * TTL holds (released, refreshed, or left to expire), connection-bound holds (ended by
 * going away), waits the runtime times out and waits the client abandons.
 */
import type { Mode } from '../../src/core/types.js';
import { limits } from '../../src/limits.js';
import type { AcquireOptions, LockAsk } from '../../src/runtime/holds.js';
import type { ClientRequest, Clients } from './clients.js';
import type { Cluster } from './cluster.js';
import type { ScheduleWorld } from './events.js';
import type { SimTime } from './host.js';
import type { Prng } from '../support/prng.js';
import type { Scenario } from './scenario.js';

const modeList: readonly Mode[] = ['exclusive', 'shared', 'semaphore'];

/** What a workload is built from. */
export interface WorkloadOptions {
  readonly scenario: Scenario;
  readonly rng: Prng;
  readonly cluster: Cluster;
  readonly clients: Clients;
  readonly schedule: ScheduleWorld;
  readonly time: SimTime;
  /** Holders that announce new meta once or twice while they hold, with their own generator. */
  readonly proclaim: { readonly chance: number; readonly rng: Prng };
  /**
   * Arrivals that ask for two or three locks at once, all-or-nothing (POST /v1/acquire),
   * chosen with a generator of their own; what they name and in which modes is drawn from it too.
   */
  readonly multi: { readonly chance: number; readonly rng: Prng };
}

/** Issues requests during the safety phase; holders act for the whole run. */
export class Workload {
  readonly #o: WorkloadOptions;
  readonly #capacity = new Map<string, number>();
  #issuing = true;
  /** Off in the liveness phase: waiting requests must then be granted, not abandoned. */
  #abandoning = true;

  constructor(o: WorkloadOptions) {
    this.#o = o;
    o.clients.onGranted = (req) => this.#onGranted(req);
  }

  /** Schedules the first arrival of every peer's clients, bursts and capacity redraws. */
  start(): void {
    const { scenario, schedule } = this.#o;
    for (let peer = 0; peer < scenario.peers; peer++) schedule(this.#gap(scenario.acquireEveryMs), () => this.#onArrival(peer));
    if (Number.isFinite(scenario.burstEveryMs)) schedule(this.#gap(scenario.burstEveryMs), () => this.#onBurst());
    for (const lock of scenario.locks) {
      this.#capacity.set(lock, this.#o.rng.int(1, scenario.capacityMax));
      schedule(this.#gap(scenario.capacityEveryMs), () => this.#onCapacity(lock));
    }
  }

  /** The liveness phase: no new requests, no abandoned waits; holders still act. */
  stopIssuing(): void {
    this.#issuing = false;
    this.#abandoning = false;
  }

  /**
   * The liveness phase's probes: one exclusive request from every peer, on one of the
   * scenario's locks, with no timeout and never abandoned, re-asked while it fails (a peer
   * rejoining refuses it), so that every peer that can sync must grant something once the
   * faults heal. Without them a run whose waits all ended otherwise (abandoned, timed out,
   * refused) passed: a core that started fenced, answering every acquire with an end,
   * survived 120 seeds of issue 39's mutation runner. Drawn from nothing: the safety phase's
   * trajectory does not move.
   */
  probe(): void {
    for (let peer = 0; peer < this.#o.scenario.peers; peer++) this.#probeOnce(peer);
  }

  /** Peers whose probe is not granted yet (`probe`). */
  unprobed(): number[] {
    return [...this.#probes].filter(([, req]) => req === null || req.grant === null).map(([peer]) => peer);
  }

  /** How the latest probe of `peer` ended, for the liveness report. */
  lastProbeOutcome(peer: number): string {
    const req = this.#probes.get(peer);
    return req === undefined || req === null ? 'no process to ask' : req.outcome === '' ? req.state : req.outcome;
  }

  /** The latest probe of each peer (null: its peer had no process to ask). */
  readonly #probes = new Map<number, ClientRequest | null>();

  #probeOnce(peer: number): void {
    const { cluster, clients, scenario, schedule, time } = this.#o;
    const procs = cluster.processes(peer);
    const proc = procs[procs.length - 1];
    const lock = scenario.locks[peer % scenario.locks.length];
    if (lock === undefined) return;
    const opts: AcquireOptions = { mode: 'exclusive', limit: 1, permits: 1, owner: 'probe', meta: null, timeoutMs: limits.timeoutMsMax, ttlMs: scenario.ttlMs, hold: 'ttl', expectedMs: null };
    const req = proc === undefined ? null : clients.acquire(proc, lock, opts, false);
    this.#probes.set(peer, req);
    const recheck = (): void => {
      if (req !== null && req.grant !== null) return;
      if (req === null || req.state === 'done') this.#probeOnce(peer);
      else schedule(time.nowMs + scenario.heartbeatMs, recheck);
    };
    schedule(time.nowMs + scenario.heartbeatMs, recheck);
  }

  #onArrival(peer: number): void {
    if (!this.#issuing) return;
    const { multi, scenario } = this.#o;
    // No draw at all when multi-lock is off: the seed's other choices stay as they were.
    if (multi.chance > 0 && scenario.locks.length >= 2 && multi.rng.chance(multi.chance)) this.#acquireAll(peer);
    else this.#acquire(peer, this.#o.rng.pick(scenario.locks), this.#drawMode());
    this.#o.schedule(this.#o.time.nowMs + this.#gap(this.#o.scenario.acquireEveryMs), () => this.#onArrival(peer));
  }

  /** Several peers ask for one lock in the same millisecond: their timestamps tend to tie. */
  #onBurst(): void {
    if (!this.#issuing) return;
    const { rng, scenario } = this.#o;
    const lock = rng.pick(scenario.locks);
    const mode = this.#drawMode();
    for (let peer = 0; peer < scenario.peers; peer++) if (rng.chance(0.7)) this.#acquire(peer, lock, mode);
    this.#o.schedule(this.#o.time.nowMs + this.#gap(scenario.burstEveryMs), () => this.#onBurst());
  }

  /** The canal-lock case: a semaphore's capacity changes while holds are out. */
  #onCapacity(lock: string): void {
    this.#capacity.set(lock, this.#o.rng.int(1, this.#o.scenario.capacityMax));
    this.#o.schedule(this.#o.time.nowMs + this.#gap(this.#o.scenario.capacityEveryMs), () => this.#onCapacity(lock));
  }

  /** Two or three distinct locks, each in a mode of its own, in a random order (crosswise orders are the point). */
  #acquireAll(peer: number): void {
    const { rng } = this.#o.multi;
    const names = [...this.#o.scenario.locks];
    const count = Math.min(names.length, rng.int(2, 3));
    const asks = Array.from({ length: count }, () => {
      const lock = names.splice(rng.int(0, names.length - 1), 1)[0] ?? '';
      const { mode, limit, permits } = this.#spec(lock, this.#drawMode(rng), rng);
      return { lock, mode, limit, permits };
    });
    this.#acquire(peer, asks);
  }

  #acquire(peer: number, lockOrAsks: string | readonly LockAsk[], mode: Mode = 'exclusive'): void {
    const { cluster, clients, rng, schedule, time, scenario } = this.#o;
    const procs = cluster.processes(peer);
    if (procs.length === 0) return; // A client cannot reach a peer that is down.
    if (clients.openOf(peer) >= scenario.openMaxPerPeer) return; // The waiter limit: refused.
    // While two processes share an id, a client may still talk to the older one.
    const proc = procs.length > 1 && rng.chance(0.3) ? procs[0] : procs[procs.length - 1];
    if (proc === undefined) return;
    const noWait = rng.chance(scenario.noWaitChance);
    // Most waits are abandoned by the client (which the liveness phase turns off); some the
    // runtime ends at their timeout_ms.
    const runtimeTimeout = !noWait && rng.chance(0.2);
    const waitMs = rng.int(1, scenario.timeoutMaxMs);
    const connection = !noWait && rng.chance(scenario.connectionHoldChance);
    const asks = typeof lockOrAsks === 'string' ? null : lockOrAsks;
    const lock = typeof lockOrAsks === 'string' ? lockOrAsks : (lockOrAsks[0]?.lock ?? '');
    const first = asks?.[0];
    const spec = first === undefined ? this.#spec(lock, mode) : { mode: first.mode, limit: first.limit, permits: first.permits, owner: `c${rng.int(0, 99)}`, meta: null };
    const opts: AcquireOptions = {
      ...spec, timeoutMs: noWait ? 0 : runtimeTimeout ? waitMs : limits.timeoutMsMax,
      ttlMs: connection ? 0 : scenario.ttlMs, hold: connection ? 'connection' : 'ttl', expectedMs: null,
    };
    // One request in twenty is from a client that closed its connection unnoticed, so the API
    // releases its grant inside the grant callback (no draw: the seed's other choices stay as
    // they were).
    const leftUnnoticed = clients.nextRef % 20 === 7;
    const req = asks === null ? clients.acquire(proc, lock, opts, leftUnnoticed) : clients.acquireAll(proc, asks, opts, leftUnnoticed);
    if (!noWait && !runtimeTimeout) {
      schedule(time.nowMs + waitMs, () => {
        if (this.#abandoning && req.state === 'waiting') clients.leave(req);
      });
    }
  }

  #spec(lock: string, mode: Mode, rng = this.#o.rng): Pick<AcquireOptions, 'mode' | 'limit' | 'permits' | 'owner' | 'meta'> {
    const owner = `c${rng.int(0, 99)}`;
    if (mode !== 'semaphore') return { mode, limit: 1, permits: 1, owner, meta: null };
    // A request asking for more permits than its own limit could never be admitted; the
    // HTTP API refuses it as a 400, so the workload never makes one.
    const limit = this.#capacity.get(lock) ?? 1;
    return { mode, limit, permits: Math.min(limit, rng.int(1, 2)), owner, meta: null };
  }

  /**
   * A holder keeps its hold a random time, then releases it (or goes away, for a
   * connection-bound one). A TTL hold may be refreshed on the way; one kept past its TTL
   * is ended by the runtime as `expired`, which the holder is told.
   */
  #onGranted(req: ClientRequest): void {
    const { rng, schedule, time, scenario, clients } = this.#o;
    const holdMs = rng.int(0, scenario.holdMaxMs);
    const refresh = req.opts.hold === 'ttl' && rng.chance(0.2) && holdMs > 1;
    if (refresh) schedule(time.nowMs + rng.int(0, Math.min(holdMs, scenario.ttlMs) - 1), () => clients.refresh(req));
    const p = this.#o.proclaim;
    if (p.chance > 0 && p.rng.chance(p.chance)) {
      // Some holders announce twice: two METAs of one request on their way at once must land in order.
      const times = p.rng.chance(0.3) ? 2 : 1;
      for (let i = 0; i < times; i++) schedule(time.nowMs + p.rng.int(0, holdMs), () => clients.proclaim(req));
    }
    schedule(time.nowMs + holdMs, () => {
      if (req.state !== 'held') return;
      if (req.opts.hold === 'connection' && rng.chance(0.5)) clients.leave(req);
      else clients.release(req);
    });
  }

  #drawMode(rng = this.#o.rng): Mode {
    const weights = this.#o.scenario.modeWeights;
    const total = weights[0] + weights[1] + weights[2];
    let x = rng.float() * total;
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
