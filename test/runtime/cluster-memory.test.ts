/**
 * The cluster shape a data dir remembers (src/cluster-memory.ts): read back as written, and a
 * damaged file refused with what to do, whatever it holds.
 */
import { writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { useTempDirs } from '../support/temp-dirs.js';
import { clusterMemoryPath, loadClusterMemory } from '../../src/cluster-memory.js';

const dataDir = useTempDirs('cluster-memory');

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
