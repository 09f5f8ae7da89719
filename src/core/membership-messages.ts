/**
 * What membership (core/membership.ts) says to other peers and asks of the runtime: its
 * messages, their shape guard and epoch, its effects, and the promises a rejoin hands on.
 */
import type { Incarnation } from './types.js';
import { isIncarnation } from './types.js';

/**
 * Membership messages between peers. `e`: the epoch of the sender's view when it sent the
 * message, absent for epoch 0 (a cluster without views, at protocol level 9, sends none, and
 * a binary of level 9 ignores it). Rule P4 (docs/reconfiguration.md): a suspicion is confirmed
 * and a confirmation counted only between peers at one epoch, and an eviction is not applied
 * by a peer two or more epochs past the sender's (`Membership.onMessage`).
 */
export type MembershipMessage =
  /** `at`: the suspecter's clock when it sent this suspicion; the confirmation echoes it. */
  | { readonly t: 'suspect'; readonly peer: number; readonly inc: Incarnation; readonly at: number; readonly e?: number }
  | { readonly t: 'confirm'; readonly peer: number; readonly inc: Incarnation; readonly at: number; readonly e?: number }
  /**
   * `last`: the sender knows no incarnation of that peer newer than `inc` (none waits as its
   * successor): a receiver that never met it may count that peer as gone (PeerView.joinedByQuorum).
   */
  | { readonly t: 'evict'; readonly peer: number; readonly inc: Incarnation; readonly last?: boolean; readonly e?: number };

/** The epoch a membership message was sent at (rule P4): 0 when it names none. */
export function epochOf(msg: MembershipMessage): number {
  return msg.e ?? 0;
}

/** What the runtime must do. */
export type MembershipEffect =
  | { readonly type: 'send'; readonly to: number; readonly msg: MembershipMessage }
  | { readonly type: 'evict'; readonly peer: number; readonly inc: Incarnation; readonly last: boolean };


/** Shape guard for a membership message decoded from the network. */
export function isMembershipMessage(v: unknown): v is MembershipMessage {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const { t, peer, inc, at, last, e } = v as Record<string, unknown>;
  if (!Number.isSafeInteger(peer) || (peer as number) < 0 || !isIncarnation(inc)) return false;
  if (e !== undefined && (!Number.isSafeInteger(e) || (e as number) < 0)) return false;
  if (t === 'evict') return last === undefined || typeof last === 'boolean';
  return (t === 'suspect' || t === 'confirm') && typeof at === 'number' && Number.isFinite(at);
}

/**
 * A confirmation's promise that still binds: no echo of `peer`'s incarnation `upTo` (or an
 * older one) for `remainingMs` more. A rejoin hands these to the next incarnation of this
 * process, whose echoes would break them just as much.
 */
export interface EchoPromise {
  readonly peer: number;
  readonly upTo: Incarnation;
  readonly remainingMs: number;
}
