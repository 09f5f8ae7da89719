/**
 * The local HTTP API of docs/design.md section 6. Every request is first admitted by the
 * access policy (access.ts: Host, Origin, token); input is validated in validate.ts; errors map to
 * status codes in one place (errors.ts `httpStatusOf`); every error body is
 * `{error, message}` plus the details of its code.
 */
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ErrorCode, LockError, httpStatusOf } from '../errors.js';
import { limits } from '../limits.js';
import type { Logger } from '../log.js';
import type { Grant, HoldOptions, RequestCallbacks, RequestHandle } from '../runtime/holds.js';
import type { WatchSelector } from './watch.js';
import { clusterJson, errorDetailsJson, leaderJson, lockJson } from './views.js';
import type { LockService } from '../runtime/peer.js';
import type { Access } from './access.js';
import { AccessPolicy, requireAdmin } from './access.js';
import type { SocketAccess } from './listen-target.js';
import { ParkedSockets, parkingDefaults } from './parked-sockets.js';
import type { ParkingOptions } from './parked-sockets.js';
import { applySocketAccess } from './listen-target.js';
import { openApiSpec } from './openapi.js';
import { apiRoutes, matchRoute } from './routes.js';
import type { RouteKey, RouteSpec } from './routes.js';
import { checkLockName, checkPrefix, parseAcquire, parseAcquireAll, parseBody, parseCampaign, parseProclaim, parseRefresh, parseRelease } from './validate.js';

/** The JSON a grant is answered with. */
export function grantJson(g: Grant): Record<string, unknown> {
  return { lock: g.lock, id: g.id, token: g.token.toString(), mode: g.mode, peer: g.peer, granted_at: g.grantedAt, expires_at: g.expiresAt };
}

/** The JSON an all-or-nothing grant (POST /v1/acquire) is answered with: every lock, with its mode and token. */
function grantAllJson(g: Grant): Record<string, unknown> {
  const token = g.token.toString();
  return { ...grantJson(g), locks: g.locks.map((l) => ({ lock: l.lock, mode: l.mode, token })) };
}

function send(res: ServerResponse, status: number, body: unknown, headers?: Record<string, string>): void {
  const text = JSON.stringify(body);
  const length = Buffer.byteLength(text);
  res.writeHead(status, headers === undefined ? { 'content-type': 'application/json', 'content-length': length } : { ...headers, 'content-type': 'application/json', 'content-length': length });
  res.end(text);
}

/**
 * The answer to a release. When others wait for a lock it freed, it leaves at the end of the
 * turn, after the frames that tell the other peers (the mesh frames its queues in a
 * `setImmediate` queued when the release stepped the core, so before this one): the next
 * holder's grant waits for those frames, the releaser's answer does not need to go first
 * (a hot lock's handoffs, issue 15). Otherwise it leaves at once.
 */
function answerRelease(res: ServerResponse, othersWait: boolean, body: Record<string, unknown>): void {
  if (othersWait) setImmediate(send, res, 200, body);
  else send(res, 200, body);
}

/** Codes that refuse a caller rather than a request's content: each gets a log line. */
const refusals: ReadonlySet<ErrorCode> = new Set([
  ErrorCode.HostRefused, ErrorCode.OriginRefused, ErrorCode.Unauthorized, ErrorCode.AdminRequired, ErrorCode.UnsupportedMediaType, ErrorCode.BodyTooLarge,
]);

function sendError(res: ServerResponse, err: LockError): void {
  // A browser asked for a token (the dashboard, opened by hand) prompts for it as a password.
  const headers: Record<string, string> = err.code === ErrorCode.Unauthorized ? { 'www-authenticate': 'Basic realm="lamport-lock", charset="UTF-8"' } : {};
  send(res, httpStatusOf[err.code], { error: err.code, message: err.message, ...errorDetailsJson(err.details) }, headers);
}

/**
 * A POST body must be JSON: a web page cannot send that content type to another origin
 * without a CORS preflight, which this API never grants.
 */
function checkJsonBody(req: IncomingMessage): void {
  const header = req.headers['content-type'];
  if (header === 'application/json') return;
  const type = (header ?? '').split(';')[0]?.trim().toLowerCase();
  if (type !== 'application/json') {
    throw new LockError(ErrorCode.UnsupportedMediaType, `a POST body must be sent as content-type application/json (got ${JSON.stringify(req.headers['content-type'] ?? 'none')})`);
  }
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

/**
 * A request target that is a path WHATWG URL parsing leaves as it is: it starts with `/`,
 * has only unreserved characters, sub-delimiters, `:`, `@`, `/` and percent escapes, no
 * query, does not start with `//` (a host to URL), and has no segment that starts with a dot
 * (`.` and `..` segments are resolved by URL, `%2e` is a dot to it too).
 */
const plainPath = /^(?!\/\/|.*(?:\/\.|%2e))\/[\w.\-~%!$&'()*+,;=:@/]*$/i;

/**
 * The path and query of a request target, as WHATWG URL parses them; a plain path (most
 * requests) is taken as it is, without building a URL. One URL cannot parse (`//`) is a 400.
 */
export function requestTarget(raw: string): { path: string; query: URLSearchParams | null } {
  if (plainPath.test(raw)) return { path: raw, query: null };
  let url: URL;
  try {
    url = new URL(raw, 'http://localhost');
  } catch {
    throw new LockError(ErrorCode.BadRequest, `the request target ${JSON.stringify(raw.slice(0, 200))} is not a valid path`);
  }
  return { path: url.pathname, query: url.searchParams };
}

/** What a route's handler gets: the request, its answer, its `{name}` (checked; '' without one), query and access. */
interface RouteContext {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly name: string;
  readonly query: URLSearchParams | null;
  readonly access: Access;
}

/** Extra routes served beside the API (metrics, dashboard), keyed by exact path. */
export type ExtraRoute = (req: IncomingMessage, res: ServerResponse) => void | Promise<void>;

/** A lock or election name from its percent-encoded path segment. */
function pathName(segment: string | undefined): string {
  try {
    return checkLockName(decodeURIComponent(segment ?? ''));
  } catch (err) {
    if (err instanceof URIError) throw new LockError(ErrorCode.BadRequest, 'lock name is not valid percent-encoded UTF-8');
    throw err;
  }
}

/** The local HTTP endpoint of one peer. */
export class HttpApi {
  readonly #peer: LockService;
  readonly #log: Logger;
  readonly #server: Server;
  readonly #extra = new Map<string, ExtraRoute>();
  readonly #access: AccessPolicy;
  /** Connections of waiting requests, past a bound paused and swept (issue 15: a burst of them closing stalled the loop). */
  readonly #parked: ParkedSockets;

  constructor(
    peer: LockService,
    logger: Logger,
    access = new AccessPolicy({ unix: false, listenHost: null, allowHosts: [], token: null, adminToken: null }),
    parking: ParkingOptions = parkingDefaults,
  ) {
    this.#parked = new ParkedSockets(parking);
    this.#peer = peer;
    this.#access = access;
    this.#log = logger.child({ component: 'http' });
    this.#server = createServer({ keepAliveTimeout: limits.httpKeepAliveMs, requestTimeout: 0, maxHeaderSize: limits.httpHeaderBytesMax }, (req, res) => {
      this.#handle(req, res).catch((err: unknown) => this.#onError(req, res, err));
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

  /** Every route served: the API's table and the extra GET routes (the OpenAPI test compares them with the description). */
  routes(): RouteSpec[] {
    return [...apiRoutes, ...[...this.#extra.keys()].map((path) => ({ method: 'GET' as const, path }))];
  }

  #watch: ((req: IncomingMessage, res: ServerResponse, selector: WatchSelector) => void) | null = null;

  /** Serves GET /v1/locks/{name}/watch and GET /v1/watch?prefix= with `open` (src/http/watch.ts). */
  watchWith(open: (req: IncomingMessage, res: ServerResponse, selector: WatchSelector) => void): void {
    this.#watch = open;
  }

  #openWatch(req: IncomingMessage, res: ServerResponse, selector: WatchSelector): void {
    if (this.#watch === null) throw new LockError(ErrorCode.NotFound, 'this peer serves no watches');
    this.#watch(req, res, selector);
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

  #onError(req: IncomingMessage, res: ServerResponse, err: unknown): void {
    if (err instanceof LockError) {
      if (refusals.has(err.code)) {
        const { host, origin } = req.headers;
        this.#log.warn({ code: err.code, method: req.method, path: req.url?.slice(0, 200), host, origin, remote: req.socket.remoteAddress }, `refused: ${err.message}`);
      }
      if (!res.headersSent) sendError(res, err);
      return;
    }
    this.#log.error({ err }, 'unexpected error in an HTTP handler');
    if (!res.headersSent) send(res, 500, { error: 'ERR_INTERNAL', message: 'internal error; see the peer log' });
    else res.destroy();
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const { path, query } = requestTarget(req.url ?? '/');
    const access = this.#access.admit(req, path);
    if (req.method === 'POST') checkJsonBody(req);
    const extra = this.#extra.get(path);
    if (extra !== undefined && req.method === 'GET') return extra(req, res);
    const match = matchRoute(req.method ?? '', path);
    if (match === null) throw new LockError(ErrorCode.NotFound, `no route ${req.method ?? ''} ${path}`);
    if ('template' in match) throw new LockError(ErrorCode.NotFound, `use ${match.methods.join(' or ')} on ${match.template}`);
    const name = match.segment === undefined ? '' : pathName(match.segment);
    return this.#routes[match.key]({ req, res, name, query, access });
  }

  /** The handler of each route of `apiRoutes` (routes.ts): the type makes the table complete. */
  readonly #routes: Readonly<Record<RouteKey, (c: RouteContext) => void | Promise<void>>> = {
    'GET /healthz': ({ res }) => send(res, 200, { ok: true }),
    'GET /readyz': ({ res }) => (this.#peer.ready() ? send(res, 200, { ready: true }) : sendError(res, this.#peer.notReadyError())),
    'GET /v1/openapi.json': ({ res }) => send(res, 200, openApiSpec),
    'GET /v1/cluster': ({ res }) => send(res, 200, clusterJson(this.#peer.cluster())),
    'GET /v1/locks': ({ res, query }) => {
      const prefix = checkPrefix(query?.get('prefix') ?? null);
      send(res, 200, { locks: this.#peer.locks().filter((l) => l.name.startsWith(prefix)).map((l) => lockJson(l)) });
    },
    'GET /v1/watch': ({ req, res, query }) => this.#openWatch(req, res, { prefix: checkPrefix(query?.get('prefix') ?? null) }),
    'POST /v1/acquire': async ({ req, res }) => {
      const { asks, opts } = parseAcquireAll(parseBody(await readBody(req)));
      return this.#acquire(res, opts.hold, (cb) => this.#peer.requestAll(asks, opts, cb), grantAllJson);
    },
    'POST /v1/release': async ({ req, res }) => answerRelease(res, this.#peer.release(null, parseRelease(parseBody(await readBody(req))).id), { released: true }),
    'POST /v1/refresh': async ({ req, res }) => {
      const { id, ttlMs } = parseRefresh(parseBody(await readBody(req)));
      send(res, 200, { expires_at: this.#peer.refresh(null, id, ttlMs) });
    },
    'GET /v1/locks/{name}': ({ res, name }) => send(res, 200, lockJson(this.#peer.lock(name))),
    'GET /v1/locks/{name}/watch': ({ req, res, name }) => this.#openWatch(req, res, { lock: name }),
    'POST /v1/locks/{name}/acquire': async ({ req, res, name }) => {
      const opts = parseAcquire(parseBody(await readBody(req)));
      return this.#acquire(res, opts.hold, (cb) => this.#peer.request(name, opts, cb));
    },
    'POST /v1/locks/{name}/release': async ({ req, res, name }) => answerRelease(res, this.#peer.release(name, parseRelease(parseBody(await readBody(req))).id), { released: true }),
    'POST /v1/locks/{name}/refresh': async ({ req, res, name }) => {
      const { id, ttlMs } = parseRefresh(parseBody(await readBody(req)));
      send(res, 200, { expires_at: this.#peer.refresh(name, id, ttlMs) });
    },
    'POST /v1/locks/{name}/force-release': async ({ req, res, name, access }) => {
      requireAdmin(access, 'force-release');
      this.#forceRelease(res, name, parseBody(await readBody(req)));
    },
    // Elections (docs/design.md section 6): a campaign is an exclusive, connection-bound
    // acquire of the lock `name` whose meta is `{value}`; the leader is its holder; resign is
    // a release; observe streams each change of leader.
    'GET /v1/elections/{name}': ({ res, name }) => send(res, 200, { name, leader: leaderJson(this.#peer.lock(name)) }),
    'GET /v1/elections/{name}/observe': ({ req, res, name }) => this.#openWatch(req, res, { election: name }),
    'POST /v1/elections/{name}/campaign': async ({ req, res, name }) => {
      const opts = parseCampaign(parseBody(await readBody(req)));
      return this.#acquire(res, opts.hold, (cb) => this.#peer.request(name, opts, cb), (g) => ({ ...grantJson(g), term: g.token.toString(), value: opts.meta?.['value'] ?? null }));
    },
    'POST /v1/elections/{name}/proclaim': async ({ req, res, name }) => {
      const { id, value } = parseProclaim(parseBody(await readBody(req)));
      this.#peer.setMeta(name, id, { value });
      send(res, 200, { proclaimed: true });
    },
    'POST /v1/elections/{name}/resign': async ({ req, res, name }) => answerRelease(res, this.#peer.release(name, parseRelease(parseBody(await readBody(req))).id), { resigned: true }),
  };

  /**
   * Ends every hold of `name` that this peer's clients have (not other peers' holds: each
   * peer is the authority on its own clients). The holders see the end as `released`.
   */
  #forceRelease(res: ServerResponse, name: string, body: Record<string, unknown>): void {
    if (Object.keys(body).length > 0) throw new LockError(ErrorCode.BadRequest, 'force-release takes an empty body');
    const ids = this.#peer.lock(name).holders.flatMap((h) => (h.local && h.id !== undefined ? [h.id] : []));
    for (const id of ids) this.#peer.release(name, id);
    this.#log.warn({ lock: name, ids }, 'force-released every local hold of a lock');
    send(res, 200, { released: ids });
  }

  /**
   * Acquire: the answer is written from the request's own callbacks, in the turn they fire,
   * so a hold that ends in the turn of its grant is still told: grant line, then end line.
   */
  #acquire(res: ServerResponse, hold: HoldOptions['hold'], start: (cb: RequestCallbacks) => RequestHandle, answer: (g: Grant) => Record<string, unknown> = grantJson): Promise<void> {
    return new Promise<void>((done) => {
      let grant: Grant | null = null;
      let ended = false;
      let answered = false;
      const socket = res.socket;
      const markAnswered = (): void => {
        answered = true;
        if (socket !== null) this.#parked.unpark(socket);
      };
      const handle = start({
        granted: (g) => {
          markAnswered();
          grant = g;
          done();
          if (res.destroyed || res.writableEnded) {
            // The client left before the grant: nobody holds it, release.
            this.#peer.release(null, g.id);
            return;
          }
          if (hold !== 'connection') return send(res, 200, answer(g));
          res.writeHead(200, { 'content-type': 'application/x-ndjson', 'cache-control': 'no-store' });
          res.write(`${JSON.stringify(answer(g))}\n`);
        },
        failed: (err) => {
          markAnswered();
          done();
          if (!res.headersSent) sendError(res, err);
        },
        ended: (reason) => {
          ended = true;
          if (hold === 'connection' && grant !== null && !res.writableEnded) res.end(`${JSON.stringify({ ended: reason, id: grant.id })}\n`);
        },
      });
      // A waiting request whose client left is withdrawn; a connection-bound hold whose
      // connection closed is released (a TTL hold lives on after its answer).
      res.on('close', () => {
        if (socket !== null) this.#parked.unpark(socket);
        if (!ended && (grant === null || hold === 'connection')) handle.clientGone();
      });
      if (!answered && socket !== null) this.#parked.park(socket);
    });
  }
}
