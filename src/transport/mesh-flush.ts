/**
 * When a mesh writes (docs/design.md section 4: messages produced in one turn of the event
 * loop for one peer go in one frame). `Mesh.send` only queues on the peer's link; one
 * `setImmediate` per turn asks every link with a queue to frame it (`PeerLink.flush`). A
 * link ack owed on an inbound stream rides on the next data frame to that peer when there is
 * one (`PeerLink.flush`); what is still owed leaves on a timer of limits.linkAckDelayMs, one
 * cumulative ack per window (`PeerLink.sendAck`). A payload sent `lazy` (a release nobody
 * waits for, docs/design.md "Batching") is not framed at the end of its turn: it waits in the
 * link's queue for the next payload to that peer, or for that same timer. This class owns the
 * two timers and which links wait for them; what goes in a frame is the link's.
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
  readonly #delayMs: number;
  #scheduled: Timer | null = null;
  #delayTimer: Timer | null = null;

  constructor(env: Env, delayMs: number = limits.linkAckDelayMs) {
    this.#env = env;
    this.#delayMs = delayMs;
  }

  /**
   * An inbound stream owes a cumulative ack. Acks only free the sender's resend buffer,
   * never gate the protocol, so they wait a few ms and cover every frame of that window:
   * one ack frame per window instead of one per data frame, and none when a data frame to
   * that peer carries it first.
   */
  ackDue(link: PeerLink<P>): void {
    link.oweAck();
    this.#acksDue.add(link);
    this.#armDelay();
  }

  /** That peer has payloads waiting: frame them at the end of this turn. */
  markDirty(link: PeerLink<P>): void {
    this.#dirty.add(link);
    this.#scheduled ??= this.#env.soon(() => this.#flushAll());
  }

  /**
   * That peer has a payload that may wait (`lazy` of `Mesh.send`): it leaves with the next payload
   * that may not, in the same frame, or on the delay timer (limits.linkAckDelayMs), whichever
   * comes first.
   */
  lazyDue(link: PeerLink<P>): void {
    this.#lazy.add(link);
    this.#armDelay();
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
    this.#env.clear(this.#delayTimer);
    this.#scheduled = null;
    this.#delayTimer = null;
    this.#dirty.clear();
    this.#acksDue.clear();
    this.#lazy.clear();
  }

  #armDelay(): void {
    this.#delayTimer ??= this.#env.after(this.#delayMs, () => this.#flushDelayed());
  }

  /** The delay is over: lazy payloads are framed (carrying the acks owed), then the acks still owed leave alone. */
  #flushDelayed(): void {
    this.#delayTimer = null;
    const lazy = [...this.#lazy];
    this.#lazy.clear();
    for (const link of lazy) {
      if (!link.allSent) link.flush();
    }
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
