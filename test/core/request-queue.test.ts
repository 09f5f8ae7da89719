/**
 * RequestQueue against a reference model: a plain array re-sorted by (ts, peer) after every
 * operation. fast-check draws operation sequences; the queue must agree after each one.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { RequestQueue, compareRequests, removeOneByOneMax } from '../../src/core/request-queue.js';
import type { QueuedRequest } from '../../src/core/types.js';
import { testSeed } from '../support/seed.js';

type Op =
  | { readonly op: 'insert'; readonly ts: number; readonly peer: number }
  | { readonly op: 'remove'; readonly ts: number; readonly peer: number }
  | { readonly op: 'removePeer'; readonly peer: number }
  | { readonly op: 'removeStamps'; readonly peer: number; readonly stamps: readonly number[] };

// Small ranges so that duplicates, ties and hits on removal are frequent.
const ts = fc.integer({ min: 0, max: 12 });
const peer = fc.integer({ min: 0, max: 3 });
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ op: fc.constant('insert' as const), ts, peer }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('remove' as const), ts, peer }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('removePeer' as const), peer }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('removeStamps' as const), peer, stamps: fc.array(ts, { maxLength: 6 }) }) },
);

function request(t: number, p: number): QueuedRequest {
  return { lock: 'l', ts: t, peer: p, mode: 'exclusive', limit: 1, permits: 1, owner: '', meta: null, requestedAtMs: 0 };
}

const identity = (p: number): number => p;

/** The model: an unsorted list of keys, sorted on demand. */
function modelApply(model: Array<[number, number]>, op: Op): unknown {
  const at = (t: number, p: number): number => model.findIndex(([mt, mp]) => mt === t && mp === p);
  switch (op.op) {
    case 'insert':
      if (at(op.ts, op.peer) >= 0) return false;
      model.push([op.ts, op.peer]);
      return true;
    case 'remove': {
      const i = at(op.ts, op.peer);
      if (i < 0) return undefined;
      model.splice(i, 1);
      return `${op.ts}/${op.peer}`;
    }
    case 'removePeer': {
      const before = model.length;
      const kept = model.filter(([, p]) => p !== op.peer);
      model.splice(0, model.length, ...kept);
      return before - kept.length;
    }
    case 'removeStamps': {
      const before = model.length;
      const kept = model.filter(([t, p]) => p !== op.peer || !op.stamps.includes(t));
      model.splice(0, model.length, ...kept);
      return before - kept.length;
    }
  }
}

function queueApply(q: RequestQueue, op: Op): unknown {
  switch (op.op) {
    case 'insert':
      return q.insert(request(op.ts, op.peer));
    case 'remove': {
      const r = q.remove(op.ts, op.peer);
      return r === undefined ? undefined : `${r.ts}/${r.peer}`;
    }
    case 'removePeer':
      return q.removePeer(op.peer);
    case 'removeStamps':
      return q.removeStamps(op.peer, new Set(op.stamps));
  }
}

describe('RequestQueue (property)', () => {
  it('agrees with a sorted-array model on every operation sequence', () => {
    const seed = testSeed('RequestQueue model');
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 80 }), (ops) => {
        const q = new RequestQueue(identity);
        const model: Array<[number, number]> = [];
        for (const op of ops) {
          expect(queueApply(q, op)).toEqual(modelApply(model, op));
          const sorted = [...model].sort((a, b) => a[0] - b[0] || a[1] - b[1]);
          expect(q.items.map((r) => [r.ts, r.peer])).toEqual(sorted);
          for (const [i, [t, p]] of sorted.entries()) expect(q.indexOf(t, p)).toBe(i);
        }
      }),
      { seed, numRuns: 300 },
    );
  });

  it('removes many stamps at once (past removeOneByOneMax, compacted in one pass) as the model does', () => {
    const seed = testSeed('RequestQueue many stamps');
    const wide = fc.integer({ min: 0, max: 4 * removeOneByOneMax });
    // Stamps: most of them queued (a subset of the inserted timestamps), some not.
    const drawn = fc.uniqueArray(wide, { minLength: 3 * removeOneByOneMax, maxLength: 4 * removeOneByOneMax })
      .chain((inserted) => fc.tuple(fc.constant(inserted), fc.subarray(inserted, { minLength: 2 * removeOneByOneMax }), fc.array(wide, { maxLength: 8 })));
    let compacted = 0;
    fc.assert(
      fc.property(drawn, peer, ([inserted, some, extra], by) => {
        const stamps = [...some, ...extra];
        const q = new RequestQueue(identity);
        const model: Array<[number, number]> = [];
        // Most requests are `by`'s, so that the stamps find many; every third another peer's.
        const ops: Op[] = [...inserted.map((t): Op => ({ op: 'insert', ts: t, peer: t % 3 === 0 ? (by + 1) % 4 : by })), { op: 'removeStamps', peer: by, stamps }];
        let removed: unknown = 0;
        for (const op of ops) {
          removed = queueApply(q, op);
          expect(removed).toEqual(modelApply(model, op));
        }
        if (typeof removed === 'number' && removed >= removeOneByOneMax) compacted++;
        expect(q.items.map((r) => [r.ts, r.peer])).toEqual([...model].sort((a, b) => a[0] - b[0] || a[1] - b[1]));
      }),
      { seed, numRuns: 200 },
    );
    expect(compacted).toBeGreaterThan(20); // the one-pass branch ran, not only the splices
  });

  it('orders by timestamp first, then by peer rank', () => {
    expect(compareRequests(request(1, 3), request(2, 0), identity)).toBeLessThan(0);
    expect(compareRequests(request(2, 0), request(2, 3), identity)).toBeLessThan(0);
    expect(compareRequests(request(2, 3), request(2, 3), identity)).toBe(0);
  });
});
