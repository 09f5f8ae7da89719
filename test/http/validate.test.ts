/**
 * Validation of acquire bodies at the HTTP boundary: every mode the API accepts is named
 * in the error for a bad one, and the semaphore rules hold.
 */
import { describe, expect, it } from 'vitest';
import { LockError } from '../../src/errors.js';
import { parseAcquire } from '../../src/http/validate.js';

function refusal(body: Record<string, unknown>): string {
  try {
    parseAcquire(body);
  } catch (err) {
    expect(err).toBeInstanceOf(LockError);
    expect((err as LockError).code).toBe('ERR_BAD_REQUEST');
    return (err as LockError).message;
  }
  throw new Error(`expected ${JSON.stringify(body)} to be refused`);
}

describe('parseAcquire mode', () => {
  it('names every accepted mode, semaphore included, when the mode is unknown', () => {
    const message = refusal({ mode: 'sharde' });
    for (const mode of ['"exclusive"', '"shared"', '"semaphore"']) expect(message).toContain(mode);
  });

  it('accepts exactly the modes the error names', () => {
    expect(parseAcquire({ mode: 'exclusive' }).mode).toBe('exclusive');
    expect(parseAcquire({ mode: 'shared' }).mode).toBe('shared');
    expect(parseAcquire({ mode: 'semaphore', limit: 3, permits: 2 })).toMatchObject({ mode: 'semaphore', limit: 3, permits: 2 });
    expect(parseAcquire({ limit: 2 }).mode).toBe('semaphore');
  });

  it('refuses a semaphore without a limit and a limit with another mode', () => {
    expect(refusal({ mode: 'semaphore' })).toContain('needs a limit');
    expect(refusal({ mode: 'shared', limit: 2 })).toContain('does not go with limit');
  });
});
