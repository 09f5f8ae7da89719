/**
 * The connections of waiting requests, parked so that a burst of them closing cannot stall
 * the event loop (issue 15). A waiting request's client sends nothing more until it leaves,
 * so its socket is read only to see it leave. With one socket read per waiter, 19,000
 * clients that close at once are 19,000 ends handled in one event-loop turn (libuv handles
 * every ready socket of a poll in that turn, and Node ends and closes each: ~1 s of CPU per
 * peer in bench (f)), during which no heartbeat leaves and no echo is read: every peer lost
 * its lease. So past `liveMax` waiting connections, the rest are paused (not read: the
 * kernel holds their ends) and swept: every `sweepEveryMs`, at most `sweepSocketsMax` of
 * them are read for one turn and paused again, so at most that many ends are handled per
 * turn. A client that leaves is noticed within seconds (at least `parked / sweepSocketsMax *
 * sweepEveryMs`) instead of at once; its request waits in the queue meanwhile (design.md rule 5 withdraws it then),
 * and a grant made to it meanwhile is written to a closed socket: the grant unparks it, so a
 * connection-bound hold ends as soon as the socket is read, and a TTL hold lives until its
 * TTL, as it does when a client leaves just after its grant (docs/design.md section 4,
 * "Bounds"). Sockets are paused and resumed through Node's HTTP server, whose 'pause' and
 * 'resume' listeners stop and start reading the handle in libuv.
 *
 * How many a sweep reads adapts to the CPU the peer gets: bounding each turn is not enough
 * when the ends keep coming (19,000 of them at ~180 us each are most of a core for seconds,
 * and with three peers, their clients and a GC-heavy application on two cores every turn
 * took 150-600 ms and two peers lost their leases). A sweep that fires more than `lateMs`
 * late (the loop was busy) halves the next sweep; one on time after a sweep that found
 * clients gone adds `sweepSocketsMin`, up to `sweepSocketsMax` (additive increase,
 * multiplicative decrease, as TCP paces a link it shares).
 */
import type { Timer } from '../env.js';
import { limits } from '../limits.js';

/** The timers parking uses: Node's (unref'd) in production, virtual ones in its tests. */
export interface ParkingClock {
  /** Monotonic ms. */
  now(): number;
  every(ms: number, fn: () => void): Timer;
  /**
   * Runs `fn` after the sockets resumed in this turn were read: the sweep runs from the
   * interval, in the timers phase, so the poll phase that follows reads them, and a
   * setImmediate runs after that poll.
   */
  soon(fn: () => void): void;
  clear(timer: Timer | null): void;
}

/** The part of a socket parking uses (a net.Socket's pause and resume, whose results it ignores). */
export interface ParkableSocket {
  pause(): unknown;
  resume(): unknown;
}

/** Bounds of parking (limits.ts). */
export interface ParkingOptions {
  readonly liveMax: number;
  /** What a sweep reads at first, after a late one at least, and how much it grows by. */
  readonly sweepSocketsMin: number;
  readonly sweepSocketsMax: number;
  readonly sweepEveryMs: number;
  /** A sweep this much later than `sweepEveryMs` after the previous one halves the next. */
  readonly lateMs: number;
  readonly clock: ParkingClock;
}

const nodeParkingClock: ParkingClock = {
  now: () => performance.now(),
  every: (ms, fn) => setInterval(fn, ms).unref() as unknown as Timer,
  soon: (fn) => void setImmediate(fn),
  clear: (timer) => {
    if (timer !== null) clearInterval(timer as unknown as NodeJS.Timeout);
  },
};

/** The defaults of a peer's HTTP API. */
export const parkingDefaults: ParkingOptions = {
  liveMax: limits.waitingSocketsLiveMax,
  sweepSocketsMin: limits.parkedSocketsSweptPerTurnMin,
  sweepSocketsMax: limits.parkedSocketsSweptPerTurnMax,
  sweepEveryMs: limits.parkedSocketsSweepMs,
  lateMs: limits.parkedSocketsSweepLateMs,
  clock: nodeParkingClock,
};

/** The sockets of waiting requests: read at once up to `liveMax`, past it paused and swept. */
export class ParkedSockets {
  readonly #opts: ParkingOptions;
  /** Waiting, read as usual. */
  readonly #live = new Set<ParkableSocket>();
  /** Waiting, paused; in sweep order (a swept one goes to the back). */
  readonly #parked = new Set<ParkableSocket>();
  #timer: Timer | null = null;
  /** How many the next sweep reads. */
  #batch: number;
  /** The last sweep's sockets, and how many of them closed since. */
  #swept = new Set<ParkableSocket>();
  #sweptGone = 0;
  #lastSweepAt: number | null = null;

  constructor(opts: ParkingOptions = parkingDefaults) {
    this.#opts = opts;
    this.#batch = opts.sweepSocketsMin;
  }

  /** How many the next sweep reads. */
  get sweepSize(): number {
    return this.#batch;
  }

  /** How many are paused now. */
  get parkedCount(): number {
    return this.#parked.size;
  }

  /** `socket`'s request waits: it is read as usual, or paused when `liveMax` are read already. */
  park(socket: ParkableSocket): void {
    if (this.#live.size < this.#opts.liveMax) {
      this.#live.add(socket);
      return;
    }
    socket.pause();
    this.#parked.add(socket);
    this.#timer ??= this.#opts.clock.every(this.#opts.sweepEveryMs, () => this.#sweep());
  }

  /** `socket`'s request is answered, or the socket closed: it is read as usual again. */
  unpark(socket: ParkableSocket): void {
    if (this.#live.delete(socket)) return;
    if (!this.#parked.delete(socket)) return;
    if (this.#swept.delete(socket)) this.#sweptGone++;
    socket.resume();
    if (this.#parked.size === 0) this.#stop();
  }

  /** Stops sweeping (the server closes); every socket is read again. */
  close(): void {
    for (const socket of this.#parked) socket.resume();
    this.#parked.clear();
    this.#live.clear();
    this.#stop();
  }

  #stop(): void {
    this.#opts.clock.clear(this.#timer);
    this.#timer = null;
    this.#lastSweepAt = null;
    this.#swept.clear();
    this.#sweptGone = 0;
  }

  /** Sizes this sweep from how late it fired and whether the last one found clients gone. */
  #pace(): void {
    const now = this.#opts.clock.now();
    const late = this.#lastSweepAt !== null && now - this.#lastSweepAt > this.#opts.sweepEveryMs + this.#opts.lateMs;
    this.#lastSweepAt = now;
    const { sweepSocketsMin: min, sweepSocketsMax: max } = this.#opts;
    if (late) this.#batch = Math.max(min, Math.floor(this.#batch / 2));
    else if (this.#sweptGone > 0) this.#batch = Math.min(max, this.#batch + min);
    this.#sweptGone = 0;
  }

  /** Reads the next `sweepSize` parked sockets for one turn; those still waiting then are paused again. */
  #sweep(): void {
    this.#pace();
    const batch: ParkableSocket[] = [];
    for (const socket of this.#parked) {
      if (batch.length >= this.#batch) break;
      batch.push(socket);
    }
    this.#swept = new Set(batch);
    for (const socket of batch) {
      this.#parked.delete(socket);
      this.#parked.add(socket);
      socket.resume();
    }
    this.#opts.clock.soon(() => {
      for (const socket of batch) if (this.#parked.has(socket)) socket.pause();
    });
  }
}
