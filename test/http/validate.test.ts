/**
 * Validation of HTTP input at the boundary (src/http/validate.ts, docs/design.md section 6):
 * every field's defaults, bounds and exact error sentence, the bodies of release and
 * refresh, and lock names, judged by the one rule the peer links apply too.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isPacket } from '../../src/core/messages.js';
import { LockError } from '../../src/errors.js';
import { requestTarget } from '../../src/http/handler.js';
import { acquireDefaults, checkLockName, parseAcquire, parseBody, parseRefresh, parseRelease } from '../../src/http/validate.js';
import { limits } from '../../src/limits.js';
import { testSeed } from '../support/seed.js';

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

describe('parseAcquire defaults and bounds', () => {
  it('fills the defaults of docs/design.md section 6 for an empty body', () => {
    expect(parseAcquire({})).toEqual({
      timeoutMs: acquireDefaults.timeoutMs, ttlMs: acquireDefaults.ttlMs, mode: 'exclusive', limit: 1, permits: 1,
      owner: '', meta: null, hold: 'ttl', expectedMs: null,
    });
  });

  it('treats a null field as absent', () => {
    expect(parseAcquire({ timeout_ms: null, ttl_ms: null, owner: null, meta: null })).toMatchObject({ timeoutMs: acquireDefaults.timeoutMs, owner: '', meta: null });
  });

  it('refuses an unknown field, naming the allowed ones', () => {
    expect(refusal({ timeout: 5 })).toBe('unknown field "timeout"; allowed: timeout_ms, ttl_ms, mode, limit, permits, owner, meta, hold, expected_ms');
  });

  it('takes timeout_ms from 0 to timeoutMsMax, integers only', () => {
    expect(parseAcquire({ timeout_ms: 0 }).timeoutMs).toBe(0);
    expect(parseAcquire({ timeout_ms: limits.timeoutMsMax }).timeoutMs).toBe(limits.timeoutMsMax);
    const message = `timeout_ms must be an integer from 0 to ${limits.timeoutMsMax}`;
    for (const bad of [-1, limits.timeoutMsMax + 1, 1.5, '100', true]) expect(refusal({ timeout_ms: bad })).toBe(message);
  });

  it('takes ttl_ms 0 (no TTL) only with a connection-bound hold', () => {
    expect(refusal({ ttl_ms: 0 })).toBe('ttl_ms 0 (no TTL) is only allowed with hold "connection"');
    expect(parseAcquire({ ttl_ms: 0, hold: 'connection' })).toMatchObject({ ttlMs: 0, hold: 'connection' });
    expect(refusal({ ttl_ms: limits.ttlMsMax + 1 })).toBe(`ttl_ms must be an integer from 0 to ${limits.ttlMsMax}`);
    expect(refusal({ hold: 'socket' })).toBe('hold must be "connection" when given');
  });

  it('keeps permits with a limit, within it, and the limit within semaphoreLimitMax', () => {
    expect(refusal({ permits: 2 })).toBe('permits goes with limit (a semaphore request)');
    expect(refusal({ limit: 2, permits: 3 })).toBe('permits (3) must not exceed limit (2)');
    expect(refusal({ limit: limits.semaphoreLimitMax + 1 })).toBe(`limit must be an integer from 1 to ${limits.semaphoreLimitMax}`);
    expect(refusal({ limit: 0 })).toBe(`limit must be an integer from 1 to ${limits.semaphoreLimitMax}`);
    expect(parseAcquire({ limit: limits.semaphoreLimitMax, permits: limits.semaphoreLimitMax })).toMatchObject({ limit: limits.semaphoreLimitMax, permits: limits.semaphoreLimitMax });
  });

  it('bounds owner by bytes of UTF-8 and meta by its JSON encoding', () => {
    expect(parseAcquire({ owner: 'é'.repeat(limits.ownerBytesMax / 2) }).owner).toHaveLength(limits.ownerBytesMax / 2);
    expect(refusal({ owner: `${'é'.repeat(limits.ownerBytesMax / 2)}x` })).toBe(`owner must be a string of at most ${limits.ownerBytesMax} bytes`);
    expect(refusal({ owner: 7 })).toBe(`owner must be a string of at most ${limits.ownerBytesMax} bytes`);
    const fits = { k: 'x'.repeat(limits.metaBytesMax - '{"k":""}'.length) };
    expect(parseAcquire({ meta: fits }).meta).toEqual(fits);
    expect(refusal({ meta: { k: `${fits.k}x` } })).toBe(`meta must encode to at most ${limits.metaBytesMax} bytes of JSON`);
    expect(refusal({ meta: [1, 2] })).toBe('meta must be a JSON object');
    expect(refusal({ meta: 'text' })).toBe('meta must be a JSON object');
  });

  it('takes expected_ms from 1 ms to ttlMsMax', () => {
    expect(parseAcquire({ expected_ms: 1 }).expectedMs).toBe(1);
    expect(refusal({ expected_ms: 0 })).toBe(`expected_ms must be an integer from 1 to ${limits.ttlMsMax}`);
  });
});

describe('parseBody, parseRelease, parseRefresh', () => {
  function bodyRefusal(fn: () => unknown): string {
    try {
      fn();
    } catch (err) {
      expect(err).toMatchObject({ code: 'ERR_BAD_REQUEST' });
      return (err as LockError).message;
    }
    throw new Error('expected a refusal');
  }

  it('reads an empty body as {} and refuses what is not a JSON object', () => {
    expect(parseBody('')).toEqual({});
    expect(parseBody(' \n')).toEqual({});
    expect(parseBody('{"a":1}')).toEqual({ a: 1 });
    expect(bodyRefusal(() => parseBody('{'))).toBe('body must be valid JSON');
    for (const text of ['[]', '3', '"x"', 'null']) expect(bodyRefusal(() => parseBody(text))).toBe('body must be a JSON object');
  });

  it('wants a release id of 1 to holdIdCharsMax characters and nothing else', () => {
    expect(parseRelease({ id: 'abc' })).toEqual({ id: 'abc' });
    expect(parseRelease({ id: 'x'.repeat(limits.holdIdCharsMax) }).id).toHaveLength(limits.holdIdCharsMax);
    for (const id of [undefined, '', 'x'.repeat(limits.holdIdCharsMax + 1), 12]) {
      expect(bodyRefusal(() => parseRelease({ id }))).toBe('id must be the hold id returned by acquire');
    }
    expect(bodyRefusal(() => parseRelease({ id: 'a', ttl_ms: 5 }))).toBe('unknown field "ttl_ms"; allowed: id');
  });

  it('takes a refresh ttl_ms from 1 ms, or none (the hold keeps its own)', () => {
    expect(parseRefresh({ id: 'a' })).toEqual({ id: 'a', ttlMs: undefined });
    expect(parseRefresh({ id: 'a', ttl_ms: 1 })).toEqual({ id: 'a', ttlMs: 1 });
    expect(bodyRefusal(() => parseRefresh({ id: 'a', ttl_ms: 0 }))).toBe(`ttl_ms must be an integer from 1 to ${limits.ttlMsMax}`);
    expect(bodyRefusal(() => parseRefresh({ ttl_ms: 5 }))).toBe('id must be the hold id returned by acquire');
  });
});

describe('lock names', () => {
  function nameRefusal(name: string): string | null {
    try {
      checkLockName(name);
      return null;
    } catch (err) {
      expect(err).toMatchObject({ code: 'ERR_BAD_REQUEST' });
      return (err as LockError).message;
    }
  }

  it('admits 1 to lockNameBytesMax bytes of UTF-8, counting bytes, not characters', () => {
    expect(nameRefusal('a')).toBeNull();
    expect(nameRefusal('x'.repeat(limits.lockNameBytesMax))).toBeNull();
    expect(nameRefusal('é'.repeat(limits.lockNameBytesMax / 2))).toBeNull(); // 2 bytes each
    expect(nameRefusal('🔒'.repeat(limits.lockNameBytesMax / 4))).toBeNull(); // 4 bytes each, a surrogate pair in JS
    expect(nameRefusal('')).toBe(`lock name must be 1 to ${limits.lockNameBytesMax} bytes of UTF-8, got 0`);
    expect(nameRefusal(`${'é'.repeat(limits.lockNameBytesMax / 2)}x`)).toBe(`lock name must be 1 to ${limits.lockNameBytesMax} bytes of UTF-8, got ${limits.lockNameBytesMax + 1}`);
  });

  it('refuses control characters (C0, DEL, C1) and what is not valid UTF-8', () => {
    for (const c of ['\u0000', '\n', '\u001f', '\u007f', '\u0085', '\u009f']) expect(nameRefusal(`a${c}b`)).toBe('lock name must not contain control characters');
    for (const name of ['a\uFFFD', 'a\ud800', '\udc00b', 'x\ud800y']) expect(nameRefusal(name)).toBe('lock name must be valid UTF-8');
    expect(nameRefusal('a/b c:d\u00a0é')).toBeNull();
  });

  it('is the rule the peer links apply: a name passes the wire guard exactly when HTTP admits it', () => {
    const seed = testSeed('lock names, HTTP against the wire guard');
    const unit = fc.oneof(
      fc.constantFrom('a', '/', ' ', 'é', '🔒', '\u0000', '\u007f', '\u0085', '\uFFFD', '\ud800', '\udc00', '\u00a0'),
      fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)),
    );
    const name = fc.oneof(fc.string({ unit, maxLength: 8 }), fc.string({ unit, minLength: 60, maxLength: 140 }), fc.string({ unit: fc.constantFrom('x', 'é'), minLength: 120, maxLength: 140 }));
    fc.assert(
      fc.property(name, (n) => {
        const onWire = isPacket({ c: 1, m: [{ t: 'rel', lock: n, ts: 1 }] });
        expect(onWire, JSON.stringify(n)).toBe(nameRefusal(n) === null);
      }),
      { seed, numRuns: 3000 },
    );
  });
});

describe('requestTarget', () => {
  const parsed = (raw: string): string => {
    try {
      return new URL(raw, 'http://localhost').pathname;
    } catch {
      return 'invalid';
    }
  };
  const taken = (raw: string): string => {
    try {
      return requestTarget(raw).path;
    } catch (err) {
      expect((err as LockError).code).toBe('ERR_BAD_REQUEST');
      return 'invalid';
    }
  };

  it('takes a plain path as it is, and parses the rest', () => {
    expect(requestTarget('/v1/locks/a.b-c_d~%C3%A4/acquire')).toEqual({ path: '/v1/locks/a.b-c_d~%C3%A4/acquire', query: null });
    expect(requestTarget('/v1/locks/x/../y/acquire').path).toBe('/v1/locks/y/acquire');
    expect(requestTarget('/v1/locks/%2E%2e/acquire').path).toBe('/v1/acquire');
    expect(requestTarget('//evil/v1/locks').path).toBe('/v1/locks');
    expect(requestTarget('/v1/locks?prefix=a').query?.get('prefix')).toBe('a');
    expect(() => requestTarget('//')).toThrow('is not a valid path');
  });

  it('gives the path WHATWG URL gives, for any target, and a 400 where URL fails', () => {
    const piece = fc.constantFrom('/', '.', '..', '%2e', '%2E', '%41', '%', '?', '#', '\\', ' ', 'a', 'Z', '9', '-', '_', '~', ':', '@', '!', '$', '&', "'", '(', '*', '+', ',', ';', '=', 'ä', '\t', '"', '<', '{');
    fc.assert(fc.property(fc.array(piece, { maxLength: 12 }), (pieces) => {
      const raw = `/${pieces.join('')}`;
      expect(taken(raw)).toBe(parsed(raw));
    }), { seed: testSeed('request targets, plain path against URL'), numRuns: 5000 });
  });
});
