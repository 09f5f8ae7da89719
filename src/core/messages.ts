/**
 * Messages between the protocol cores of two peers (docs/design.md section 3), and their guards.
 * A packet carries the sender's Lamport clock once for all its messages: the receiver's
 * `lastTs[sender]` becomes at least that clock, which is what an ACK is for, so an ACK is
 * simply a packet with no messages.
 */
import { limits } from '../limits.js';
import type { Meta, QueuedRequest, RequestSpec } from './types.js';
import { isRecord, lockNameProblem, modes, utf8Length } from './types.js';
import type { Accepted } from './acceptor.js';
import type { AgreedView } from './view.js';
import { isAgreedView } from './view.js';

/**
 * The lock that serialises changes of the view (docs/reconfiguration.md, rules P2 and P3). A control
 * character makes it a name no client can ask for (`lockNameProblem`); peers queue it like any
 * lock.
 */
export const viewLock = '\u0000view';

/** REQUEST{lock, ts, mode, limit, permits, owner, meta, at, nw?}: a `RequestSpec` on the wire. */
export interface RequestMessage extends Omit<RequestSpec, 'requestedAtMs'> {
  readonly t: 'req';
  readonly lock: string;
  readonly ts: number;
  /** The requester's wall-clock ms when its client asked (`RequestSpec.requestedAtMs`); shown, never compared. */
  readonly at: number;
  /**
   * A no-wait request (protocol 8): its requester decides it on the acks, so every peer acks
   * it, even one whose own requests ahead keep it out (docs/design.md section 3, rule 2).
   */
  readonly nw?: true;
}

/** RELEASE{lock, ts of the request}: removes that request from every queue. */
export interface ReleaseMessage {
  readonly t: 'rel';
  readonly lock: string;
  readonly ts: number;
}

/**
 * META{lock, ts of the request, meta}: the request's meta is now this, on every peer (a
 * leader announcing a new value, docs/design.md section 6, "Elections"). No rule reads it.
 */
export interface MetaMessage {
  readonly t: 'meta';
  readonly lock: string;
  readonly ts: number;
  readonly meta: Meta | null;
}

/**
 * HEAD-ACK{ts, view, speaks} (docs/reconfiguration.md, rules P2 and P3): the receiver's request `ts` on
 * the view lock is at the head of the sender's queue; the sender's view, and the newest
 * protocol level its binary speaks.
 */
export interface HeadAckMessage {
  readonly t: 'hack';
  readonly ts: number;
  readonly view: AgreedView;
  readonly speaks: number;
  /** Paxos phase 1 (rule P2): whether the sender promised ballot `(ts, receiver)`, and what it accepted for the next epoch. */
  readonly promised: boolean;
  readonly accepted: Accepted | null;
  /**
   * Set when the acceptor id the receiver told the sender (its hello) is not the one the sender
   * recorded for it first: the receiver's data dir was lost or replaced, and its own vote counts
   * for nothing (F70, F76).
   */
  readonly replaced?: true;
}

/** ACCEPT{ts, view}: Paxos phase 2 of ballot `(ts, sender)`: accept `view` (rule P2). */
export interface AcceptMessage {
  readonly t: 'accept';
  readonly ts: number;
  readonly view: AgreedView;
}

/** ACCEPTED{ts, epoch}: the sender accepted the view of ballot `(ts, receiver)` for `epoch`. */
export interface AcceptedMessage {
  readonly t: 'accepted';
  readonly ts: number;
  readonly epoch: number;
}

/** VIEW{view}: the next view, from the holder of the view lock (rule P3) or in a state transfer. */
export interface ViewMessage {
  readonly t: 'view';
  readonly view: AgreedView;
}

/** LEAVE: the sender applied its own removal; its releases came before (rule P6). */
export interface LeaveMessage {
  readonly t: 'leave';
}

/**
 * LEFT{peer}: `peer`, a leaving member, left (its LEAVE, after its releases, reached the
 * sender): it holds nothing, so any member's word is enough (rule P6, finding F72). In a state
 * transfer.
 */
export interface LeftMessage {
  readonly t: 'left';
  readonly peer: number;
}

/** A message about the view rather than one lock. */
export type ViewChangeMessage = HeadAckMessage | AcceptMessage | AcceptedMessage | ViewMessage | LeaveMessage | LeftMessage;

/** Everything a packet may carry. */
export type PeerMessage = RequestMessage | ReleaseMessage | MetaMessage | ViewChangeMessage;

/** One batch from one core to another: the sender's clock and its messages, in order. */
/**
 * The protocol level from which peers take part in changes of the view (transport/codec.ts
 * `protocolLevels`): a cluster that runs below it never sends a message about the view, which
 * a binary that speaks only lower levels takes for a broken frame (rule P9, F63).
 */
export const viewFramesLevel = 10;

export interface Packet {
  readonly c: number;
  readonly m: readonly PeerMessage[];
  /**
   * Sent while the sender acks nothing yet (`Machine.ackReady` false: a new incarnation
   * whose predecessor may still hold a lease). Such a packet tells the receiver it was let
   * in, but its clock neither acks nor syncs: it says nothing of grants the predecessor made
   * (docs/design.md section 5, "Successors"; simulator seed 202828).
   */
  readonly u?: true;
}

/**
 * Two packets for one peer, queued one after the other and neither sent yet, as one: the
 * later clock and both message lists in order (docs/design.md section 4). The receiver
 * could have been handed both at once: by FIFO it processes `earlier` first either way,
 * the later clock acks everything in both (each message's timestamp is at most its
 * packet's clock, and `earlier.c <= later.c`), and a request granted after `earlier` alone
 * is granted after both, since `later` adds only requests above `earlier.c` and releases.
 * Null when they must travel apart: one is marked unready and the other is not (an unready
 * clock acks nothing, a ready one does), or the merged list would pass
 * limits.packetMessagesMergedMax (each merge copies the lists; a packet over a frame leaves in
 * pieces, `splitPacket`).
 */
export function mergePackets(earlier: Packet, later: Packet): Packet | null {
  if (earlier.u !== later.u || earlier.m.length + later.m.length > limits.packetMessagesMergedMax) return null;
  const m = earlier.m.length === 0 ? later.m : later.m.length === 0 ? earlier.m : [...earlier.m, ...later.m];
  return later.u === true ? { c: later.c, m, u: true } : { c: later.c, m };
}

/**
 * One packet too large for a frame, as `parts` consecutive packets (fewer when it has fewer
 * messages) whose messages, in order, are its own (docs/design.md section 4, "Pieces").
 * Every piece but the last is marked unready: the receiver applies its messages but takes
 * its clock for no ack and no sync, because a later piece may still hold a request of ours
 * stamped below that clock (a receiver that took the first piece's clock as an ack would grant
 * its own request ahead of it). The last piece keeps the packet's own mark, so the receiver
 * acks and syncs on it exactly as it would on the whole packet, once it has every message.
 * Null for a packet of fewer than two messages: the runtime keeps one message within a frame
 * (limits.ts).
 */
export function splitPacket(packet: Packet, parts: number): Packet[] | null {
  const n = packet.m.length;
  if (n < 2 || parts < 2) return null;
  const size = Math.ceil(n / Math.min(parts, n));
  const pieces: Packet[] = [];
  for (let from = 0; from < n; from += size) {
    const m = packet.m.slice(from, from + size);
    const last = from + size >= n;
    pieces.push(last && packet.u !== true ? { c: packet.c, m } : { c: packet.c, m, u: true });
  }
  return pieces;
}

/** The REQUEST message that announces a queued request of ours (`noWait`: timeout_ms 0). */
export function toRequestMessage(r: QueuedRequest, noWait: boolean): RequestMessage {
  const m: RequestMessage = { t: 'req', lock: r.lock, ts: r.ts, mode: r.mode, limit: r.limit, permits: r.permits, owner: r.owner, meta: r.meta, at: r.requestedAtMs };
  return noWait ? { ...m, nw: true } : m;
}

/** The queued request a REQUEST message from `peer` stands for. */
export function fromRequestMessage(m: RequestMessage, peer: number): QueuedRequest {
  return { lock: m.lock, ts: m.ts, peer, mode: m.mode, limit: m.limit, permits: m.permits, owner: m.owner, meta: m.meta, requestedAtMs: m.at };
}

function isTs(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
}

/** The HTTP API's rule, so that every name a peer admits passes every other peer's guard; and the view lock. */
function isLockName(v: unknown): v is string {
  return typeof v === 'string' && (lockNameProblem(v) === null || v === viewLock);
}

function isRequestMessage(v: Record<string, unknown>): boolean {
  const { lock, ts, mode, limit, permits, owner, meta, at, nw } = v;
  return (
    (nw === undefined || nw === true) &&
    isLockName(lock) &&
    isTs(ts) &&
    typeof mode === 'string' &&
    (modes as readonly string[]).includes(mode) &&
    isTs(limit) &&
    limit >= 1 &&
    limit <= limits.semaphoreLimitMax &&
    isTs(permits) &&
    permits >= 1 &&
    permits <= limit &&
    typeof owner === 'string' &&
    utf8Length(owner) <= limits.ownerBytesMax &&
    (meta === null || isRecord(meta)) &&
    isTs(at)
  );
}

function isAccepted(v: unknown): v is Accepted {
  return isRecord(v) && isRecord(v['ballot']) && isTs(v['ballot']['ts']) && isTs(v['ballot']['peer']) && isAgreedView(v['view']);
}

/** Shape guard for one message decoded from the network. */
export function isPeerMessage(v: unknown): v is PeerMessage {
  if (!isRecord(v)) return false;
  if (v['t'] === 'req') return isRequestMessage(v);
  if (v['t'] === 'rel') return isLockName(v['lock']) && isTs(v['ts']);
  if (v['t'] === 'meta') return isLockName(v['lock']) && isTs(v['ts']) && (v['meta'] === null || isRecord(v['meta']));
  if (v['t'] === 'hack') {
    return isTs(v['ts']) && isAgreedView(v['view']) && isTs(v['speaks']) && typeof v['promised'] === 'boolean' && (v['accepted'] === null || isAccepted(v['accepted'])) &&
      (v['replaced'] === undefined || v['replaced'] === true);
  }
  if (v['t'] === 'accept') return isTs(v['ts']) && isAgreedView(v['view']);
  if (v['t'] === 'accepted') return isTs(v['ts']) && isTs(v['epoch']);
  if (v['t'] === 'left') return isTs(v['peer']) && v['peer'] < limits.peersMax;
  if (v['t'] === 'view') return isAgreedView(v['view']);
  return v['t'] === 'leave';
}

/** Shape guard for a packet decoded from the network (docs/style.md convention 8). */
export function isPacket(v: unknown): v is Packet {
  if (!isRecord(v) || !isTs(v['c']) || !Array.isArray(v['m'])) return false;
  if (v['u'] !== undefined && v['u'] !== true) return false;
  return v['m'].every(isPeerMessage);
}
