/**
 * The seed of a random test (docs/style.md convention 10): from an environment variable when
 * it is set, else a fresh one, and printed either way so that any failure reproduces, e.g.
 * `SEED=<n> npx vitest run ...`. The fault run reads FAULT_SEED (its `--seed` flag too); the
 * simulator's test starts at SEED or 1.
 */

/** The seed in `variable` of `env`; `fallback` (a fresh random seed by default) when unset. */
export function seedFrom(variable = 'SEED', env: Readonly<Record<string, string | undefined>> = process.env, fallback?: number): number {
  const raw = env[variable];
  if (raw === undefined || raw === '') return fallback ?? Math.floor(Math.random() * 2 ** 31);
  const seed = Number(raw);
  if (!Number.isSafeInteger(seed) || seed < 0) throw new Error(`${variable} must be a non-negative integer, not ${JSON.stringify(raw)}`);
  return seed;
}

/** The seed of the random test `what` (see `seedFrom`), printed as `what: reproduce with SEED=<n>`. */
export function testSeed(what: string, variable = 'SEED'): number {
  const seed = seedFrom(variable);
  console.log(`${what}: reproduce with ${variable}=${seed}`);
  return seed;
}
