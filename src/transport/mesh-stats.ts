/**
 * The counters of one mesh: what `Mesh.stats()` reports. One object counts, the mesh's links
 * and both sides of the handshake tell it what happened; nobody else writes the figures.
 */

/** Counters of `Mesh.stats()`. */
export interface MeshStats {
  framesSent: number;
  messagesSent: number;
  bytesSent: number;
  framesReceived: number;
  /** Payloads sent to a peer whose incarnation is unknown or evicted: there is no stream. */
  messagesDropped: number;
}

/** Counts the frames and payloads of one mesh. */
export class MeshCounters {
  readonly #stats: MeshStats = { framesSent: 0, messagesSent: 0, bytesSent: 0, framesReceived: 0, messagesDropped: 0 };

  /** A frame was handed to a socket: `messages` payloads (0 for an ack) in `bytes`. */
  frameSent(bytes: number, messages: number): void {
    this.#stats.framesSent++;
    this.#stats.messagesSent += messages;
    this.#stats.bytesSent += bytes;
  }

  /** A well-formed frame arrived on one of the mesh's sockets. */
  frameReceived(): void {
    this.#stats.framesReceived++;
  }

  /** A payload for a peer with no stream (incarnation unknown or refused) was dropped. */
  messageDropped(): void {
    this.#stats.messagesDropped++;
  }

  /** A copy of the counters. */
  snapshot(): MeshStats {
    return { ...this.#stats };
  }
}
