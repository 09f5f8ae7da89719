/**
 * What goes into and comes out of one incarnation's protocol (core/protocol.ts), as raft's
 * message and `Ready` types do: the payloads peers exchange, the options a protocol starts
 * with, and the outputs an input answers, in the order the runtime must carry them out.
 */
import type { AcceptorState } from './acceptor.js';
import type { AgreedView } from './view.js';
import type { EchoPromise, Membership, MembershipMessage } from './membership.js';
import { isMembershipMessage } from './membership.js';
import type { Effect } from './effects.js';
import type { IncarnationBook } from './incarnations.js';
import type { Packet } from './messages.js';
import { isPacket } from './messages.js';
import type { QueueLog } from './queue-log.js';
import type { Incarnation } from './types.js';

/** What travels between the runtimes of two peers: core packets and membership messages. */
export type Payload = Packet | MembershipMessage;

export function isPayload(v: unknown): v is Payload {
  return isPacket(v) || isMembershipMessage(v);
}

/** The highest clock, request timestamp or incarnation start in `payload` (issue 37: none may be too far ahead). */
export function highestClockOf(payload: Payload): number {
  if ('t' in payload) return payload.inc.startMs;
  let max = payload.c;
  for (const m of payload.m) if (m.t === 'req' && m.ts > max) max = m.ts;
  return max;
}

/** The core effects for local clients (sends are outputs of their own). */
export type LocalEffect = Exclude<Effect, { type: 'send' | 'view' | 'acceptor' | 'left' }>;

/** Why an incarnation ends before its process does. */
export type RejoinReason = 'evicted' | 'link_overflow' | 'stale_incarnation' | 'storage';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

/** What one incarnation decided on its own (Membership.decided), and the echoes it allowed: for the simulator's checker. */
export type Decided = Readonly<Membership['decided'] & { echoes: number }>;

/** What the runtime must do after an input, in this order. */
export type ProtocolOutput =
  /**
   * `lazy`: may wait for the next message to that peer (docs/design.md "Batching").
   * `promise`: a confirmation, which leaves only once the promise it gives is on disk.
   */
  | { readonly type: 'send'; readonly to: number; readonly payload: Payload; readonly lazy: boolean; readonly promise: boolean }
  /**
   * Echo the heartbeat `inc` of `to` sent at `sentAtMs`: it lends that peer our part of its
   * lease. It leaves only once the bound on disk covers what it vouches for (runtime/bounds.ts).
   */
  | { readonly type: 'echo'; readonly to: number; readonly inc: Incarnation; readonly sentAtMs: number }
  /** Our heartbeat to `to`, carrying `clock` as an ack when rule 3a lets it (else undefined). */
  | { readonly type: 'heartbeat'; readonly to: number; readonly clock: number | undefined }
  /** One core step sent this many messages (for metrics), whether or not its packets left. */
  | { readonly type: 'sent'; readonly messages: number }
  | { readonly type: 'local'; readonly effect: LocalEffect }
  /**
   * Our view is this one from now on (docs/reconfiguration.md): on disk before anything after
   * this output is carried out, the packets of its step among them.
   */
  | { readonly type: 'view'; readonly view: AgreedView }
  /** Our promise or acceptance of the next view (rule P2): on disk before anything after this output. */
  | { readonly type: 'acceptor'; readonly state: AcceptorState }
  /** The clock after a core step: the high-water mark on disk must stay above it. */
  | { readonly type: 'clock'; readonly clock: number }
  /** Something a viewer may care about changed (queues, membership). */
  | { readonly type: 'changed' }
  /** A majority evicted `inc` of `peer`: the links refuse it and every older one from now on. */
  | { readonly type: 'refuse'; readonly peer: number; readonly inc: Incarnation }
  /** `inc` of `peer` sent `clock`, too far ahead of ours: the links refuse it from now on. */
  | { readonly type: 'refuse_ahead'; readonly peer: number; readonly inc: Incarnation; readonly clock: number }
  /** This incarnation cannot go on: end holds, start a new one above `startFloorMs`. */
  | { readonly type: 'rejoin'; readonly reason: RejoinReason; readonly startFloorMs: number }
  | { readonly type: 'log'; readonly level: LogLevel; readonly fields: Readonly<Record<string, unknown>>; readonly msg: string };

/** Construction parameters of one incarnation's protocol. */
export interface ProtocolOptions {
  readonly self: number;
  /** Every peer's id, by index (for log lines). */
  readonly peerIds: readonly string[];
  readonly leaseMs: number;
  readonly evictMs: number;
  readonly clockRateMargin: number;
  readonly incarnation: Incarnation;
  /**
   * The clock starts at or above this (the high-water mark on disk) and at or above the
   * incarnation's start, so that the next process's mark, always above the clock, orders its
   * incarnation after this one (docs/design.md section 5, "Incarnations").
   */
  readonly clockFloor: number;
  /** Now on the lease clock. */
  readonly nowMs: number;
  /** The other peers' incarnations, shared with the links (core/incarnations.ts). */
  readonly incarnations: IncarnationBook;
  /** The previous incarnation's confirmation promises that still bind (after a rejoin). */
  readonly promises?: readonly EchoPromise[] | undefined;
  /** Echo no heartbeat for this long: a promise the previous process gave may still bind. */
  readonly quietForMs?: number | undefined;
  /** Join no peer for this long: an echo the previous process or incarnation gave may still vouch. */
  readonly joinsHeldForMs?: number | undefined;
  readonly queueLog?: QueueLog | undefined;
  /** The view, for a protocol that takes part in changes of it (docs/reconfiguration.md); its members then are `self`'s majorities. */
  readonly view?: AgreedView | undefined;
  /** The newest protocol level this binary speaks. */
  readonly speaks?: number | undefined;
  /** The acceptor state kept on disk for the epoch after `view`'s (core/acceptor.ts). */
  readonly acceptor?: AcceptorState | undefined;
}

/**
 * A packet that may wait for the next one to its peer (docs/design.md "Batching"): only
 * releases, each of a lock whose queue here is now empty. Nobody waits for that lock as far
 * as we know; a request we do not know of yet reaches us before it can be granted, and our
 * answer to it (not lazy) carries the release along, ahead of it.
 */
export function mayWait(packet: Packet, queues: { queueSize(lock: string): number }): boolean {
  if (packet.m.length === 0) return false;
  for (const msg of packet.m) {
    if (msg.t !== 'rel' || queues.queueSize(msg.lock) > 0) return false;
  }
  return true;
}
