/**
 * The tests' one way to wait (docs/style.md convention 13): for a condition, with a bound,
 * never for a guessed amount of time. `delay` exists for what is not a wait for something
 * to happen: pacing a workload or holding a fault for a drawn duration.
 */
import type { EventEmitter } from 'node:events';

/** Checks `check` until it holds, every `everyMs`; fails naming `what` after `timeoutMs`. */
export async function waitFor(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 10_000, everyMs = 10): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (performance.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await delay(everyMs);
  }
}

/** The arguments of the next `event` of `emitter` for which `accept` holds; fails after `timeoutMs`. */
export function nextEvent<T extends unknown[]>(emitter: EventEmitter, event: string, accept: (...args: T) => boolean = () => true, timeoutMs = 10_000): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => {
      emitter.off(event, listener);
      reject(new Error(`timed out after ${timeoutMs} ms waiting for event ${JSON.stringify(event)}`));
    }, timeoutMs);
    const listener = (...args: unknown[]): void => {
      if (!accept(...(args as T))) return;
      clearTimeout(timer);
      emitter.off(event, listener);
      resolve(args as T);
    };
    emitter.on(event, listener);
  });
}

/** A real-time pause: pacing and fault durations only; to wait for something, use waitFor. */
export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
