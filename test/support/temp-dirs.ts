/**
 * Temporary data dirs for tests: each made under the OS temp dir, all removed after each test.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach } from 'vitest';

/** Registers the cleanup in the calling test file; the returned function makes one dir named `prefix-...`. */
export function useTempDirs(prefix: string): () => string {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });
  return () => {
    const d = mkdtempSync(join(tmpdir(), `${prefix}-`));
    dirs.push(d);
    return d;
  };
}
