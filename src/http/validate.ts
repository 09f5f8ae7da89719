/**
 * Validation of HTTP input at the boundary (docs/style.md convention 8): every field of every
 * body checked, every problem a 400 with a sentence. Past this file the code trusts types.
 */
import { isPeerId, isWsUrl, parseHostPort } from '../config.js';
import type { Meta, Mode } from '../core/types.js';
import { isRecord, lockNameProblem, utf8Length } from '../core/types.js';
import type { ViewChange } from '../core/view.js';
import { ErrorCode, LockError } from '../errors.js';
import { limits } from '../limits.js';
import type { AcquireOptions, HoldOptions, LockAsk } from '../runtime/holds.js';

/** Acquire defaults of docs/design.md section 6. */
export const acquireDefaults = { timeoutMs: 30_000, ttlMs: 60_000 } as const;

/** How long a change of the members waits for its view by default (`timeout_ms` of the member routes). */
export const changeDefaults = { timeoutMs: 30_000 } as const;

function bad(message: string): LockError {
  return new LockError(ErrorCode.BadRequest, message);
}

/** A lock name: the one rule of `lockNameProblem` (the peer links check names by it too). */
export function checkLockName(name: string): string {
  const problem = lockNameProblem(name);
  if (problem !== null) throw bad(problem);
  return name;
}

/**
 * The `prefix` of GET /v1/locks?prefix= and /v1/watch?prefix=: a start of a lock name, so at
 * most as long as one (empty: every lock).
 */
export function checkPrefix(prefix: string | null): string {
  if (prefix === null || prefix === '') return '';
  const problem = lockNameProblem(prefix);
  if (problem !== null) throw bad(`prefix: ${problem}`);
  return prefix;
}

function intField(body: Record<string, unknown>, key: string, min: number, max: number): number | undefined {
  const v = body[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) throw bad(`${key} must be an integer from ${min} to ${max}`);
  return v;
}

function checkKeys(body: Record<string, unknown>, allowed: readonly string[]): void {
  for (const key in body) {
    if (!allowed.includes(key)) throw bad(`unknown field ${JSON.stringify(key)}; allowed: ${allowed.join(', ')}`);
  }
}

/** Parses a JSON body (possibly empty) into an object. */
export function parseBody(text: string): Record<string, unknown> {
  if (text.trim() === '') return {};
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    throw bad('body must be valid JSON');
  }
  if (!isRecord(v)) throw bad('body must be a JSON object');
  return v;
}

function checkMode(body: Record<string, unknown>, limit: number | undefined): Mode {
  const mode = body['mode'];
  if (mode !== undefined && mode !== 'exclusive' && mode !== 'shared' && mode !== 'semaphore') {
    throw bad('mode must be "exclusive", "shared" or "semaphore" (a semaphore request also needs limit)');
  }
  if (limit !== undefined) {
    if (mode !== undefined && mode !== 'semaphore') throw bad(`a request with limit is a semaphore request; mode ${JSON.stringify(mode)} does not go with limit`);
    return 'semaphore';
  }
  if (mode === 'semaphore') throw bad('a semaphore request needs a limit');
  return mode ?? 'exclusive';
}

function checkOwnerMeta(body: Record<string, unknown>): { owner: string; meta: Meta | null } {
  const owner = body['owner'] ?? '';
  if (typeof owner !== 'string' || utf8Length(owner) > limits.ownerBytesMax) throw bad(`owner must be a string of at most ${limits.ownerBytesMax} bytes`);
  const meta = body['meta'] ?? null;
  if (meta !== null && !isRecord(meta)) throw bad('meta must be a JSON object');
  if (meta !== null && utf8Length(JSON.stringify(meta)) > limits.metaBytesMax) throw bad(`meta must encode to at most ${limits.metaBytesMax} bytes of JSON`);
  return { owner, meta };
}

/** How a request asks for one lock: `mode`, `limit` and `permits` of an acquire body or of one of its `locks`. */
function parseAsk(body: Record<string, unknown>): { mode: Mode; limit: number; permits: number } {
  const limit = intField(body, 'limit', 1, limits.semaphoreLimitMax);
  const permitsIn = intField(body, 'permits', 1, limits.semaphoreLimitMax);
  if (permitsIn !== undefined && limit === undefined) throw bad('permits goes with limit (a semaphore request)');
  const permits = permitsIn ?? 1;
  if (limit !== undefined && permits > limit) throw bad(`permits (${permits}) must not exceed limit (${limit})`);
  return { mode: checkMode(body, limit), limit: limit ?? 1, permits };
}

/** How a request holds, whatever it names: timeouts, TTL, hold, owner, meta. */
function parseHold(body: Record<string, unknown>): HoldOptions {
  const hold = body['hold'];
  if (hold !== undefined && hold !== 'connection') throw bad('hold must be "connection" when given');
  const timeoutMs = intField(body, 'timeout_ms', 0, limits.timeoutMsMax) ?? acquireDefaults.timeoutMs;
  const ttlMs = intField(body, 'ttl_ms', 0, limits.ttlMsMax) ?? acquireDefaults.ttlMs;
  if (ttlMs === 0 && hold !== 'connection') throw bad('ttl_ms 0 (no TTL) is only allowed with hold "connection"');
  const expectedMs = intField(body, 'expected_ms', 1, limits.ttlMsMax) ?? null;
  const { owner, meta } = checkOwnerMeta(body);
  return { timeoutMs, ttlMs, owner, meta, hold: hold === 'connection' ? 'connection' : 'ttl', expectedMs };
}

/** Validates an acquire body (docs/design.md section 6). */
export function parseAcquire(body: Record<string, unknown>): AcquireOptions {
  checkKeys(body, acquireKeys);
  const hold = parseHold(body);
  const ask = parseAsk(body);
  return {
    timeoutMs: hold.timeoutMs, ttlMs: hold.ttlMs, owner: hold.owner, meta: hold.meta, hold: hold.hold, expectedMs: hold.expectedMs,
    mode: ask.mode, limit: ask.limit, permits: ask.permits,
  };
}

const acquireKeys: readonly string[] = ['timeout_ms', 'ttl_ms', 'mode', 'limit', 'permits', 'owner', 'meta', 'hold', 'expected_ms'];

/**
 * Validates an all-or-nothing acquire body (docs/design.md section 6, "Multi-lock"):
 * `locks`, 1 to limits.multiLocksMax of `{name, mode?, limit?, permits?}` with distinct
 * names, and the hold fields of a single acquire.
 */
export function parseAcquireAll(body: Record<string, unknown>): { asks: LockAsk[]; opts: HoldOptions } {
  checkKeys(body, ['locks', 'timeout_ms', 'ttl_ms', 'owner', 'meta', 'hold', 'expected_ms']);
  const list = body['locks'];
  if (!Array.isArray(list) || list.length === 0 || list.length > limits.multiLocksMax) {
    throw bad(`locks must be an array of 1 to ${limits.multiLocksMax} locks, each {"name": ..., "mode"?, "limit"?, "permits"?}`);
  }
  const asks = list.map((item: unknown, i): LockAsk => {
    if (!isRecord(item)) throw bad(`locks[${i}] must be an object {"name": ..., "mode"?, "limit"?, "permits"?}`);
    checkKeys(item, ['name', 'mode', 'limit', 'permits']);
    const name = item['name'];
    if (typeof name !== 'string') throw bad(`locks[${i}].name must be a string`);
    const problem = lockNameProblem(name);
    if (problem !== null) throw bad(`locks[${i}].name: ${problem}`);
    return { lock: name, ...parseAsk(item) };
  });
  const names = new Set(asks.map((a) => a.lock));
  if (names.size < asks.length) {
    const twice = asks.find((a, i) => asks.findIndex((b) => b.lock === a.lock) !== i);
    throw bad(`lock ${JSON.stringify(twice?.lock)} is given twice in locks; a request names each lock once`);
  }
  return { asks, opts: parseHold(body) };
}

/**
 * Validates a campaign body (docs/design.md section 6, "Elections"): `value` (any JSON, at
 * most limits.metaBytesMax encoded), `owner`, `ttl_ms`, `timeout_ms`. A campaign is an
 * exclusive, connection-bound acquire whose meta is `{value}`.
 */
export function parseCampaign(body: Record<string, unknown>): AcquireOptions {
  checkKeys(body, ['value', 'owner', 'ttl_ms', 'timeout_ms']);
  if (!('value' in body)) throw bad('a campaign needs a value (what the leader announces: an address, a name)');
  const { value, ...rest } = body;
  return parseAcquire({ ...rest, meta: { value }, hold: 'connection', ttl_ms: body['ttl_ms'] ?? 0 });
}

/** Validates a proclaim body: the hold's `id` and the leader's new `value`. */
export function parseProclaim(body: Record<string, unknown>): { id: string; value: unknown } {
  checkKeys(body, ['id', 'value']);
  if (!('value' in body)) throw bad('proclaim needs the new value');
  const { id } = parseRelease({ id: body['id'] });
  const value = body['value'];
  if (utf8Length(JSON.stringify({ value })) > limits.metaBytesMax) throw bad(`{"value": ...} must encode to at most ${limits.metaBytesMax} bytes of JSON`);
  return { id, value };
}

/** Validates a release body. */
export function parseRelease(body: Record<string, unknown>): { id: string } {
  checkKeys(body, ['id']);
  const id = body['id'];
  if (typeof id !== 'string' || id.length === 0 || id.length > limits.holdIdCharsMax) throw bad('id must be the hold id returned by acquire');
  return { id };
}

/** Validates a refresh body. */
export function parseRefresh(body: Record<string, unknown>): { id: string; ttlMs: number | undefined } {
  checkKeys(body, ['id', 'ttl_ms']);
  const { id } = parseRelease({ id: body['id'] });
  return { id, ttlMs: intField(body, 'ttl_ms', 1, limits.ttlMsMax) };
}

const idRule = `1 to ${limits.peerIdCharsMax} characters of [A-Za-z0-9_.-]`;

/** A member id, of a path segment or a body: the config's rule for peer ids. */
export function checkMemberId(id: unknown, what = 'id'): string {
  if (!isPeerId(id)) throw bad(`${what} must be a peer id: ${idRule}`);
  return id;
}

/** `timeout_ms` of a change: how long to wait for the view that has it, 1 ms to limits.timeoutMsMax. */
function changeTimeout(body: Record<string, unknown>): number {
  return intField(body, 'timeout_ms', 1, limits.timeoutMsMax) ?? changeDefaults.timeoutMs;
}

/** The `timeout_ms` of a query (DELETE /v1/members/{id}, which has no body): the rule of a body's. */
export function parseChangeQuery(query: URLSearchParams | null): { timeoutMs: number } {
  if (query === null) return { timeoutMs: changeDefaults.timeoutMs };
  for (const key of query.keys()) {
    if (key !== 'timeout_ms') throw bad(`unknown query parameter ${JSON.stringify(key)}; allowed: timeout_ms`);
  }
  const text = query.get('timeout_ms');
  // Digits are a number to check against the bounds; anything else is refused as not an integer.
  const value = text === null ? undefined : /^\d{1,16}$/.test(text) ? Number(text) : text;
  return { timeoutMs: changeTimeout({ timeout_ms: value }) };
}

/** The body of a change that names its member in the path (promote, retire): `timeout_ms` alone. */
export function parseChangeBody(body: Record<string, unknown>): { timeoutMs: number } {
  checkKeys(body, ['timeout_ms']);
  return { timeoutMs: changeTimeout(body) };
}

/**
 * POST /v1/members: `{id, ws, http, timeout_ms?}`, a learner to add; `ws` a ws:// or wss:// URL
 * and `http` a host:port, each at most limits.addressCharsMax characters.
 */
export function parseAddMember(body: Record<string, unknown>): { change: ViewChange; timeoutMs: number } {
  checkKeys(body, ['id', 'ws', 'http', 'timeout_ms']);
  const id = checkMemberId(body['id']);
  const { ws, http } = body;
  if (typeof ws !== 'string' || ws.length > limits.addressCharsMax || !isWsUrl(ws)) {
    throw bad(`ws must be where the new member's peer links listen, ws://host:port or wss://host:port (port 1 to 65535), at most ${limits.addressCharsMax} characters`);
  }
  if (typeof http !== 'string' || http.length > limits.addressCharsMax || parseHostPort(http) === undefined) {
    throw bad(`http must be where the new member's HTTP API listens, host:port, at most ${limits.addressCharsMax} characters`);
  }
  return { change: { op: 'add', id, ws, http }, timeoutMs: changeTimeout(body) };
}

/** POST /v1/cluster/level: `{level, timeout_ms?}`, the protocol level to raise the cluster to. */
export function parseLevel(body: Record<string, unknown>): { change: ViewChange; timeoutMs: number } {
  checkKeys(body, ['level', 'timeout_ms']);
  const level = intField(body, 'level', 1, Number.MAX_SAFE_INTEGER);
  if (level === undefined) throw bad('level is required: the protocol level to raise the cluster to, an integer');
  return { change: { op: 'level', level }, timeoutMs: changeTimeout(body) };
}
