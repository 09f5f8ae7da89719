/**
 * The offline recovery from a lost majority (docs/reconfiguration.md P10; docs/operations.md,
 * "Recover from a lost majority"): `lamport-peer --force-new-cluster` on one survivor rewrites its
 * data dir into a new cluster of which it is the only voter, as etcd's `--force-new-cluster`
 * and Consul's `peers.json` do. What it cannot do, it says: tokens stay above every token the
 * old cluster granted only if the clock of every host that granted is given (`--clock-from`),
 * and the lost hosts must be wiped or fenced first, since a new cluster does not stop the old
 * one granting (F73, F80).
 */
import { randomBytes } from 'node:crypto';
import { existsSync, statSync } from 'node:fs';
import { isRecord } from './core/types.js';
import { readDataFile } from './data-dir.js';
import { FileClockStore } from './runtime/clock-store.js';
import { loadViewRecord, recoveredRecord, writeViewRecord } from './runtime/view-store.js';
import { ErrorCode, LockError } from './errors.js';
import type { Logger } from './log.js';

/** The clock high-water mark in `path`: a data dir, or a `clock.json` copied from one (any name). */
function clockOf(path: string): number {
  if (existsSync(path) && statSync(path).isDirectory()) return new FileClockStore(path).load();
  const file = readDataFile(path);
  const hwm = file !== null && isRecord(file.value) ? file.value['hwm'] : undefined;
  if (typeof hwm !== 'number' || !Number.isSafeInteger(hwm) || hwm < 0) {
    throw new LockError(ErrorCode.ConfigInvalid, `--clock-from ${path}: ${file === null ? 'no such file or data dir' : 'not a clock.json ({"hwm": N})'}`);
  }
  return hwm;
}

/**
 * Rewrites `dataDir` into a new cluster with `self` its only voter, at protocol `level`, its
 * clock above its own and every clock of `clockFrom`. Returns the new cluster's lineage.
 */
export function forceNewCluster(dataDir: string, self: string, level: number, clockFrom: readonly string[], log: Logger): string {
  const record = loadViewRecord(dataDir);
  if (record === null) throw new LockError(ErrorCode.ConfigInvalid, `--force-new-cluster needs the data dir of a member: ${dataDir} records no agreed view`);
  // A flag left on a command line must not start yet another cluster at every restart.
  if (record.lineage !== undefined) {
    throw new LockError(ErrorCode.ConfigInvalid, `this data dir started a new cluster already (lineage ${record.lineage}): start it without --force-new-cluster. To recover that cluster from a lost majority in turn, delete the "lineage" field of ${dataDir}/view.json first`);
  }
  const lineage = randomBytes(8).toString('hex');
  const next = recoveredRecord(record, self, lineage, level);
  const store = new FileClockStore(dataDir);
  const floor = Math.max(store.load(), ...clockFrom.map(clockOf));
  store.write(floor);
  writeViewRecord(dataDir, next);
  log.error({ lineage, epoch: next.chain[0]?.epoch, clockFloor: floor, clocksGiven: clockFrom.length },
    `started a new cluster from a lost majority with ${self} its only voter (lineage ${lineage}). Wipe or fence every lost host before it can run again: the old cluster is not stopped by this one. Add the others back as new members (lamport-lock member add, lamport-peer --join)`);
  if (clockFrom.length === 0) {
    log.error({ clockFloor: floor }, 'no --clock-from given: tokens of the new cluster are above this host\'s own clock only, and may be below tokens the lost hosts granted');
  }
  return lineage;
}
