/**
 * The cluster shape a data dir remembers (src/cluster-memory.ts): read back as written, and a
 * damaged file refused with what to do, whatever it holds.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { clusterMemoryPath, loadClusterMemory } from '../../src/cluster-memory.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function dataDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'cluster-memory-'));
  dirs.push(d);
  return d;
}

describe('cluster memory', () => {
  it('has nothing for a new data dir', () => {
    expect(loadClusterMemory(dataDir())).toBeNull();
  });

  it('refuses a damaged file with what to do, JSON that is not an object included', () => {
    const dir = dataDir();
    for (const text of ['{"shape":', 'null', '[]', '"x"', '{"shape": 3}']) {
      writeFileSync(clusterMemoryPath(dir), text);
      expect(() => loadClusterMemory(dir)).toThrow(/is corrupt: remove it/);
    }
  });
});
