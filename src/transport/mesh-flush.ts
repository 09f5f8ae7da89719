/**
 * When a mesh writes (docs/design.md section 4: messages produced in one turn of the event
 * loop for one peer go in one frame). `Mesh.send` only queues on the peer's link; one
 * `setImmediate` per turn asks every link with a queue to frame it (`PeerLink.flush`). A
 * link ack owed on an inbound stream rides on the next data frame to that peer when there is
 * one (`PeerLink.flush`); what is still owed leaves on a timer of limits.linkAckDelayMs, one
 * cumulative ack per window (`PeerLink.sendAck`). This class owns the two timers and which
 * links wait for them; what goes in a frame is the link's.
 */
import type { Env, Timer } from '../env.js';
import { limits } from '../limits.js';
import type { PeerLink } from './peer-link.js';

/** Batches the sends and acks of one turn. */
export class MeshFlusher<P> {
  readonly #env: Env;
  readonly #dirty = new Set<PeerLink<P>>();
  readonly #acksDue = new Set<PeerLink<P>>();
  readonly #ackDelayMs: number;
  #scheduled: Timer | null = null;
  #ackTimer: Timer | null = null;

  constructor(env: Env, ackDelayMs: number = limits.linkAckDelayMs) {
    this.#env = env;
    this.#ackDelayMs = ackDelayMs;
  }

  /**
   * An inbound stream owes a cumulative ack. Acks only free the sender's resend buffer,
   * never gate the protocol, so they wait a few ms and cover every frame of that window:
   * one ack frame per window instead of one per data frame.
   */
  ackDue(link: PeerLink<P>): void {
    link.oweAck();
    this.#acksDue.add(link);
    this.#ackTimer ??= this.#env.after(this.#ackDelayMs, () => this.#flushAcks());
  }

  /** That peer has payloads waiting: frame them at the end of this turn. */
  markDirty(link: PeerLink<P>): void {
    this.#dirty.add(link);
    this.#scheduled ??= this.#env.soon(() => this.#flushAll());
  }

  /** Stops flushing (mesh closing). */
  cancel(): void {
    this.#env.clear(this.#scheduled);
    this.#env.clear(this.#ackTimer);
    this.#scheduled = null;
    this.#ackTimer = null;
    this.#dirty.clear();
    this.#acksDue.clear();
  }

  #flushAcks(): void {
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
      if (!link.allSent) link.flush();
    }
  }
}
