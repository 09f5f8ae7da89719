/**
 * The simulated network between peers: one channel per ordered pair with a random transit
 * time per message, FIFO per channel (what the reliable link of DESIGN section 4 promises
 * the core), and cuts that hold a channel's traffic back until it heals. A cut loses
 * nothing: while both incarnations live, the real link resends on resume. What happens on
 * the wire is pluggable (`LinkFaults`), so another model (e.g. the real link under loss,
 * duplication and reordering) can replace this one without touching the cluster.
 */
import type { Delivery, Schedule } from './events.js';
import type { Prng } from './prng.js';

/** What the cluster needs from a network. */
export interface SimNetwork {
  /** Puts a packet in flight; its 'deliver' event is scheduled on the agenda. */
  send(nowMs: number, d: Delivery): void;
  /**
   * Called when a 'deliver' event fires: true to hand the packet to the receiver now,
   * false when the network has rescheduled it (the channel is cut).
   */
  arrive(nowMs: number, d: Delivery): boolean;
  /** Holds back both directions between `a` and `b` until `untilMs`. */
  cut(a: number, b: number, untilMs: number): void;
  /** True when a handshake between `a` and `b` can happen now. */
  reachable(a: number, b: number, nowMs: number): boolean;
  /** When the channel between `a` and `b` heals (at or before now: it is up). */
  healsAtMs(a: number, b: number): number;
}

/** The timing and ordering faults of one channel. */
export interface LinkFaults {
  /** Transit time of one message. */
  delayMs(from: number, to: number): number;
  /** True when messages of one channel may overtake each other (the no-fifo mutant). */
  readonly reorder: boolean;
}

/** Uniform delays between bounds, with rare spikes, from the seed. */
export function randomDelays(rng: Prng, opts: { minMs: number; maxMs: number; spikeChance: number; reorder: boolean }): LinkFaults {
  return {
    reorder: opts.reorder,
    delayMs: () => {
      const base = rng.int(opts.minMs, opts.maxMs);
      return rng.chance(opts.spikeChance) ? base + rng.int(0, 10 * opts.maxMs) : base;
    },
  };
}

/** FIFO channels with random delays and healing cuts. */
export class FifoNetwork implements SimNetwork {
  readonly #peers: number;
  readonly #faults: LinkFaults;
  readonly #schedule: Schedule;
  /** Per ordered pair: the latest delivery time scheduled, so nothing overtakes it. */
  readonly #tailMs: Float64Array;
  /** Per unordered pair (stored both ways): the time a cut heals. */
  readonly #cutUntilMs: Float64Array;

  constructor(opts: { peers: number; faults: LinkFaults; schedule: Schedule }) {
    this.#peers = opts.peers;
    this.#faults = opts.faults;
    this.#schedule = opts.schedule;
    this.#tailMs = new Float64Array(opts.peers * opts.peers);
    this.#cutUntilMs = new Float64Array(opts.peers * opts.peers);
  }

  send(nowMs: number, d: Delivery): void {
    const start = Math.max(nowMs, this.#cutUntilMs[this.#pair(d.from, d.to)] ?? 0);
    this.#schedule(this.#arrivalMs(start, d), { k: 'deliver', d });
  }

  /**
   * Packets already in flight when a cut starts arrive as scheduled (they crossed before the
   * connection dropped); packets sent during the cut leave when it heals, behind them.
   * Rescheduling in-flight packets instead would have to preserve FIFO against packets sent
   * during the cut, for no extra interleaving the delays do not already produce.
   */
  arrive(_nowMs: number, _d: Delivery): boolean {
    return true;
  }

  cut(a: number, b: number, untilMs: number): void {
    const ab = this.#pair(a, b);
    const ba = this.#pair(b, a);
    this.#cutUntilMs[ab] = Math.max(this.#cutUntilMs[ab] ?? 0, untilMs);
    this.#cutUntilMs[ba] = Math.max(this.#cutUntilMs[ba] ?? 0, untilMs);
  }

  reachable(a: number, b: number, nowMs: number): boolean {
    return nowMs >= this.healsAtMs(a, b);
  }

  healsAtMs(a: number, b: number): number {
    return this.#cutUntilMs[this.#pair(a, b)] ?? 0;
  }

  #arrivalMs(startMs: number, d: Delivery): number {
    const at = startMs + this.#faults.delayMs(d.from, d.to);
    if (this.#faults.reorder) return at;
    // FIFO: never before the channel's previous packet (equal times keep schedule order).
    const pair = this.#pair(d.from, d.to);
    const fifoAt = Math.max(at, this.#tailMs[pair] ?? 0);
    this.#tailMs[pair] = fifoAt;
    return fifoAt;
  }

  #pair(from: number, to: number): number {
    return from * this.#peers + to;
  }
}
