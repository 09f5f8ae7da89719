/**
 * The waiting stage of another peer's incarnation (stage 3 of core/incarnations.ts), for one
 * incarnation's protocol (core/protocol.ts): incarnations the links admitted while their
 * predecessor was not evicted wait here, out of the core, until the majority evicts it
 * (Membership.predecessorOf), or while joins are held. Their core packets wait here too (they
 * send none that matter: they cannot sync before every peer let them join), and nothing of
 * ours that could count as an ack goes to them. The protocol decides who enters and leaves;
 * this keeps them, their packets, and the instant before which no peer joins at all.
 */
import { limits } from '../limits.js';
import type { Packet } from './messages.js';
import type { ProtocolOutput } from './protocol-io.js';
import type { Incarnation } from './types.js';

/** A new incarnation of a peer kept out of the core, with what it sent meanwhile. */
export interface Waiting {
  readonly inc: Incarnation;
  readonly clock: number;
  readonly restarted: boolean;
  readonly packets: Packet[];
}

/** The incarnations kept out of one protocol's core, by peer. */
export class WaitingRoom {
  readonly #waiting = new Map<number, Waiting>();
  /**
   * No peer joins the core before then (ProtocolOptions.joinsHeldForMs): a heartbeat our
   * previous process echoed may still vouch for a lease of an incarnation we never met, and
   * letting its successor in would count us in the successor's ack quorum (F-ids in
   * docs/findings.md under "Successors"). Joins wait here meanwhile.
   */
  readonly #joinsHeldUntilMs: number;

  /**
   * Once our own removal is applied (rule P6): when the last echo we gave stops vouching for
   * any lease. A waiting incarnation may count us in its ack set; our LEAVE then lets it count
   * us no more, and counts as our letting it in (PeerView.joinedByQuorum): safe only once no
   * lease of its predecessor can rest on an echo of ours.
   */
  #leftQuietAtMs: number | null = null;
  /** The waiting incarnations told our LEAVE. */
  readonly #toldLeave = new WeakSet<Waiting>();

  constructor(joinsHeldUntilMs: number) {
    this.#joinsHeldUntilMs = joinsHeldUntilMs;
  }

  /** We applied our own removal and echo nothing from now on; our echoes vouch `vouchMs` at most. */
  left(nowMs: number, vouchMs: number): void {
    this.#leftQuietAtMs ??= nowMs + vouchMs;
  }

  /**
   * Rule P6: once we applied our own removal we left (LEAVE to every peer our core met) and
   * hold nothing, but a newer incarnation held here for its predecessor's eviction gets no
   * packet of our core, and may count us in its ack set: it hears our LEAVE too, each
   * incarnation once. Voters that all restarted since never met the predecessor and evict
   * none, and the successor would wait here for good (simulator seed 279 --changes). Not
   * before our last echo stops vouching (see `left`); unready (`u`, our clock `clock` acks
   * nothing), in case its view does not remove us yet.
   */
  leaveNotices(nowMs: number, clock: number, name: (peer: number) => string): ProtocolOutput[] {
    if (this.#leftQuietAtMs === null || nowMs < this.#leftQuietAtMs || this.joinsHeld(nowMs)) return [];
    const out: ProtocolOutput[] = [];
    for (const [peer, waiting] of this.#waiting) {
      if (this.#toldLeave.has(waiting)) continue;
      this.#toldLeave.add(waiting);
      out.push({ type: 'log', level: 'info', fields: { remote: name(peer) }, msg: 'this peer left the cluster: telling a new incarnation of a peer, held here, that it left' });
      out.push({ type: 'send', to: peer, payload: { c: clock, m: [{ t: 'leave' }], u: true }, lazy: false, promise: false });
    }
    return out;
  }

  /** Whether no peer may join at `nowMs`. */
  joinsHeld(nowMs: number): boolean {
    return nowMs < this.#joinsHeldUntilMs;
  }

  /** What is left of the hold on joins at `nowMs`. */
  joinsHeldLeftMs(nowMs: number): number {
    return Math.max(0, this.#joinsHeldUntilMs - nowMs);
  }

  get size(): number {
    return this.#waiting.size;
  }

  has(peer: number): boolean {
    return this.#waiting.has(peer);
  }

  get(peer: number): Waiting | undefined {
    return this.#waiting.get(peer);
  }

  /** `inc` of `peer` waits from now on (in place of any earlier one of that peer). */
  enter(peer: number, inc: Incarnation, clock: number, restarted: boolean): void {
    this.#waiting.set(peer, { inc, clock, restarted, packets: [] });
  }

  leave(peer: number): void {
    this.#waiting.delete(peer);
  }

  /** The waiting peers and their incarnations, a copy: leaving while iterating it is safe. */
  entries(): [number, Waiting][] {
    return [...this.#waiting];
  }

  peers(): number[] {
    return [...this.#waiting.keys()];
  }

  /** Keeps a core packet of a waiting incarnation; false when it holds a frame's worth already (the packet is dropped). */
  keep(waiting: Waiting, packet: Packet): boolean {
    if (waiting.packets.length >= limits.frameMessagesMax) return false;
    waiting.packets.push(packet);
    return true;
  }
}
