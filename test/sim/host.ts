/**
 * A simulated host and the processes on it: the only things the simulator swaps under the
 * production runtime are its clocks, timers, sockets and disk (TigerBeetle's VOPR). A host
 * has a local time base running at its own rate (drift within the config's margin); its
 * monotonic clock stops while the host is suspended, its wall clock does not and may be
 * stepped. A process is an event target: its timers and socket events run one at a time,
 * wait in a backlog while it is paused or its host suspended, and vanish when it dies.
 */
import type { Env, Timer } from '../../src/env.js';
import type { Prng } from '../support/prng.js';

/** Virtual time shared by everything in one run. */
export interface SimTime {
  nowMs: number;
}

/** Wall clocks start here, so incarnations and 'wall' floors look like epoch ms. */
export const epochMs = 1_700_000_000_000;

/** A host's clocks. */
export class HostClock {
  readonly rate: number;
  readonly offsetMs: number;
  readonly skewMs: number;
  /** Whether the OS tells a boot clock that counts suspends (Linux CLOCK_BOOTTIME): `bootMs`. */
  readonly boot: boolean;
  /** Virtual ms the host spent suspended, not counting a suspend in progress. */
  #frozenMs = 0;
  #suspendedSince: number | null = null;
  #wallStepMs = 0;

  constructor(opts: { rate: number; offsetMs: number; skewMs: number; boot?: boolean }) {
    this.rate = opts.rate;
    this.offsetMs = opts.offsetMs;
    this.skewMs = opts.skewMs;
    this.boot = opts.boot ?? false;
  }

  /** The boot clock: the time base (it runs through suspends) at Linux's 10 ms resolution, or null without one. */
  bootMs(t: number): number | null {
    return this.boot ? Math.floor(this.baseMs(t) / 10) * 10 : null;
  }

  /** The host's time base: runs through suspends. What a suspend-aware lease clock reads. */
  baseMs(t: number): number {
    return this.offsetMs + this.rate * t;
  }

  /** performance.now(): the time base less every suspend. */
  monoMs(t: number): number {
    const frozen = this.#frozenMs + (this.#suspendedSince === null ? 0 : t - this.#suspendedSince);
    return this.baseMs(t) - this.rate * frozen;
  }

  /** Date.now(): the time base as epoch ms (NTP keeps it near the host's own rate), plus steps. */
  wallMs(t: number): number {
    return Math.floor(epochMs + this.skewMs + this.#wallStepMs + this.rate * t);
  }

  /** The virtual time at which the monotonic clock reaches `monoMs`, if no suspend intervenes. */
  whenMono(monoMs: number, now: number): number {
    return now + Math.max(0, monoMs - this.monoMs(now)) / this.rate;
  }

  get suspended(): boolean {
    return this.#suspendedSince !== null;
  }

  suspend(now: number): void {
    if (this.#suspendedSince === null) this.#suspendedSince = now;
  }

  wake(now: number): void {
    if (this.#suspendedSince === null) return;
    this.#frozenMs += now - this.#suspendedSince;
    this.#suspendedSince = null;
  }

  /** An operator or NTP steps the wall clock (negative: back). */
  stepWall(ms: number): void {
    this.#wallStepMs += ms;
  }
}

/**
 * Work for one process: runs now, or waits in its backlog. It returns false when it turned
 * out to be nothing (a cancelled timer, a call for a request already over): nothing of the
 * process ran, so nothing is checked after it.
 */
export type ProcessTask = () => void | boolean;

/** Puts a task for a process on the agenda at a virtual time. */
export type ScheduleTask = (atMs: number, proc: SimProcess, task: ProcessTask) => void;

interface SimTimer extends Timer {
  readonly proc: SimProcess;
  dueMonoMs: number;
  readonly everyMs: number | null;
  readonly fn: () => void;
  cancelled: boolean;
}

/** One OS process on a host; its Env is what the runtime reads and arms. */
export class SimProcess {
  readonly id: number;
  readonly peer: number;
  readonly host: HostClock;
  readonly env: Env;
  #alive = true;
  #paused = false;
  #backlog: ProcessTask[] = [];
  readonly #time: SimTime;
  readonly #schedule: ScheduleTask;

  constructor(opts: { id: number; peer: number; host: HostClock; time: SimTime; rng: Prng; schedule: ScheduleTask }) {
    this.id = opts.id;
    this.peer = opts.peer;
    this.host = opts.host;
    this.#time = opts.time;
    this.#schedule = opts.schedule;
    const rng = opts.rng;
    this.env = {
      monoMs: () => this.host.monoMs(this.#time.nowMs),
      wallMs: () => this.host.wallMs(this.#time.nowMs),
      bootMs: () => this.host.bootMs(this.#time.nowMs),
      after: (ms, fn) => this.#arm(ms, null, fn),
      every: (ms, fn) => this.#arm(ms, ms, fn),
      soon: (fn) => this.#arm(0, null, fn, true),
      clear: (t) => {
        if (t !== null) (t as SimTimer).cancelled = true;
      },
      randomInt: (maxExclusive) => rng.int(0, maxExclusive - 1),
      randomBytes: (n) => {
        const out = new Uint8Array(n);
        for (let i = 0; i < n; i++) out[i] = rng.int(0, 255);
        return out;
      },
    };
  }

  get alive(): boolean {
    return this.#alive;
  }

  /** True while the process runs nothing: stopped (SIGSTOP) or its host suspended. */
  get frozen(): boolean {
    return this.#paused || this.host.suspended;
  }

  get paused(): boolean {
    return this.#paused;
  }

  /** Runs a task now, or parks it while frozen; a dead process drops it. */
  run(task: ProcessTask): void {
    if (!this.#alive) return;
    if (this.frozen) this.#backlog.push(task);
    else task();
  }

  /** Puts `task` on the agenda for this process at `atMs`. */
  at(atMs: number, task: ProcessTask): void {
    this.#schedule(atMs, this, task);
  }

  pause(): void {
    this.#paused = true;
  }

  /** Ends a pause (or is called after a wake): the backlog runs in order, as new agenda entries now. */
  thaw(): void {
    this.#paused = false;
    if (this.frozen) return;
    const backlog = this.#backlog;
    this.#backlog = [];
    for (const task of backlog) this.at(this.#time.nowMs, task);
  }

  /** The process is gone (kill -9): nothing of it runs again. */
  kill(): void {
    this.#alive = false;
    this.#backlog = [];
  }

  #arm(ms: number, everyMs: number | null, fn: () => void, immediate = false): Timer {
    const now = this.#time.nowMs;
    const timer: SimTimer = { __timer: true, proc: this, dueMonoMs: this.host.monoMs(now) + Math.max(0, ms), everyMs, fn, cancelled: false };
    // setImmediate runs in this turn's check phase: after what is already due now.
    this.at(immediate ? now : this.host.whenMono(timer.dueMonoMs, now), () => this.#fire(timer));
    return timer;
  }

  /** A timer came due on the agenda: a suspend may have moved its moment on the monotonic clock. */
  #fire(timer: SimTimer): void | false {
    if (timer.cancelled) return false;
    const now = this.#time.nowMs;
    if (this.host.monoMs(now) + 1e-9 < timer.dueMonoMs) {
      this.at(this.host.whenMono(timer.dueMonoMs, now), () => this.#fire(timer));
      return false;
    }
    if (timer.everyMs !== null) {
      timer.dueMonoMs = this.host.monoMs(now) + timer.everyMs;
      this.at(this.host.whenMono(timer.dueMonoMs, now), () => this.#fire(timer));
    } else timer.cancelled = true;
    timer.fn();
  }
}
