/**
 * The simulator as a test: thousands of seeds with no invariant violated, and every planted
 * bug caught within 300 seeds. Seeds start at SEED (default 1) and are printed, so any
 * failure reproduces with `npm run sim -- --seed <S> --seeds 1`.
 */
import { describe, expect, it } from 'vitest';
import type { MutantName } from './mutants.js';
import { mutantNames } from './mutants.js';
import type { RunResult } from './run.js';
import { runSeed } from './run.js';

const baseSeed = Number(process.env['SEED'] ?? 1);
const chunkSeeds = 500;
const chunks = 4;
const mutantSeedsMax = 300;

interface Batch {
  grants: number;
  failures: RunResult[];
}

function runSeeds(first: number, count: number, mutant?: MutantName, stopAtFirst = false, net: 'fifo' | 'link' = 'fifo'): Batch {
  const batch: Batch = { grants: 0, failures: [] };
  for (let seed = first; seed < first + count; seed++) {
    const result = runSeed(mutant === undefined ? { seed, net } : { seed, mutant, net });
    batch.grants += result.grants;
    if (result.violations.length === 0) continue;
    batch.failures.push(result);
    if (stopAtFirst) break;
  }
  return batch;
}

describe('deterministic simulator', () => {
  for (let chunk = 0; chunk < chunks; chunk++) {
    const first = baseSeed + chunk * chunkSeeds;
    it(`violates no invariant in seeds ${first}..${first + chunkSeeds - 1} and grants something`, () => {
      console.log(`reproduce with SEED=${baseSeed} (seeds ${first}..${first + chunkSeeds - 1})`);
      const batch = runSeeds(first, chunkSeeds);
      const firstFailure = batch.failures[0];
      if (firstFailure !== undefined) console.log(`seed ${firstFailure.seed}: ${firstFailure.violations.join('\n')}\nreproduce with: npm run sim -- --seed ${firstFailure.seed} --seeds 1`);
      expect(batch.failures.map((r) => r.seed)).toEqual([]);
      expect(batch.grants).toBeGreaterThan(chunkSeeds);
    });
  }

  it('keeps every invariant when connections also break at random under the real link (--net link)', () => {
    const first = baseSeed + 100_000;
    const count = 200;
    console.log(`reproduce with: npm run sim -- --seed ${first} --seeds ${count} --net link`);
    const batch = runSeeds(first, count, undefined, false, 'link');
    const firstFailure = batch.failures[0];
    if (firstFailure !== undefined) console.log(`seed ${firstFailure.seed}: ${firstFailure.violations.join('\n')}\nreproduce with: npm run sim -- --seed ${firstFailure.seed} --seeds 1 --net link`);
    expect(batch.failures.map((r) => r.seed)).toEqual([]);
    expect(batch.grants).toBeGreaterThan(count);
  });

  // Seeds that once found a safety bug (each named in the commit that fixed it), run on every
  // test whatever SEED says: with the same draws they replay the scenario that broke the core.
  const regressionSeeds: ReadonlyArray<{ seed: number; net: 'fifo' | 'link' }> = [
    { seed: 1371, net: 'fifo' },
    { seed: 150336, net: 'fifo' },
    { seed: 216761, net: 'fifo' },
    { seed: 248088, net: 'fifo' },
    { seed: 276422, net: 'fifo' },
    { seed: 101151, net: 'link' },
  ];
  it('keeps every invariant in the seeds that once found a bug', () => {
    const failed = regressionSeeds.flatMap(({ seed, net }) => {
      const result = runSeed({ seed, net });
      return result.violations.length === 0 ? [] : [`seed ${seed} (reproduce with: npm run sim -- --seed ${seed} --seeds 1${net === 'link' ? ' --net link' : ''}): ${result.violations[0] ?? ''}`];
    });
    expect(failed).toEqual([]);
  });

  it('replays a seed identically: same transcript, same grants', () => {
    const a = runSeed({ seed: baseSeed + 7, transcript: true });
    const b = runSeed({ seed: baseSeed + 7, transcript: true });
    expect(a.grants).toBeGreaterThan(0);
    expect(b.grants).toBe(a.grants);
    expect(b.transcript.lines()).toEqual(a.transcript.lines());
  });

  for (const mutant of mutantNames) {
    it(`catches the ${mutant} mutant within ${mutantSeedsMax} seeds`, () => {
      const batch = runSeeds(baseSeed, mutantSeedsMax, mutant, true);
      const caught = batch.failures[0];
      console.log(
        caught === undefined
          ? `mutant ${mutant}: NOT caught in seeds ${baseSeed}..${baseSeed + mutantSeedsMax - 1}`
          : `mutant ${mutant}: first failing seed ${caught.seed} (reproduce with: npm run sim -- --seed ${caught.seed} --seeds 1 --mutant ${mutant})\n  ${caught.violations[0] ?? ''}`,
      );
      expect(caught).toBeDefined();
    });
  }
});
