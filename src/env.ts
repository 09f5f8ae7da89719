/**
 * Everything a peer takes from the world outside its own logic: the monotonic clock, the
 * wall clock, timers, the end of the event-loop turn and randomness. Production passes
 * `nodeEnv` (performance.now, Date.now, Node timers, node:crypto); the simulator passes a
 * virtual world per process, so it runs this very runtime under any interleaving it draws
 * from a seed (TigerBeetle's VOPR swaps time, network and storage the same way). Sockets
 * and the disk have interfaces of their own (transport/network.ts, runtime/clock-store.ts).
 */
import { randomBytes, randomInt } from 'node:crypto';
import { openSync, readSync } from 'node:fs';
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
  /**
   * Milliseconds since boot, counting the time the host was suspended (Linux CLOCK_BOOTTIME),
   * or null where the OS cannot tell: runtime/lease-clock.ts counts suspends with it, and
   * then needs no assumption about the wall clock. Absent: null.
   */
  bootMs?(): number | null;
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

/** /proc/uptime, kept open; null once it could not be opened (not Linux). */
let uptimeFd: number | null | undefined;
const uptimeBytes = Buffer.alloc(64);
/** The boot clock read in this event-loop turn, if any. */
let bootThisTurnMs: number | null = null;

/**
 * CLOCK_BOOTTIME in ms, as Linux shows it in /proc/uptime (Node has no call for it): the
 * first field, in hundredths of a second. A read costs about 5 us (a pread on the open file),
 * so it is read at most once per event-loop turn; its resolution is 10 ms.
 */
function bootMsOfLinux(): number | null {
  if (bootThisTurnMs !== null) return bootThisTurnMs;
  if (uptimeFd === undefined) {
    try {
      uptimeFd = openSync('/proc/uptime', 'r');
    } catch {
      uptimeFd = null;
    }
  }
  if (uptimeFd === null) return null;
  const n = readSync(uptimeFd, uptimeBytes, 0, uptimeBytes.length, 0);
  const seconds = Number.parseFloat(uptimeBytes.toString('latin1', 0, n));
  if (!Number.isFinite(seconds)) return null;
  bootThisTurnMs = Math.round(seconds * 1000);
  setImmediate(() => {
    bootThisTurnMs = null;
  }).unref();
  return bootThisTurnMs;
}

/** The real world: Node's clocks and timers, node:crypto's randomness. */
export const nodeEnv: Env = {
  monoMs: () => performance.now(),
  wallMs: () => Date.now(),
  bootMs: () => (process.platform === 'linux' ? bootMsOfLinux() : null),
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
