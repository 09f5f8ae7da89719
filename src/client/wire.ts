/**
 * The typed client's half of the local HTTP API (docs/design.md section 6): what it sends
 * (acquire bodies, the peer it talks to) and how it reads what comes back (grants, error
 * bodies, server-sent events). [`LockClient`](./lock-client.ts) does the talking.
 */
import type { IncomingMessage } from 'node:http';
import { userInfo } from 'node:os';
import type { ErrorCode } from '../errors.js';
import { LockError } from '../errors.js';

/** Options of an acquire; every field optional (docs/design.md section 6 defaults). */
export interface AcquireRequest {
  readonly timeoutMs?: number;
  readonly ttlMs?: number;
  readonly mode?: 'exclusive' | 'shared';
  readonly limit?: number;
  readonly permits?: number;
  readonly owner?: string;
  readonly meta?: Record<string, unknown>;
  readonly expectedMs?: number;
  /** Stops waiting for the grant (and, in `withLock`, aborts `fn`'s signal): the Node options habit. */
  readonly signal?: AbortSignal;
}

/** Options of the calls that only take a signal (`watch`, `observe`). */
export interface SignalOptions {
  readonly signal?: AbortSignal;
}

/**
 * The signal of `arg`, an options object `{ signal }` or (the older form) the signal itself.
 * Anything else is a caller's mistake: a sentence, not "addEventListener is not a function".
 */
export function signalOf(arg: AbortSignal | SignalOptions | undefined): AbortSignal | undefined {
  if (arg === undefined || arg instanceof AbortSignal) return arg;
  if (typeof arg === 'object' && arg !== null && (arg.signal === undefined || arg.signal instanceof AbortSignal)) return arg.signal;
  throw new LockError('ERR_BAD_REQUEST', 'the options\' signal must be an AbortSignal: pass { signal }');
}

/** Who holds, when the caller does not say: user@pidN, as `lamport-lock` says it. */
export function defaultOwner(): string {
  let user = process.env['USER'] ?? '';
  if (user === '') {
    try {
      user = userInfo().username;
    } catch {
      user = 'user';
    }
  }
  return `${user}@pid${process.pid}`;
}

/** A granted hold. */
export interface Hold {
  readonly lock: string;
  readonly id: string;
  /** The fencing token: strictly increasing per lock for exclusive grants. */
  readonly token: bigint;
  readonly mode: string;
  readonly peer: string;
  readonly grantedAt: number;
  readonly expiresAt: number | null;
}

/** What a connection-bound hold adds: its end reported, and the connection to close. */
export interface BoundToConnection {
  /** Resolves with the reason when the hold ends (`released`, `expired`, `lease_lost`, ...). */
  readonly ended: Promise<string>;
  /** Closes the connection, which releases the hold. */
  close(): void;
}

/** A hold bound to an open connection, with its end reported. */
export interface ConnectionHold extends Hold, BoundToConnection {}

/**
 * One lock of an all-or-nothing acquire: its name, or its name with the mode it is taken in
 * (the single acquire's rules: `limit` makes it a semaphore, `permits` goes with `limit`).
 */
export type LockSpec = string | {
  readonly name: string;
  readonly mode?: 'exclusive' | 'shared' | 'semaphore';
  readonly limit?: number;
  readonly permits?: number;
};

/** Options of an all-or-nothing acquire: an acquire's, but the mode, which each lock has. */
export type AcquireAllRequest = Omit<AcquireRequest, 'mode' | 'limit' | 'permits'>;

/**
 * A hold of several locks granted together (POST /v1/acquire). It is one hold: one id to
 * release or refresh it, ended as a whole. Its token, the request's, is the same on every
 * name and fences each of them.
 */
export interface MultiHold {
  readonly id: string;
  /** Each lock in the order asked for, with its mode and its token (the hold's). */
  readonly locks: ReadonlyArray<{ readonly lock: string; readonly mode: string; readonly token: bigint }>;
  readonly token: bigint;
  readonly peer: string;
  readonly grantedAt: number;
  readonly expiresAt: number | null;
}

/** A multi-lock hold bound to an open connection, with its end reported. */
export interface ConnectionMultiHold extends MultiHold, BoundToConnection {}

/** Client options. */
export interface LockClientOptions {
  /** The local peer: `http://host:port`, `host:port` or `unix:/path/peer.sock`; default `LAMPORT_PEER` or http://127.0.0.1:7001. */
  readonly peer?: string;
  /** The peer's API token, when it requires one. */
  readonly token?: string;
  /** A file holding the token; default `LAMPORT_TOKEN_FILE`. Ignored when `token` is given. */
  readonly tokenFile?: string;
}

/** Where requests go: a base URL, or a unix socket. */
export type Target = { readonly base: URL; readonly socketPath: null } | { readonly base: null; readonly socketPath: string };

/** `host:port` without a scheme (how the config writes `http`), which means http://host:port. */
export function withScheme(peer: string): string {
  const t = peer.trim();
  return /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):\d+$/.test(t) ? `http://${t}` : t;
}

export function targetOf(given: string): Target {
  const peer = withScheme(given);
  if (peer.startsWith('unix:')) {
    const socketPath = peer.slice('unix:'.length);
    if (!socketPath.startsWith('/')) throw new LockError('ERR_BAD_REQUEST', `peer ${JSON.stringify(peer)}: a unix socket path must be absolute (unix:/run/lamport-lock/peer.sock)`);
    return { base: null, socketPath };
  }
  let base: URL;
  try {
    base = new URL(peer);
  } catch {
    throw new LockError('ERR_BAD_REQUEST', `peer ${JSON.stringify(given)} must be a URL such as http://127.0.0.1:7001 (or 127.0.0.1:7001), or unix:/path/peer.sock`);
  }
  return { base, socketPath: null };
}

export interface Answer {
  readonly status: number;
  readonly body: Record<string, unknown>;
}

export function toHold(b: Record<string, unknown>): Hold {
  return {
    lock: String(b['lock']), id: String(b['id']), token: BigInt(String(b['token'])), mode: String(b['mode']),
    peer: String(b['peer']), grantedAt: Number(b['granted_at']), expiresAt: b['expires_at'] === null ? null : Number(b['expires_at']),
  };
}

export function toMultiHold(b: Record<string, unknown>): MultiHold {
  const locks = Array.isArray(b['locks']) ? (b['locks'] as unknown[]) : [];
  return {
    id: String(b['id']),
    locks: locks.map((l) => {
      const r = typeof l === 'object' && l !== null ? (l as Record<string, unknown>) : {};
      return { lock: String(r['lock']), mode: String(r['mode']), token: BigInt(String(r['token'])) };
    }),
    token: BigInt(String(b['token'])), peer: String(b['peer']), grantedAt: Number(b['granted_at']),
    expiresAt: b['expires_at'] === null ? null : Number(b['expires_at']),
  };
}

/** One member of the agreed view (docs/reconfiguration.md, "Terms"). */
export interface ViewMember {
  readonly id: string;
  /** Given when it was added, never given again: the tie-break and the low bits of its tokens. */
  readonly ordinal: number;
  /** A voter counts in majorities; a learner requests nothing yet; a leaving member is being removed. */
  readonly state: 'voter' | 'learner' | 'leaving';
  /** Where its peer links listen. */
  readonly ws: string;
  /** Where its local HTTP API listens. */
  readonly http: string;
}

/** The agreed view as a change of the members answers it: the view that has the change. */
export interface View {
  /** 0 for the view a config file seeds, one more at each change. */
  readonly epoch: number;
  /** The protocol level every member runs at. */
  readonly level: number;
  readonly nextOrdinal: number;
  /** Ascending ordinal. */
  readonly members: readonly ViewMember[];
  /** After an add only: the ticket the added host starts with (`lamport-peer --join TICKET`). */
  readonly join?: string;
}

/** How long a change of the members may take, and who may give up its wait. */
export interface ChangeRequest {
  /** Until the view that has the change is made (default 30 s); ERR_TIMEOUT after it. */
  readonly timeoutMs?: number;
  /** Gives up the wait (ERR_TIMEOUT, reason `aborted`); the change may be made all the same. */
  readonly signal?: AbortSignal;
}

/** One member of the agreed view, with its link as the asked peer sees it (GET /v1/members). */
export interface Member extends ViewMember {
  /** The asked peer itself. */
  readonly self: boolean;
  /** Whether its link is up; null for the asked peer. */
  readonly connected: boolean | null;
  readonly incarnation: string | null;
  /** Out of the asked peer's protocol view (evicted, or not met yet); null for the asked peer. */
  readonly evicted: boolean | null;
  /** The newest protocol level its binary speaks; null before a handshake. */
  readonly newestLevel: number | null;
}

/** The agreed view of the cluster as the asked peer holds it (GET /v1/members). */
export interface Members extends View {
  readonly members: readonly Member[];
}

const memberStates: ReadonlySet<string> = new Set(['voter', 'learner', 'leaving']);

function orNull<T>(v: unknown, of: (x: unknown) => T): T | null {
  return v === null || v === undefined ? null : of(v);
}

/** A view's body (`what` answered it), each member typed by `member` after its view fields; ERR_PEER when it is not one. */
function viewOf<M extends ViewMember>(b: Record<string, unknown>, what: string, member: (r: Record<string, unknown>, m: ViewMember) => M): View & { members: M[] } {
  const list = b['members'];
  if (typeof b['epoch'] !== 'number' || !Array.isArray(list)) throw new LockError('ERR_PEER', `the peer's answer to ${what} is not a list of members`);
  return {
    epoch: b['epoch'], level: Number(b['level']), nextOrdinal: Number(b['next_ordinal']),
    members: list.map((m: unknown) => {
      const r = typeof m === 'object' && m !== null ? (m as Record<string, unknown>) : {};
      const state = String(r['state']);
      if (!memberStates.has(state)) throw new LockError('ERR_PEER', `the peer names a member state this client does not know: ${JSON.stringify(state)}`);
      return member(r, { id: String(r['id']), ordinal: Number(r['ordinal']), state: state as ViewMember['state'], ws: String(r['ws']), http: String(r['http']) });
    }),
  };
}

/** GET /v1/members's body, typed; ERR_PEER when it is not one (a peer too old to serve the route answers 404 before this). */
export function toMembers(b: Record<string, unknown>): Members {
  return viewOf(b, 'GET /v1/members', (r, m) => ({
    ...m, self: r['self'] === true, connected: orNull(r['connected'], (x) => x === true), incarnation: orNull(r['incarnation'], String),
    evicted: orNull(r['evicted'], (x) => x === true), newestLevel: orNull(r['newest_level'], Number),
  }));
}

/** The answer to a change of the members, typed: the view that has it. */
export function toView(b: Record<string, unknown>): View {
  const view = viewOf(b, 'a change of the members', (_r, m) => m);
  return typeof b['join'] === 'string' ? { ...view, join: b['join'] } : view;
}

export function toError(a: Answer): LockError {
  const { error, message, ...details } = a.body;
  const code = (typeof error === 'string' ? error : 'ERR_PEER') as ErrorCode;
  return new LockError(code, typeof message === 'string' ? message : `peer answered HTTP ${a.status}`, { status: a.status, ...details });
}

export function acquireBody(opts: AcquireRequest): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  if (opts.timeoutMs !== undefined) body['timeout_ms'] = opts.timeoutMs;
  if (opts.ttlMs !== undefined) body['ttl_ms'] = opts.ttlMs;
  if (opts.mode !== undefined) body['mode'] = opts.mode;
  if (opts.limit !== undefined) body['limit'] = opts.limit;
  if (opts.permits !== undefined) body['permits'] = opts.permits;
  body['owner'] = opts.owner ?? defaultOwner();
  if (opts.meta !== undefined) body['meta'] = opts.meta;
  if (opts.expectedMs !== undefined) body['expected_ms'] = opts.expectedMs;
  return body;
}

/** The body of POST /v1/acquire: each lock's name and mode, then the shared options. */
export function acquireAllBody(locks: readonly LockSpec[], opts: AcquireAllRequest): Record<string, unknown> {
  const specs = locks.map((l) => {
    if (typeof l === 'string') return { name: l };
    const spec: Record<string, unknown> = { name: l.name };
    if (l.mode !== undefined) spec['mode'] = l.mode;
    if (l.limit !== undefined) spec['limit'] = l.limit;
    if (l.permits !== undefined) spec['permits'] = l.permits;
    return spec;
  });
  // Only the shared options: a caller's stray mode/limit/permits (through a cast) is not sent.
  const { mode: _mode, limit: _limit, permits: _permits, ...shared } = opts as AcquireRequest;
  return { locks: specs, ...acquireBody(shared) };
}

export function lockNames(locks: readonly LockSpec[]): string {
  return locks.map((l) => JSON.stringify(typeof l === 'string' ? l : l.name)).join(', ');
}

export function readAll(res: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    res.on('data', (c: Buffer) => chunks.push(c));
    res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    res.on('error', reject);
  });
}

export function parseJson(text: string): Record<string, unknown> {
  try {
    const v: unknown = JSON.parse(text);
    return typeof v === 'object' && v !== null ? (v as Record<string, unknown>) : {};
  } catch {
    return { error: 'ERR_PEER', message: `peer answered something that is not JSON: ${text.slice(0, 200)}` };
  }
}

/**
 * One event of a watch stream (docs/design.md section 6, "Watches"): `state` first (`data.locks`,
 * the current holders and waiters), then `queued`, `granted`, `released` and `left`, each with
 * `data.lock`, `data.request` (as GET /v1/locks/{name} shows it), `data.reason` (why this
 * peer's own hold ended; null otherwise) and `data.at`.
 */
export interface WatchEvent {
  readonly type: 'state' | 'queued' | 'granted' | 'released' | 'left';
  readonly data: Record<string, unknown>;
}

/** Splits a server-sent event stream into events; `onEvent` gets each event's name and data. */
export function sseParser(onEvent: (event: string, data: string) => void): (chunk: string) => void {
  let buffer = '';
  return (chunk) => {
    buffer += chunk;
    let end: number;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let event = 'message';
      const data: string[] = [];
      for (const line of block.split('\n')) {
        if (line.startsWith('event: ')) event = line.slice(7);
        else if (line.startsWith('data: ')) data.push(line.slice(6));
      }
      if (data.length > 0) onEvent(event, data.join('\n'));
    }
  };
}
