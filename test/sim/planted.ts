/**
 * Plants a mutant (test/sim/mutants.ts) the way test/sim/mutate.ts plants its random ones:
 * the built code (dist/src and dist/test) is copied to a temporary directory, the mutant's
 * patches are applied to the copy, and the simulator's modules are imported from there. The
 * production code, and the build everyone else runs, never change. One copy per mutant and
 * process, removed when the process exits (or by `dropPlanted`).
 *
 * Tests run TypeScript sources, but a patch applies to built JS: `npm test` builds first; run
 * `npm run build` before `vitest run test/sim` after changing src/.
 */
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { MutantName, Patch } from './mutants.js';
import type * as Run from './run.js';
import type * as Scenarios from './scenarios.js';
import { patchesOf } from './mutants.js';

/** The simulator's modules, as the plain build or a patched copy of it has them. */
export interface Sim {
  readonly run: typeof Run;
  readonly scenarios: typeof Scenarios;
}

/** The dist/ directory of this checkout (this file runs from test/sim or from dist/test/sim). */
export function distDir(): string {
  const up = fileURLToPath(new URL('../../', import.meta.url));
  const dist = basename(up) === 'dist' ? up : join(up, 'dist');
  if (!existsSync(join(dist, 'test', 'sim', 'run.js'))) {
    throw new Error(`planted bugs patch the built code, and ${join(dist, 'test', 'sim', 'run.js')} is missing: run \`npm run build\` first (npm test does)`);
  }
  return dist;
}

/** `from` as a pattern in which each run of whitespace matches any run of whitespace. */
function patternOf(from: string): RegExp {
  const words = from.trim().split(/\s+/).map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
  return new RegExp(words.join('\\s+'), 'g');
}

/** How often `patch.from` occurs in `text`. */
export function occurrences(text: string, patch: Patch): number {
  return [...text.matchAll(patternOf(patch.from))].length;
}

/** `text` with `patch` applied; throws unless its `from` occurs exactly once. */
export function applyPatch(text: string, patch: Patch): string {
  const n = occurrences(text, patch);
  if (n !== 1) throw new Error(`patch of ${patch.file}: \`${patch.from}\` occurs ${n} times in the build, not once: fix the patch in test/sim/mutants.ts`);
  return text.replace(patternOf(patch.from), () => patch.to);
}

/**
 * Throws when a patched file's TypeScript source is newer than its build: the patch would
 * plant the bug in stale code (tests run the sources, the mutant the build).
 */
function checkFresh(dist: string, file: string): void {
  const source = join(dist, '..', file.replace(/\.js$/, '.ts'));
  const built = join(dist, file);
  if (existsSync(source) && statSync(source).mtimeMs > statSync(built).mtimeMs) {
    throw new Error(`${built} is older than ${source}: run \`npm run build\` before planting a bug in it`);
  }
}

const copies = new Map<string, string>();
let cleanupArmed = false;

/** A temporary copy of dist/ with `patches` applied, made once per process; its root directory. */
export function patchedCopy(patches: readonly Patch[]): string {
  const key = JSON.stringify(patches);
  const cached = copies.get(key);
  if (cached !== undefined) return cached;
  const dist = distDir();
  const dir = mkdtempSync(join(tmpdir(), 'lamport-planted-'));
  if (!cleanupArmed) {
    cleanupArmed = true;
    process.on('exit', () => {
      for (const d of copies.values()) rmSync(d, { recursive: true, force: true });
    });
  }
  copies.set(key, dir);
  const filter = (src: string): boolean => !src.endsWith('.d.ts');
  cpSync(join(dist, 'src'), join(dir, 'dist', 'src'), { recursive: true, filter });
  cpSync(join(dist, 'test'), join(dir, 'dist', 'test'), { recursive: true, filter });
  cpSync(join(dist, '..', 'package.json'), join(dir, 'package.json'));
  symlinkSync(join(dist, '..', 'node_modules'), join(dir, 'node_modules'));
  // The source maps name the TypeScript beside dist/: stack traces show its lines.
  symlinkSync(join(dist, '..', 'src'), join(dir, 'src'));
  symlinkSync(join(dist, '..', 'test'), join(dir, 'test'));
  for (const patch of patches) {
    checkFresh(dist, patch.file);
    const target = join(dir, 'dist', patch.file);
    writeFileSync(target, applyPatch(readFileSync(target, 'utf8'), patch));
  }
  return dir;
}

/** Removes every copy this process made (they are removed at its exit anyway). */
export function dropPlanted(): void {
  for (const d of copies.values()) rmSync(d, { recursive: true, force: true });
  copies.clear();
}

/** One built module (`file` under dist/, e.g. `src/core/membership.js`) with `patches` applied. */
export async function patchedModule<T>(patches: readonly Patch[], file: string): Promise<T> {
  return (await import(pathToFileURL(join(patchedCopy(patches), 'dist', file)).href)) as T;
}

/** One built module with a mutant planted: unit tests of what a planted bug does. */
export function plantedModule<T>(mutant: MutantName, file: string): Promise<T> {
  return patchedModule<T>(patchesOf(mutant), file);
}

/** The simulator's modules: this build's without a mutant, a patched copy's with one. */
export async function simFor(mutant?: MutantName): Promise<Sim> {
  if (mutant === undefined) return { run: await import('./run.js'), scenarios: await import('./scenarios.js') };
  const [run, scenarios] = await Promise.all([
    plantedModule<Sim['run']>(mutant, 'test/sim/run.js'),
    plantedModule<Sim['scenarios']>(mutant, 'test/sim/scenarios.js'),
  ]);
  return { run, scenarios };
}
