/**
 * The Node adapter of the local HTTP API: `node:http`'s server, its sockets and their
 * parking, mapped onto the handler of plain requests (handler.ts), where every rule of the
 * API lives. A request becomes a `PlainRequest` whose body is read from the socket with its
 * limits; its answer a `PlainResponse` that writes to the `ServerResponse`.
 */
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ErrorCode, LockError } from '../errors.js';
import { limits } from '../limits.js';
import type { Logger } from '../log.js';
import type { LockService } from '../runtime/peer.js';
import { AccessPolicy } from './access.js';
import { ApiHandler } from './handler.js';
import type { SocketAccess } from './listen-target.js';
import { applySocketAccess } from './listen-target.js';
import { ParkedSockets, parkingDefaults } from './parked-sockets.js';
import type { ParkingOptions } from './parked-sockets.js';
import type { PlainRequest, PlainResponse } from './plain.js';
import type { RouteSpec } from './routes.js';
import type { WatchSelector } from './watch.js';

function send(res: ServerResponse, status: number, body: unknown, headers?: Readonly<Record<string, string>>): void {
  const text = JSON.stringify(body);
  const length = Buffer.byteLength(text);
  res.writeHead(status, headers === undefined ? { 'content-type': 'application/json', 'content-length': length } : { ...headers, 'content-type': 'application/json', 'content-length': length });
  res.end(text);
}

/**
 * Reads a body of at most limits.httpBodyBytesMax. A larger one is refused (413) as soon as
 * it passes the limit, and the rest is read and dropped so the client can read the answer;
 * past limits.httpBodyDrainBytesMax the connection is cut.
 */
function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let over = false;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limits.httpBodyDrainBytesMax) req.destroy();
      if (size <= limits.httpBodyBytesMax) chunks.push(chunk);
      else if (!over) {
        over = true;
        chunks.length = 0;
        reject(new LockError(ErrorCode.BodyTooLarge, `the request body is larger than ${limits.httpBodyBytesMax} bytes`, { limit_bytes: limits.httpBodyBytesMax }));
      }
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

/** What the routes served beside the API get: Node's request and its answer. */
export interface NodeExchange {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
}

/** Extra routes served beside the API (metrics, dashboard), keyed by exact path. */
export type ExtraRoute = (req: IncomingMessage, res: ServerResponse) => void | Promise<void>;

/** Node's request as a plain one (a class, not an object of closures: one allocation per request). */
class NodeRequest implements PlainRequest<NodeExchange> {
  readonly method: string;
  readonly target: string;
  readonly headers: IncomingMessage['headers'];
  readonly localPort: number;
  readonly remote: string | undefined;
  readonly native: NodeExchange;

  constructor(req: IncomingMessage, res: ServerResponse) {
    this.method = req.method ?? '';
    this.target = req.url ?? '/';
    this.headers = req.headers;
    this.localPort = req.socket.localPort ?? -1;
    this.remote = req.socket.remoteAddress;
    this.native = { req, res };
  }

  readBody(done: (err: unknown, text: string) => void): void {
    readBody(this.native.req).then((text) => done(null, text), (err: unknown) => done(err, ''));
  }
}

/** A `ServerResponse` as a plain answer; a waiting request's connection is parked (parked-sockets.ts). */
class NodeResponse implements PlainResponse {
  readonly #res: ServerResponse;
  readonly #parked: ParkedSockets;
  readonly #socket: ServerResponse['socket'];

  constructor(res: ServerResponse, parked: ParkedSockets) {
    this.#res = res;
    this.#parked = parked;
    this.#socket = res.socket;
  }

  get closed(): boolean {
    return this.#res.destroyed || this.#res.writableEnded;
  }

  get headersSent(): boolean {
    return this.#res.headersSent;
  }

  json(status: number, body: unknown, headers?: Readonly<Record<string, string>>): void {
    send(this.#res, status, body, headers);
  }

  head(status: number, headers: Readonly<Record<string, string>>): void {
    this.#res.writeHead(status, headers);
  }

  write(text: string): void {
    this.#res.write(text);
  }

  end(text: string): void {
    this.#res.end(text);
  }

  destroy(): void {
    this.#res.destroy();
  }

  onClose(fn: () => void): void {
    this.#res.on('close', fn);
  }

  waiting(): void {
    const socket = this.#socket;
    if (socket === null) return;
    this.#parked.park(socket);
    this.#res.on('close', () => this.#parked.unpark(socket));
  }

  answered(): void {
    if (this.#socket !== null) this.#parked.unpark(this.#socket);
  }
}

/** The local HTTP endpoint of one peer. */
export class HttpApi {
  readonly #handler: ApiHandler<NodeExchange>;
  readonly #log: Logger;
  readonly #server: Server;
  /** Connections of waiting requests, past a bound paused and swept (issue 15: a burst of them closing stalled the loop). */
  readonly #parked: ParkedSockets;

  constructor(
    peer: LockService,
    logger: Logger,
    access = new AccessPolicy({ unix: false, listenHost: null, allowHosts: [], token: null, adminToken: null }),
    parking: ParkingOptions = parkingDefaults,
  ) {
    this.#parked = new ParkedSockets(parking);
    this.#handler = new ApiHandler(peer, logger, access, { soon: setImmediate });
    this.#log = logger.child({ component: 'http' });
    this.#server = createServer({ keepAliveTimeout: limits.httpKeepAliveMs, requestTimeout: 0, maxHeaderSize: limits.httpHeaderBytesMax }, (req, res) => {
      this.#handler.handle(new NodeRequest(req, res), new NodeResponse(res, this.#parked));
    });
    this.#server.on('clientError', (err, socket) => {
      this.#log.debug({ err: err.message }, 'malformed HTTP request');
      if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\n\r\n');
    });
  }

  /** Serves `handler` for GET on `path` (metrics, dashboard). */
  route(path: string, handler: ExtraRoute): void {
    this.#handler.route(path, ({ req, res }) => handler(req, res));
  }

  /** Every route served: the API's table and the extra GET routes (the OpenAPI test compares them with the description). */
  routes(): RouteSpec[] {
    return this.#handler.routes();
  }

  /** Serves GET /v1/locks/{name}/watch and GET /v1/watch?prefix= with `open` (src/http/watch.ts). */
  watchWith(open: (req: IncomingMessage, res: ServerResponse, selector: WatchSelector) => void): void {
    this.#handler.watchWith(({ req, res }, selector) => open(req, res, selector));
  }

  /** Listens; resolves with the bound address. */
  listen(host: string, port: number): Promise<AddressInfo> {
    return new Promise((resolve, reject) => {
      this.#server.once('error', reject);
      this.#server.listen(port, host, () => {
        this.#server.off('error', reject);
        resolve(this.#server.address() as AddressInfo);
      });
    });
  }

  /**
   * Listens on a unix socket (a stale file was cleared by the caller). It is bound under a
   * umask that leaves it private, then given its mode and group, so no one else can
   * connect in between.
   */
  listenPath(path: string, socket: SocketAccess): Promise<void> {
    return new Promise((resolve, reject) => {
      this.#server.once('error', reject);
      const umask = process.umask(0o177);
      try {
        this.#server.listen(path, () => {
          this.#server.off('error', reject);
          try {
            applySocketAccess(path, socket);
            resolve();
          } catch (err) {
            this.#server.close();
            reject(err);
          }
        });
      } finally {
        process.umask(umask);
      }
    });
  }

  /** Stops accepting new connections; `closeAll` then ends the ones still open. */
  close(): Promise<void> {
    this.#parked.close();
    return new Promise((resolve) => {
      this.#server.close(() => resolve());
      this.#server.closeIdleConnections();
    });
  }

  /** Ends every open connection (after the holds were ended and answered). */
  closeAll(): void {
    this.#server.closeAllConnections();
  }
}
