/**
 * A request and its answer as the HTTP API's handler (handler.ts) sees them: plain objects,
 * no sockets (connect-es's universal handler splits its protocol code from Node the same way).
 * The Node adapter (api.ts) makes them of `node:http`'s request and response; the simulator
 * (test/sim/clients.ts) makes them of its clients' calls, in virtual time, so its clients go
 * through every rule of the API.
 */

/** Request headers, lowercase names (Node's `IncomingHttpHeaders` is one). */
export type PlainHeaders = Readonly<Record<string, string | string[] | undefined>>;

/** A header's value when sent once (Node joins repeated headers but `set-cookie`); else undefined. */
export function headerOf(headers: PlainHeaders, name: string): string | undefined {
  const v = headers[name];
  return typeof v === 'string' ? v : undefined;
}

/** What the access policy reads of a request (access.ts). */
export interface AdmissionRequest {
  readonly method: string;
  readonly headers: PlainHeaders;
  /** The local port the request came to (the `Host` check compares it); -1 when none (a unix socket). */
  readonly localPort: number;
}

/**
 * One request. `native` is whatever the adapter serves the routes beside the plain API with
 * (the dashboard, /metrics, the event streams): Node's request and response in production.
 */
export interface PlainRequest<N> extends AdmissionRequest {
  /** The request target as sent: path and query. */
  readonly target: string;
  /** The client's address (refusal log lines). */
  readonly remote: string | undefined;
  /**
   * Reads the body, once: `done` gets its text, or the coded error of a body refused (413).
   * It may call back at once (the simulator) or later (a socket).
   */
  readBody(done: (err: unknown, text: string) => void): void;
  readonly native: N;
}

/**
 * The answer to one request. The exchange is over when the answer ended or the client went
 * away (its connection closed); the handler learns the latter from `onClose`, which may come
 * later than the fact: `closed` tells at once, as a destroyed socket does.
 */
export interface PlainResponse {
  /** True once the answer ended or the client went away: what is written now is lost. */
  readonly closed: boolean;
  /** True once a status was written. */
  readonly headersSent: boolean;
  /** A whole JSON answer. */
  json(status: number, body: unknown, headers?: Readonly<Record<string, string>>): void;
  /** Starts a streamed answer; `write` its parts, `end` with its last. */
  head(status: number, headers: Readonly<Record<string, string>>): void;
  write(text: string): void;
  end(text: string): void;
  /** Cuts the answer (a failure after its status was sent). */
  destroy(): void;
  /** `fn` runs once when the exchange is over (answer ended, or the client gone). */
  onClose(fn: () => void): void;
  /** The request waits for its answer (a queued acquire): the adapter may stop reading its connection. */
  waiting(): void;
  /** The wait is over (a grant or failure came, whether or not the client is still there). */
  answered(): void;
}
