/**
 * Lease samples of a fault run: every `everyMs` the test asks each running peer for its
 * lease (`GET /v1/cluster`, `lease.valid_for_ms`), one request per peer at a time. A sample
 * taken when the request was SENT at s and answering "valid for v ms" proves the lease holds
 * until at least s + v on the test's clock: the peer evaluated it after s, and every process
 * here reads one monotonic clock, so a peer's ms are the test's ms. The checker uses these
 * floors to bound how long the holds of a faulted peer stayed valid (checker.ts).
 */
import { performance } from 'node:perf_hooks';
import type { LocalCluster } from '../../src/tools/local-cluster.js';
import { delay } from '../support/wait.js';

/** One answered probe of one peer whose lease was valid. */
export interface LeaseSample {
  /** When the probe was sent (test clock). */
  readonly sentAt: number;
  /** When its answer arrived (test clock): the lease was evaluated in between. */
  readonly answeredAt: number;
  /** The lease holds at least until then: sentAt + valid_for_ms. */
  readonly validUntil: number;
}

/** What the checker needs of the samples: those of one peer id, in the order they were sent. */
export interface LeaseEvidence {
  samplesOf(peer: string): readonly LeaseSample[];
}

interface ClusterAnswer {
  readonly lease?: { readonly valid?: boolean; readonly valid_for_ms?: number };
}

/** Samples every peer's lease in the background until stopped. */
export class LeaseProbe implements LeaseEvidence {
  readonly #cluster: LocalCluster;
  readonly #everyMs: number;
  readonly #samples = new Map<string, LeaseSample[]>();
  #stopping = false;
  #loops: Promise<void>[] = [];

  constructor(cluster: LocalCluster, everyMs: number) {
    this.#cluster = cluster;
    this.#everyMs = everyMs;
    for (const p of cluster.peers) this.#samples.set(p.id, []);
  }

  /** Starts one sampling loop per peer. */
  start(): void {
    this.#loops = this.#cluster.peers.map((p) => this.#loop(p.id));
  }

  /** Samples peer `id` too from now on (a host added while the run goes). */
  watch(id: string): void {
    if (this.#samples.has(id)) return;
    this.#samples.set(id, []);
    this.#loops.push(this.#loop(id));
  }

  /** Stops the loops and waits for their last probes. */
  async stop(): Promise<void> {
    this.#stopping = true;
    await Promise.all(this.#loops);
  }

  samplesOf(peer: string): readonly LeaseSample[] {
    return this.#samples.get(peer) ?? [];
  }

  /** Every sample as one JSON line per peer and sample, to re-check a run's history later. */
  lines(): string[] {
    return [...this.#samples].flatMap(([peer, list]) => list.map((s) => JSON.stringify({ peer, ...s })));
  }

  /** Samples taken, over every peer. */
  get count(): number {
    return [...this.#samples.values()].reduce((n, list) => n + list.length, 0);
  }

  async #loop(id: string): Promise<void> {
    while (!this.#stopping) {
      const started = performance.now();
      if (this.#cluster.peer(id).proc !== null) await this.#probe(id);
      await delay(Math.max(0, this.#everyMs - (performance.now() - started)));
    }
  }

  async #probe(id: string): Promise<void> {
    const sentAt = performance.now();
    try {
      // A paused peer answers only after SIGCONT: the bound keeps the loop sampling afterwards.
      const res = await fetch(`${this.#cluster.url(id)}/v1/cluster`, { signal: AbortSignal.timeout(2000) });
      const body = (await res.json()) as ClusterAnswer;
      const validForMs = body.lease?.valid_for_ms;
      if (body.lease?.valid === true && typeof validForMs === 'number' && validForMs > 0) {
        // valid_for_ms is rounded to the ms: one ms less keeps the floor a floor.
        this.#samples.get(id)?.push({ sentAt, answeredAt: performance.now(), validUntil: sentAt + validForMs - 1 });
      }
    } catch {
      // No answer (dead, paused, restarting): no evidence, which only shortens what is checked.
    }
  }
}
