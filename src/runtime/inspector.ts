/**
 * The one read-only inspector of a peer (docs/architecture.md section 5): everything the HTTP
 * API's views, the dashboard, the watches, the metrics, the local holds' error sentences and
 * the simulator's checker read of a peer, they read here. It reads the current incarnation's
 * protocol and links (Session.protocol, Session.links) and the registry of local requests;
 * nothing here changes state, and nothing else forwards a read.
 */
import type { ClusterConfig } from '../config.js';
import type { Explanation } from '../core/effects.js';
import type { QueueEntry } from '../core/machine.js';
import type { AgreedView } from '../core/view.js';
import type { ProtocolReader } from '../core/protocol.js';
import type { EndReason, Incarnation, QueuedRequest } from '../core/types.js';
import { formatIncarnation, tokenOf } from '../core/types.js';
import { ErrorCode, LockError } from '../errors.js';
import { limits } from '../limits.js';
import type { MeshPeerStatus, MeshStats } from '../transport/mesh.js';
import type { CurrentSession } from './current-session.js';
import { addLinkStats } from './current-session.js';
import type { LocalRequests } from './holds.js';
import type { ClusterView, DegradedView, LockView, MembersView, MinorityView, PeerLinkView, QueueView, WaitedPeer } from './status-views.js';

/** What the inspector reads: the peer's place in the config, its current session, its local requests. */
export interface InspectorSource {
  readonly id: string;
  readonly index: number;
  readonly config: ClusterConfig;
  /** The session of the current incarnation (a new one after a rejoin). */
  readonly sessions: CurrentSession;
  /** The live local requests (ids, grant times and expiries of local entries). */
  readonly requests: LocalRequests;
  /**
   * The agreed view of the cluster (docs/reconfiguration.md, "Terms"), as PeerRuntime holds it
   * now: its data dir's, else the one the config file seeds.
   */
  view(): AgreedView;
}

/** What a client of a peer that applied its own removal hears (docs/reconfiguration.md P6). */
export function removedError(epoch: number): LockError {
  return new LockError(ErrorCode.Removed, `this peer was removed from the cluster (view epoch ${epoch}): it grants nothing any more; ask a member (lamport-lock member list on one)`);
}

/** The core's counts and its clock, for metrics. */
export type CoreStats = ReturnType<ProtocolReader['machine']['stats']> & { readonly clock: number };

/** The read-only inspector of one peer. */
export class PeerInspector {
  readonly #src: InspectorSource;

  constructor(src: InspectorSource) {
    this.#src = src;
  }

  // ---- the current incarnation ------------------------------------------------------------

  /** The current incarnation's protocol, for read-only queries (a new one after a rejoin). */
  get protocol(): ProtocolReader {
    return this.#src.sessions.get().protocol;
  }

  /** The current incarnation (it changes when the peer rejoins after an eviction). */
  get incarnation(): Incarnation {
    return this.protocol.incarnation;
  }

  /** The protocol level this peer runs at now (its agreed view's: Session.level). */
  protocolLevel(): number {
    return this.#src.sessions.get().level();
  }

  /** Now on the lease clock, which the lease and the links' times use (it counts suspends). */
  nowMs(): number {
    return this.#src.sessions.get().nowMs();
  }

  /**
   * True while this peer holds a lease, is synced with its view, is no zombie, and no peer's
   * configuration differs from its own of late (readyz): a cluster split by configuration
   * needs an operator, even on the side that still grants.
   */
  ready(): boolean {
    const machine = this.protocol.machine;
    return machine.leaseValid && machine.synced && this.superseded() === null && this.configMismatch() === null;
  }

  /**
   * Why this peer serves nobody any more, for good: ERR_SUPERSEDED once this incarnation is a
   * zombie (a newer process runs or ran with its id), ERR_REMOVED once it applied its own
   * removal (docs/reconfiguration.md P6); else null.
   */
  superseded(): LockError | null {
    return this.protocol.supersededError ?? (this.protocol.machine.removed ? removedError(this.#src.view().epoch) : null);
  }

  /** ERR_CONFIG_MISMATCH while a peer's configuration recently differed from this one's; else null. */
  configMismatch(): LockError | null {
    return this.#src.sessions.get().links.configMismatch();
  }

  /** The id of the peer at `index`. */
  peerId(index: number): string {
    return this.protocol.peerId(index);
  }

  /** Ids of the peers whose heartbeat echoes no longer vouch for our lease. */
  leaseSilentPeers(): string[] {
    return this.protocol.leaseSilentPeers(this.nowMs()).map((p) => this.peerId(p));
  }

  /** Peers whose new incarnation waits here for its predecessor's eviction (or while joins are held). */
  waitingForPredecessor(): string[] {
    return this.protocol.waiting().map((p) => this.peerId(p));
  }

  /** Why a request of this peer is not granted yet, as the core explains it. */
  explain(ref: number): Explanation | undefined {
    return this.protocol.machine.explain(ref);
  }

  /** The core's counts and clock. */
  coreStats(): CoreStats {
    const machine = this.protocol.machine;
    return { ...machine.stats(), clock: machine.clock };
  }

  /** Link status lines of the current incarnation; their times are on the lease clock (`nowMs`). */
  links(): MeshPeerStatus[] {
    return this.#src.sessions.get().links.status();
  }

  /**
   * Link counters of this process, for metrics: every incarnation's mesh counts from 0, so
   * the counters of the ones before are added and a counter never goes back at a rejoin
   * (`'incarnation'`: the current incarnation's alone).
   */
  linkStats(of: 'process' | 'incarnation' = 'process'): MeshStats {
    const current = this.#src.sessions.get().links.stats();
    return of === 'incarnation' ? current : addLinkStats(this.#src.sessions.pastLinkStats, current);
  }

  // ---- local requests ---------------------------------------------------------------------

  /** The state of local request `id`: waiting, held, or why it ended (if remembered). */
  requestState(id: string): 'waiting' | 'held' | EndReason | undefined {
    const req = this.#src.requests.byId(id);
    if (req !== undefined && req.state !== 'ended') return req.state;
    return this.#src.requests.endedReason(id);
  }

  /** The core ref of live local request `id` (for explanations). */
  refOf(id: string): number | undefined {
    return this.#src.requests.byId(id)?.ref;
  }

  // ---- the views of the HTTP API and the dashboard ----------------------------------------

  /** One queue entry as the HTTP API shows it. */
  entry(e: QueueEntry): QueueView {
    const local = e.peer === this.#src.index;
    const req = local && e.ref !== undefined ? this.#src.requests.byRef(e.ref) : undefined;
    const grant = e.held ? (req?.grant ?? null) : null;
    return {
      peer: this.peerId(e.peer), owner: e.owner, meta: e.meta, token: e.token.toString(), mode: e.mode,
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
    const machine = this.protocol.machine;
    const unreachable = new Set(this.degraded().waitingFor.map((w) => w.peer));
    if (unreachable.size === 0) return [];
    return machine.view().filter((p) => p !== requester && p !== this.#src.index && unreachable.has(this.peerId(p)) && machine.lastTs(p) <= ts)
      .sort((x, y) => x - y).map((p) => this.peerId(p));
  }

  /** Holders and waiters of one lock, cluster-wide, as this peer knows them: the first `max` of its queue. */
  lock(name: string, max = Infinity): LockView {
    const machine = this.protocol.machine;
    const entries = machine.queue(name, max);
    return this.#view(name, entries, entries.length < max ? entries.length : machine.queueSize(name));
  }

  /**
   * The head of one lock's queue (Machine.head): every holder, and the waiters among them;
   * `queued` counts the whole queue. `permitsMax`: the largest semaphore limit in the queue.
   */
  head(name: string, permitsMax: number): LockView {
    const machine = this.protocol.machine;
    return this.#view(name, machine.head(name, permitsMax), machine.queueSize(name));
  }

  /** Queue entries as a lock's view: its holders and waiters, and how many requests its queue has. */
  #view(name: string, entries: readonly QueueEntry[], queued: number): LockView {
    return {
      name,
      holders: entries.filter((e) => e.held).map((e) => this.entry(e)),
      waiters: entries.filter((e) => !e.held).map((e) => this.entry(e)),
      queued,
    };
  }

  /** Every lock with a non-empty queue; of each, its first `entriesMax` entries (a view that must stay cheap under a burst). */
  locks(entriesMax = Infinity): LockView[] {
    return this.protocol.machine.lockNames().sort().map((n) => this.lock(n, entriesMax));
  }

  /** A queued request, as a waiter (the watches tell a request's grant apart). */
  waiterView(r: QueuedRequest): QueueView {
    const ref = r.peer === this.#src.index ? this.protocol.machine.ownRef(r.ts) : undefined;
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
    const protocol = this.protocol;
    const links = this.links();
    const connected = new Map(links.map((s) => [s.peer, s.connected]));
    const silentAfterMs = this.#src.config.heartbeatMs * limits.heartbeatsMissedMax;
    const minority = this.#minority(links, silentAfterMs);
    const waiting: WaitedPeer[] = [];
    // The view lists a peer that rejoined after an eviction last: configuration order reads better.
    for (const peer of [...protocol.machine.view()].sort((x, y) => x - y)) {
      const silence = protocol.silence(peer, this.nowMs()); // the view never holds this peer itself
      if (silence === null) continue;
      const up = connected.get(peer) ?? false;
      if (up && silence.silentMs < silentAfterMs) continue;
      const due = silence.suspectInMs === null || minority !== null ? null : Math.round(silence.suspectInMs);
      waiting.push({ peer: this.peerId(peer), connected: up, silentMs: Math.round(silence.silentMs), evictionDueInMs: due });
    }
    return { active: waiting.length > 0, waitingFor: waiting, minority: waiting.length > 0 ? minority : null };
  }

  /** This peer's side when it holds no lease and hears fewer than a majority of the configured peers (itself included); else null. */
  #minority(links: ReadonlyArray<{ readonly connected: boolean; readonly lastHeardMs: number | null }>, silentAfterMs: number): MinorityView | null {
    if (this.protocol.machine.leaseValid) return null;
    const now = this.nowMs();
    const hears = 1 + links.filter((l) => l.connected && l.lastHeardMs !== null && now - l.lastHeardMs < silentAfterMs).length;
    const peers = this.#src.config.peers.length;
    const majority = Math.floor(peers / 2) + 1;
    return hears < majority ? { hears, peers, majority } : null;
  }

  /** The agreed view of the cluster (docs/reconfiguration.md): its epoch, members by ordinal, next ordinal and level. */
  view(): AgreedView {
    return this.#src.view();
  }

  /** This peer and its links, for GET /v1/cluster. */
  cluster(): ClusterView {
    const { id, config } = this.#src;
    const session = this.#src.sessions.get();
    const now = session.nowMs();
    const protocol = session.protocol;
    const machine = protocol.machine;
    const link = this.#linkReader();
    return {
      id, cluster: config.cluster, fingerprint: session.links.fingerprint, shape: session.shape,
      protocolLevel: session.level(), protocolLevels: session.levels, epoch: this.#src.view().epoch,
      refusedLinks: session.links.refusals().map((r) => ({
        peer: r.peer, direction: r.direction, reason: r.reason, message: r.message, differences: r.differences,
        msAgo: Math.round(now - r.atMs), count: r.count,
      })),
      configMismatch: session.links.configMismatch()?.message ?? null,
      incarnation: formatIncarnation(protocol.incarnation), clock: machine.clock,
      synced: machine.synced,
      echoesHeldForMs: Math.ceil(protocol.quietLeftMs(now)),
      lease: { valid: machine.leaseValid, validForMs: machine.leaseValid ? Math.max(0, Math.round(Math.min(protocol.leaseValidUntilMs() - now, 1e12))) : 0 },
      stats: machine.stats(),
      degraded: this.degraded(),
      superseded: protocol.supersededError?.message ?? null,
      peers: this.#src.view().members.map((m) => {
        const member = { id: m.id, ordinal: m.ordinal, state: m.state };
        return m.ordinal === this.#src.index ? { ...member, self: true as const } : { ...member, ...link(m.ordinal) };
      }),
    };
  }

  /** The members of the agreed view, each with its link as this peer sees it, for GET /v1/members. */
  members(): MembersView {
    const view = this.#src.view();
    const link = this.#linkReader();
    const own = { incarnation: formatIncarnation(this.incarnation), newestLevel: this.#src.sessions.get().levels.newest };
    return {
      epoch: view.epoch, level: view.level, nextOrdinal: view.nextOrdinal,
      members: view.members.map((m) => {
        const member = { id: m.id, ordinal: m.ordinal, state: m.state, ws: m.ws, http: m.http };
        if (m.ordinal === this.#src.index) return { ...member, self: true, connected: null, evicted: null, ...own };
        const l = link(m.ordinal);
        return { ...member, self: false, connected: l.connected, evicted: l.evicted, incarnation: l.incarnation, newestLevel: l.newestLevel };
      }),
    };
  }

  /**
   * The link to the member of `ordinal` as this peer sees it, now. Today's peer indexes are
   * the ordinals of epoch 0 (the config file's order).
   */
  #linkReader(): (ordinal: number) => Omit<PeerLinkView, 'id' | 'ordinal' | 'state'> {
    const session = this.#src.sessions.get();
    const now = session.nowMs();
    const machine = session.protocol.machine;
    const links = new Map(session.links.status().map((s) => [s.peer, s]));
    return (i) => {
      const s = links.get(i);
      return {
        connected: s?.connected ?? false, lastHeardMsAgo: s?.lastHeardMs == null ? null : Math.round(now - s.lastHeardMs),
        rttMs: s?.rttMs ?? null, incarnation: s?.incarnation == null ? null : formatIncarnation(s.incarnation), evicted: machine.incarnation(i) === undefined,
        lastTs: machine.lastTs(i), newestLevel: s?.newestLevel ?? null,
      };
    };
  }
}
