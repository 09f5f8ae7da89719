/**
 * Events in, effects out (docs/style.md convention 2): what a Machine is told, what it answers
 * (and explains), and the buffer that collects one step's answer. Messages for a peer are not effects of
 * their own: a step sends each peer at most one packet, stamped with the clock after it.
 */
import type { OwnState } from './lock-table.js';
import type { Packet, PeerMessage } from './messages.js';
import type { Incarnation, Meta, Mode, RequestPart } from './types.js';
import type { AcceptorState } from './acceptor.js';
import type { AgreedView } from './view.js';

/** Everything that can happen to a peer's protocol state. */
export type MachineEvent =
  /** A request of a local client, naming one lock or several (all-or-nothing), each once. */
  | { readonly type: 'acquire'; readonly ref: number; readonly parts: readonly RequestPart[]; readonly noWait: boolean }
  | { readonly type: 'release'; readonly ref: number }
  /** Our granted request `ref` announces new meta (a leader's new value): META to every peer. */
  | { readonly type: 'meta'; readonly ref: number; readonly meta: Meta | null }
  | { readonly type: 'packet'; readonly from: number; readonly inc: Incarnation; readonly packet: Packet }
  | { readonly type: 'joined'; readonly peer: number; readonly inc: Incarnation; readonly clock: number }
  /**
   * `last`: no newer incarnation of the peer is known to the evictors (Membership `last`).
   * `metHeld`: the runtime met this incarnation (or an older one) but held it out of the
   * core (Session `#joinsHeld`): it leaves the view as a met one does.
   */
  | { readonly type: 'evicted'; readonly peer: number; readonly inc: Incarnation; readonly last?: boolean; readonly metHeld?: boolean }
  /** A newer incarnation of `peer` waits for this one's eviction: its old acks no longer sync us. */
  | { readonly type: 'superseded'; readonly peer: number }
  /**
   * This incarnation is a zombie (a newer one of our id runs): it issues and grants nothing
   * from now on, and its waiting requests end; its holds last until its lease lapses.
   */
  | { readonly type: 'fence' }
  | { readonly type: 'lease'; readonly valid: boolean }
  /** Our request on the view lock was granted: propose `view`, our change on top of our view (docs/reconfiguration.md, rule P2). */
  | { readonly type: 'propose'; readonly view: AgreedView }
  /**
   * A chosen view in a packet of an incarnation held waiting to join (its packets are kept until
   * it joins): ours at once if it is ahead of ours (rule P4, finding F85).
   */
  | { readonly type: 'heldView'; readonly view: AgreedView };

/** What the runtime must do after a step, in order. */
export type Effect =
  | { readonly type: 'send'; readonly to: number; readonly packet: Packet }
  /** `lock` and `mode` are the request's first part's; one token for every lock it names. */
  | { readonly type: 'granted'; readonly ref: number; readonly lock: string; readonly ts: number; readonly token: bigint; readonly mode: Mode }
  /** `ahead`: how many requests were ahead of it in the queue when it was refused. */
  | { readonly type: 'refused'; readonly ref: number; readonly lock: string; readonly ahead: number }
  /** An acquire refused at once: the queue of `lock`, one it names, holds limits.queuedPerLockMax requests already. */
  | { readonly type: 'full'; readonly ref: number; readonly lock: string }
  | { readonly type: 'ended'; readonly ref: number; readonly lock: string; readonly reason: 'lease_lost' | 'removed' }
  /** Our view is this one from now on (to write to disk before the packets of this step leave). */
  | { readonly type: 'view'; readonly view: AgreedView }
  /** Our promise or acceptance (rule P2), to write to disk before the packets of this step leave. */
  | { readonly type: 'acceptor'; readonly state: AcceptorState }
  /** A removed peer left: it is in no ack set any more (rule P6). */
  | { readonly type: 'left'; readonly peer: number };

/** Why a waiting request is not granted yet, for the 423 / 503 answer of a timeout. */
export interface Explanation {
  readonly state: OwnState;
  /** Requests ahead of it in the queue. */
  readonly position: number;
  /** Peers whose ack (a later timestamp) has not arrived, or that never joined. */
  readonly missingPeers: readonly number[];
}

/** The effects of one step as it runs, emptied by `flush()` at its end. */
export class EffectBuffer {
  #effects: Effect[] = [];
  readonly #outbox = new Map<number, PeerMessage[]>();

  /** A local effect (granted, refused, full, ended), kept in the order it happened. */
  push(effect: Effect): void {
    this.#effects.push(effect);
  }

  /** Queues `msg` for the packet to `to`. */
  send(to: number, msg: PeerMessage): void {
    const box = this.#outbox.get(to);
    if (box === undefined) this.#outbox.set(to, [msg]);
    else box.push(msg);
  }

  /** Makes sure `to` gets a packet from this step, if only an empty one. */
  ack(to: number): void {
    if (!this.#outbox.has(to)) this.#outbox.set(to, []);
  }

  /** Puts `msgs` before everything queued for `to` in this step. */
  prepend(to: number, msgs: readonly PeerMessage[]): void {
    this.#outbox.set(to, [...msgs, ...(this.#outbox.get(to) ?? [])]);
  }

  /** Forgets what was queued for `to` (it was evicted). */
  drop(to: number): void {
    this.#outbox.delete(to);
  }

  /** One packet per peer per step, stamped with the clock after the step (and `u` while `unready`). */
  flush(clock: number, unready: boolean): readonly Effect[] {
    const effects = this.#effects;
    for (const [to, m] of this.#outbox) effects.push({ type: 'send', to, packet: unready ? { c: clock, m, u: true } : { c: clock, m } });
    this.#outbox.clear();
    this.#effects = [];
    return effects;
  }
}
