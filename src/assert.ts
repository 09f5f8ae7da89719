/**
 * Assertions for programmer errors (docs/style.md convention 6). A failed assertion means the
 * code is wrong, not the input: it throws, and the process must not turn it into a retry.
 */
export class AssertionError extends Error {
  override readonly name = 'AssertionError';
}

/** Throws an AssertionError when `condition` is false. */
export function assert(condition: unknown, why: string): asserts condition {
  if (!condition) throw new AssertionError(why);
}

/** Marks a switch over a union as exhaustive; reaching it is a programmer error. */
export function assertNever(value: never, what = 'value'): never {
  throw new AssertionError(`unexpected ${what}: ${JSON.stringify(value)}`);
}
