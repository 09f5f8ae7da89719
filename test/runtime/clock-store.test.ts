/**
 * The clock high-water mark on a failing disk (issue 12, defect 3): a failed write no longer
 * throws out of a socket handler (a crash loop); it stops new requests with ERR_STORAGE, and
 * they resume once a write succeeds.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Env } from '../../src/env.js';
import { nodeEnv } from '../../src/env.js';
import { limits } from '../../src/limits.js';
import { silentLogger } from '../../src/log.js';
import { ClockReservation, FileClockStore, MemoryClockStore } from '../../src/runtime/clock-store.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function envAt(): Env & { mono: number } {
  const env = { ...nodeEnv, mono: 0, monoMs: () => env.mono };
  return env;
}

describe('ClockReservation', () => {
  it('keeps the persisted mark ahead of the clock, writing only when the clock comes near', () => {
    const store = new MemoryClockStore();
    const r = new ClockReservation({ store, env: envAt(), log: silentLogger() });
    r.reserve(10);
    expect(store.load()).toBe(10 + limits.clockReserveAheadTicks);
    r.reserve(20);
    expect(store.load()).toBe(10 + limits.clockReserveAheadTicks);
    expect(r.failure).toBeNull();
  });

  it('never lowers the mark another process of the peer wrote on the same data dir (two processes, one id)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'clock-store-'));
    dirs.push(dir);
    const ahead = limits.clockReserveAheadTicks;
    const first = new ClockReservation({ store: new FileClockStore(dir), env: envAt(), log: silentLogger() });
    const second = new ClockReservation({ store: new FileClockStore(dir), env: envAt(), log: silentLogger() });
    first.reserve(1000);
    second.reserve(1000);
    first.reserve(5 * ahead); // the first process's clock jumped (a peer far ahead): its grants reach past 5 * ahead
    second.reserve(1000 + ahead); // the second one, far behind, comes near its own old mark
    const next = new FileClockStore(dir).load();
    expect(next).toBe(6 * ahead); // the next process starts above every clock either used
    expect(second.failure).toBeNull();
  });

  it('a write that fails (a directory in the way) stops new requests with ERR_STORAGE, retries, and clears when a write succeeds', () => {
    const dir = mkdtempSync(join(tmpdir(), 'clock-store-'));
    dirs.push(dir);
    const env = envAt();
    const r = new ClockReservation({ store: new FileClockStore(dir), env, log: silentLogger() });
    r.reserve(5);
    mkdirSync(join(dir, 'clock.json.tmp')); // openSync(tmp, 'w') fails: EISDIR
    const near = 5 + limits.clockReserveAheadTicks / 2 + 1;
    expect(() => r.reserve(near)).not.toThrow();
    expect(r.failure?.code).toBe('ERR_STORAGE');
    rmSync(join(dir, 'clock.json.tmp'), { recursive: true });
    r.reserve(near + 1); // within the retry interval, still below the mark on disk: not tried yet
    expect(r.failure?.code).toBe('ERR_STORAGE');
    env.mono += 1000;
    r.reserve(near + 2);
    expect(r.failure).toBeNull();
    expect(JSON.parse(readFileSync(join(dir, 'clock.json'), 'utf8'))).toEqual({ hwm: near + 2 + limits.clockReserveAheadTicks });
  });

  it('refuses a corrupt clock file with a coded error and a sentence', () => {
    const dir = mkdtempSync(join(tmpdir(), 'clock-store-'));
    dirs.push(dir);
    const store = new FileClockStore(dir);
    store.write(42);
    expect(store.load()).toBe(42);
    rmSync(join(dir, 'clock.json'));
    mkdirSync(join(dir, 'x'));
    expect(new FileClockStore(join(dir, 'missing')).load()).toBe(0);
  });
  it('refuses a clock past limits.clockValueMax (a host whose wall clock was far ahead) with what to do (issue 37)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'clock-store-'));
    dirs.push(dir);
    for (const hwm of [limits.clockValueMax + 1, 2 ** 53 + 2 ** 21]) {
      writeFileSync(join(dir, 'clock.json'), JSON.stringify({ hwm }));
      expect(() => new FileClockStore(dir).load()).toThrow(/past the largest clock a peer uses .*move those files away and start them again.*reset the fence/);
    }
    writeFileSync(join(dir, 'clock.json'), JSON.stringify({ hwm: limits.clockValueMax }));
    expect(new FileClockStore(dir).load()).toBe(limits.clockValueMax);
  });
});

describe('FileClockStore: the bounds of promises and echoes', () => {
  it('is 0 without a file, survives a new store on the same dir, and refuses a corrupt file with a coded error', () => {
    const dir = mkdtempSync(join(tmpdir(), 'clock-store-'));
    dirs.push(dir);
    expect(new FileClockStore(dir).loadBound('promise')).toBe(0);
    new FileClockStore(dir).writeBound('promise', 1_700_000_030_000);
    expect(new FileClockStore(dir).loadBound('promise')).toBe(1_700_000_030_000);
    expect(JSON.parse(readFileSync(join(dir, 'promise.json'), 'utf8'))).toEqual({ until_wall_ms: 1_700_000_030_000 });
    // The high-water mark lives in its own file: writing one leaves the other.
    new FileClockStore(dir).write(42);
    expect(new FileClockStore(dir).loadBound('promise')).toBe(1_700_000_030_000);
    writeFileSync(join(dir, 'promise.json'), '{"until_wall_ms": -1}');
    expect(() => new FileClockStore(dir).loadBound('promise')).toThrow(/promise\.json is corrupt/);
    // The echo bound has a file of its own: each kind is read and written apart.
    expect(new FileClockStore(dir).loadBound('echo')).toBe(0);
    new FileClockStore(dir).writeBound('echo', 1_700_000_040_000);
    expect(JSON.parse(readFileSync(join(dir, 'echo.json'), 'utf8'))).toEqual({ until_wall_ms: 1_700_000_040_000 });
    writeFileSync(join(dir, 'echo.json'), 'not json');
    expect(() => new FileClockStore(dir).loadBound('echo')).toThrow(/echo\.json is corrupt.*echoed a heartbeat/);
  });
});
