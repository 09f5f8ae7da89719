/**
 * Prometheus metrics of one peer (prom-client, one registry per peer so several peers can
 * live in one test process). Counters are updated by the runtime as things happen; gauges
 * are collected from the runtime when scraped.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { EndReason } from '../core/types.js';
import type { LocalRequest } from './holds.js';

/** The read-only view of a peer that the collectors need. */
export interface MetricsSource {
  readonly id: string;
  meshStats(): { framesSent: number; messagesSent: number; bytesSent: number; framesReceived: number };
  meshStatus(): ReadonlyArray<{ id: string; connected: boolean }>;
  coreStats(): { locks: number; queued: number; own: number; waiting: number; clock: number };
  leaseValid(): boolean;
}

/** The metrics of one peer. */
export class PeerMetrics {
  readonly registry = new Registry();
  readonly acquireDuration: Histogram<'mode' | 'outcome'>;
  readonly holdDuration: Histogram<'mode'>;
  readonly grants: Counter<'mode'>;
  readonly holdsEnded: Counter<'reason'>;
  readonly messagesSent: Counter;
  readonly overdueHolds: Counter;
  readonly #rtt: Gauge<'peer'>;

  constructor(source: MetricsSource) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    this.acquireDuration = new Histogram({
      name: 'lamport_lock_acquire_duration_seconds', help: 'Time from acquire to grant or failure.',
      labelNames: ['mode', 'outcome'], buckets: [0.0005, 0.001, 0.002, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30], registers,
    });
    this.holdDuration = new Histogram({
      name: 'lamport_lock_hold_duration_seconds', help: 'Time a hold was kept.', labelNames: ['mode'],
      buckets: [0.001, 0.01, 0.1, 1, 10, 60, 600, 3600], registers,
    });
    this.grants = new Counter({ name: 'lamport_lock_grants_total', help: 'Grants to local clients.', labelNames: ['mode'], registers });
    this.holdsEnded = new Counter({ name: 'lamport_lock_holds_ended_total', help: 'Local holds ended, by reason.', labelNames: ['reason'], registers });
    this.messagesSent = new Counter({ name: 'lamport_peer_messages_sent_total', help: 'Protocol messages sent to peers (an ack counts as one).', registers });
    this.overdueHolds = new Counter({ name: 'lamport_lock_overdue_holds_total', help: 'Holds kept longer than their expected_ms.', registers });
    this.#rtt = new Gauge({ name: 'lamport_peer_rtt_seconds', help: 'Heartbeat round trip per peer.', labelNames: ['peer'], registers });
    this.#registerCollected(source, registers);
  }

  #registerCollected(source: MetricsSource, registers: Registry[]): void {
    const gauge = (name: string, help: string, read: () => number): void => {
      new Gauge({ name, help, registers, collect() { this.set(read()); } });
    };
    gauge('lamport_peer_frames_sent_total', 'WebSocket frames sent to peers.', () => source.meshStats().framesSent);
    gauge('lamport_peer_bytes_sent_total', 'Bytes sent to peers.', () => source.meshStats().bytesSent);
    gauge('lamport_clock', 'The Lamport clock.', () => source.coreStats().clock);
    gauge('lamport_lease_valid', '1 while this peer holds a lease.', () => (source.leaseValid() ? 1 : 0));
    gauge('lamport_lock_waiters', 'Local requests waiting.', () => source.coreStats().waiting);
    gauge('lamport_lock_holders', 'Local holds.', () => source.coreStats().own - source.coreStats().waiting);
    gauge('lamport_lock_names', 'Lock names with a non-empty queue.', () => source.coreStats().locks);
    new Gauge({
      name: 'lamport_peer_connected', help: '1 while the link to a peer is up.', labelNames: ['peer'], registers,
      collect() {
        for (const s of source.meshStatus()) this.set({ peer: s.id }, s.connected ? 1 : 0);
      },
    });
  }

  /** Records an RTT sample. */
  observeRtt(peer: string, rttMs: number): void {
    this.#rtt.set({ peer }, rttMs / 1000);
  }

  /** A local request was granted. */
  onGranted(req: LocalRequest): void {
    this.grants.inc({ mode: req.spec.mode });
    this.acquireDuration.observe({ mode: req.spec.mode, outcome: 'granted' }, (performance.now() - req.requestedAt) / 1000);
  }

  /** A local request failed or was cancelled while waiting. */
  onWaitFailed(req: LocalRequest, reason: EndReason): void {
    this.acquireDuration.observe({ mode: req.spec.mode, outcome: reason }, (performance.now() - req.requestedAt) / 1000);
  }

  /** A local hold ended. */
  onHoldEnded(req: LocalRequest, reason: EndReason): void {
    this.holdsEnded.inc({ reason });
    if (req.grant !== null) this.holdDuration.observe({ mode: req.spec.mode }, (Date.now() - req.grant.grantedAt) / 1000);
  }
}
