/**
 * (e) Cost on the peer links per grant: the delta of each peer's link counters in
 * `GET /metrics`, summed over the peers, divided by the grants of the run. Heartbeats
 * sent during the run are included, as they would be in production.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { spread } from './stats.js';
import type { Spread } from './stats.js';
import { sumCounters } from './systems/lamport.js';
import type { PeerHandle } from './systems/lamport.js';

/** The link counters (docs/design.md section 4, docs/operations.md) that the benchmark reads. */
export const linkCounters = {
  messages: 'lamport_peer_messages_sent_total',
  frames: 'lamport_peer_frames_sent_total',
  bytes: 'lamport_peer_bytes_sent_total',
} as const;

/** messages, frames or bytes. */
export type CostKind = keyof typeof linkCounters;
const costKinds = Object.keys(linkCounters) as CostKind[];

/** Per-grant link cost over several runs; a kind is null when its counter is absent. */
export type LinkCost = { readonly [K in CostKind]: Spread | null };

/** Collects per-run link costs while wrapping scenario runs. */
export class LinkCostMeter {
  private readonly perRun: Record<CostKind, number[]> = { messages: [], frames: [], bytes: [] };
  private readonly missing = new Set<CostKind>();

  constructor(private readonly peers: readonly PeerHandle[]) {}

  /** Runs one scenario run between two scrapes of every counter. */
  readonly around = async <T extends { grants: number }>(run: () => Promise<T>): Promise<T> => {
    const before = await this.scrape();
    const result = await run();
    const after = await this.scrape();
    for (const kind of costKinds) {
      const b = before[kind];
      const a = after[kind];
      if (a === null || b === null) this.missing.add(kind);
      else if (result.grants > 0) this.perRun[kind].push((a - b) / result.grants);
    }
    return result;
  };

  /**
   * Link traffic per second with no client at all (heartbeats, acks of heartbeats), measured
   * over `windowMs`, so that the per-grant figures at low load can be read net of it.
   */
  async idleRate(windowMs: number): Promise<Record<CostKind, number | null>> {
    const before = await this.scrape();
    await sleep(windowMs);
    const after = await this.scrape();
    const rate = (kind: CostKind): number | null => {
      const b = before[kind];
      const a = after[kind];
      return a === null || b === null ? null : ((a - b) * 1000) / windowMs;
    };
    return { messages: rate('messages'), frames: rate('frames'), bytes: rate('bytes') };
  }

  /** The spreads so far. */
  cost(): LinkCost {
    const of = (kind: CostKind): Spread | null => (this.missing.has(kind) ? null : spread(this.perRun[kind]));
    return { messages: of('messages'), frames: of('frames'), bytes: of('bytes') };
  }

  /** Names of the counters the peers do not expose. */
  missingCounters(): string[] {
    return [...this.missing].map((k) => linkCounters[k]);
  }

  private async scrape(): Promise<Record<CostKind, number | null>> {
    const totals = await sumCounters(this.peers, Object.values(linkCounters)).catch(() => new Map<string, number | null>());
    const of = (kind: CostKind): number | null => totals.get(linkCounters[kind]) ?? null;
    return { messages: of('messages'), frames: of('frames'), bytes: of('bytes') };
  }
}
