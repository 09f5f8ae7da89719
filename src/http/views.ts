/**
 * The JSON shapes of the runtime's read-only views (docs/design.md section 6): what
 * GET /v1/cluster, GET /v1/locks[/{name}] and the dashboard's feed answer with. The runtime
 * keeps its own names (`src/runtime/status-views.ts`); the wire names are chosen here alone.
 */
import type { AgreedView } from '../core/view.js';
import type { ClusterView, DegradedView, LockView, MembersView, QueueView } from '../runtime/peer.js';

/** A holder or waiter. */
export function queueJson(v: QueueView): Record<string, unknown> {
  return {
    peer: v.peer, owner: v.owner, meta: v.meta, token: v.token, mode: v.mode, limit: v.limit, permits: v.permits,
    since: v.requestedAtMs, granted_at: v.grantedAtMs, expires_at: v.expiresAtMs, local: v.local,
    ...(v.id === undefined ? {} : { id: v.id }),
    ...(v.waitsForAcks === undefined ? {} : { waits_for_acks: v.waitsForAcks }),
  };
}

/** One lock: its holders and waiters (the waiters cut to `waitersMax`, if given). */
export function lockJson(l: LockView, waitersMax?: number): { name: string; holders: unknown[]; waiters: unknown[] } {
  const waiters = waitersMax === undefined ? l.waiters : l.waiters.slice(0, waitersMax);
  return { name: l.name, holders: l.holders.map(queueJson), waiters: waiters.map(queueJson) };
}

/** The `degraded` member of GET /v1/cluster. */
export function degradedJson(d: DegradedView): Record<string, unknown> {
  return {
    active: d.active,
    waiting_for: d.waitingFor.map((w) => ({ peer: w.peer, connected: w.connected, silent_ms: w.silentMs, eviction_due_in_ms: w.evictionDueInMs })),
    minority: d.minority === null ? null : { hears: d.minority.hears, peers: d.minority.peers, majority: d.minority.majority },
  };
}

/** GET /v1/cluster. */
export function clusterJson(c: ClusterView): Record<string, unknown> {
  return {
    id: c.id, cluster: c.cluster, fingerprint: c.fingerprint,
    shape: {
      cluster: c.shape.cluster, peers: c.shape.peers, heartbeat_ms: c.shape.heartbeatMs, lease_ms: c.shape.leaseMs, evict_ms: c.shape.evictMs,
      clock_rate_margin: c.shape.marginMilli / 1000, protocol: c.shape.protocol,
    },
    protocol_level: c.protocolLevel,
    protocol_levels: { oldest: c.protocolLevels.oldest, newest: c.protocolLevels.newest },
    epoch: c.epoch,
    config_mismatch: c.configMismatch,
    refused_links: c.refusedLinks.map((r) => ({ peer: r.peer, direction: r.direction, reason: r.reason, message: r.message, differences: r.differences, ms_ago: r.msAgo, count: r.count })),
    incarnation: c.incarnation, clock: c.clock, synced: c.synced,
    lease: { valid: c.lease.valid, valid_for_ms: c.lease.validForMs },
    echoes_held_for_ms: c.echoesHeldForMs,
    stats: c.stats,
    degraded: degradedJson(c.degraded),
    superseded: c.superseded,
    peers: c.peers.map((p) => ('self' in p
      ? { id: p.id, ordinal: p.ordinal, state: p.state, self: true }
      : {
        id: p.id, ordinal: p.ordinal, state: p.state,
        connected: p.connected, last_heard_ms_ago: p.lastHeardMsAgo, rtt_ms: p.rttMs, incarnation: p.incarnation, evicted: p.evicted, last_ts: p.lastTs, newest_level: p.newestLevel,
      })),
  };
}

/** GET /v1/members: the agreed view, each member with its link as this peer sees it. */
export function membersJson(v: MembersView): Record<string, unknown> {
  return {
    epoch: v.epoch, level: v.level, next_ordinal: v.nextOrdinal,
    members: v.members.map((m) => ({
      id: m.id, ordinal: m.ordinal, state: m.state, ws: m.ws, http: m.http, self: m.self,
      connected: m.connected, incarnation: m.incarnation, evicted: m.evicted, newest_level: m.newestLevel,
    })),
  };
}

/**
 * The answer to a change of the members: the agreed view that has it, in GET /v1/members'
 * names, each member without the link fields (`self`, `connected`, ...) that only a peer's own
 * sight gives.
 */
export function viewJson(v: AgreedView): Record<string, unknown> {
  return {
    epoch: v.epoch, level: v.level, next_ordinal: v.nextOrdinal,
    members: v.members.map((m) => ({ id: m.id, ordinal: m.ordinal, state: m.state, ws: m.ws, http: m.http })),
  };
}

/**
 * The leader of election `name` (docs/design.md section 6, "Elections"): the holder of the
 * exclusive lock `name`, its campaign's value (`meta.value`) and its term (the grant's
 * token); `granted_at` is known to the leader's own peer only. Null while nobody leads.
 */
export function leaderJson(l: LockView): Record<string, unknown> | null {
  const h = l.holders[0];
  if (h === undefined) return null;
  const meta = typeof h.meta === 'object' && h.meta !== null ? (h.meta as Record<string, unknown>) : {};
  return { peer: h.peer, owner: h.owner, value: meta['value'] ?? null, term: h.token, requested_at: h.requestedAtMs, granted_at: h.grantedAtMs, local: h.local };
}

/**
 * The details of a runtime error as an error body carries them: the runtime's names
 * (`queuePosition`, `unreachablePeers`, `holders` as views) in the wire's
 * (`queue_position`, `unreachable_peers`, `holders` as GET /v1/locks shows them); other
 * details (`reason`) pass as they are.
 */
export function errorDetailsJson(details: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(details)) {
    if (key === 'queuePosition') out['queue_position'] = value;
    else if (key === 'unreachablePeers') out['unreachable_peers'] = value;
    else if (key === 'holders' && Array.isArray(value)) out['holders'] = (value as QueueView[]).map(queueJson);
    else out[key] = value;
  }
  return out;
}
