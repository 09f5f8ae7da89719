/**
 * The seed of a random test (docs/style.md convention 10): SEED from the environment, or a fresh
 * one, printed either way so that any failure reproduces with `SEED=<n> npx vitest run`.
 */
export function testSeed(what: string): number {
  const env = process.env['SEED'];
  const seed = env === undefined ? Math.floor(Math.random() * 0x7fffffff) : Number(env);
  console.log(`${what}: reproduce with SEED=${seed}`);
  return seed;
}
