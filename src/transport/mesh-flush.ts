/**
 * When a mesh writes (docs/design.md section 4: messages produced in one turn of the event
 * loop for one peer go in one frame). `Mesh.send` only queues on the peer's link; one
 * `setImmediate` per turn asks every link with a queue to frame it (`PeerLink.flush`). A
 * link ack owed on an inbound stream rides on the next data frame to that peer when there is
 * one (`PeerLink.flush`); what is still owed when a timer of limits.linkAckDelayMs fires leaves
 * on its own, one cumulative ack per window (`PeerLink.sendAck`). A payload sent `lazy` (a
 * release nobody waits for, docs/design.md "Batching") is not framed at the end of its turn:
 * it waits in the link's queue for the next payload to that peer, or for a timer of
 * limits.lazyPayloadDelayMs. This class owns the three timers and which links wait for them;
 * what goes in a frame is the link's.
 */
import type { Env, Timer } from '../env.js';
import { limits } from '../limits.js';
import type { PeerLink } from './peer-link.js';

/** Batches the sends and acks of one turn, and holds back what may wait (lazy payloads, acks). */
export class MeshFlusher<P> {
  readonly #env: Env;
  readonly #dirty = new Set<PeerLink<P>>();
  readonly #acksDue = new Set<PeerLink<P>>();
  /** Links whose queue holds only payloads that may wait (`lazyDue`). */
  readonly #lazy = new Set<PeerLink<P>>();
  #scheduled: Timer | null = null;
  #ackTimer: Timer | null = null;
  #lazyTimer: Timer | null = null;

  constructor(env: Env) {
    this.#env = env;
  }

  /**
   * An inbound stream owes a cumulative ack. Acks only free the sender's resend buffer,
   * never gate the protocol, so they wait limits.linkAckDelayMs and cover every frame of that
   * window: one ack frame per window instead of one per data frame, and none when a data
   * frame to that peer carries it first, which is how nearly all leave while traffic flows
   * both ways (docs/design.md section 4).
   */
  ackDue(link: PeerLink<P>): void {
    link.oweAck();
    this.#acksDue.add(link);
    this.#ackTimer ??= this.#env.after(limits.linkAckDelayMs, () => this.#sendAcksOwed());
  }

  /** That peer has payloads waiting: frame them at the end of this turn. */
  markDirty(link: PeerLink<P>): void {
    this.#dirty.add(link);
    this.#scheduled ??= this.#env.soon(() => this.#flushAll());
  }

  /**
   * That peer has a payload that may wait (`lazy` of `Mesh.send`): it leaves with the next payload
   * that may not, in the same frame, or on the lazy timer (limits.lazyPayloadDelayMs), whichever
   * comes first.
   */
  lazyDue(link: PeerLink<P>): void {
    this.#lazy.add(link);
    this.#lazyTimer ??= this.#env.after(limits.lazyPayloadDelayMs, () => this.#flushLazy());
  }

  /** Frames every link's queue now, lazy payloads included (a drain before stopping). */
  flushNow(): void {
    for (const link of this.#lazy) this.#dirty.add(link);
    this.#lazy.clear();
    this.#env.clear(this.#scheduled);
    this.#flushAll();
  }

  /** Stops flushing (mesh closing). */
  cancel(): void {
    this.#env.clear(this.#scheduled);
    this.#env.clear(this.#ackTimer);
    this.#env.clear(this.#lazyTimer);
    this.#scheduled = null;
    this.#ackTimer = null;
    this.#lazyTimer = null;
    this.#dirty.clear();
    this.#acksDue.clear();
    this.#lazy.clear();
  }

  /** The lazy delay is over: lazy payloads are framed (carrying the acks owed to those peers). */
  #flushLazy(): void {
    this.#lazyTimer = null;
    const lazy = [...this.#lazy];
    this.#lazy.clear();
    for (const link of lazy) {
      if (!link.allSent) link.flush();
    }
  }

  /** The ack delay is over: the acks no data frame carried leave alone. */
  #sendAcksOwed(): void {
    this.#ackTimer = null;
    const links = [...this.#acksDue];
    this.#acksDue.clear();
    for (const link of links) link.sendAck();
  }

  #flushAll(): void {
    this.#scheduled = null;
    const links = [...this.#dirty];
    this.#dirty.clear();
    for (const link of links) {
      // Whatever waited lazily on that link goes in this frame too.
      this.#lazy.delete(link);
      if (!link.allSent) link.flush();
    }
  }
}
