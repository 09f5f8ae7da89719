/**
 * The local HTTP API (docs/design.md section 6) described in OpenAPI 3.1, for clients in
 * any language: served as GET /v1/openapi.json and shipped as dist/openapi.json. Every
 * route, body, answer and error code; streams (server-sent events, NDJSON) carry their
 * events' schemas in `x-sse-events` and `x-ndjson-lines`. test/http/openapi.test.ts and
 * test/integration/openapi.test.ts hold it to the router's table and to real answers.
 *
 * The schemas use a small subset of JSON Schema (type, enum, const, properties, required,
 * additionalProperties, items, $ref, oneOf, minimum, maximum, minItems, maxItems,
 * pattern, minLength, maxLength, description).
 */
import { limits } from '../limits.js';
import { schemas } from './openapi-schemas.js';

type Json = Record<string, unknown>;

const ref = (name: string): Json => ({ $ref: `#/components/schemas/${name}` });

/** Codes every route may answer before it runs: the access policy and the request target. */
const accessCodes = { 400: ['ERR_BAD_REQUEST'], 401: ['ERR_UNAUTHORIZED'], 403: ['ERR_ORIGIN_REFUSED'], 421: ['ERR_HOST_REFUSED'], 500: ['ERR_INTERNAL'] };
/** And a POST's body. */
const postCodes = { 413: ['ERR_BODY_TOO_LARGE'], 415: ['ERR_UNSUPPORTED_MEDIA_TYPE'] };
/** Why a request fails while it waits, or is refused before it queues. */
const requestCodes = {
  400: ['ERR_BAD_REQUEST'], 423: ['ERR_TIMEOUT'], 429: ['ERR_LIMIT_EXCEEDED'],
  503: ['ERR_UNREACHABLE', 'ERR_EVICTED', 'ERR_LEASE_LOST', 'ERR_SUPERSEDED', 'ERR_REMOVED', 'ERR_STORAGE', 'ERR_SHUTTING_DOWN'],
};
const holdCodes = { 400: ['ERR_BAD_REQUEST'], 404: ['ERR_NOT_HELD', 'ERR_NOT_FOUND'] };
/** Why a change of the members is refused or not made (docs/reconfiguration.md): every one is the admin's. */
const changeCodes = {
  400: ['ERR_BAD_REQUEST'], 403: ['ERR_ADMIN_REQUIRED'], 409: ['ERR_CHANGE_REFUSED'], 423: ['ERR_TIMEOUT'], 503: ['ERR_NOT_READY', 'ERR_SHUTTING_DOWN'],
};
const streamCodes = { 400: ['ERR_BAD_REQUEST'], 404: ['ERR_NOT_FOUND'], 429: ['ERR_LIMIT_EXCEEDED'], 503: ['ERR_SHUTTING_DOWN'] };

type Codes = Readonly<Record<number, readonly string[]>>;

/** The error answers of a route: one per status, its body an Error whose `error` is one of that status's codes. */
function errors(...sets: Codes[]): Json {
  const byStatus = new Map<number, Set<string>>();
  for (const set of [accessCodes, ...sets]) {
    for (const [status, codes] of Object.entries(set)) {
      const s = byStatus.get(Number(status)) ?? new Set<string>();
      for (const c of codes) s.add(c);
      byStatus.set(Number(status), s);
    }
  }
  const out: Json = {};
  for (const [status, codes] of [...byStatus].sort((x, y) => x[0] - y[0])) {
    out[String(status)] = {
      description: [...codes].join(', '),
      content: { 'application/json': { schema: { allOf: [ref('Error'), { properties: { error: { enum: [...codes] } } }] } } },
    };
  }
  return out;
}

function json(description: string, schema: Json): Json {
  return { description, content: { 'application/json': { schema } } };
}

function body(name: string): Json {
  return { required: false, content: { 'application/json': { schema: ref(name) } } };
}

const nameParam = {
  name: 'name', in: 'path', required: true,
  description: `a lock or election name: 1 to ${limits.lockNameBytesMax} bytes of UTF-8 without control characters, percent-encoded`,
  schema: { type: 'string', minLength: 1 },
};
const idParam = {
  name: 'id', in: 'path', required: true,
  description: `a member id: 1 to ${limits.peerIdCharsMax} characters of [A-Za-z0-9_.-]`,
  schema: { type: 'string', pattern: `^[A-Za-z0-9_.-]{1,${limits.peerIdCharsMax}}$` },
};
const changeTimeoutParam = {
  name: 'timeout_ms', in: 'query', required: false,
  description: `how long to wait for the view that has the change, 1 to ${limits.timeoutMsMax} ms (default 30000)`,
  schema: { type: 'integer', minimum: 1, maximum: limits.timeoutMsMax },
};
const prefixParam = { name: 'prefix', in: 'query', required: false, description: 'the start of a lock name (empty: every lock)', schema: { type: 'string' } };

function sse(description: string, events: Record<string, string>): Json {
  const x: Json = {};
  for (const [event, schema] of Object.entries(events)) x[event] = ref(schema);
  return { description, content: { 'text/event-stream': { schema: { type: 'string' }, 'x-sse-events': x } } };
}

/** An acquire's 200: the grant as JSON, or with `hold: "connection"` an NDJSON stream: the grant line, then an `ended` line. */
function grantAnswer(grant: string): Json {
  return {
    description: 'granted. With hold "connection": application/x-ndjson, the grant line, then {"ended": reason, "id"} when the hold ends; closing the connection releases',
    content: {
      'application/json': { schema: ref(grant) },
      'application/x-ndjson': { schema: { type: 'string' }, 'x-ndjson-lines': [ref(grant), ref('Ended')] },
    },
  };
}

function op(id: string, summary: string, responses: Json, extra: Json = {}): Json {
  return { operationId: id, summary, ...extra, responses };
}

/** The answers of a change of the members: the view that has it, or why not. */
function changeAnswers(post: boolean): Json {
  return { 200: json('the change is made: the agreed view that has it', ref('View')), ...errors(...(post ? [postCodes] : []), changeCodes) };
}

/** A change of the members by POST, its body `schema` (required or not). */
function change(id: string, summary: string, schema: string, required: boolean): Json {
  return op(id, `${summary} (the admin token or the unix socket)`, changeAnswers(true), { requestBody: { ...body(schema), required } });
}

const paths: Json = {
  '/healthz': { get: op('health', '200 while the process serves', { 200: json('serving', ref('Health')), ...errors() }) },
  '/readyz': {
    get: op('ready', '200 while this peer is synced and holds a lease', { 200: json('ready', ref('Ready')), ...errors({ 503: ['ERR_NOT_READY', 'ERR_SUPERSEDED', 'ERR_CONFIG_MISMATCH'] }) }),
  },
  '/v1/openapi.json': { get: op('openapi', 'this description', { 200: json('OpenAPI 3.1 document', { type: 'object' }), ...errors() }) },
  '/v1/cluster': { get: op('cluster', 'this peer, its lease, its links, degraded and superseded state', { 200: json('the cluster as this peer sees it', ref('Cluster')), ...errors() }) },
  '/v1/members': {
    get: op('members', 'the agreed view of the cluster: its epoch, level and members, each with its link as this peer sees it', { 200: json('the members', ref('Members')), ...errors() }),
    post: change('addMember', 'admin: add a member, as a learner (it counts in no majority until promoted)', 'AddMemberBody', true),
  },
  '/v1/members/{id}': {
    parameters: [idParam],
    delete: op('removeMember', 'admin: remove a member: a learner goes, a voter becomes leaving (retire it once it left or was evicted)', changeAnswers(false), { parameters: [changeTimeoutParam] }),
  },
  '/v1/members/{id}/promote': { parameters: [idParam], post: change('promoteMember', 'admin: make a learner a voter', 'ChangeBody', false) },
  '/v1/members/{id}/retire': { parameters: [idParam], post: change('retireMember', 'admin: take out a leaving member that left or was evicted', 'ChangeBody', false) },
  '/v1/cluster/level': { post: change('raiseLevel', 'admin: raise the protocol level the cluster runs at, once every member speaks it', 'LevelBody', true) },
  '/v1/locks': {
    get: op('listLocks', 'every lock with holders or waiters (with prefix: those whose name starts with it)', { 200: json('locks', ref('Locks')), ...errors() }, { parameters: [prefixParam] }),
  },
  '/v1/watch': {
    get: op('watchPrefix', 'every change of the locks whose name starts with prefix, as server-sent events', {
      200: sse('state, then queued / granted / released / left; error ERR_WATCH_BEHIND ends a stream that fell behind', { state: 'WatchState', queued: 'WatchChange', granted: 'WatchChange', released: 'WatchChange', left: 'WatchChange', error: 'Error' }),
      ...errors(streamCodes),
    }, { parameters: [prefixParam] }),
  },
  '/v1/acquire': { post: op('acquireAll', 'several locks, all or nothing, one token', { 200: grantAnswer('GrantAll'), ...errors(postCodes, requestCodes) }, { requestBody: { ...body('AcquireAllBody'), required: true } }) },
  '/v1/release': { post: op('releaseHold', 'release any hold by its id', { 200: json('released', ref('Released')), ...errors(postCodes, holdCodes) }, { requestBody: { ...body('ReleaseBody'), required: true } }) },
  '/v1/refresh': { post: op('refreshHold', 'refresh any hold\'s TTL by its id', { 200: json('refreshed', ref('Refreshed')), ...errors(postCodes, holdCodes) }, { requestBody: { ...body('RefreshBody'), required: true } }) },
  '/v1/locks/{name}': {
    parameters: [nameParam],
    get: op('getLock', 'holders and waiters of one lock, cluster-wide, as this peer knows them', { 200: json('the lock', ref('Lock')), ...errors({ 404: ['ERR_NOT_FOUND'] }) }),
  },
  '/v1/locks/{name}/watch': {
    parameters: [nameParam],
    get: op('watchLock', 'every change of one lock, as server-sent events', {
      200: sse('state, then queued / granted / released / left', { state: 'WatchState', queued: 'WatchChange', granted: 'WatchChange', released: 'WatchChange', left: 'WatchChange', error: 'Error' }),
      ...errors(streamCodes),
    }),
  },
  '/v1/locks/{name}/acquire': {
    parameters: [nameParam],
    post: op('acquire', 'take one lock; waits up to timeout_ms', { 200: grantAnswer('Grant'), ...errors(postCodes, requestCodes, { 404: ['ERR_NOT_FOUND'] }) }, { requestBody: body('AcquireBody') }),
  },
  '/v1/locks/{name}/release': { parameters: [nameParam], post: op('release', 'release a hold of this lock', { 200: json('released', ref('Released')), ...errors(postCodes, holdCodes) }, { requestBody: { ...body('ReleaseBody'), required: true } }) },
  '/v1/locks/{name}/refresh': { parameters: [nameParam], post: op('refresh', 'refresh a hold\'s TTL', { 200: json('refreshed', ref('Refreshed')), ...errors(postCodes, holdCodes) }, { requestBody: { ...body('RefreshBody'), required: true } }) },
  '/v1/locks/{name}/force-release': {
    parameters: [nameParam],
    post: op('forceRelease', 'admin: end every hold of this lock that this peer\'s clients have (the admin token or the unix socket)', {
      200: json('the ids of the holds ended', ref('ForceReleased')), ...errors(postCodes, { 403: ['ERR_ADMIN_REQUIRED'], 404: ['ERR_NOT_FOUND'] }),
    }, { requestBody: body('EmptyBody') }),
  },
  '/v1/elections/{name}': { parameters: [nameParam], get: op('leader', 'who leads this election', { 200: json('the leader, or null', ref('Election')), ...errors({ 404: ['ERR_NOT_FOUND'] }) }) },
  '/v1/elections/{name}/observe': {
    parameters: [nameParam],
    get: op('observe', 'who leads now, then each change of leader or value, as server-sent events', { 200: sse('leader or vacant', { leader: 'LeaderEvent', vacant: 'LeaderEvent', error: 'Error' }), ...errors(streamCodes) }),
  },
  '/v1/elections/{name}/campaign': {
    parameters: [nameParam],
    post: op('campaign', 'wait to lead; the answer stays open while leading (NDJSON); closing it resigns', {
      200: {
        description: 'leading: the grant line with term and value, then {"ended": reason, "id"} when leadership ends',
        content: { 'application/x-ndjson': { schema: { type: 'string' }, 'x-ndjson-lines': [ref('CampaignGrant'), ref('Ended')] } },
      },
      ...errors(postCodes, requestCodes, { 404: ['ERR_NOT_FOUND'] }),
    }, { requestBody: { ...body('CampaignBody'), required: true } }),
  },
  '/v1/elections/{name}/proclaim': { parameters: [nameParam], post: op('proclaim', 'the leader announces a new value', { 200: json('proclaimed', ref('Proclaimed')), ...errors(postCodes, holdCodes) }, { requestBody: { ...body('ProclaimBody'), required: true } }) },
  '/v1/elections/{name}/resign': { parameters: [nameParam], post: op('resign', 'end leadership', { 200: json('resigned', ref('Resigned')), ...errors(postCodes, holdCodes) }, { requestBody: { ...body('ReleaseBody'), required: true } }) },
  '/metrics': { get: op('metrics', 'Prometheus text format', { 200: { description: 'metrics', content: { 'text/plain': { schema: { type: 'string' } } } }, ...errors() }) },
};

/** The OpenAPI 3.1 document of the local HTTP API. */
export const openApiSpec: Json = {
  openapi: '3.1.0',
  info: {
    title: 'lamport-lock local HTTP API',
    version: '1',
    description: 'The API a lamport-peer serves to the applications on its host (README "HTTP API"). A POST body must be sent as application/json; '
      + `at most ${limits.httpBodyBytesMax} bytes. Tokens are decimal strings; times are epoch ms. Every error body is {error, message, ...details}.`,
  },
  servers: [{ url: 'http://127.0.0.1:7001' }],
  components: {
    securitySchemes: { token: { type: 'http', scheme: 'bearer', description: 'when the peer runs with --token-file (the admin token with --admin-token-file)' } },
    schemas,
  },
  paths,
};
