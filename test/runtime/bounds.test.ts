/**
 * The bounds of promises and echoes on disk (src/runtime/bounds.ts): rewritten off the event
 * loop while the bound on disk still covers every message, and never counted before the write
 * is done (issue 15: an fsync on the event loop took 556 ms under another process's writes).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Env } from '../../src/env.js';
import { nodeEnv } from '../../src/env.js';
import { silentLogger } from '../../src/log.js';
import { PersistedBounds } from '../../src/runtime/bounds.js';
import type { Bound, ClockStore } from '../../src/runtime/clock-store.js';
import { FileClockStore } from '../../src/runtime/clock-store.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A disk whose background writes finish when the test says so; writes now are counted. */
class HeldDisk implements ClockStore {
  readonly onDisk: Record<Bound, number> = { promise: 0, echo: 0 };
  writesNow = 0;
  readonly later: { kind: Bound; until: number; done: (err: Error | null) => void }[] = [];
  failNext = false;

  load(): number {
    return 0;
  }

  write(): void {}

  loadBound(kind: Bound): number {
    return this.onDisk[kind];
  }

  writeBound(kind: Bound, untilWallMs: number): void {
    this.writesNow++;
    this.onDisk[kind] = untilWallMs;
  }

  writeBoundLater(kind: Bound, until: number, done: (err: Error | null) => void): void {
    this.later.push({ kind, until, done });
  }

  /** The oldest background write lands (or fails). */
  finish(): void {
    const w = this.later.shift();
    if (w === undefined) throw new Error('no write under way');
    if (this.failNext) {
      this.failNext = false;
      w.done(new Error('EIO: i/o error'));
      return;
    }
    this.onDisk[w.kind] = w.until;
    w.done(null);
  }
}

function wallAt(ms: number): Env & { wall: number } {
  const env = { ...nodeEnv, wall: ms, wallMs: () => env.wall };
  return env;
}

const aheadMs = 3000;

function setup(): { disk: HeldDisk; env: Env & { wall: number }; bounds: PersistedBounds } {
  const disk = new HeldDisk();
  const env = wallAt(1_000_000);
  return { disk, env, bounds: new PersistedBounds({ store: disk, env, log: silentLogger(), aheadMs: () => aheadMs }) };
}

describe('PersistedBounds', () => {
  it('writes the first bound at once, then rewrites it in the background while the one on disk still covers', () => {
    const { disk, env, bounds } = setup();
    expect(bounds.ensure('echo')).toBe(true);
    expect(disk.writesNow).toBe(1);
    expect(disk.onDisk.echo).toBe(1_000_000 + aheadMs);
    env.wall += aheadMs / 4; // three quarters left: nothing to write yet
    expect(bounds.ensure('echo')).toBe(true);
    expect(disk.later).toHaveLength(0);
    env.wall += 1; // less than three quarters left: the next bound goes to disk in the background
    expect(bounds.ensure('echo')).toBe(true);
    expect(disk.later).toHaveLength(1);
    expect(disk.writesNow).toBe(1);
    expect(bounds.ensure('echo')).toBe(true); // one write under way at a time
    expect(disk.later).toHaveLength(1);
    disk.finish();
    expect(bounds.storedUntilMs('echo')).toBe(1_000_000 + aheadMs / 4 + 1 + aheadMs);
    expect(bounds.storedUntilMs('promise')).toBe(0); // each kind has its own file
  });

  it('counts a write under way only once it is done: past the old bound, messages wait for it', () => {
    const { disk, env, bounds } = setup();
    bounds.ensure('promise');
    env.wall += aheadMs / 4 + 1;
    expect(bounds.ensure('promise')).toBe(true);
    expect(disk.later).toHaveLength(1);
    env.wall += aheadMs / 4; // the old bound no longer reaches half ahead; the new one is not on disk yet
    expect(bounds.ensure('promise')).toBe(false);
    expect(disk.writesNow).toBe(1); // and nothing is written on the event loop meanwhile
    disk.finish();
    expect(bounds.ensure('promise')).toBe(true);
  });

  it('a background write that fails is logged, retried, and a message that finds no covering bound writes one at once', () => {
    const { disk, env, bounds } = setup();
    bounds.ensure('echo');
    env.wall += aheadMs / 4 + 1;
    bounds.ensure('echo');
    disk.failNext = true;
    disk.finish();
    expect(bounds.storedUntilMs('echo')).toBe(1_000_000 + aheadMs);
    expect(bounds.ensure('echo')).toBe(true); // the old bound still covers: another background try
    expect(disk.later).toHaveLength(1);
    disk.failNext = true;
    disk.finish();
    env.wall += aheadMs / 4;
    expect(bounds.ensure('echo')).toBe(true); // no cover, no write under way: written at once
    expect(disk.writesNow).toBe(2);
  });

  it('writes the bound file in the background as the synchronous write does', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'bounds-'));
    dirs.push(dir);
    const store = new FileClockStore(dir);
    const err = await new Promise<Error | null>((resolve) => store.writeBoundLater('echo', 1_700_000_050_000, resolve));
    expect(err).toBeNull();
    expect(JSON.parse(readFileSync(join(dir, 'echo.json'), 'utf8'))).toEqual({ until_wall_ms: 1_700_000_050_000 });
    expect(new FileClockStore(dir).loadBound('echo')).toBe(1_700_000_050_000);
    const failed = await new Promise<Error | null>((resolve) => new FileClockStore(join(dir, 'echo.json')).writeBoundLater('echo', 1, resolve));
    expect(failed?.message).toMatch(/EEXIST|ENOTDIR/);
  });
});
