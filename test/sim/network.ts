/**
 * The simulated wire between peers: one direction per ordered pair, a random transit time
 * per frame, FIFO per direction (TCP), and cuts of one direction at a time. A cut is what a
 * real network does to a TCP connection: bytes stop moving (they wait in the buffers) and
 * flow again when the cut heals, in order; if the connection is closed meanwhile (the
 * silence watchdog of either end), what was on it is lost and the link layer above resends
 * it on the next connection to the same incarnation. Frames are never lost, duplicated or
 * reordered on a live connection; in `link` mode connections also break at random, which
 * loses exactly the frames in flight on them.
 */
import type { Prng } from '../support/prng.js';

/** The timing and ordering faults of one direction. */
export interface LinkFaults {
  /** Transit time of one frame; with `spikes` off, within the normal bounds. */
  delayMs(from: number, to: number, spikes: boolean): number;
  /** True when frames of one direction may overtake each other (the no-fifo mutant). */
  readonly reorder: boolean;
}

/** Uniform delays between bounds, with rare spikes, from the seed. */
export function randomDelays(rng: Prng, opts: { minMs: number; maxMs: number; spikeChance: number; reorder: boolean }): LinkFaults {
  return {
    reorder: opts.reorder,
    delayMs: (_from, _to, spikes) => {
      const base = rng.int(opts.minMs, opts.maxMs);
      return spikes && rng.chance(opts.spikeChance) ? base + rng.int(0, 10 * opts.maxMs) : base;
    },
  };
}

/** Directed wire with FIFO transit and healing one-way cuts. */
export class Wire {
  readonly #peers: number;
  readonly #faults: LinkFaults;
  /** Per ordered pair: the latest arrival scheduled, so nothing overtakes it. */
  readonly #tailMs: Float64Array;
  /** Per ordered pair: the time a cut of that direction heals. */
  readonly #cutUntilMs: Float64Array;
  /**
   * Chance that a connection breaks under a frame (`link` mode); 0 otherwise, and 0 once
   * faults stop: per frame, it would break every resume of a long backlog for ever.
   */
  #breakChance: number;
  /**
   * Delay spikes are a fault: they stop with the others. A spike holds back every frame
   * behind it (FIFO) and the chance is per frame, so on a busy direction spikes overlap and
   * the latency stays near ten times the maximum: with short heartbeats, the silence
   * watchdogs then cut every socket before a handshake round trip ends, and peers evict
   * each other forever, by design of the timing relations, not for lack of liveness
   * (seed 100442: 9 peers, 25 ms heartbeats, ~130 ms mean latency, nothing granted).
   */
  #spikes = true;

  /** Chance that a connection breaks under a frame now. */
  get breakChance(): number {
    return this.#breakChance;
  }

  constructor(opts: { peers: number; faults: LinkFaults; breakChance: number }) {
    this.#peers = opts.peers;
    this.#faults = opts.faults;
    this.#breakChance = opts.breakChance;
    this.#tailMs = new Float64Array(opts.peers * opts.peers);
    this.#cutUntilMs = new Float64Array(opts.peers * opts.peers);
  }

  /**
   * When a frame sent now from `from` to `to` arrives: after the cut of that direction heals,
   * never before the previous frame of that direction (unless the no-fifo mutant reorders).
   */
  arrivalMs(from: number, to: number, nowMs: number): number {
    const pair = this.#pair(from, to);
    const at = Math.max(nowMs, this.#cutUntilMs[pair] ?? 0) + this.#faults.delayMs(from, to, this.#spikes);
    if (this.#faults.reorder) return at;
    const fifoAt = Math.max(at, this.#tailMs[pair] ?? 0);
    this.#tailMs[pair] = fifoAt;
    return fifoAt;
  }

  /** Cuts the direction `from` -> `to` until `untilMs`. */
  cut(from: number, to: number, untilMs: number): void {
    const pair = this.#pair(from, to);
    this.#cutUntilMs[pair] = Math.max(this.#cutUntilMs[pair] ?? 0, untilMs);
  }

  /** True while any direction is cut. */
  anyCut(nowMs: number): boolean {
    for (const until of this.#cutUntilMs) if (nowMs < until) return true;
    return false;
  }

  /** True while the direction `from` -> `to` is cut. */
  isCut(from: number, to: number, nowMs: number): boolean {
    return nowMs < (this.#cutUntilMs[this.#pair(from, to)] ?? 0);
  }

  /** Heals every cut now and ends spikes and breaks (the liveness phase); frames held back leave at once. */
  healAll(nowMs: number): void {
    this.#spikes = false;
    this.#breakChance = 0;
    for (let i = 0; i < this.#cutUntilMs.length; i++) this.#cutUntilMs[i] = Math.min(this.#cutUntilMs[i] ?? 0, nowMs);
  }

  #pair(from: number, to: number): number {
    return from * this.#peers + to;
  }
}
