/**
 * No import cycle among the files of src/, type-only imports included (docs/architecture.md
 * section 1): the parts import one way, and within a part no two files lean on each other.
 * ESLint's boundaries forbid imports across parts; this catches a circle inside one (the mesh
 * once had one through `MeshStats`).
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const src = resolve(dirname(fileURLToPath(import.meta.url)), '../../src');

function tsFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return tsFiles(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

/** Each file's relative imports and re-exports that resolve to a file of src/. */
function importGraph(files: readonly string[]): Map<string, string[]> {
  const known = new Set(files);
  return new Map(files.map((file) => {
    const text = readFileSync(file, 'utf8');
    const targets = [...text.matchAll(/^(?:import|export)\b[^'"]*?from '(\.[^']+)'/gm)]
      .map((m) => resolve(dirname(file), (m[1] ?? '').replace(/\.js$/, '.ts')))
      .filter((t) => known.has(t));
    return [file, targets];
  }));
}

/** Every cycle a depth-first walk meets, as `a.ts -> b.ts -> a.ts`. */
function cycles(graph: ReadonlyMap<string, readonly string[]>): string[] {
  const found: string[] = [];
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (file: string): void => {
    state.set(file, 'open');
    stack.push(file);
    for (const next of graph.get(file) ?? []) {
      if (state.get(next) === 'open') found.push([...stack.slice(stack.indexOf(next)), next].map((f) => relative(src, f)).join(' -> '));
      else if (!state.has(next)) visit(next);
    }
    stack.pop();
    state.set(file, 'done');
  };
  for (const file of graph.keys()) if (!state.has(file)) visit(file);
  return found;
}

describe('imports of src/', () => {
  it('form no cycle, type-only imports included', () => {
    const graph = importGraph(tsFiles(src));
    expect(graph.size).toBeGreaterThan(40);
    expect([...graph.values()].flat().length).toBeGreaterThan(100);
    expect(cycles(graph)).toEqual([]);
  });

  it('the walk finds a cycle when there is one', () => {
    const graph = new Map([[join(src, 'a.ts'), [join(src, 'b.ts')]], [join(src, 'b.ts'), [join(src, 'a.ts')]]]);
    expect(cycles(graph)).toEqual(['a.ts -> b.ts -> a.ts']);
  });
});
