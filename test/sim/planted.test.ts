/**
 * The planted bugs stay plantable: each mutant's patches (test/sim/mutants.ts) still apply
 * to the build, each exactly once, and change it. That each is still caught is shown by its
 * regression seed (test/sim/sim.test.ts) or its scripted scenario (test/sim/scenarios.test.ts).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { mutantNames, patchesOf } from './mutants.js';
import { applyPatch, distDir, dropPlanted, occurrences, patchedCopy } from './planted.js';

afterAll(dropPlanted);

describe('planted bugs', () => {
  const dist = distDir();
  const built = (file: string): string => readFileSync(join(dist, file), 'utf8');

  for (const mutant of mutantNames) {
    it(`${mutant}: each patch applies to the build exactly once and changes it`, () => {
      const texts = new Map<string, string>();
      for (const patch of patchesOf(mutant)) {
        const before = texts.get(patch.file) ?? built(patch.file);
        expect(occurrences(before, patch), `\`${patch.from}\` in dist/${patch.file}`).toBe(1);
        const after = applyPatch(before, patch);
        expect(after).not.toBe(before);
        texts.set(patch.file, after);
      }
      expect(texts.size).toBeGreaterThan(0);
    });
  }

  it('matches a patch across the line breaks and indentation tsc writes', () => {
    const text = 'if (a)\n        return [];\n';
    expect(applyPatch(text, { file: 'x.js', from: 'if (a) return [];', to: '' })).toBe('\n');
  });

  it('refuses a patch whose text is gone or occurs twice, naming the file and the text', () => {
    expect(() => applyPatch('a; b;', { file: 'src/core/x.js', from: 'c;', to: '' })).toThrow(/patch of src\/core\/x\.js: `c;` occurs 0 times/);
    expect(() => applyPatch('a; a;', { file: 'src/core/x.js', from: 'a;', to: '' })).toThrow(/occurs 2 times/);
  });

  it('plants a mutant in a copy of the build and leaves the build as it was', () => {
    const [patch] = patchesOf('ack-ge');
    if (patch === undefined) throw new Error('ack-ge has a patch');
    const copy = patchedCopy(patchesOf('ack-ge'));
    expect(readFileSync(join(copy, 'dist', patch.file), 'utf8')).toBe(applyPatch(built(patch.file), patch));
    expect(occurrences(built(patch.file), patch)).toBe(1);
  });
});
