/**
 * The simulator as a test, on the production runtime: a thousand seeds with no invariant
 * violated, seeds with random connection breaks, determinism, and every planted bug caught
 * by the seed recorded for it, which passes without the bug: each regression seed is proven
 * to fail when its fix is reverted. Seeds start at SEED (default 1) and are printed, so any
 * failure reproduces with `npm run sim -- --seed <S> --seeds 1`. The full mutation table
 * (every mutant within 2000 seeds) is `npm run sim -- --mutants`.
 */
import { describe, expect, it } from 'vitest';
import type { MutantName } from './mutants.js';
import { mutantNames } from './mutants.js';
import type { RunResult } from './run.js';
import { runSeed } from './run.js';

const baseSeed = Number(process.env['SEED'] ?? 1);
const chunkSeeds = 250;
const chunks = 4;

interface Batch {
  grants: number;
  failures: RunResult[];
}

function runSeeds(first: number, count: number, net: 'fifo' | 'link' = 'fifo'): Batch {
  const batch: Batch = { grants: 0, failures: [] };
  for (let seed = first; seed < first + count; seed++) {
    const result = runSeed({ seed, net });
    batch.grants += result.grants;
    if (result.violations.length > 0) batch.failures.push(result);
  }
  return batch;
}

function report(batch: Batch, net: 'fifo' | 'link'): void {
  const first = batch.failures[0];
  if (first !== undefined) console.log(`seed ${first.seed}: ${first.violations.join('\n')}\nreproduce with: npm run sim -- --seed ${first.seed} --seeds 1${net === 'link' ? ' --net link' : ''}`);
}

/**
 * For every mutant, a seed that catches it (the first one `npm run sim -- --mutants` found):
 * the regression seeds. The fixes these mutants revert were each found by a seed of the
 * simulator or of the fault test (named in the mutant's doc comment and the fix's commit).
 */
const regressionSeeds: Readonly<Record<MutantName, { seed: number; net?: 'link' }>> = {
  'ack-ge': { seed: 56 },
  'no-fifo': { seed: 1 },
  'clock-reset': { seed: 1 },
  'no-state-transfer': { seed: 1 },
  'bad-tiebreak': { seed: 2 },
  'semaphore-overcount': { seed: 2 },
  'no-self-fence': { seed: 7 },
  'accept-evicted': { seed: 2 },
  'synced-on-handshake': { seed: 127 },
  'issue-without-lease': { seed: 56 },
  'keep-waiters-on-lease-loss': { seed: 242 },
  'evict-unmet-incarnation': { seed: 607 },
  'ack-while-unsynced': { seed: 1 },
  'evict-without-majority': { seed: 1 },
  'confirm-from-arrival': { seed: 1 },
  'echo-despite-promise': { seed: 1 },
  'hb-clock-while-pending': { seed: 1 },
  'forget-predecessor': { seed: 1 },
  'no-lease-check-before-event': { seed: 1 },
  'lease-from-arrival': { seed: 1 },
  'no-suspend-detect': { seed: 1 },
};

describe('deterministic simulator on the production runtime', () => {
  for (let chunk = 0; chunk < chunks; chunk++) {
    const first = baseSeed + chunk * chunkSeeds;
    it(`violates no invariant in seeds ${first}..${first + chunkSeeds - 1} and grants something`, () => {
      console.log(`reproduce with SEED=${baseSeed} (seeds ${first}..${first + chunkSeeds - 1})`);
      const batch = runSeeds(first, chunkSeeds);
      report(batch, 'fifo');
      expect(batch.failures.map((r) => r.seed)).toEqual([]);
      expect(batch.grants).toBeGreaterThan(chunkSeeds);
    });
  }

  it('keeps every invariant when connections also break at random (--net link)', () => {
    const first = baseSeed + 100_000;
    const count = 150;
    console.log(`reproduce with: npm run sim -- --seed ${first} --seeds ${count} --net link`);
    const batch = runSeeds(first, count, 'link');
    report(batch, 'link');
    expect(batch.failures.map((r) => r.seed)).toEqual([]);
    expect(batch.grants).toBeGreaterThan(count);
  });

  it('replays a seed identically: same transcript, same grants', () => {
    const a = runSeed({ seed: baseSeed + 7, transcript: true });
    const b = runSeed({ seed: baseSeed + 7, transcript: true });
    expect(a.grants).toBeGreaterThan(0);
    expect(b.grants).toBe(a.grants);
    expect(b.transcript.lines()).toEqual(a.transcript.lines());
  });

  for (const mutant of mutantNames) {
    const { seed, net = 'fifo' } = regressionSeeds[mutant];
    it(`regression seed ${seed} fails with the ${mutant} mutant and passes without it`, () => {
      const planted = runSeed({ seed, net, mutant });
      console.log(`mutant ${mutant}, seed ${seed}: ${planted.violations[0] ?? 'NOT caught'} (reproduce with: npm run sim -- --seed ${seed} --seeds 1 --mutant ${mutant})`);
      expect(planted.violations.length).toBeGreaterThan(0);
      expect(runSeed({ seed, net }).violations).toEqual([]);
    });
  }
});
