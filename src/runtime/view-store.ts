/**
 * The agreed view in the data dir (docs/reconfiguration.md, "Terms", P2, P8): `view.json`,
 * the chain of views this peer applied (oldest first, each the one after the last), its
 * acceptor state for the epoch after the newest, and its acceptor id, made once with the data
 * dir (F70: a voter whose id changed lost its disk and casts no vote). Written atomically
 * (data-dir.ts `replaceFileSync`) before the peer acts on what it records.
 *
 * A peer with a data dir keeps it from its first start (`agreedViewOf`): the view its config
 * file seeds, epoch 0, mirrored from the config at every start while no change was made (none
 * can be yet: docs/reconfiguration.md).
 */
import { join } from 'node:path';
import type { AcceptorState } from '../core/acceptor.js';
import { freshAcceptor } from '../core/acceptor.js';
import { isRecord } from '../core/types.js';
import type { AgreedView } from '../core/view.js';
import { canonicalView, firstView, isAgreedView } from '../core/view.js';
import { readDataFile, replaceFileSync } from '../data-dir.js';
import { ErrorCode, LockError } from '../errors.js';

/** What `view.json` holds. */
export interface ViewRecord {
  /** Random hex, made with the data dir. */
  readonly acceptorId: string;
  /** Views applied, oldest first; the last is the peer's view. */
  readonly chain: readonly AgreedView[];
  readonly acceptor: AcceptorState;
}

/** Views kept in the chain: enough to bring a peer that far behind up to date (P4). */
export const chainViewsMax = 64;

/** Where the record lives in a data dir. */
export function viewRecordPath(dataDir: string): string {
  return join(dataDir, 'view.json');
}

/** A record for a new data dir: `view` alone in the chain, nothing promised. */
export function newViewRecord(acceptorId: string, view: AgreedView): ViewRecord {
  return { acceptorId, chain: [view], acceptor: freshAcceptor(view.epoch + 1) };
}

/** The record with `view`, the one after its newest, appended (the oldest dropped past `chainViewsMax`), and nothing promised for the next epoch. */
export function withView(record: ViewRecord, view: AgreedView): ViewRecord {
  const last = record.chain[record.chain.length - 1];
  if (last === undefined || view.epoch !== last.epoch + 1) throw new LockError(ErrorCode.Storage, `view ${view.epoch} does not follow view ${last?.epoch ?? 'none'}`);
  return { ...record, chain: [...record.chain, view].slice(-chainViewsMax), acceptor: freshAcceptor(view.epoch + 1) };
}

function isAcceptorState(v: unknown): v is AcceptorState {
  if (!isRecord(v) || !Number.isSafeInteger(v['epoch'])) return false;
  const ballot = (b: unknown): boolean => isRecord(b) && Number.isSafeInteger(b['ts']) && Number.isSafeInteger(b['peer']);
  const accepted = v['accepted'];
  return (v['promised'] === null || ballot(v['promised'])) &&
    (accepted === null || (isRecord(accepted) && ballot(accepted['ballot']) && isAgreedView(accepted['view'])));
}

function isViewRecord(v: unknown): v is ViewRecord {
  if (!isRecord(v) || typeof v['acceptorId'] !== 'string' || !/^[0-9a-f]{16,64}$/.test(v['acceptorId'])) return false;
  const chain = v['chain'];
  if (!Array.isArray(chain) || chain.length === 0 || chain.length > chainViewsMax || !chain.every(isAgreedView)) return false;
  const linked = chain.every((view, i) => i === 0 || view.epoch === (chain[i - 1] as AgreedView).epoch + 1);
  return linked && isAcceptorState(v['acceptor']);
}

/** The record of `dataDir`; null for a data dir that has none yet. A damaged one is refused with what to do. */
export function loadViewRecord(dataDir: string): ViewRecord | null {
  const path = viewRecordPath(dataDir);
  const file = readDataFile(path);
  if (file === null) return null;
  const record = file.value;
  if (!isViewRecord(record)) {
    throw new LockError(ErrorCode.ConfigInvalid, `${path} is damaged: this peer cannot know which view of the cluster it agreed to. Do not delete it to start: add this host again as a new member (docs/reconfiguration.md P2, finding F70)`);
  }
  return record;
}

/**
 * The agreed view of the peer of `dataDir` at start: the record's newest view, made from the
 * config file on a new data dir (with a new acceptor id from `newId`). At epoch 0 the record
 * mirrors the config (its peers were checked equal by the cluster memory, addresses and level
 * are refreshed); a later epoch was made by a binary that changes views, which this one cannot
 * run with, and refuses the start.
 */
export function agreedViewOf(dataDir: string, peers: readonly { readonly id: string; readonly ws: string; readonly http: string }[], level: number, newId: () => string): AgreedView {
  const seeded = firstView(peers, level);
  const record = loadViewRecord(dataDir);
  const last = record?.chain[record.chain.length - 1];
  if (record !== null && last !== undefined && last.epoch > 0) {
    throw new LockError(ErrorCode.ConfigInvalid, `${viewRecordPath(dataDir)} records view epoch ${last.epoch}: the cluster's members were changed by a binary that changes them, and this one cannot run with that view. Run the binary that made it`);
  }
  if (record === null) writeViewRecord(dataDir, newViewRecord(newId(), seeded));
  // Refreshed, not replaced: the acceptor id and state stay (a promise must survive restarts).
  else if (last === undefined || canonicalView(last) !== canonicalView(seeded)) writeViewRecord(dataDir, { ...record, chain: [seeded] });
  return seeded;
}

/** Writes the record of `dataDir`, atomically and durably. */
export function writeViewRecord(dataDir: string, record: ViewRecord): void {
  replaceFileSync(dataDir, viewRecordPath(dataDir), `${JSON.stringify(record, null, 2)}\n`);
}
