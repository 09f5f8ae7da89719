/**
 * The shape of `bench/results/latest.json`: everything one `npm run bench` measured,
 * with the notes that say what was skipped and why.
 */
import type { FloorFigures } from './floor.js';
import type { CostKind, LinkCost } from './link-cost.js';
import type { MemoryFigures } from './memory.js';
import type { ManyNamesRun, UncontendedRun } from './scenarios.js';
import type { Figures, Sizes, SystemFigures } from './suite.js';
import type { SystemName } from './systems/types.js';

/** (d) and (e) for one cluster size. */
export interface ScalingPoint {
  readonly peers: number;
  readonly a: Figures<UncontendedRun>;
  readonly c: Figures<ManyNamesRun>;
  /** Link cost per grant during (a): one client, one request at a time. */
  readonly linksLow: LinkCost;
  /** Link cost per grant during (c): 64 workers on 1000 names. */
  readonly linksHigh: LinkCost;
  /** Link traffic per second of the idle cluster, summed over the peers (null: counter absent). */
  readonly linksIdlePerS: Readonly<Record<CostKind, number | null>>;
  /**
   * (a) on the floor of the same size (bench/floor-peer.ts, `peers` processes), run after the
   * cluster stopped: how the bare message pattern scales on this host. Null with --no-floor.
   */
  readonly floorA: Figures<UncontendedRun> | null;
}

/** Facts about the run, for reading the figures. */
export interface BenchMeta {
  readonly startedAt: string;
  readonly durationS: number;
  readonly mode: 'quick' | 'full';
  readonly sizes: Sizes;
  /** `cpu` names the CPU as the reports do: "2 × AMD EPYC 7B13". */
  readonly host: { readonly cpus: number; readonly cpuModel: string; readonly cpu: string; readonly node: string; readonly platform: string };
  readonly versions: Readonly<Record<string, string>>;
  /** How each system's clients talk to it. */
  readonly clients: Readonly<Partial<Record<SystemName, string>>>;
}

/** Everything one benchmark run produced. */
export interface BenchResults {
  readonly meta: BenchMeta;
  /** (a), (b), (c) per system; lamport-lock with 3 peers. */
  readonly systems: Readonly<Partial<Record<SystemName, SystemFigures>>>;
  readonly scaling: readonly ScalingPoint[];
  readonly memory: MemoryFigures | null;
  /** (g) CPU per operation against the same-run floor; null when not run. */
  readonly floor: FloorFigures | null;
  /** Skipped anchors, missing metrics, failures: each a sentence. */
  readonly notes: readonly string[];
}

/** JSON of the results; NaN (a figure that does not apply) becomes null. */
export function resultsJson(results: BenchResults): string {
  return JSON.stringify(results, (_key, value: unknown) => (typeof value === 'number' && !Number.isFinite(value) ? null : value), 2);
}
