/**
 * What the mesh needs of a network: a listening socket that hands over accepted
 * connections, and outbound connections, each a message socket (one WebSocket in
 * production, ws-network.ts). The simulator passes its own network, whose sockets carry
 * the same bytes through a virtual wire with delays, cuts and breaks.
 */

/** The events of one message socket; set once, right after it is created. */
export interface SocketHandlers {
  /** An outbound socket finished connecting (never called for an accepted one). */
  onOpen(): void;
  /** One message; `binary` false for a text message, which peers never send. */
  onMessage(data: Uint8Array, binary: boolean): void;
  /** A transport error (the close follows); `code` is `ws`'s WS_ERR_* code when it has one. */
  onError(err: { readonly code?: string | undefined; readonly message: string }): void;
  /** The socket is gone, for whatever reason: called once. */
  onClose(): void;
}

/** One message socket between two peers. */
export interface RawSocket {
  /** True while messages can be sent. */
  readonly isOpen: boolean;
  /** Wires the events; called once, before anything can arrive. */
  handle(handlers: SocketHandlers): void;
  send(data: Uint8Array): void;
  /** Graceful close: messages already sent still arrive; cut after a grace period. */
  close(code: number, reason: string): void;
  /** Cuts the connection at once. */
  terminate(): void;
}

/** A bound listening socket; the current mesh takes its connections. */
export interface Listener {
  readonly port: number;
  /** Who gets the next accepted connections (a new mesh after a rejoin); null refuses them. */
  accept(onConnection: ((sock: RawSocket, remote: string) => void) | null): void;
  close(): Promise<void>;
}

/** Listening and dialing. */
export interface Network {
  listen(host: string, port: number): Promise<Listener>;
  /** A socket to `url` (ws://host:port or wss://), connecting in the background. */
  dial(url: string): RawSocket;
}
