/**
 * ParkedSockets (src/http/parked-sockets.ts) with virtual timers and sockets that record
 * whether they are read: past `liveMax` waiting connections the rest are paused, and a sweep
 * reads at most `sweepSocketsMax` of them for one turn, so a burst of clients leaving brings
 * at most that many ends into one turn.
 */
import { describe, expect, it } from 'vitest';
import type { Timer } from '../../src/env.js';
import { ParkedSockets } from '../../src/http/parked-sockets.js';
import type { ParkingClock } from '../../src/http/parked-sockets.js';

class FakeSocket {
  reading = true;
  pause(): void {
    this.reading = false;
  }
  resume(): void {
    this.reading = true;
  }
}

/**
 * Timers run by hand: `tick` advances the clock by `ms` (the interval, on time, by default)
 * and fires every interval once, `endTurn` runs the end-of-turn tasks.
 */
class ManualParkingClock implements ParkingClock {
  readonly intervals = new Map<number, () => void>();
  #turnEnd: Array<() => void> = [];
  #next = 1;
  #now = 0;
  now(): number {
    return this.#now;
  }
  every(_ms: number, fn: () => void): Timer {
    const id = this.#next++;
    this.intervals.set(id, fn);
    return id as unknown as Timer;
  }
  soon(fn: () => void): void {
    this.#turnEnd.push(fn);
  }
  clear(timer: Timer | null): void {
    if (timer !== null) this.intervals.delete(timer as unknown as number);
  }
  tick(ms = 50): void {
    this.#now += ms;
    for (const fn of [...this.intervals.values()]) fn();
  }
  endTurn(): void {
    const fns = this.#turnEnd;
    this.#turnEnd = [];
    for (const fn of fns) fn();
  }
}

function setup(liveMax = 2, sweepSocketsMax = 3, sweepSocketsMin = sweepSocketsMax, count = 10): { clock: ManualParkingClock; parked: ParkedSockets; sockets: FakeSocket[] } {
  const clock = new ManualParkingClock();
  const parked = new ParkedSockets({ liveMax, sweepSocketsMin, sweepSocketsMax, sweepEveryMs: 50, lateMs: 25, clock });
  const sockets = Array.from({ length: count }, () => new FakeSocket());
  for (const s of sockets) parked.park(s);
  return { clock, parked, sockets };
}

const reading = (sockets: readonly FakeSocket[]): number => sockets.filter((s) => s.reading).length;

describe('ParkedSockets', () => {
  it('reads the first liveMax waiting connections as usual and pauses the rest', () => {
    const { parked, sockets, clock } = setup();
    expect(sockets.map((s) => s.reading)).toEqual([true, true, false, false, false, false, false, false, false, false]);
    expect(parked.parkedCount).toBe(8);
    expect(clock.intervals.size).toBe(1);
  });

  it('reads at most sweepSocketsMax parked connections per sweep, for one turn, and each in its turn', () => {
    const { parked, sockets, clock } = setup();
    const seen = new Set<FakeSocket>();
    for (let sweep = 0; sweep < 3; sweep++) {
      clock.tick();
      const read = sockets.slice(2).filter((s) => s.reading);
      expect(read).toHaveLength(sweep < 2 ? 3 : 2 + 1); // 8 parked: 3, 3, then the last 2 and the first again.
      for (const s of read) seen.add(s);
      clock.endTurn();
      expect(reading(sockets)).toBe(2);
    }
    expect(seen.size).toBe(8);
    expect(parked.parkedCount).toBe(8);
  });

  it('reads a parked connection again, and keeps reading it, once its request is answered or it closed', () => {
    const { parked, sockets, clock } = setup();
    const answered = sockets[5] as FakeSocket;
    parked.unpark(answered);
    expect(answered.reading).toBe(true);
    clock.tick();
    clock.endTurn();
    expect(answered.reading).toBe(true);
    expect(parked.parkedCount).toBe(7);
  });

  it('stops sweeping when nothing is parked, and reads everything again on close', () => {
    const { parked, sockets, clock } = setup();
    for (const s of sockets.slice(2, 6)) parked.unpark(s);
    parked.close();
    expect(reading(sockets)).toBe(10);
    expect(clock.intervals.size).toBe(0);
    const again = setup();
    for (const s of again.sockets) again.parked.unpark(s);
    expect(again.clock.intervals.size).toBe(0);
  });

  it('paces the sweeps: plus the minimum after one on time that found clients gone, half after a late one, within min and max', () => {
    const { parked, sockets, clock } = setup(0, 16, 4, 200);
    const gone = new Set<FakeSocket>();
    const sweep = (ms = 50): FakeSocket[] => {
      clock.tick(ms);
      const read = sockets.filter((s) => s.reading && !gone.has(s));
      clock.endTurn();
      return read;
    };
    const leave = (read: FakeSocket[]): void => {
      for (const s of read) {
        gone.add(s);
        parked.unpark(s); // its client left: the HTTP API unparks on close
      }
    };
    expect(parked.sweepSize).toBe(4);
    // Nobody leaves: the size stays.
    sweep();
    sweep();
    expect(parked.sweepSize).toBe(4);
    // Each sweep on time whose clients left grows the next by 4, up to 16.
    const sizes: number[] = [];
    for (let i = 0; i < 6; i++) {
      const read = sweep();
      sizes.push(read.length);
      leave(read);
    }
    expect(sizes).toEqual([4, 8, 12, 16, 16, 16]);
    // A late sweep (the loop was busy) halves, down to the minimum.
    const late: number[] = [];
    for (let i = 0; i < 4; i++) {
      const read = sweep(50 + 26);
      late.push(read.length);
      leave(read);
    }
    expect(late).toEqual([8, 4, 4, 4]);
    // On time again, it grows back.
    const back = sweep();
    expect(back).toHaveLength(8);
    leave(back);
    expect(sweep()).toHaveLength(12);
  });
});
