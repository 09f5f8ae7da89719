/**
 * The lease clock counts host suspends (issue 12, defect 4): performance.now() stops while
 * the host sleeps, the wall clock does not.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { Env } from '../../src/env.js';
import { nodeEnv } from '../../src/env.js';
import { LeaseClock } from '../../src/runtime/lease-clock.js';
import type * as LeaseClockModule from '../../src/runtime/lease-clock.js';
import type { MutantName } from '../sim/mutants.js';
import { dropPlanted, plantedModule } from '../sim/planted.js';

/** LeaseClock as the build with `mutant` planted has it (test/sim/planted.ts). */
async function planted(mutant: MutantName): Promise<typeof LeaseClock> {
  return (await plantedModule<typeof LeaseClockModule>(mutant, 'src/runtime/lease-clock.js')).LeaseClock;
}

function fakeEnv(): Env & { mono: number; wall: number } {
  const env = { ...nodeEnv, mono: 1000, wall: 1_700_000_000_000, monoMs: () => env.mono, wallMs: () => env.wall, bootMs: () => null };
  return env;
}

/** A host whose OS tells a boot clock (Linux CLOCK_BOOTTIME: it runs through suspends), at 10 ms resolution. */
function bootEnv(): Env & { mono: number; wall: number; boot: number } {
  const env = { ...nodeEnv, mono: 1000, wall: 1_700_000_000_000, boot: 50_000, monoMs: () => env.mono, wallMs: () => env.wall, bootMs: () => Math.floor(env.boot / 10) * 10 };
  return env;
}

// The patched copies of the build the planted bugs ran in (test/sim/planted.ts).
afterAll(dropPlanted);

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

  it('under the no-suspend-detect mutant, believes the bare monotonic clock', async () => {
    const env = fakeEnv();
    const clock = new (await planted('no-suspend-detect'))(env);
    env.wall += 60_000;
    expect(clock.nowMs()).toBe(1000);
  });

  it('with a boot clock, counts a suspend during which the wall clock was stepped back (issue 37)', () => {
    const env = bootEnv();
    const clock = new LeaseClock(env);
    expect(clock.bootClock).toBe(true);
    env.boot += 60_000; // a minute asleep: the boot clock ran, the monotonic one did not
    env.wall -= 5_000; // and the wall clock was stepped back meanwhile
    env.mono += 1;
    env.boot += 1;
    // Counted to within the boot clock's 10 ms resolution: here 1 ms short.
    expect(clock.nowMs()).toBe(1001 + 59_999);
    expect(clock.suspendedMs).toBe(59_999);
  });

  it('with a boot clock, counts nothing while the host runs, whatever its 10 ms steps', () => {
    const env = bootEnv();
    const clock = new LeaseClock(env);
    for (let i = 0; i < 100; i++) {
      env.mono += 3;
      env.boot += 3;
      env.wall += 3;
      expect(clock.nowMs() - env.mono).toBeLessThanOrEqual(10);
    }
  });

  it('under the ignore-boot-clock mutant, counts by the wall clock alone', async () => {
    const env = bootEnv();
    const clock = new (await planted('ignore-boot-clock'))(env);
    env.boot += 60_000;
    env.wall += 55_000;
    env.mono += 1;
    expect(clock.bootClock).toBe(false);
    expect(clock.nowMs()).toBe(1000 + 55_000);
  });
});
