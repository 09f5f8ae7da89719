/**
 * The cluster shape a data dir last ran with (docs/design.md section 4, "One agreed cluster"):
 * `cluster-shape.json` beside the clock. A peer restarted with a config whose shape differs refuses
 * to start (ERR_CONFIG_INVALID, exit 2), naming what differs: an old peer list put back on a
 * host, or the file of another cluster, never starts a peer that would count majorities of
 * another member set. A change made on purpose (every peer stopped, every host's file
 * changed) starts with `--accept-config-change`, which records the new shape.
 *
 * The shape's `protocol` is the level the peer runs at (transport/codec.ts `protocolLevels`):
 * a data dir keeps its level across restarts and binaries (`runningLevel`), so a binary that
 * speaks a range can replace an older one without a config change.
 */
import { join } from 'node:path';
import { readDataFile, replaceFileSync } from './data-dir.js';
import { isRecord } from './core/types.js';
import type { ClusterShape } from './cluster-shape.js';
import { fingerprintOf, isClusterShape, shapeDifferences } from './cluster-shape.js';
import { ErrorCode, LockError } from './errors.js';
import type { ProtocolLevels } from './transport/codec.js';
import { levelsText, speaks } from './transport/codec.js';

/** Where the shape lives in a data dir. */
export function clusterMemoryPath(dataDir: string): string {
  return join(dataDir, 'cluster-shape.json');
}

/** The shape this data dir last ran with; null when none was recorded (a new data dir, or one of an older version). */
export function loadClusterMemory(dataDir: string): ClusterShape | null {
  const path = clusterMemoryPath(dataDir);
  const file = readDataFile(path);
  if (file === null) return null;
  const shape = isRecord(file.value) ? file.value['shape'] : undefined;
  if (!isClusterShape(shape)) throw new LockError(ErrorCode.ConfigInvalid, `${path} is corrupt: remove it to start with the config file's cluster as it is`);
  return shape;
}

/**
 * The protocol level a peer of this data dir runs at: the one it recorded; for a new data dir
 * (or none), the level of the cluster it is `joining`, else the newest of `levels`. With
 * `raise` (`--accept-config-change`: every peer stopped, every host changed on purpose), a
 * recorded level this binary speaks is raised to its newest. Throws ERR_CONFIG_INVALID when this binary
 * does not speak the recorded level: a restart alone never changes a peer's level.
 */
export function runningLevel(dataDir: string | undefined, levels: ProtocolLevels, joining?: number, raise = false): number {
  return levelToRun(dataDir === undefined ? null : loadClusterMemory(dataDir), levels, joining, raise);
}

/** `runningLevel` on the shape a data dir recorded (null: none); the simulator's hosts keep theirs on a virtual disk. */
export function levelToRun(before: Pick<ClusterShape, 'protocol'> | null, levels: ProtocolLevels, joining?: number, raise = false): number {
  if (before === null && joining !== undefined && !speaks(levels, joining)) {
    throw new LockError(ErrorCode.ConfigInvalid, `the cluster this host joins runs protocol level ${joining}; this binary speaks levels ${levelsText(levels)}: run a binary that speaks it`);
  }
  if (before === null) return joining ?? levels.newest;
  if (!speaks(levels, before.protocol)) {
    throw new LockError(ErrorCode.ConfigInvalid,
      `this peer's data dir runs protocol level ${before.protocol}; this binary speaks levels ${levelsText(levels)}. Run a binary that speaks level ${before.protocol} on this host: a level is raised only through the cluster (or with every peer stopped and --accept-config-change), never by a restart (docs/operations.md, "Protocol levels")`,
      { problems: [`the data dir runs protocol level ${before.protocol}; this binary speaks levels ${levelsText(levels)}`] });
  }
  // Raised only from a level this binary speaks: a data dir it does not know stays refused.
  return raise ? levels.newest : before.protocol;
}

/**
 * Refuses a start whose shape differs from the one the data dir last ran with (unless
 * `accept`), then records `shape`. Throws ERR_CONFIG_INVALID with the differences. The data
 * dir exists and is writable (data-dir.ts checked it first).
 */
export function checkClusterMemory(dataDir: string, shape: ClusterShape, accept: boolean): void {
  const before = loadClusterMemory(dataDir);
  if (before !== null && !accept && fingerprintOf(before) !== fingerprintOf(shape)) {
    const differences = shapeDifferences(shape, before, 'the config this data dir last ran with');
    throw new LockError(ErrorCode.ConfigInvalid,
      `this config differs from the one this peer's data dir last ran with (${differences.join('; ')}). A peer of a changed config would count majorities of another member set than its peers. If the members were changed while this peer was down (lamport-lock member ...), put back the file it last ran with: it learns the members from the others. If every host's file was changed on purpose with every peer stopped, start each with --accept-config-change`,
      { problems: differences });
  }
  const path = clusterMemoryPath(dataDir);
  try {
    replaceFileSync(dataDir, path, `${JSON.stringify({ fingerprint: fingerprintOf(shape), shape }, null, 2)}\n`);
  } catch (err) {
    throw new LockError(ErrorCode.ConfigInvalid, `cannot write ${path}: ${(err as Error).message}`);
  }
}
