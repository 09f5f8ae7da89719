/**
 * The IncarnationBook (src/core/incarnations.ts): each peer's admitted incarnation (stage 1),
 * its eviction floor (stage 5) and its refusal floor (stage 6), and how the handshake's
 * verdicts follow from them.
 */
import { describe, expect, it } from 'vitest';
import { IncarnationBook } from '../../src/core/incarnations.js';

const A = { startMs: 1000, nonce: 3 };
const B = { startMs: 2000, nonce: 1 };
const C = { startMs: 3000, nonce: 9 };

describe('IncarnationBook', () => {
  it('knows nothing of any peer at first, and admits any incarnation', () => {
    const book = new IncarnationBook(3);
    expect(book.capacity).toBe(3);
    expect([book.known(1), book.newest(1), book.evictedUpTo(1)]).toEqual([null, null, null]);
    expect(book.check(1, A)).toBeNull();
    expect([book.isEvicted(1, A), book.isRefused(1, A)]).toEqual([false, false]);
  });

  it('admits incarnations in order: first, the same again, a newer one, never an older one', () => {
    const book = new IncarnationBook(3);
    expect(book.admit(1, A)).toBe('first');
    expect(book.admit(1, A)).toBe('same');
    expect(book.admit(1, B)).toBe('newer');
    expect(book.known(1)).toEqual(B);
    expect(book.check(1, A)).toBe('stale_incarnation');
    expect(() => book.admit(1, A)).toThrow(/admissible/);
    expect(book.known(2)).toBeNull();
  });

  it('keeps a copy of what it is given', () => {
    const book = new IncarnationBook(2);
    const inc = { startMs: 5, nonce: 5 };
    book.admit(1, inc);
    book.evict(1, inc);
    inc.startMs = 6;
    expect([book.known(1), book.evictedUpTo(1)]).toEqual([{ startMs: 5, nonce: 5 }, { startMs: 5, nonce: 5 }]);
  });

  it('keeps the eviction floor apart from the refusal: an eviction alone refuses nothing at the handshake', () => {
    const book = new IncarnationBook(3);
    book.admit(2, A);
    book.evict(2, A);
    expect([book.isEvicted(2, A), book.isEvicted(2, { startMs: 999, nonce: 0 }), book.isEvicted(2, B)]).toEqual([true, true, false]);
    expect([book.isRefused(2, A), book.check(2, A)]).toEqual([false, null]);
    expect(book.refuse(2, A)).toBe(true);
    expect([book.isRefused(2, A), book.check(2, A), book.check(2, B)]).toEqual([true, 'evicted', null]);
  });

  it('moves the eviction floor up only: evicting an evicted incarnation is a programmer error', () => {
    const book = new IncarnationBook(3);
    book.evict(1, B);
    expect(() => book.evict(1, A)).toThrow(/floor up/);
    expect(() => book.evict(1, B)).toThrow(/floor up/);
    book.evict(1, C);
    expect(book.evictedUpTo(1)).toEqual(C);
  });

  it('refuses an incarnation and every older one forever, and says whether the admitted one is hit', () => {
    const book = new IncarnationBook(3);
    book.admit(1, C);
    expect(book.refuse(1, B)).toBe(false); // A newer one lives.
    expect([book.check(1, A), book.check(1, B), book.check(1, C)]).toEqual(['evicted', 'evicted', null]);
    expect(book.refuse(1, A)).toBe(false); // An older refusal leaves the floor where it is.
    expect(book.isRefused(1, B)).toBe(true);
    expect(book.refuse(1, C)).toBe(true);
    expect(book.check(1, C)).toBe('evicted');
  });

  it('names the newest incarnation admitted or refused, which a refused dialer starts above (seed 504945)', () => {
    const book = new IncarnationBook(3);
    book.refuse(1, B);
    expect(book.newest(1)).toEqual(B);
    book.admit(1, C);
    expect(book.newest(1)).toEqual(C);
    book.refuse(2, C);
    book.admit(2, { startMs: 3000, nonce: 10 });
    book.refuse(2, { startMs: 4000, nonce: 0 });
    expect(book.newest(2)).toEqual({ startMs: 4000, nonce: 0 });
  });

  it('asserts the peer index', () => {
    const book = new IncarnationBook(2);
    expect(() => book.known(2)).toThrow(/in range/);
    expect(() => book.known(-1)).toThrow(/in range/);
  });
});
