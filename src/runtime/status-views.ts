/**
 * The shapes of the read-only views of one peer for the HTTP API and the dashboard (docs/design.md
 * section 6): the holders and waiters of each lock, cluster-wide as this peer knows them, and
 * the state of this peer and its links. PeerInspector (inspector.ts) builds them; the JSON
 * the API answers with is shaped from these by src/http/views.ts.
 */
import type { ClusterShape } from '../cluster-shape.js';
import type { MemberState } from '../core/view.js';
import type { ProtocolLevels } from '../transport/codec.js';

/** A holder or waiter, cluster-wide, as this peer knows it. */
export interface QueueView {
  readonly peer: string;
  readonly owner: string;
  readonly meta: unknown;
  readonly token: string;
  readonly mode: string;
  readonly limit: number;
  readonly permits: number;
  /**
   * When the request was made, in epoch ms on its requester's wall clock: carried by the
   * REQUEST, so every peer shows the same value for one request, a restarted peer too.
   */
  readonly requestedAtMs: number;
  /** When a hold of this peer was granted (epoch ms); null for waiters and other peers' holds. */
  readonly grantedAtMs: number | null;
  /**
   * When a hold of this peer lapses unless refreshed (epoch ms; null without TTL, and for
   * waiters). Other peers' TTLs are kept by their own peers, so theirs is null here.
   */
  readonly expiresAtMs: number | null;
  readonly local: boolean;
  readonly id?: string;
  /**
   * A request of another peer that the mode rule admits on this peer's queue: the
   * unreachable peers of the view (`degraded`), other than its requester, from which this
   * peer heard nothing stamped after it. Its requester grants it only once every peer acked
   * it, so while one is listed it is admitted here but, as far as this peer can tell, not
   * granted there. Absent for this peer's own requests and for waiters.
   */
  readonly waitsForAcks?: readonly string[];
}

/** A peer every grant waits for: in the view (not evicted), its link down or silent. */
export interface WaitedPeer {
  readonly peer: string;
  /** Whether both sockets of its link are up (a paused peer's stay up until the watchdog cuts them). */
  readonly connected: boolean;
  /** Ms since this peer last heard the incarnation of it the protocol waits for (or since it started, if never). */
  readonly silentMs: number;
  /**
   * Ms until this peer suspects it (`evict_ms` of silence); the eviction follows once a
   * majority confirms. 0: due, waiting for confirmations. null: this peer will not evict it
   * (a two-peer cluster, an incarnation it never met, or this peer is in the minority): it
   * waits for the peer to return.
   */
  readonly evictionDueInMs: number | null;
}

/**
 * This peer without a lease, hearing fewer peers (itself included) than a majority of the
 * configuration: no confirmation majority can form on its side, so it evicts nobody; the
 * majority side, if there is one, evicts it.
 */
export interface MinorityView {
  /** Configured peers this one hears, itself included. */
  readonly hears: number;
  readonly peers: number;
  readonly majority: number;
}

/** GET /v1/cluster `degraded`: the peers every grant waits for, if any (docs/design.md section 6). */
export interface DegradedView {
  readonly active: boolean;
  readonly waitingFor: readonly WaitedPeer[];
  /** Set while this peer is in the minority (then every `evictionDueInMs` is null); else null. */
  readonly minority: MinorityView | null;
}

/** One lock, cluster-wide, as this peer knows it. */
export interface LockView {
  readonly name: string;
  readonly holders: QueueView[];
  readonly waiters: QueueView[];
  /** Requests in the queue, all of them: more than `holders` and `waiters` list when the view was cut (`lock(name, max)`). */
  readonly queued: number;
}

/** A member of the agreed view (docs/reconfiguration.md, "Terms"): its id, ordinal and state. */
export interface MemberIdentity {
  readonly id: string;
  /** Given at its addition, never given again: the tie-break and the low bits of its tokens. */
  readonly ordinal: number;
  readonly state: MemberState;
}

/** Another peer and its link, as this peer sees them. */
export interface PeerLinkView extends MemberIdentity {
  readonly connected: boolean;
  /** Ms since anything was heard on its link (lease clock); null if never. */
  readonly lastHeardMsAgo: number | null;
  readonly rttMs: number | null;
  readonly incarnation: string | null;
  /** Out of this peer's view (evicted, or not met yet). */
  readonly evicted: boolean;
  /** The highest timestamp heard from it. */
  readonly lastTs: number;
  /** The newest protocol level its binary advertised in its last handshake with this peer; null before one. */
  readonly newestLevel: number | null;
}

/** A link refused either way of late (src/transport/refusals.ts), as GET /v1/cluster lists it. */
export interface RefusedLinkView {
  readonly peer: string;
  /** `by_peer`: that peer refused this one; `by_us`: this one refused that peer (which proved the secret). */
  readonly direction: string;
  readonly reason: string;
  readonly message: string;
  /** With `wrong_config`: what differs, one sentence each. */
  readonly differences: readonly string[];
  readonly msAgo: number;
  readonly count: number;
}

/** This peer, its lease, its core's counts and its links (GET /v1/cluster). */
export interface ClusterView {
  readonly id: string;
  readonly cluster: string;
  /** The fingerprint of what every peer must hold equal (src/cluster-shape.ts), and what it covers. */
  readonly fingerprint: string;
  readonly shape: ClusterShape;
  /** The protocol level this peer runs at now (its agreed view's: a raise moves it), and the levels its binary speaks. */
  readonly protocolLevel: number;
  readonly protocolLevels: ProtocolLevels;
  /** The epoch of the agreed view (0: the one the config file seeds). */
  readonly epoch: number;
  /** Links refused either way in the last limits.refusalShownMs, most recent first. */
  readonly refusedLinks: readonly RefusedLinkView[];
  /** ERR_CONFIG_MISMATCH's sentence while a peer's configuration differs of late; else null. */
  readonly configMismatch: string | null;
  readonly incarnation: string;
  readonly clock: number;
  readonly synced: boolean;
  readonly lease: { readonly valid: boolean; readonly validForMs: number };
  /**
   * How much longer this peer echoes no heartbeat, because a confirmation its previous process
   * gave may still bind (docs/design.md section 5, "Eviction"); 0 once it echoes. Restarting
   * another peer before it is 0 can lapse the others' leases (docs/operations.md, "Upgrades").
   */
  readonly echoesHeldForMs: number;
  readonly stats: { readonly locks: number; readonly queued: number; readonly own: number; readonly waiting: number; readonly granted: number };
  readonly degraded: DegradedView;
  /** Once this process is a zombie (a newer process runs with its id): why, as its clients hear it (ERR_SUPERSEDED); else null. */
  readonly superseded: string | null;
  /** Every member of the agreed view by ordinal: this one as `{id, ordinal, state, self: true}`. */
  readonly peers: ReadonlyArray<(MemberIdentity & { readonly self: true }) | PeerLinkView>;
}

/** One member of the agreed view and its link as this peer sees it (GET /v1/members). */
export interface MemberView extends MemberIdentity {
  /** Where its peer links listen (`ws://host:port`). */
  readonly ws: string;
  /** Where its local HTTP API listens (`host:port`). */
  readonly http: string;
  readonly self: boolean;
  /** Whether its link is up; null for this peer. */
  readonly connected: boolean | null;
  /** The incarnation this peer knows of it (its own, for this peer); null before a handshake. */
  readonly incarnation: string | null;
  /** Out of this peer's protocol view (evicted, or not met yet); null for this peer. */
  readonly evicted: boolean | null;
  /** The newest protocol level its binary speaks, as advertised in its last handshake (this binary's, for this peer); null before one. */
  readonly newestLevel: number | null;
}

/** The agreed view of the cluster and each member's link (GET /v1/members). */
export interface MembersView {
  readonly epoch: number;
  /** The protocol level every member runs at. */
  readonly level: number;
  /** The ordinal the next added member will get. */
  readonly nextOrdinal: number;
  /** Ascending ordinal. */
  readonly members: readonly MemberView[];
}
