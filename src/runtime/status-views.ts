/**
 * Read-only views of one peer for the HTTP API and the dashboard (docs/design.md section 6): the
 * holders and waiters of each lock, cluster-wide as this peer knows them, and the state of
 * this peer and its links. Nothing here changes state. The JSON the API answers with is
 * shaped from these by src/http/views.ts.
 */
import type { ClusterShape } from '../cluster-shape.js';
import type { ClusterConfig } from '../config.js';
import type { QueueEntry } from '../core/machine.js';
import type { QueuedRequest } from '../core/types.js';
import { formatIncarnation, tokenOf } from '../core/types.js';
import { limits } from '../limits.js';
import type { CurrentSession } from './current-session.js';
import type { LocalRequests } from './holds.js';

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

/** Another peer and its link, as this peer sees them. */
export interface PeerLinkView {
  readonly id: string;
  readonly connected: boolean;
  /** Ms since anything was heard on its link (lease clock); null if never. */
  readonly lastHeardMsAgo: number | null;
  readonly rttMs: number | null;
  readonly incarnation: string | null;
  /** Out of this peer's view (evicted, or not met yet). */
  readonly evicted: boolean;
  /** The highest timestamp heard from it. */
  readonly lastTs: number;
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
  /** Links refused either way in the last limits.refusalShownMs, most recent first. */
  readonly refusedLinks: readonly RefusedLinkView[];
  /** ERR_CONFIG_MISMATCH's sentence while a peer's configuration differs of late; else null. */
  readonly configMismatch: string | null;
  readonly incarnation: string;
  readonly clock: number;
  readonly synced: boolean;
  readonly lease: { readonly valid: boolean; readonly validForMs: number };
  readonly stats: { readonly locks: number; readonly queued: number; readonly own: number; readonly waiting: number; readonly granted: number };
  readonly degraded: DegradedView;
  /** Once this process is a zombie (a newer process runs with its id): why, as its clients hear it (ERR_SUPERSEDED); else null. */
  readonly superseded: string | null;
  /** Every configured peer in config order: this one as `{id, self: true}`. */
  readonly peers: ReadonlyArray<{ readonly id: string; readonly self: true } | PeerLinkView>;
}

/** What the views read: the peer's place in the config, its current session, its local requests. */
export interface ViewSource {
  readonly id: string;
  readonly index: number;
  readonly config: ClusterConfig;
  /** The session of the current incarnation (a new one after a rejoin). */
  readonly sessions: CurrentSession;
  /** The live local requests (ids, grant times and expiries of local entries). */
  readonly requests: LocalRequests;
}

/** The views of one peer. */
export class StatusViews {
  readonly #src: ViewSource;

  constructor(src: ViewSource) {
    this.#src = src;
  }

  /** One queue entry as the HTTP API shows it. */
  entry(e: QueueEntry): QueueView {
    const session = this.#src.sessions.get();
    const local = e.peer === this.#src.index;
    const req = local && e.ref !== undefined ? this.#src.requests.byRef(e.ref) : undefined;
    const grant = e.held ? (req?.grant ?? null) : null;
    return {
      peer: session.peerId(e.peer), owner: e.owner, meta: e.meta, token: e.token.toString(), mode: e.mode,
      limit: e.limit, permits: e.permits, requestedAtMs: e.requestedAtMs, grantedAtMs: grant?.grantedAt ?? null, expiresAtMs: grant?.expiresAt ?? null,
      local, ...(req === undefined ? {} : { id: req.id }),
      ...(local || !e.held ? {} : { waitsForAcks: this.#unacked(e.peer, e.ts) }),
    };
  }

  /**
   * The unreachable peers of the view (`degraded`), other than `requester`, heard from here
   * at or below `ts` only: its requester cannot have their acks unless they reach it and not
   * this peer. A reachable peer that has sent this one nothing since is not listed: it acks
   * to the requester, not here.
   */
  #unacked(requester: number, ts: number): string[] {
    const session = this.#src.sessions.get();
    const machine = session.machine;
    const unreachable = new Set(this.degraded().waitingFor.map((w) => w.peer));
    if (unreachable.size === 0) return [];
    return machine.view().filter((p) => p !== requester && p !== this.#src.index && unreachable.has(session.peerId(p)) && machine.lastTs(p) <= ts)
      .sort((x, y) => x - y).map((p) => session.peerId(p));
  }

  /** Holders and waiters of one lock, cluster-wide, as this peer knows them: the first `max` of its queue. */
  lock(name: string, max = Infinity): LockView {
    const machine = this.#src.sessions.get().machine;
    const entries = machine.queue(name, max);
    return {
      name,
      holders: entries.filter((e) => e.held).map((e) => this.entry(e)),
      waiters: entries.filter((e) => !e.held).map((e) => this.entry(e)),
      queued: entries.length < max ? entries.length : machine.queueSize(name),
    };
  }

  /**
   * The head of one lock's queue (Machine.head): every holder, and the waiters among them;
   * `queued` counts the whole queue. `permitsMax`: the largest semaphore limit in the queue.
   */
  head(name: string, permitsMax: number): LockView {
    const machine = this.#src.sessions.get().machine;
    const entries = machine.head(name, permitsMax);
    return {
      name,
      holders: entries.filter((e) => e.held).map((e) => this.entry(e)),
      waiters: entries.filter((e) => !e.held).map((e) => this.entry(e)),
      queued: machine.queueSize(name),
    };
  }

  /** A queued request, as a waiter (the watches tell a request's grant apart). */
  waiter(r: QueuedRequest): QueueView {
    const ref = r.peer === this.#src.index ? this.#src.sessions.get().machine.ownRef(r.ts) : undefined;
    return this.entry({ ...r, token: tokenOf(r.ts, r.peer), held: false, ref });
  }

  /**
   * The peers of the view that are unreachable: link down, or nothing heard of the
   * incarnation the protocol waits for in `limits.heartbeatsMissedMax` heartbeats (the
   * silence watchdog's bound; a successor waiting for its predecessor's eviction counts as
   * its predecessor's silence). Rule 3a needs an ack from every peer of the view, so every
   * grant waits for them until they come back or are evicted.
   */
  degraded(): DegradedView {
    const session = this.#src.sessions.get();
    const links = session.meshStatus();
    const connected = new Map(links.map((s) => [s.peer, s.connected]));
    const silentAfterMs = this.#src.config.heartbeatMs * limits.heartbeatsMissedMax;
    const minority = this.#minority(links, silentAfterMs);
    const waiting: WaitedPeer[] = [];
    // The view lists a peer that rejoined after an eviction last: configuration order reads better.
    for (const peer of [...session.machine.view()].sort((x, y) => x - y)) {
      const silence = session.peerSilence(peer); // the view never holds this peer itself
      if (silence === null) continue;
      const up = connected.get(peer) ?? false;
      if (up && silence.silentMs < silentAfterMs) continue;
      const due = silence.suspectInMs === null || minority !== null ? null : Math.round(silence.suspectInMs);
      waiting.push({ peer: session.peerId(peer), connected: up, silentMs: Math.round(silence.silentMs), evictionDueInMs: due });
    }
    return { active: waiting.length > 0, waitingFor: waiting, minority: waiting.length > 0 ? minority : null };
  }

  /** This peer's side when it holds no lease and hears fewer than a majority of the configured peers (itself included); else null. */
  #minority(links: ReadonlyArray<{ readonly connected: boolean; readonly lastHeardMs: number | null }>, silentAfterMs: number): MinorityView | null {
    const session = this.#src.sessions.get();
    if (session.machine.leaseValid) return null;
    const now = session.leaseNowMs();
    const hears = 1 + links.filter((l) => l.connected && l.lastHeardMs !== null && now - l.lastHeardMs < silentAfterMs).length;
    const peers = this.#src.config.peers.length;
    const majority = Math.floor(peers / 2) + 1;
    return hears < majority ? { hears, peers, majority } : null;
  }

  /** This peer and its links, for GET /v1/cluster. */
  cluster(): ClusterView {
    const { id, index, config } = this.#src;
    const session = this.#src.sessions.get();
    const now = session.leaseNowMs();
    const machine = session.machine;
    const view = new Set(machine.view());
    const links = new Map(session.meshStatus().map((s) => [s.peer, s]));
    return {
      id, cluster: config.cluster, fingerprint: session.fingerprint, shape: session.shape,
      refusedLinks: session.linkRefusals().map((r) => ({
        peer: r.peer, direction: r.direction, reason: r.reason, message: r.message, differences: r.differences,
        msAgo: Math.round(now - r.atMs), count: r.count,
      })),
      configMismatch: session.configMismatch()?.message ?? null,
      incarnation: formatIncarnation(session.incarnation), clock: machine.clock,
      synced: machine.synced,
      lease: { valid: machine.leaseValid, validForMs: machine.leaseValid ? session.leaseValidForMs() : 0 },
      stats: machine.stats(),
      degraded: this.degraded(),
      superseded: session.supersededError?.message ?? null,
      peers: config.peers.map((p, i) => {
        const s = links.get(i);
        return i === index
          ? { id: p.id, self: true as const }
          : { id: p.id, connected: s?.connected ?? false, lastHeardMsAgo: s?.lastHeardMs == null ? null : Math.round(now - s.lastHeardMs),
              rttMs: s?.rttMs ?? null, incarnation: s?.incarnation == null ? null : formatIncarnation(s.incarnation), evicted: !view.has(i),
              lastTs: machine.lastTs(i) };
      }),
    };
  }
}
