/**
 * Prometheus metrics of one peer (prom-client, one registry per peer so several peers can
 * live in one test process). Counters of things the runtime sees happen are incremented
 * as they happen; values owned by another component (the mesh's link counters, the core's
 * queue sizes, the clock) are read from it when the registry is scraped.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { PeerInspector } from './inspector.js';
import type { EndReason, Mode } from '../core/types.js';
import { modes } from '../core/types.js';
import type { LocalRequest } from './holds.js';

/**
 * Resolution of the event-loop delay histogram behind `nodejs_eventloop_lag_*` (prom-client's
 * default, 10 ms, is a libuv timer waking the process 100 times a second, idle or not: most of
 * an idle peer's wake-ups). The stalls that matter here, against a lease of hundreds of ms, are
 * seen as well at 100 ms.
 */
export const eventLoopLagResolutionMs = 100;

/**
 * Default metrics of prom-client that list every libuv handle, request or resource of the
 * process at each scrape: with 19,000 waiting clients (one socket each) a scrape took 100-200
 * ms of the event loop, long enough, repeated, to cost the peer its 1 s lease (issue 15). The
 * peer's own gauges count its waiters and holders; process_open_fds counts its sockets.
 */
const handleWalkingMetrics = [
  'nodejs_active_handles', 'nodejs_active_handles_total',
  'nodejs_active_requests', 'nodejs_active_requests_total',
  'nodejs_active_resources', 'nodejs_active_resources_total',
] as const;

/** What the collectors read of a peer: its inspector (runtime/inspector.ts), or a test's stand-in. */
export type MetricsSource = Pick<PeerInspector, 'linkStats' | 'links' | 'coreStats' | 'ready' | 'configMismatch' | 'degraded' | 'superseded' | 'nowMs' | 'protocolLevel' | 'view'>;

/** Reasons a hold ends other than a failed wait; pre-set to 0 so dashboards see every series. */
const holdEndReasons: readonly EndReason[] = ['released', 'expired', 'lease_lost', 'evicted', 'removed', 'shutdown'];

/** Bucket bounds of the acquire-latency histogram, in seconds: 0.5 ms (uncontended) to 30 s. */
const acquireBucketsSeconds = [0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** Bucket bounds of the hold-duration histogram, in seconds: 1 ms to an hour. */
const holdBucketsSeconds = [0.001, 0.01, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 600, 3600];

/**
 * A Prometheus counter mirroring a monotonic count that another component owns (the
 * link counters, summed over every incarnation's mesh by PeerRuntime.meshStats: a rejoin's
 * new mesh starts at 0, and a counter read from it alone would stall until it caught up
 * with the old one). On each scrape it adds the growth since the previous scrape, so
 * the exposed type is `counter` and rate() works. prom-client has no `set` on counters on
 * purpose; its maintainers point to `collect()` for values kept elsewhere
 * (prometheus/client_js#534) and call `reset()` a testing aid (#192), hence the delta.
 */
function mirroredCounter(registers: Registry[], name: string, help: string, read: () => number): Counter {
  let last = 0;
  return new Counter({
    name, help, registers,
    collect() {
      const now = read();
      if (now > last) this.inc(now - last);
      last = Math.max(last, now);
    },
  });
}

/** The metrics of one peer. */
export class PeerMetrics {
  readonly registry = new Registry();
  readonly acquireDuration: Histogram<'mode' | 'outcome'>;
  readonly holdDuration: Histogram<'mode' | 'reason'>;
  readonly grants: Counter<'mode'>;
  readonly holdsEnded: Counter<'reason'>;
  readonly messagesSent: Counter;
  readonly overdueHolds: Counter;
  /** Peer-link sockets refused or failed, either way, by reason (strangers on the peer port included). */
  readonly linkRefusals: Counter<'reason'>;
  readonly #rtt: Gauge<'peer'>;

  /** `processMetrics`: Node's default process metrics too (one process, one peer; not in the simulator). */
  constructor(source: MetricsSource, processMetrics = true) {
    const registers = [this.registry];
    if (processMetrics) {
      collectDefaultMetrics({ register: this.registry, eventLoopMonitoringPrecision: eventLoopLagResolutionMs });
      for (const name of handleWalkingMetrics) this.registry.removeSingleMetric(name);
    }
    this.acquireDuration = new Histogram({
      name: 'lamport_lock_acquire_duration_seconds', help: 'Time from a local acquire to its grant, or to its failure (outcome = timeout, cancelled, shutdown ...).',
      labelNames: ['mode', 'outcome'], buckets: acquireBucketsSeconds, registers,
    });
    this.holdDuration = new Histogram({
      name: 'lamport_lock_hold_duration_seconds', help: 'Time a local hold was kept, from grant to its end, by end reason.',
      labelNames: ['mode', 'reason'], buckets: holdBucketsSeconds, registers,
    });
    this.grants = new Counter({ name: 'lamport_lock_grants_total', help: 'Grants to local clients.', labelNames: ['mode'], registers });
    this.holdsEnded = new Counter({ name: 'lamport_lock_holds_ended_total', help: 'Local holds ended, by reason (released, expired, lease_lost, evicted, shutdown).', labelNames: ['reason'], registers });
    this.messagesSent = new Counter({ name: 'lamport_peer_messages_sent_total', help: 'Protocol messages sent to peers (requests, releases, acks; a coalesced ack counts as one).', registers });
    this.overdueHolds = new Counter({ name: 'lamport_lock_overdue_holds_total', help: 'Local holds kept longer than their expected_ms (each is also logged as a warning).', registers });
    this.linkRefusals = new Counter({ name: 'lamport_link_refusals_total', help: 'Peer-link connections refused or failed, either way, by reason (wrong_config, bad_mac, busy, ...; strangers on the peer port included).', labelNames: ['reason'], registers });
    this.#rtt = new Gauge({ name: 'lamport_peer_rtt_seconds', help: 'Last heartbeat round trip to each peer.', labelNames: ['peer'], registers });
    for (const mode of modes) this.grants.inc({ mode: mode satisfies Mode }, 0);
    for (const reason of holdEndReasons) this.holdsEnded.inc({ reason }, 0);
    this.#registerLinkCounters(source, registers);
    this.#registerGauges(source, registers);
  }

  #registerLinkCounters(source: MetricsSource, registers: Registry[]): void {
    mirroredCounter(registers, 'lamport_peer_frames_sent_total', 'WebSocket frames sent to peers (one frame carries the messages of one event-loop turn).', () => source.linkStats().framesSent);
    mirroredCounter(registers, 'lamport_peer_bytes_sent_total', 'Frame bytes sent to peers.', () => source.linkStats().bytesSent);
    mirroredCounter(registers, 'lamport_peer_frames_received_total', 'WebSocket frames received from peers.', () => source.linkStats().framesReceived);
    mirroredCounter(registers, 'lamport_peer_messages_dropped_total', 'Messages for a peer with no live stream (unknown or evicted incarnation).', () => source.linkStats().messagesDropped);
  }

  #registerGauges(source: MetricsSource, registers: Registry[]): void {
    const gauge = (name: string, help: string, read: () => number): void => {
      new Gauge({ name, help, registers, collect() { this.set(read()); } });
    };
    gauge('lamport_clock', 'The Lamport clock of this peer.', () => source.coreStats().clock);
    gauge('lamport_lease_valid', '1 while this peer holds a lease (a majority echoes its heartbeats), has synced with every peer and is not superseded.', () => (source.ready() ? 1 : 0));
    gauge('lamport_cluster_degraded', '1 while every grant waits for a peer that is unreachable and not evicted (GET /v1/cluster degraded names it).', () => (source.degraded().active ? 1 : 0));
    gauge('lamport_config_mismatch', '1 while a peer\'s configuration (peers, order, timings, secret or version) differs from this one\'s: GET /v1/cluster refusedLinks and /readyz say which and how.', () => (source.configMismatch() !== null ? 1 : 0));
    gauge('lamport_superseded', '1 once a newer process runs or ran with this peer id: this one grants nothing and answers ERR_SUPERSEDED; stop it.', () => (source.superseded() !== null ? 1 : 0));
    gauge('lamport_peers_unreachable', 'Peers not evicted whose link is down or silent: every grant waits until they return or are evicted.', () => source.degraded().waitingFor.length);
    gauge('lamport_lock_waiters', 'Requests of local clients waiting to be granted.', () => source.coreStats().waiting);
    gauge('lamport_lock_holders', 'Holds of local clients.', () => source.coreStats().granted);
    gauge('lamport_lock_queued_requests', 'Requests in this peer\'s queues, all peers\' (held and waiting).', () => source.coreStats().queued);
    gauge('lamport_protocol_level', 'The protocol level this peer runs at: the one its data dir records (docs/operations.md, "Protocol levels").', () => source.protocolLevel());
    gauge('lamport_view_epoch', 'The epoch of the agreed view of the cluster (GET /v1/members): 0 for the view the config file seeds, one more at each change.', () => source.view().epoch);
    gauge('lamport_lock_names', 'Lock names with a non-empty queue.', () => source.coreStats().locks);
    new Gauge({
      name: 'lamport_peer_connected', help: '1 while the link to a peer is up.', labelNames: ['peer'], registers,
      collect() {
        for (const s of source.links()) this.set({ peer: s.id }, s.connected ? 1 : 0);
      },
    });
    new Gauge({
      name: 'lamport_peer_newest_protocol_level', help: 'The newest protocol level each peer\'s binary advertised in its last handshake (absent until one).', labelNames: ['peer'], registers,
      collect() {
        for (const s of source.links()) if (s.newestLevel !== null) this.set({ peer: s.id }, s.newestLevel);
      },
    });
    new Gauge({
      name: 'lamport_peer_last_heard_seconds', help: 'Seconds since anything was heard from each peer (absent until first contact).', labelNames: ['peer'], registers,
      collect() {
        const now = source.nowMs();
        for (const s of source.links()) if (s.lastHeardMs !== null) this.set({ peer: s.id }, Math.max(0, now - s.lastHeardMs) / 1000);
      },
    });
  }

  /** Records an RTT sample. */
  observeRtt(peer: string, rttMs: number): void {
    this.#rtt.set({ peer }, rttMs / 1000);
  }

  /** A local request was granted. */
  onGranted(req: LocalRequest, nowMonoMs: number): void {
    this.grants.inc({ mode: req.spec.mode });
    this.acquireDuration.observe({ mode: req.spec.mode, outcome: 'granted' }, (nowMonoMs - req.requestedAtMonoMs) / 1000);
  }

  /** A local request failed or was cancelled while waiting. */
  onWaitFailed(req: LocalRequest, reason: EndReason, nowMonoMs: number): void {
    this.acquireDuration.observe({ mode: req.spec.mode, outcome: reason }, (nowMonoMs - req.requestedAtMonoMs) / 1000);
  }

  /** A local hold ended. */
  onHoldEnded(req: LocalRequest, reason: EndReason, nowWallMs: number): void {
    this.holdsEnded.inc({ reason });
    if (req.grant !== null) this.holdDuration.observe({ mode: req.spec.mode, reason }, Math.max(0, nowWallMs - req.grant.grantedAt) / 1000);
  }
}
