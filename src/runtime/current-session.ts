/**
 * The runtime's handle on its current incarnation (docs/architecture.md section 5): the
 * session of the incarnation now running (a new one after each rejoin), and the link
 * counters of the ones before it, so that counters never go back at a rejoin. Built
 * before anything that reads the session, and empty until `PeerRuntime.start`; the local
 * holds step the session through it, and the inspector (inspector.ts) reads it.
 */
import { assert } from '../assert.js';
import type { MeshStats } from '../transport/mesh.js';
import type { Session } from './session.js';

/** The current session of one peer process, and what its predecessors counted. */
export class CurrentSession {
  #session: Session | null = null;
  #pastLinkStats: MeshStats = { framesSent: 0, messagesSent: 0, bytesSent: 0, framesReceived: 0, messagesDropped: 0 };
  /** Whether the first session was set (`PeerRuntime.start` ran). */
  get started(): boolean {
    return this.#session !== null;
  }

  /** The session of the current incarnation. */
  get(): Session {
    assert(this.#session !== null, 'the runtime has started');
    return this.#session;
  }

  /** The link counters of every incarnation before the current one, summed. */
  get pastLinkStats(): MeshStats {
    return this.#pastLinkStats;
  }

  /** Makes `next` current; the counters of the one it replaces are kept in the sums. */
  set(next: Session): void {
    if (this.#session !== null) this.#pastLinkStats = addLinkStats(this.#pastLinkStats, this.#session.links.stats());
    this.#session = next;
  }

  /**
   * Re-checks the lease now (docs/design.md section 4): before anything a client or a holds
   * timer does, as the session does before every event, so that a process resumed after a
   * pause does not act on a lease that lapsed meanwhile. Nothing before the start.
   */
  checkLease(): void {
    this.#session?.checkLease();
  }
}

/** Two sets of link counters, summed. */
export function addLinkStats(a: MeshStats, b: MeshStats): MeshStats {
  return {
    framesSent: a.framesSent + b.framesSent,
    messagesSent: a.messagesSent + b.messagesSent,
    bytesSent: a.bytesSent + b.bytesSent,
    framesReceived: a.framesReceived + b.framesReceived,
    messagesDropped: a.messagesDropped + b.messagesDropped,
  };
}
