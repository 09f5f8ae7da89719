/**
 * Everything a peer takes from the world outside its own logic: the monotonic clock, the
 * wall clock, timers, the end of the event-loop turn and randomness. Production passes
 * `nodeEnv` (performance.now, Date.now, Node timers, node:crypto); the simulator passes a
 * virtual world per process, so it runs this very runtime under any interleaving it draws
 * from a seed (TigerBeetle's VOPR swaps time, network and storage the same way). Sockets
 * and the disk have interfaces of their own (transport/network.ts, runtime/clock-store.ts).
 */
import { randomBytes, randomInt } from 'node:crypto';
import { performance } from 'node:perf_hooks';

/** An opaque handle of a pending timer, only ever passed back to `Env.clear`. */
export interface Timer {
  readonly __timer: true;
}

/** Clocks, timers and randomness of one process. */
export interface Env {
  /**
   * Monotonic milliseconds. It does NOT advance while the host is suspended (Linux
   * CLOCK_MONOTONIC, which performance.now() reads): see runtime/lease-clock.ts.
   */
  monoMs(): number;
  /** Wall-clock epoch milliseconds: may step back or forward (NTP, an operator). */
  wallMs(): number;
  /** Runs `fn` once after `ms` (monotonic). */
  after(ms: number, fn: () => void): Timer;
  /** Runs `fn` every `ms` until cleared. */
  every(ms: number, fn: () => void): Timer;
  /** Runs `fn` at the end of the current event-loop turn (setImmediate). */
  soon(fn: () => void): Timer;
  /** Cancels a timer of any kind; null and spent timers are ignored. */
  clear(timer: Timer | null): void;
  /** A uniform integer in [0, maxExclusive). */
  randomInt(maxExclusive: number): number;
  /** `n` random bytes (handshake nonces, hold ids). */
  randomBytes(n: number): Uint8Array;
}

type NodeHandle = NodeJS.Timeout | NodeJS.Immediate;

function toTimer(h: NodeHandle): Timer {
  return h as unknown as Timer;
}

function fromTimer(t: Timer): NodeHandle {
  return t as unknown as NodeHandle;
}

/** The real world: Node's clocks and timers, node:crypto's randomness. */
export const nodeEnv: Env = {
  monoMs: () => performance.now(),
  wallMs: () => Date.now(),
  after: (ms, fn) => toTimer(setTimeout(fn, ms)),
  every: (ms, fn) => toTimer(setInterval(fn, ms)),
  soon: (fn) => toTimer(setImmediate(fn)),
  clear: (timer) => {
    if (timer === null) return;
    const h = fromTimer(timer);
    // clearTimeout clears intervals too; an Immediate (no `refresh`) needs its own call.
    if ('refresh' in h) clearTimeout(h);
    else clearImmediate(h);
  },
  randomInt: (maxExclusive) => randomInt(0, maxExclusive),
  randomBytes: (n) => randomBytes(n),
};
