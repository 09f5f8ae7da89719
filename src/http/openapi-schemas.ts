/**
 * The JSON schemas of docs/design.md section 6's bodies and answers, for the OpenAPI
 * description (openapi.ts). Field names are the wire's (views.ts, api.ts, validate.ts).
 */
import { limits } from '../limits.js';

type Json = Record<string, unknown>;

const ref = (name: string): Json => ({ $ref: `#/components/schemas/${name}` });
const int = (description?: string, min?: number, max?: number): Json => ({
  type: 'integer', ...(min === undefined ? {} : { minimum: min }), ...(max === undefined ? {} : { maximum: max }), ...(description === undefined ? {} : { description }),
});
const nullableInt = (description: string): Json => ({ type: ['integer', 'null'], description });
const str = (description?: string): Json => ({ type: 'string', ...(description === undefined ? {} : { description }) });
const bool: Json = { type: 'boolean' };
const token: Json = { type: 'string', pattern: '^[0-9]+$', description: 'fencing token, a decimal string: ts * 1024 + peer index' };
const mode: Json = { type: 'string', enum: ['exclusive', 'shared', 'semaphore'] };
const meta: Json = { type: ['object', 'null'], description: `client data, at most ${limits.metaBytesMax} bytes of JSON` };
const reason: Json = { type: 'string', enum: ['released', 'expired', 'lease_lost', 'evicted', 'removed', 'shutdown', 'cancelled', 'timeout', 'waiting', 'unknown'] };

/** A closed object: every listed property, `required` of them required, nothing else. */
function obj(properties: Json, required: string[] = Object.keys(properties), description?: string): Json {
  return { type: 'object', properties, required, additionalProperties: false, ...(description === undefined ? {} : { description }) };
}

/** The fields of an acquire body that say how a request holds, whatever it names. */
const holdFields: Json = {
  timeout_ms: int('how long to wait; 0: do not wait behind others (default 30000)', 0, limits.timeoutMsMax),
  ttl_ms: int('the hold ends unless refreshed within this (default 60000); 0: no TTL, only with hold "connection"', 0, limits.ttlMsMax),
  owner: { type: 'string', description: `shown in status, at most ${limits.ownerBytesMax} bytes` },
  meta,
  hold: { type: 'string', enum: ['connection'], description: 'the hold lasts while the answer\'s connection stays open' },
  expected_ms: int('how long the holder expects to hold (shown)', 1, limits.ttlMsMax),
};
const askFields: Json = {
  mode,
  limit: int('a semaphore\'s capacity (makes a semaphore request)', 1, limits.semaphoreLimitMax),
  permits: int('permits of a semaphore request (default 1; at most limit)', 1, limits.semaphoreLimitMax),
};

const grantFields: Json = {
  lock: str(), id: str('the hold id: release and refresh name it'), token, mode, peer: str('the peer that granted it'),
  granted_at: int('epoch ms'), expires_at: nullableInt('epoch ms; null without TTL'),
};

const errorCodes = [
  'ERR_BAD_REQUEST', 'ERR_NOT_FOUND', 'ERR_NOT_HELD', 'ERR_TIMEOUT', 'ERR_UNREACHABLE', 'ERR_EVICTED', 'ERR_LEASE_LOST', 'ERR_SUPERSEDED', 'ERR_REMOVED', 'ERR_CHANGE_REFUSED',
  'ERR_STORAGE', 'ERR_SHUTTING_DOWN', 'ERR_NOT_READY', 'ERR_CONFIG_MISMATCH', 'ERR_LIMIT_EXCEEDED', 'ERR_UNSUPPORTED_MEDIA_TYPE', 'ERR_BODY_TOO_LARGE',
  'ERR_HOST_REFUSED', 'ERR_ORIGIN_REFUSED', 'ERR_UNAUTHORIZED', 'ERR_ADMIN_REQUIRED', 'ERR_WATCH_BEHIND', 'ERR_INTERNAL',
];

/** A member of the agreed view (docs/reconfiguration.md, "Terms"). */
const memberFields: Json = {
  id: str(),
  ordinal: int('given when the member was added, never given again: the tie-break and the low bits of its tokens', 0),
  state: { type: 'string', enum: ['voter', 'learner', 'leaving'], description: 'a voter counts in majorities; a learner requests nothing yet; a leaving member is being removed' },
};

const members = obj({
  epoch: int('the agreed view\'s epoch: 0 for the view the config file seeds, one more at each change', 0),
  level: int('the protocol level every member runs at'),
  next_ordinal: int('the ordinal the next added member gets', 0),
  members: {
    type: 'array',
    description: 'ascending ordinal',
    items: obj({
      ...memberFields, ws: str('where its peer links listen'), http: str('where its local HTTP API listens'), self: bool,
      connected: { type: ['boolean', 'null'], description: 'whether its link is up; null for this peer' },
      incarnation: { type: ['string', 'null'], description: 'its incarnation as this peer knows it (its own, for this peer); null before a handshake' },
      evicted: { type: ['boolean', 'null'], description: 'out of this peer\'s protocol view (evicted, or not met yet); null for this peer' },
      newest_level: nullableInt('the newest protocol level its binary speaks, as advertised in its last handshake (this binary\'s, for this peer); null before one'),
    }),
  },
});

/** The agreed view as a change answers it: GET /v1/members' fields without the links. */
const view = obj({
  epoch: int('the agreed view\'s epoch: one more than the view before the change', 0),
  level: int('the protocol level every member runs at'),
  next_ordinal: int('the ordinal the next added member gets', 0),
  members: { type: 'array', description: 'ascending ordinal', items: obj({ ...memberFields, ws: str('where its peer links listen'), http: str('where its local HTTP API listens') }) },
  join: str('after an add only: the ticket the added host starts with (`lamport-peer --join TICKET`)'),
}, ['epoch', 'level', 'next_ordinal', 'members']);

const changeTimeout = int('how long to wait for the view that has the change (default 30000)', 1, limits.timeoutMsMax);

const queueEntry = obj({
  peer: str('the requester\'s peer'), owner: str(), meta, token, mode,
  limit: int(undefined, 1), permits: int(undefined, 1),
  since: int('epoch ms when the request was made, on its requester\'s clock'),
  granted_at: nullableInt('epoch ms; this peer\'s own holds only'),
  expires_at: nullableInt('epoch ms; this peer\'s own holds with a TTL only'),
  local: { type: 'boolean', description: 'a request of this peer\'s clients' },
  id: str('the hold id, on its own peer only'),
  waits_for_acks: {
    type: 'array', items: str(),
    description: 'a holder of another peer: the unreachable peers (degraded) from which this peer heard nothing stamped after it; while any is listed it is admitted here but not granted by its peer yet',
  },
}, ['peer', 'owner', 'meta', 'token', 'mode', 'limit', 'permits', 'since', 'granted_at', 'expires_at', 'local']);

const cluster = obj({
  id: str(), cluster: str(),
  fingerprint: str('the fingerprint of what every peer\'s config must hold equal (lamport-peer --check-config prints a file\'s)'),
  shape: obj({
    cluster: str(), peers: { type: 'array', items: str(), description: 'peer ids in config order' },
    heartbeat_ms: int(), lease_ms: int(), evict_ms: int(), clock_rate_margin: { type: 'number' }, protocol: int('the protocol level of the cluster\'s shape: the one it was founded at (or set to with every peer stopped); a raise while it runs moves protocol_level, not this'),
  }),
  protocol_level: int('the protocol level this peer runs at: its agreed view\'s, which `lamport-lock level raise` moves (docs/operations.md, "Protocol levels")'),
  protocol_levels: obj({ oldest: int(), newest: int() }, ['oldest', 'newest'], 'the protocol levels this peer\'s binary speaks'),
  epoch: int('the epoch of the agreed view (GET /v1/members)', 0),
  config_mismatch: { type: ['string', 'null'], description: 'while a peer\'s config differs from this one\'s: the sentence of ERR_CONFIG_MISMATCH (/readyz answers 503 with it); else null' },
  refused_links: {
    type: 'array',
    description: 'peer links refused either way in the last 15 s, most recent first',
    items: obj({
      peer: str(), direction: { enum: ['by_peer', 'by_us'] }, reason: str(), message: str(),
      differences: { type: 'array', items: str(), description: 'with wrong_config: what differs, one sentence each' },
      ms_ago: int(undefined, 0), count: int(undefined, 1),
    }),
  },
  incarnation: str('this process\'s incarnation id'),
  clock: int('this peer\'s Lamport clock, a counter (seeded above wall-clock ms, so not a time)'),
  synced: bool,
  lease: obj({ valid: bool, valid_for_ms: { type: 'number', minimum: 0 } }),
  echoes_held_for_ms: int('how much longer this peer echoes no heartbeat after its restart (a confirmation its previous process gave may still bind); restart no other peer before it is 0 (docs/operations.md, "Upgrades")', 0),
  stats: obj({ locks: int(), queued: int(), own: int(), waiting: int(), granted: int() }),
  degraded: obj({
    active: bool,
    waiting_for: {
      type: 'array',
      items: obj({
        peer: str(), connected: bool, silent_ms: int(undefined, 0),
        eviction_due_in_ms: nullableInt('ms until this peer suspects it; null: this peer will not evict it (two peers, never met, or this peer is in the minority)'),
      }),
    },
    minority: {
      oneOf: [{ type: 'null' }, obj({ hears: int('configured peers this one hears, itself included', 1), peers: int(undefined, 1), majority: int(undefined, 1) })],
      description: 'this peer has no lease and hears fewer than a majority: it evicts nobody; the majority side evicts it',
    },
  }),
  superseded: { type: ['string', 'null'], description: 'why this process grants nothing any more (ERR_SUPERSEDED), or null' },
  peers: {
    type: 'array',
    items: {
      oneOf: [
        obj({ ...memberFields, self: { const: true } }),
        obj({
          ...memberFields, connected: bool, last_heard_ms_ago: nullableInt('null: never heard'), rtt_ms: { type: ['number', 'null'] },
          incarnation: { type: ['string', 'null'] }, evicted: bool, last_ts: int('the highest Lamport timestamp heard from it'),
          newest_level: nullableInt('the newest protocol level its binary advertised in its last handshake with this peer; null before one'),
        }),
      ],
    },
  },
});

/** `components.schemas` of the description. */
export const schemas: Json = {
  Error: {
    type: 'object',
    properties: {
      error: { type: 'string', enum: errorCodes },
      message: str('one sentence'),
      queue_position: int('ERR_TIMEOUT: the request\'s place in the queue', 0),
      holders: { type: 'array', items: ref('QueueEntry'), description: 'ERR_TIMEOUT: who holds what it waited for' },
      unreachable_peers: { type: 'array', items: str(), description: 'ERR_UNREACHABLE, ERR_LEASE_LOST: the peers that did not answer' },
      reason: { ...reason, description: 'ERR_NOT_HELD: why the hold is not live' },
      limit_bytes: int('ERR_BODY_TOO_LARGE'),
      epoch: int('ERR_CHANGE_REFUSED: the epoch of the view the change was checked against', 0),
    },
    required: ['error', 'message'],
    additionalProperties: false,
  },
  AcquireBody: obj({ ...holdFields, ...askFields }, []),
  AcquireAllBody: obj({
    locks: { type: 'array', minItems: 1, maxItems: limits.multiLocksMax, items: obj({ name: str(), ...askFields }, ['name']), description: 'each lock once' },
    ...holdFields,
  }, ['locks']),
  ReleaseBody: obj({ id: { type: 'string', minLength: 1, maxLength: limits.holdIdCharsMax } }),
  RefreshBody: obj({ id: { type: 'string', minLength: 1, maxLength: limits.holdIdCharsMax }, ttl_ms: int(undefined, 1, limits.ttlMsMax) }, ['id']),
  CampaignBody: obj({ value: { description: 'any JSON the leader announces' }, owner: holdFields['owner'], ttl_ms: holdFields['ttl_ms'], timeout_ms: holdFields['timeout_ms'] }, ['value']),
  ProclaimBody: obj({ id: { type: 'string', minLength: 1, maxLength: limits.holdIdCharsMax }, value: { description: 'any JSON' } }),
  EmptyBody: obj({}),
  AddMemberBody: obj({
    id: { type: 'string', pattern: `^[A-Za-z0-9_.-]{1,${limits.peerIdCharsMax}}$`, description: 'the new member\'s id (its lamport-peer --id)' },
    ws: { type: 'string', maxLength: limits.addressCharsMax, description: 'where its peer links listen: ws://host:port or wss://host:port' },
    http: { type: 'string', maxLength: limits.addressCharsMax, description: 'where its local HTTP API listens: host:port' },
    timeout_ms: changeTimeout,
  }, ['id', 'ws', 'http']),
  ChangeBody: obj({ timeout_ms: changeTimeout }, []),
  LevelBody: obj({ level: int('the protocol level to run at, above the current one', 1), timeout_ms: changeTimeout }, ['level']),
  Grant: obj(grantFields),
  GrantAll: obj({ ...grantFields, locks: { type: 'array', items: obj({ lock: str(), mode, token }) } }),
  CampaignGrant: obj({ ...grantFields, term: token, value: { description: 'the campaign\'s value' } }),
  Ended: obj({ ended: reason, id: str() }),
  Released: obj({ released: { const: true } }),
  Resigned: obj({ resigned: { const: true } }),
  Proclaimed: obj({ proclaimed: { const: true } }),
  Refreshed: obj({ expires_at: nullableInt('epoch ms; null without TTL') }),
  ForceReleased: obj({ released: { type: 'array', items: str() } }),
  Health: obj({ ok: { const: true } }),
  Ready: obj({ ready: { const: true } }),
  QueueEntry: queueEntry,
  Lock: obj({ name: str(), holders: { type: 'array', items: ref('QueueEntry') }, waiters: { type: 'array', items: ref('QueueEntry') } }),
  Locks: obj({ locks: { type: 'array', items: ref('Lock') } }),
  Cluster: cluster,
  Members: members,
  View: view,
  Leader: obj({
    peer: str(), owner: str(), value: { description: 'the campaign\'s value' }, term: token,
    requested_at: int('epoch ms'), granted_at: nullableInt('on the leader\'s own peer only'), local: bool,
  }),
  Election: obj({ name: str(), leader: { oneOf: [ref('Leader'), { type: 'null' }] } }),
  WatchState: obj({ locks: { type: 'array', items: ref('Lock') }, at: int('epoch ms') }),
  WatchChange: obj({
    type: { type: 'string', enum: ['queued', 'granted', 'released', 'left'] }, lock: str(), request: ref('QueueEntry'),
    reason: { type: ['string', 'null'], description: 'why this peer\'s own hold ended; null otherwise' }, at: int('epoch ms'),
  }),
  LeaderEvent: obj({ name: str(), leader: { oneOf: [ref('Leader'), { type: 'null' }] }, at: int('epoch ms') }),
};
