/**
 * The agreed view in the data dir (docs/reconfiguration.md, "Terms", P2, P8): `view.json`,
 * the chain of views this peer applied (oldest first, each the one after the last), its
 * acceptor state for the epoch after the newest, and its acceptor id, made once with the data
 * dir (F70: a voter whose id changed lost its disk and casts no vote). Written atomically
 * (data-dir.ts `replaceFileSync`) before the peer acts on what it records.
 *
 * A peer with a data dir keeps it from its first start (`agreedViewOf`): the view its config
 * file seeds, epoch 0, mirrored from the config at every start while no change was made; the
 * runtime appends each view its core applies and each acceptor state (`ViewStore`).
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type { AcceptorState } from '../core/acceptor.js';
import { freshAcceptor } from '../core/acceptor.js';
import { isRecord } from '../core/types.js';
import type { AgreedView } from '../core/view.js';
import { canonicalView, firstView, isAgreedView } from '../core/view.js';
import { readDataFile, replaceFileSync } from '../data-dir.js';
import { ErrorCode, LockError } from '../errors.js';
import { limits } from '../limits.js';
import type { ProtocolLevels } from '../transport/codec.js';
import { isAcceptorId, levelsText, speaks } from '../transport/codec.js';

/** What `view.json` holds. */
export interface ViewRecord {
  /** Random hex, made with the data dir. */
  readonly acceptorId: string;
  /** Views applied, oldest first; the last is the peer's view. */
  readonly chain: readonly AgreedView[];
  readonly acceptor: AcceptorState;
  /**
   * The ids of the cluster's first view in ordinal order: with the name and the timings, the
   * cluster's identity that every link checks (src/cluster-shape.ts), whoever the members are
   * now (docs/reconfiguration.md P4, F75). A host added later is given them (`JoinTicket`).
   */
  readonly founders: readonly string[];
  /** Set by a recovery from a lost majority (`recoveredRecord`): the cluster's new lineage (ClusterShape.lineage). */
  readonly lineage?: string;
  /**
   * The acceptor id each member (by ordinal, never given twice) told this peer first
   * (docs/reconfiguration.md P2, F70, F76): a member that tells another one later runs on
   * another data dir, and its votes count for nothing.
   */
  readonly acceptorIds?: Readonly<Record<string, string>>;
}

/** What a host added to the cluster starts from (`lamport-peer --join`): printed by `lamport-lock member add`. */
export interface JoinTicket {
  readonly cluster: string;
  readonly founders: readonly string[];
  readonly lineage?: string;
  /**
   * The protocol level of the cluster's shape, which every link checks (ClusterShape.protocol):
   * the founding one, below the view's once a raise ran (docs/reconfiguration.md P9). Absent in
   * tickets of builds before raises: the view's level, then equal to it.
   */
  readonly shapeLevel?: number;
  /** The view that added it, as a learner. */
  readonly view: AgreedView;
}

/** Views kept in the chain: enough to bring a peer that far behind up to date (P4). */
export const chainViewsMax = 64;

/** Where the record lives in a data dir. */
export function viewRecordPath(dataDir: string): string {
  return join(dataDir, 'view.json');
}

/** A record for a new data dir: `view` alone in the chain, nothing promised. */
export function newViewRecord(acceptorId: string, view: AgreedView, founders: readonly string[] = view.members.map((m) => m.id)): ViewRecord {
  return { acceptorId, chain: [view], acceptor: freshAcceptor(view.epoch + 1), founders };
}

const isIdList = (v: unknown): v is string[] => Array.isArray(v) && v.length >= 1 && v.length <= limits.peersMax &&
  v.every((id) => typeof id === 'string' && id.length >= 1 && id.length <= limits.peerIdCharsMax);

/** The ticket as one word for a command line (`lamport-peer --join TICKET`): base64url of its JSON. */
export function encodeJoinTicket(ticket: JoinTicket): string {
  return Buffer.from(JSON.stringify(ticket)).toString('base64url');
}

/** The ticket of `--join`; ERR_CONFIG_INVALID with a sentence when it is not one. */
export function decodeJoinTicket(text: string): JoinTicket {
  let value: unknown = null;
  try {
    value = JSON.parse(Buffer.from(text.trim(), 'base64url').toString('utf8'));
  } catch {
    // Not JSON: refused below.
  }
  if (!isJoinTicket(value)) throw new LockError(ErrorCode.ConfigInvalid, '--join takes the ticket `lamport-lock member add` printed, whole: this is not one');
  return value;
}

/** The level of the cluster's shape a join ticket gives (`JoinTicket.shapeLevel`, the view's in tickets of builds before raises). */
export function ticketShapeLevel(join: JoinTicket): number {
  return join.shapeLevel ?? join.view.level;
}

/** Shape guard for a join ticket from the command line. */
export function isJoinTicket(v: unknown): v is JoinTicket {
  return isRecord(v) && typeof v['cluster'] === 'string' && v['cluster'].length <= limits.clusterNameCharsMax && isIdList(v['founders']) && isLineage(v['lineage']) && isAgreedView(v['view']) &&
    (v['shapeLevel'] === undefined || (typeof v['shapeLevel'] === 'number' && Number.isSafeInteger(v['shapeLevel']) && v['shapeLevel'] >= 0 && v['shapeLevel'] <= v['view'].level));
}

const isLineage = (v: unknown): boolean => v === undefined || (typeof v === 'string' && /^[0-9a-f]{1,64}$/.test(v));

/**
 * The record of a survivor that starts a new cluster from a lost majority (docs/reconfiguration.md
 * P10, `lamport-peer --force-new-cluster`): a view with `self` its only voter, one epoch past its
 * own, no ordinal given again (the next ordinal kept), nothing promised, and a new founding:
 * `self` alone, under `lineage`, so that no host of the old cluster links with it.
 */
export function recoveredRecord(record: ViewRecord, self: string, lineage: string, level: number): ViewRecord {
  const last = record.chain[record.chain.length - 1];
  const me = last?.members.find((m) => m.id === self);
  if (last === undefined || me === undefined || me.state !== 'voter') {
    throw new LockError(ErrorCode.ConfigInvalid, `--force-new-cluster starts a new cluster from a voter of the old one; ${self} is ${me === undefined ? 'not a member' : `a ${me.state} member`} of the view this data dir records`);
  }
  const view: AgreedView = { epoch: last.epoch + 1, members: [{ ...me, state: 'voter' }], nextOrdinal: last.nextOrdinal, level: Math.max(last.level, level) };
  return { acceptorId: record.acceptorId, chain: [view], acceptor: freshAcceptor(view.epoch + 1), founders: [self], lineage };
}

/**
 * The record with `view`, a later one than its newest, and nothing promised for the epoch after
 * it: appended to the chain when it is the next (the oldest dropped past `chainViewsMax`); a
 * chain of its own when views were skipped (a peer down through several changes jumps).
 */
export function withView(record: ViewRecord, view: AgreedView): ViewRecord {
  const last = record.chain[record.chain.length - 1];
  if (last === undefined || view.epoch <= last.epoch) throw new LockError(ErrorCode.Storage, `view ${view.epoch} is not ahead of view ${last?.epoch ?? 'none'}`);
  const chain = view.epoch === last.epoch + 1 ? [...record.chain, view].slice(-chainViewsMax) : [view];
  return { ...record, chain, acceptor: freshAcceptor(view.epoch + 1) };
}

function isAcceptorState(v: unknown): v is AcceptorState {
  if (!isRecord(v) || !Number.isSafeInteger(v['epoch'])) return false;
  const ballot = (b: unknown): boolean => isRecord(b) && Number.isSafeInteger(b['ts']) && Number.isSafeInteger(b['peer']);
  const accepted = v['accepted'];
  return (v['promised'] === null || ballot(v['promised'])) &&
    (accepted === null || (isRecord(accepted) && ballot(accepted['ballot']) && isAgreedView(accepted['view'])));
}

function isViewRecord(v: unknown): v is ViewRecord {
  if (!isRecord(v) || !isAcceptorId(v['acceptorId'])) return false;
  const chain = v['chain'];
  if (!Array.isArray(chain) || chain.length === 0 || chain.length > chainViewsMax || !chain.every(isAgreedView)) return false;
  const linked = chain.every((view, i) => i === 0 || view.epoch === (chain[i - 1] as AgreedView).epoch + 1);
  const ids = v['acceptorIds'];
  const idsOk = ids === undefined || (isRecord(ids) && Object.entries(ids).every(([k, id]) => /^[0-9]{1,4}$/.test(k) && isAcceptorId(id)));
  return linked && isAcceptorState(v['acceptor']) && isIdList(v['founders']) && isLineage(v['lineage']) && idsOk;
}

/**
 * The highest protocol level `record` binds its peer to: its view's, or a view it accepted
 * (written before its ACCEPTED left, so a binary that does not speak it never runs on it).
 */
export function recordLevel(record: ViewRecord): number {
  const last = record.chain[record.chain.length - 1];
  return Math.max(last?.level ?? 0, record.acceptor.accepted?.view.level ?? 0);
}

/**
 * Refuses a start on a binary that does not speak the level the data dir's record binds it to
 * (`recordLevel`), or, for a new data dir, the level of the view a join ticket gives: a level
 * raised while the cluster runs is never undone by a restart (ERR_CONFIG_INVALID, exit 2).
 */
export function checkRecordLevel(dataDir: string, levels: ProtocolLevels, join: JoinTicket | undefined): void {
  checkLevelOf(loadViewRecord(dataDir), levels, join);
}

/** `checkRecordLevel` on a record already loaded (null: a new data dir); the simulator's hosts keep theirs on a virtual disk. */
export function checkLevelOf(record: ViewRecord | null, levels: ProtocolLevels, join: JoinTicket | undefined): void {
  const level = record === null ? join?.view.level : recordLevel(record);
  if (level === undefined || speaks(levels, level)) return;
  const whose = record === null ? 'the cluster this host joins runs' : 'this peer\'s data dir runs';
  throw new LockError(ErrorCode.ConfigInvalid,
    `${whose} protocol level ${level}; this binary speaks levels ${levelsText(levels)}. Run a binary that speaks level ${level} on this host: a level raised while the cluster runs is never undone (docs/operations.md, "Protocol levels")`,
    { problems: [`${whose} protocol level ${level}; this binary speaks levels ${levelsText(levels)}`] });
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
 * The ids the cluster of `dataDir` was founded with (`ViewRecord.founders`), and its lineage if
 * it was recovered: the record's once the members changed or the host joined; else those the
 * config file (or the join ticket) gives.
 */
export function foundersOf(dataDir: string, peers: readonly { readonly id: string }[], join: JoinTicket | undefined): { readonly founders: readonly string[]; readonly lineage?: string } {
  const record = loadViewRecord(dataDir);
  const last = record?.chain[record.chain.length - 1];
  if (record !== null && last !== undefined && (last.epoch > 0 || join !== undefined)) return lineaged(record.founders, record.lineage);
  return join === undefined ? { founders: peers.map((p) => p.id) } : lineaged(join.founders, join.lineage);
}

function lineaged(founders: readonly string[], lineage: string | undefined): { readonly founders: readonly string[]; readonly lineage?: string } {
  return lineage === undefined ? { founders } : { founders, lineage };
}

/**
 * Makes or refreshes the record of `dataDir` at start (P8): `startRecord` on what it holds,
 * written when that differs.
 */
export function prepareViewRecord(
  dataDir: string, self: string, peers: readonly { readonly id: string; readonly ws: string; readonly http: string }[], level: number, newId: () => string, join?: JoinTicket,
): void {
  const record = loadViewRecord(dataDir);
  const next = startRecord(record, self, peers, level, newId, join);
  if (next !== record) writeViewRecord(dataDir, next);
}

/**
 * The record a peer starts with, from the one its data dir holds (null: a new data dir). A new
 * one gets the view its config file seeds (epoch 0), or, with `join`, the view that added
 * `self` (a new acceptor id from `newId` either way). At epoch 0 the record mirrors the config
 * file (its peers were checked equal by the cluster memory; addresses and level are
 * refreshed); from epoch 1 on, or once joined, the record alone says who the members are.
 * Returns `record` itself when nothing changes.
 */
export function startRecord(
  record: ViewRecord | null, self: string, peers: readonly { readonly id: string; readonly ws: string; readonly http: string }[], level: number, newId: () => string, join?: JoinTicket,
): ViewRecord {
  const last = record?.chain[record.chain.length - 1];
  if (join !== undefined) {
    if (record !== null) return record; // Joined before: the record is ahead of the ticket.
    if (!join.view.members.some((m) => m.id === self)) {
      throw new LockError(ErrorCode.ConfigInvalid, `this join ticket adds ${join.view.members.filter((m) => m.state === 'learner').map((m) => m.id).join(', ') || 'no learner'}, not ${self}: run \`lamport-lock member add ${self} ...\` on a member and use the ticket it prints`);
    }
    const joined = newViewRecord(newId(), join.view, join.founders);
    return join.lineage === undefined ? joined : { ...joined, lineage: join.lineage };
  }
  if (record !== null && last !== undefined && last.epoch > 0) return record;
  const seeded = firstView(peers, level);
  if (record === null) return newViewRecord(newId(), seeded);
  // Refreshed, not replaced: the acceptor id and state stay (a promise must survive restarts).
  if (last === undefined || canonicalView(last) !== canonicalView(seeded)) return { ...record, chain: [seeded], founders: seeded.members.map((m) => m.id) };
  return record;
}

/**
 * Where a runtime keeps its record (PeerWorld.viewStore): the data dir's file in production, a
 * host's virtual disk in the simulator. `save` returns only once the record is durable, and
 * throws a LockError (ERR_STORAGE) when it cannot be.
 */
export interface ViewStore {
  /** The record; a new one (`seeded` alone in the chain, a new acceptor id, nothing promised), saved, when none was kept. */
  load(seeded: AgreedView): ViewRecord;
  save(record: ViewRecord): void;
}

/** The record in `dataDir/view.json`. */
export class FileViewStore implements ViewStore {
  readonly #dataDir: string;

  constructor(dataDir: string) {
    this.#dataDir = dataDir;
  }

  load(seeded: AgreedView): ViewRecord {
    const found = loadViewRecord(this.#dataDir);
    if (found !== null) return found;
    const record = newViewRecord(randomBytes(8).toString('hex'), seeded);
    this.save(record);
    return record;
  }

  save(record: ViewRecord): void {
    try {
      writeViewRecord(this.#dataDir, record);
    } catch (err) {
      throw new LockError(ErrorCode.Storage, `cannot write ${viewRecordPath(this.#dataDir)}: ${(err as Error).message}`);
    }
  }
}

/**
 * Whether `aid` is the acceptor id recorded for the member of `ordinal` (true when none was:
 * `record` then gets it, the caller writes it). The first one told is the one that counts.
 */
export function checkAcceptorId(record: ViewRecord, ordinal: number, aid: string): { readonly trusted: boolean; readonly record: ViewRecord } {
  const known = record.acceptorIds?.[String(ordinal)];
  if (known !== undefined) return { trusted: known === aid, record };
  return { trusted: true, record: { ...record, acceptorIds: { ...record.acceptorIds, [String(ordinal)]: aid } } };
}

/** Writes the record of `dataDir`, atomically and durably. */
export function writeViewRecord(dataDir: string, record: ViewRecord): void {
  replaceFileSync(dataDir, viewRecordPath(dataDir), `${JSON.stringify(record, null, 2)}\n`);
}
