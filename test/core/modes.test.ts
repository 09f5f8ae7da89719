/**
 * The mode rules against a brute-force reference written straight from docs/design.md section 3,
 * and the early-stop rule `blocksAll` against its meaning: once it holds, no extension of
 * the prefix admits any request.
 */
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import type { Ahead } from '../../src/core/modes.js';
import { addAhead, admits, blocksAll, emptyAhead } from '../../src/core/modes.js';
import type * as Modes from '../../src/core/modes.js';
import type { QueuedRequest } from '../../src/core/types.js';
import { testSeed } from '../support/seed.js';
import { dropPlanted, plantedModule } from '../sim/planted.js';

const requestArb: fc.Arbitrary<QueuedRequest> = fc
  .record({
    mode: fc.constantFrom('exclusive' as const, 'shared' as const, 'semaphore' as const),
    limit: fc.integer({ min: 1, max: 6 }),
    permits: fc.integer({ min: 1, max: 3 }),
  })
  .map(({ mode, limit, permits }) => ({
    lock: 'l',
    ts: 0,
    peer: 0,
    mode,
    limit: mode === 'semaphore' ? limit : 1,
    permits: mode === 'semaphore' ? permits : 1,
    owner: '',
    meta: null,
    requestedAtMs: 0,
  }));

/** docs/design.md section 3, literally: the rule for `r` over the requests ahead of it. */
function reference(r: QueuedRequest, ahead: readonly QueuedRequest[]): boolean {
  switch (r.mode) {
    case 'exclusive':
      return ahead.length === 0;
    case 'shared':
      return ahead.every((a) => a.mode === 'shared');
    case 'semaphore':
      return ahead.every((a) => a.mode === 'semaphore') && ahead.reduce((s, a) => s + a.permits, 0) + r.permits <= r.limit;
  }
}

function fold(requests: readonly QueuedRequest[]): Ahead {
  const ahead = emptyAhead();
  for (const r of requests) addAhead(ahead, r);
  return ahead;
}

// The patched copies of the build the planted bugs ran in (test/sim/planted.ts).
afterAll(dropPlanted);

describe('mode rules (property)', () => {
  it('admits exactly what the brute-force reference admits', () => {
    const seed = testSeed('admits vs reference');
    fc.assert(
      fc.property(fc.array(requestArb, { maxLength: 8 }), requestArb, (ahead, r) => {
        expect(admits(r, fold(ahead))).toBe(reference(r, ahead));
      }),
      { seed, numRuns: 2000 },
    );
  });

  it('the semaphore-overcount mutant admits one permit too many, and nothing else changes', async () => {
    const seed = testSeed('semaphore overcount');
    const planted = await plantedModule<typeof Modes>('semaphore-overcount', 'src/core/modes.js');
    fc.assert(
      fc.property(fc.array(requestArb, { maxLength: 8 }), requestArb, (ahead, r) => {
        const faulty = planted.admits(r, fold(ahead));
        const widened = r.mode === 'semaphore' ? reference({ ...r, limit: r.limit + 1 }, ahead) : reference(r, ahead);
        expect(faulty).toBe(widened);
      }),
      { seed, numRuns: 1000 },
    );
  });

  it('blocksAll means no extension of the prefix admits anything', () => {
    const seed = testSeed('blocksAll');
    fc.assert(
      fc.property(fc.array(requestArb, { maxLength: 8 }), fc.array(requestArb, { maxLength: 4 }), requestArb, (prefix, more, r) => {
        fc.pre(blocksAll(fold(prefix)));
        expect(reference(r, [...prefix, ...more])).toBe(false);
      }),
      { seed, numRuns: 500 },
    );
  });

  it('a semaphore request with limit 3 is admitted behind 2 permits of a limit-6 holder, not behind 3', () => {
    const sem = (limit: number, permits: number): QueuedRequest => ({ lock: 'l', ts: 0, peer: 0, mode: 'semaphore', limit, permits, owner: '', meta: null, requestedAtMs: 0 });
    expect(admits(sem(3, 1), fold([sem(6, 2)]))).toBe(true);
    expect(admits(sem(3, 1), fold([sem(6, 3)]))).toBe(false);
    expect(admits(sem(6, 1), fold([sem(3, 3)]))).toBe(true);
  });
});
