/**
 * The local HTTP API of docs/design.md section 6. Input is validated in validate.ts; errors map to
 * status codes in one place (errors.ts `httpStatusOf`); every error body is
 * `{error, message}` plus the details of its code.
 */
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ErrorCode, LockError, httpStatusOf } from '../errors.js';
import { limits } from '../limits.js';
import type { Logger } from '../log.js';
import type { Grant } from '../runtime/holds.js';
import type { PeerRuntime } from '../runtime/peer.js';
import { checkLockName, parseAcquire, parseBody, parseRefresh, parseRelease } from './validate.js';

/** The JSON a grant is answered with. */
export function grantJson(g: Grant): Record<string, unknown> {
  return { lock: g.lock, id: g.id, token: g.token.toString(), mode: g.mode, peer: g.peer, granted_at: g.grantedAt, expires_at: g.expiresAt };
}

function send(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function sendError(res: ServerResponse, err: LockError): void {
  send(res, httpStatusOf[err.code], { error: err.code, message: err.message, ...err.details });
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limits.httpBodyBytesMax) {
        reject(new LockError(ErrorCode.BadRequest, `body larger than ${limits.httpBodyBytesMax} bytes`));
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

/** Extra routes served beside the API (metrics, dashboard), keyed by exact path. */
export type ExtraRoute = (req: IncomingMessage, res: ServerResponse) => void | Promise<void>;

/** The local HTTP endpoint of one peer. */
export class HttpApi {
  readonly #peer: PeerRuntime;
  readonly #log: Logger;
  readonly #server: Server;
  readonly #extra = new Map<string, ExtraRoute>();

  constructor(peer: PeerRuntime, logger: Logger) {
    this.#peer = peer;
    this.#log = logger.child({ component: 'http' });
    this.#server = createServer({ keepAliveTimeout: 30_000, requestTimeout: 0, maxHeaderSize: 16 * 1024 }, (req, res) => {
      this.#handle(req, res).catch((err: unknown) => this.#onError(res, err));
    });
    this.#server.on('clientError', (err, socket) => {
      this.#log.debug({ err: err.message }, 'malformed HTTP request');
      if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\n\r\n');
    });
  }

  /** Serves `handler` for GET on `path` (metrics, dashboard). */
  route(path: string, handler: ExtraRoute): void {
    this.#extra.set(path, handler);
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

  /** Stops accepting new connections; `closeAll` then ends the ones still open. */
  close(): Promise<void> {
    return new Promise((resolve) => {
      this.#server.close(() => resolve());
      this.#server.closeIdleConnections();
    });
  }

  /** Ends every open connection (after the holds were ended and answered). */
  closeAll(): void {
    this.#server.closeAllConnections();
  }

  #onError(res: ServerResponse, err: unknown): void {
    if (err instanceof LockError) {
      if (!res.headersSent) sendError(res, err);
      return;
    }
    this.#log.error({ err }, 'unexpected error in an HTTP handler');
    if (!res.headersSent) send(res, 500, { error: 'ERR_INTERNAL', message: 'internal error; see the peer log' });
    else res.destroy();
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const path = url.pathname;
    const extra = this.#extra.get(path);
    if (extra !== undefined && req.method === 'GET') return extra(req, res);
    if (path === '/healthz') return send(res, 200, { ok: true });
    if (path === '/readyz') {
      const ready = this.#peer.leaseValid();
      return send(res, ready ? 200 : 503, ready ? { ready: true } : { error: ErrorCode.NotReady, message: 'this peer holds no lease or has not synced with every peer yet' });
    }
    if (path === '/v1/cluster' && req.method === 'GET') return send(res, 200, this.#peer.cluster());
    if (path === '/v1/locks' && req.method === 'GET') return send(res, 200, { locks: this.#peer.locks() });
    const m = /^\/v1\/locks\/([^/]+)(?:\/(acquire|release|refresh))?$/.exec(path);
    if (m === null) throw new LockError(ErrorCode.NotFound, `no route ${req.method ?? ''} ${path}`);
    let name: string;
    try {
      name = checkLockName(decodeURIComponent(m[1] ?? ''));
    } catch (err) {
      if (err instanceof URIError) throw new LockError(ErrorCode.BadRequest, 'lock name is not valid percent-encoded UTF-8');
      throw err;
    }
    return this.#lockRoute(req, res, name, m[2]);
  }

  async #lockRoute(req: IncomingMessage, res: ServerResponse, name: string, action: string | undefined): Promise<void> {
    if (action === undefined) {
      if (req.method !== 'GET') throw new LockError(ErrorCode.NotFound, `use GET on /v1/locks/{name}`);
      return send(res, 200, this.#peer.lock(name));
    }
    if (req.method !== 'POST') throw new LockError(ErrorCode.NotFound, `use POST on /v1/locks/{name}/${action}`);
    const body = parseBody(await readBody(req));
    if (action === 'acquire') return this.#acquire(res, name, body);
    if (action === 'release') {
      this.#peer.release(name, parseRelease(body).id);
      return send(res, 200, { released: true });
    }
    const { id, ttlMs } = parseRefresh(body);
    return send(res, 200, { expires_at: this.#peer.refresh(name, id, ttlMs) });
  }

  /**
   * Acquire: the answer is written from the request's own callbacks, in the turn they fire,
   * so a hold that ends in the turn of its grant is still told: grant line, then end line.
   */
  #acquire(res: ServerResponse, name: string, body: Record<string, unknown>): Promise<void> {
    const opts = parseAcquire(body);
    return new Promise<void>((done) => {
      let grant: Grant | null = null;
      let ended = false;
      const handle = this.#peer.request(name, opts, {
        granted: (g) => {
          grant = g;
          done();
          if (res.destroyed || res.writableEnded) {
            // The client left before the grant: nobody holds it, release.
            this.#peer.release(name, g.id);
            return;
          }
          if (opts.hold !== 'connection') return send(res, 200, grantJson(g));
          res.writeHead(200, { 'content-type': 'application/x-ndjson', 'cache-control': 'no-store' });
          res.write(`${JSON.stringify(grantJson(g))}\n`);
        },
        failed: (err) => {
          done();
          if (!res.headersSent) sendError(res, err);
        },
        ended: (reason) => {
          ended = true;
          if (opts.hold === 'connection' && grant !== null && !res.writableEnded) res.end(`${JSON.stringify({ ended: reason, id: grant.id })}\n`);
        },
      });
      // A waiting request whose client left is withdrawn; a connection-bound hold whose
      // connection closed is released (a TTL hold lives on after its answer).
      res.on('close', () => {
        if (!ended && (grant === null || opts.hold === 'connection')) handle.clientGone();
      });
    });
  }
}
