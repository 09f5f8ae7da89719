/**
 * The lease clock counts host suspends (issue 12, defect 4): performance.now() stops while
 * the host sleeps, the wall clock does not.
 */
import { describe, expect, it } from 'vitest';
import type { Env } from '../../src/env.js';
import { nodeEnv } from '../../src/env.js';
import { LeaseClock } from '../../src/runtime/lease-clock.js';

function fakeEnv(): Env & { mono: number; wall: number } {
  const env = { ...nodeEnv, mono: 1000, wall: 1_700_000_000_000, monoMs: () => env.mono, wallMs: () => env.wall };
  return env;
}

describe('LeaseClock', () => {
  it('runs with the monotonic clock while nothing happens', () => {
    const env = fakeEnv();
    const clock = new LeaseClock(env);
    env.mono += 500;
    env.wall += 500;
    expect(clock.nowMs()).toBe(1500);
  });

  it('counts a suspend: the wall clock ran on while the monotonic clock stood still', () => {
    const env = fakeEnv();
    const clock = new LeaseClock(env);
    env.wall += 60_000; // a minute asleep
    env.mono += 1;
    expect(clock.nowMs()).toBe(1000 + 60_000);
    expect(clock.suspendedMs).toBe(59_999);
  });

  it('ignores a wall clock stepped back, and small wobbles', () => {
    const env = fakeEnv();
    const clock = new LeaseClock(env);
    env.wall -= 5_000;
    env.mono += 100;
    expect(clock.nowMs()).toBe(1100);
    env.wall += 105; // 5 ms ahead of the monotonic clock: below the detection threshold
    env.mono += 100;
    expect(clock.nowMs()).toBe(1200);
  });

  it('under the no-suspend-detect mutant, believes the bare monotonic clock', () => {
    const env = fakeEnv();
    const clock = new LeaseClock(env, false);
    env.wall += 60_000;
    expect(clock.nowMs()).toBe(1000);
  });
});
