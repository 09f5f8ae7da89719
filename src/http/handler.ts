/**
 * The local HTTP API of docs/design.md section 6, as a handler of plain requests (plain.ts):
 * every rule of the API is here, none of Node's sockets. Every request is first admitted by
 * the access policy (access.ts: Host, Origin, token); input is validated in validate.ts;
 * errors map to status codes in one place (errors.ts `httpStatusOf`); every error body is
 * `{error, message}` plus the details of its code. The Node adapter is api.ts; the
 * simulator's clients call this handler directly (test/sim/clients.ts).
 */
import type { ViewChange } from '../core/view.js';
import { ErrorCode, LockError, httpStatusOf } from '../errors.js';
import type { Logger } from '../log.js';
import type { Grant, HoldOptions, RequestCallbacks, RequestHandle } from '../runtime/holds.js';
import type { LockService } from '../runtime/peer.js';
import type { Access, AccessPolicy } from './access.js';
import { requireAdmin } from './access.js';
import { openApiSpec } from './openapi.js';
import { headerOf } from './plain.js';
import type { PlainHeaders, PlainRequest, PlainResponse } from './plain.js';
import { apiRoutes, matchRoute } from './routes.js';
import type { RouteKey, RouteSpec } from './routes.js';
import {
  checkLockName, checkMemberId, checkPrefix, parseAcquire, parseAcquireAll, parseAddMember, parseBody, parseCampaign, parseChangeBody, parseChangeQuery, parseLevel,
  parseProclaim, parseRefresh, parseRelease,
} from './validate.js';
import { clusterJson, errorDetailsJson, leaderJson, lockJson, membersJson, viewJson } from './views.js';
import type { WatchSelector } from './watch.js';
import { encodeJoinTicket } from '../runtime/view-store.js';

/** The JSON a grant is answered with. */
export function grantJson(g: Grant): Record<string, unknown> {
  return { lock: g.lock, id: g.id, token: g.token.toString(), mode: g.mode, peer: g.peer, granted_at: g.grantedAt, expires_at: g.expiresAt };
}

/** The JSON an all-or-nothing grant (POST /v1/acquire) is answered with: every lock, with its mode and token. */
function grantAllJson(g: Grant): Record<string, unknown> {
  const token = g.token.toString();
  return { ...grantJson(g), locks: g.locks.map((l) => ({ lock: l.lock, mode: l.mode, token })) };
}

/** Codes that refuse a caller rather than a request's content: each gets a log line. */
const refusals: ReadonlySet<ErrorCode> = new Set([
  ErrorCode.HostRefused, ErrorCode.OriginRefused, ErrorCode.Unauthorized, ErrorCode.AdminRequired, ErrorCode.UnsupportedMediaType, ErrorCode.BodyTooLarge,
]);

function sendError(res: PlainResponse, err: LockError): void {
  // A browser asked for a token (the dashboard, opened by hand) prompts for it as a password.
  const headers: Record<string, string> = err.code === ErrorCode.Unauthorized ? { 'www-authenticate': 'Basic realm="lamport-lock", charset="UTF-8"' } : {};
  res.json(httpStatusOf[err.code], { error: err.code, message: err.message, ...errorDetailsJson(err.details) }, headers);
}

/**
 * A POST body must be JSON: a web page cannot send that content type to another origin
 * without a CORS preflight, which this API never grants.
 */
function checkJsonBody(headers: PlainHeaders): void {
  const header = headerOf(headers, 'content-type');
  if (header === 'application/json') return;
  const type = (header ?? '').split(';')[0]?.trim().toLowerCase();
  if (type !== 'application/json') {
    throw new LockError(ErrorCode.UnsupportedMediaType, `a POST body must be sent as content-type application/json (got ${JSON.stringify(header ?? 'none')})`);
  }
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

/** A lock or election name (`{name}`), or a member id (`{id}`), from its percent-encoded path segment. */
function pathName(segment: string | undefined, member: boolean): string {
  let text: string;
  try {
    text = decodeURIComponent(segment ?? '');
  } catch {
    throw new LockError(ErrorCode.BadRequest, `${member ? 'member id' : 'lock name'} is not valid percent-encoded UTF-8`);
  }
  return member ? checkMemberId(text, 'the member id in the path') : checkLockName(text);
}

/**
 * What a route's handler gets: the answer, its `{name}` or `{id}` (checked; '' without one),
 * query, access, its body to read, and how to answer a failure that comes later.
 */
interface RouteContext {
  readonly res: PlainResponse;
  readonly name: string;
  readonly query: URLSearchParams | null;
  readonly access: Access;
  /** Reads and parses the JSON body, then runs `use` on it; a failure of either is answered. */
  readonly body: (use: (body: Record<string, unknown>) => void) => void;
  readonly fail: (err: unknown) => void;
}

/** A route served beside the API (metrics, dashboard), given what the adapter serves it with. */
export type NativeRoute<N> = (native: N) => void | Promise<void>;

/** How the handler answers beyond its peer: `soon` runs a function at the end of the event-loop turn. */
export interface HandlerOptions {
  readonly soon: (fn: () => void) => unknown;
}

/** The API's handler of plain requests, for one peer. */
export class ApiHandler<N> {
  readonly #peer: LockService;
  readonly #log: Logger;
  readonly #access: AccessPolicy;
  readonly #soon: (fn: () => void) => unknown;
  readonly #extra = new Map<string, NativeRoute<N>>();
  #watch: ((native: N, selector: WatchSelector) => void) | null = null;

  constructor(peer: LockService, logger: Logger, access: AccessPolicy, opts: HandlerOptions) {
    this.#peer = peer;
    this.#access = access;
    this.#log = logger.child({ component: 'http' });
    this.#soon = opts.soon;
  }

  /** Serves `handler` for GET on `path` (metrics, dashboard). */
  route(path: string, handler: NativeRoute<N>): void {
    this.#extra.set(path, handler);
  }

  /** Every route served: the API's table and the extra GET routes (the OpenAPI test compares them with the description). */
  routes(): RouteSpec[] {
    return [...apiRoutes, ...[...this.#extra.keys()].map((path) => ({ method: 'GET' as const, path }))];
  }

  /** Serves GET /v1/locks/{name}/watch and GET /v1/watch?prefix= with `open` (src/http/watch.ts). */
  watchWith(open: (native: N, selector: WatchSelector) => void): void {
    this.#watch = open;
  }

  /** Handles one request: admits it, routes it, answers on `res` (at once, or when its grant comes). */
  handle(req: PlainRequest<N>, res: PlainResponse): void {
    try {
      this.#dispatch(req, res);
    } catch (err) {
      this.#fail(req, res, err);
    }
  }

  #dispatch(req: PlainRequest<N>, res: PlainResponse): void {
    const { path, query } = requestTarget(req.target);
    const access = this.#access.admit(req, path);
    if (req.method === 'POST') checkJsonBody(req.headers);
    const extra = this.#extra.get(path);
    if (extra !== undefined && req.method === 'GET') {
      const served = extra(req.native);
      if (served instanceof Promise) served.catch((err: unknown) => this.#fail(req, res, err));
      return;
    }
    const match = matchRoute(req.method, path);
    if (match === null) throw new LockError(ErrorCode.NotFound, `no route ${req.method} ${path}`);
    if ('template' in match) throw new LockError(ErrorCode.NotFound, `use ${match.methods.join(' or ')} on ${match.template}`);
    const name = match.segment === undefined ? '' : pathName(match.segment, match.key.includes('{id}'));
    const body = (use: (b: Record<string, unknown>) => void): void => {
      req.readBody((err, text) => {
        try {
          if (err !== null) throw err;
          use(parseBody(text));
        } catch (e) {
          this.#fail(req, res, e);
        }
      });
    };
    this.#routes[match.key]({ res, name, query, access, body, fail: (err) => this.#fail(req, res, err) }, req.native);
  }

  #fail(req: PlainRequest<N>, res: PlainResponse, err: unknown): void {
    if (err instanceof LockError) {
      if (refusals.has(err.code)) {
        const host = headerOf(req.headers, 'host');
        const origin = headerOf(req.headers, 'origin');
        this.#log.warn({ code: err.code, method: req.method, path: req.target.slice(0, 200), host, origin, remote: req.remote }, `refused: ${err.message}`);
      }
      if (!res.headersSent) sendError(res, err);
      return;
    }
    this.#log.error({ err }, 'unexpected error in an HTTP handler');
    if (!res.headersSent) res.json(500, { error: 'ERR_INTERNAL', message: 'internal error; see the peer log' });
    else res.destroy();
  }

  #openWatch(native: N, selector: WatchSelector): void {
    if (this.#watch === null) throw new LockError(ErrorCode.NotFound, 'this peer serves no watches');
    this.#watch(native, selector);
  }

  /**
   * The answer to a release. When others wait for a lock it freed, it leaves at the end of the
   * turn, after the frames that tell the other peers (the mesh frames its queues in a
   * `setImmediate` queued when the release stepped the core, so before this one): the next
   * holder's grant waits for those frames, the releaser's answer does not need to go first
   * (a hot lock's handoffs, issue 15). Otherwise it leaves at once.
   */
  #answerRelease(res: PlainResponse, othersWait: boolean, body: Record<string, unknown>): void {
    if (othersWait) this.#soon(() => res.json(200, body));
    else res.json(200, body);
  }

  #release(c: RouteContext, name: string | null, answer: Record<string, unknown>): void {
    c.body((b) => this.#answerRelease(c.res, this.#peer.release(name, parseRelease(b).id), answer));
  }

  #refresh(c: RouteContext, name: string | null): void {
    c.body((b) => {
      const { id, ttlMs } = parseRefresh(b);
      c.res.json(200, { expires_at: this.#peer.refresh(name, id, ttlMs) });
    });
  }

  /** The handler of each route of `apiRoutes` (routes.ts): the type makes the table complete. */
  readonly #routes: Readonly<Record<RouteKey, (c: RouteContext, native: N) => void>> = {
    'GET /healthz': ({ res }) => res.json(200, { ok: true }),
    'GET /readyz': ({ res }) => (this.#peer.ready() ? res.json(200, { ready: true }) : sendError(res, this.#peer.notReadyError())),
    'GET /v1/openapi.json': ({ res }) => res.json(200, openApiSpec),
    'GET /v1/cluster': ({ res }) => res.json(200, clusterJson(this.#peer.inspect.cluster())),
    'GET /v1/members': ({ res }) => res.json(200, membersJson(this.#peer.inspect.members())),
    'POST /v1/members': (c) => this.#changeOf(c, 'member add', parseAddMember),
    'DELETE /v1/members/{id}': (c) => {
      requireAdmin(c.access, 'member remove');
      this.#change(c, { op: 'remove', id: c.name }, parseChangeQuery(c.query).timeoutMs);
    },
    'POST /v1/members/{id}/promote': (c) => this.#changeOf(c, 'member promote', (b) => ({ change: { op: 'promote', id: c.name }, ...parseChangeBody(b) })),
    'POST /v1/members/{id}/retire': (c) => this.#changeOf(c, 'member retire', (b) => ({ change: { op: 'retire', id: c.name }, ...parseChangeBody(b) })),
    'POST /v1/cluster/level': (c) => this.#changeOf(c, 'level raise', parseLevel),
    'GET /v1/locks': ({ res, query }) => {
      const prefix = checkPrefix(query?.get('prefix') ?? null);
      res.json(200, { locks: this.#peer.inspect.locks().filter((l) => l.name.startsWith(prefix)).map((l) => lockJson(l)) });
    },
    'GET /v1/watch': ({ query }, native) => this.#openWatch(native, { prefix: checkPrefix(query?.get('prefix') ?? null) }),
    'POST /v1/acquire': (c) => c.body((b) => {
      const { asks, opts } = parseAcquireAll(b);
      this.#acquire(c.res, opts.hold, (cb) => this.#peer.requestAll(asks, opts, cb), grantAllJson);
    }),
    'POST /v1/release': (c) => this.#release(c, null, { released: true }),
    'POST /v1/refresh': (c) => this.#refresh(c, null),
    'GET /v1/locks/{name}': ({ res, name }) => res.json(200, lockJson(this.#peer.inspect.lock(name))),
    'GET /v1/locks/{name}/watch': ({ name }, native) => this.#openWatch(native, { lock: name }),
    'POST /v1/locks/{name}/acquire': (c) => c.body((b) => {
      const opts = parseAcquire(b);
      this.#acquire(c.res, opts.hold, (cb) => this.#peer.request(c.name, opts, cb));
    }),
    'POST /v1/locks/{name}/release': (c) => this.#release(c, c.name, { released: true }),
    'POST /v1/locks/{name}/refresh': (c) => this.#refresh(c, c.name),
    'POST /v1/locks/{name}/force-release': (c) => {
      requireAdmin(c.access, 'force-release');
      c.body((b) => this.#forceRelease(c.res, c.name, b));
    },
    // Elections (docs/design.md section 6): a campaign is an exclusive, connection-bound
    // acquire of the lock `name` whose meta is `{value}`; the leader is its holder; resign is
    // a release; observe streams each change of leader.
    'GET /v1/elections/{name}': ({ res, name }) => res.json(200, { name, leader: leaderJson(this.#peer.inspect.lock(name)) }),
    'GET /v1/elections/{name}/observe': ({ name }, native) => this.#openWatch(native, { election: name }),
    'POST /v1/elections/{name}/campaign': (c) => c.body((b) => {
      const opts = parseCampaign(b);
      this.#acquire(c.res, opts.hold, (cb) => this.#peer.request(c.name, opts, cb), (g) => ({ ...grantJson(g), term: g.token.toString(), value: opts.meta?.['value'] ?? null }));
    }),
    'POST /v1/elections/{name}/proclaim': (c) => c.body((b) => {
      const { id, value } = parseProclaim(b);
      this.#peer.setMeta(c.name, id, { value });
      c.res.json(200, { proclaimed: true });
    }),
    'POST /v1/elections/{name}/resign': (c) => this.#release(c, c.name, { resigned: true }),
  };

  /** An administrative change whose body says what it is and how long it may take. */
  #changeOf(c: RouteContext, what: string, parse: (body: Record<string, unknown>) => { change: ViewChange; timeoutMs: number }): void {
    requireAdmin(c.access, what);
    c.body((b) => {
      const { change, timeoutMs } = parse(b);
      this.#change(c, change, timeoutMs);
    });
  }

  /**
   * One change of the agreed view (docs/reconfiguration.md): answered with the view that has
   * it once the runtime says it is made, or with the runtime's coded refusal. A client that
   * leaves gives up its wait (the change's signal); the change may be made all the same.
   */
  #change(c: RouteContext, change: ViewChange, timeoutMs: number): void {
    const gone = new AbortController();
    c.res.onClose(() => gone.abort());
    this.#log.info({ change }, 'a change of the members asked for');
    this.#peer.changeView(change, { timeoutMs, signal: gone.signal }).then(
      (view) => {
        // The host added starts from the view that has it, with the cluster's founders.
        const join = change.op === 'add' ? { join: encodeJoinTicket({ ...this.#peer.joinTicket(), view }) } : {};
        if (!c.res.closed) c.res.json(200, { ...viewJson(view), ...join });
      },
      c.fail,
    );
  }

  /**
   * Ends every hold of `name` that this peer's clients have (not other peers' holds: each
   * peer is the authority on its own clients). The holders see the end as `released`.
   */
  #forceRelease(res: PlainResponse, name: string, body: Record<string, unknown>): void {
    if (Object.keys(body).length > 0) throw new LockError(ErrorCode.BadRequest, 'force-release takes an empty body');
    const ids = this.#peer.inspect.lock(name).holders.flatMap((h) => (h.local && h.id !== undefined ? [h.id] : []));
    for (const id of ids) this.#peer.release(name, id);
    this.#log.warn({ lock: name, ids }, 'force-released every local hold of a lock');
    res.json(200, { released: ids });
  }

  /**
   * Acquire: the answer is written from the request's own callbacks, in the turn they fire,
   * so a hold that ends in the turn of its grant is still told: grant line, then end line.
   * A grant that comes after the client left is released: nobody holds it. When the client
   * leaves, a waiting request is withdrawn and a connection-bound hold released (a TTL hold
   * lives on after its answer).
   */
  #acquire(res: PlainResponse, hold: HoldOptions['hold'], start: (cb: RequestCallbacks) => RequestHandle, answer: (g: Grant) => Record<string, unknown> = grantJson): void {
    let grant: Grant | null = null;
    let ended = false;
    let answered = false;
    const handle = start({
      granted: (g) => {
        answered = true;
        res.answered();
        grant = g;
        if (res.closed) return void this.#peer.release(null, g.id);
        if (hold !== 'connection') return res.json(200, answer(g));
        res.head(200, { 'content-type': 'application/x-ndjson', 'cache-control': 'no-store' });
        res.write(`${JSON.stringify(answer(g))}\n`);
      },
      failed: (err) => {
        answered = true;
        res.answered();
        if (!res.headersSent) sendError(res, err);
      },
      ended: (reason) => {
        ended = true;
        if (hold === 'connection' && grant !== null && !res.closed) res.end(`${JSON.stringify({ ended: reason, id: grant.id })}\n`);
      },
    });
    res.onClose(() => {
      if (!ended && (grant === null || hold === 'connection')) handle.clientGone();
    });
    if (!answered) res.waiting();
  }
}
