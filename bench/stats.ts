/**
 * Percentiles of one run and the median / min / max over several runs: every figure the
 * benchmark reports is a `Spread` over runs.
 */

/** One figure over several runs. */
export interface Spread {
  readonly median: number;
  readonly min: number;
  readonly max: number;
  readonly runs: readonly number[];
}

/** Nearest-rank percentile (`p` in 0..100) of unsorted samples; NaN when there are none. */
export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = [...samples].sort((x, y) => x - y);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank] ?? Number.NaN;
}

/** Median, min and max of one figure measured in several runs. */
export function spread(runs: readonly number[]): Spread {
  const finite = runs.filter((x) => Number.isFinite(x));
  if (finite.length === 0) return { median: Number.NaN, min: Number.NaN, max: Number.NaN, runs };
  const sorted = [...finite].sort((x, y) => x - y);
  const mid = Math.floor(sorted.length / 2);
  const median = sorted.length % 2 === 1 ? (sorted[mid] ?? 0) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
  return { median, min: sorted[0] ?? 0, max: sorted[sorted.length - 1] ?? 0, runs };
}

/** Spreads of every numeric field of a list of per-run records with the same keys. */
export function spreadOf<K extends string>(runs: readonly Readonly<Record<K, number>>[], keys: readonly K[]): Record<K, Spread> {
  const out = {} as Record<K, Spread>;
  for (const key of keys) out[key] = spread(runs.map((r) => r[key]));
  return out;
}

/** Milliseconds since an arbitrary origin, sub-millisecond resolution. */
export function nowMs(): number {
  return performance.now();
}
