/**
 * One epoch of the view as Paxos (src/core/acceptor.ts; docs/reconfiguration.md N2, N3, finding
 * F60), and a property: whatever order proposers and acceptors interleave, a view accepted by
 * a majority is the only one any later holder proposes.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Accepted, AcceptorState, Ballot } from '../../src/core/acceptor.js';
import { accept, compareBallots, freshAcceptor, promise, valueToPropose } from '../../src/core/acceptor.js';
import type { AgreedView } from '../../src/core/view.js';
import { applyChange, firstView } from '../../src/core/view.js';

const v0 = firstView(['a', 'b', 'c', 'd', 'e'].map((id, i) => ({ id, ws: `ws://h:${7000 + i}`, http: `h:${8000 + i}` })), 10);

function proposalOf(i: number): AgreedView {
  const v = applyChange(v0, { op: 'add', id: `n${i}`, ws: `ws://n:${9000 + i}`, http: `n:${9500 + i}` });
  if (typeof v === 'string') throw new Error(v);
  return v;
}

describe('acceptor', () => {
  it('promises no lower ballot, and accepts only at or above its promise, for its epoch', () => {
    let s: AcceptorState = freshAcceptor(1);
    const low: Ballot = { ts: 5, peer: 2 };
    const high: Ballot = { ts: 5, peer: 3 };
    s = promise(s, 1, high) ?? s;
    expect(promise(s, 1, low)).toBeNull();
    expect(accept(s, low, proposalOf(1))).toBeNull();
    expect(accept(s, high, { ...proposalOf(1), epoch: 2 })).toBeNull();
    const after = accept(s, high, proposalOf(1));
    expect(after?.accepted?.view.members.at(-1)?.id).toBe('n1');
    expect(promise(after ?? s, 2, low)?.accepted).toBeNull();
  });

  it('a holder proposes the view accepted under the highest ballot it heard of, else its own', () => {
    const r = (ts: number, i: number): { ballot: Ballot; view: AgreedView } => ({ ballot: { ts, peer: 0 }, view: proposalOf(i) });
    expect(valueToPropose(1, [null, r(3, 1), r(7, 2), r(5, 3)], proposalOf(9)).members.at(-1)?.id).toBe('n2');
    expect(valueToPropose(1, [null, null], proposalOf(9)).members.at(-1)?.id).toBe('n9');
    expect(valueToPropose(2, [r(3, 1)], proposalOf(9)).members.at(-1)?.id).toBe('n9');
    expect(compareBallots({ ts: 4, peer: 9 }, { ts: 5, peer: 0 })).toBeLessThan(0);
  });

  it('once a majority accepted a view, every later holder that hears from a majority proposes it (any interleaving)', () => {
    // Five acceptors; proposers with rising ballots each reach a random majority in phase 1
    // (their head acks: a holder needs every member, a majority at least), then a random
    // subset in phase 2 (it may die mid-way).
    const step = fc.record({ phase1: fc.subarray([0, 1, 2, 3, 4], { minLength: 3 }), phase2: fc.subarray([0, 1, 2, 3, 4]) });
    fc.assert(fc.property(fc.array(step, { minLength: 1, maxLength: 8 }), (steps) => {
      const acceptors: AcceptorState[] = Array.from({ length: 5 }, () => freshAcceptor(1));
      let chosen: string | null = null;
      steps.forEach((s, i) => {
        const ballot: Ballot = { ts: 10 + i, peer: i % 5 };
        const reports = s.phase1.map((a) => {
          const next = promise(acceptors[a]!, 1, ballot);
          if (next !== null) acceptors[a] = next;
          return acceptors[a]!.accepted;
        });
        const value = valueToPropose(1, reports, proposalOf(i));
        const id = value.members.at(-1)?.id ?? '';
        if (chosen !== null) expect(id).toBe(chosen);
        let acceptedBy = 0;
        for (const a of s.phase2) {
          const next = accept(acceptors[a]!, ballot, value);
          if (next !== null) {
            acceptors[a] = next;
            acceptedBy++;
          }
        }
        if (acceptedBy >= 3 && chosen === null) chosen = id;
      });
    }), { numRuns: 2000 });
  });
});

describe('acceptor, phases interleaved', () => {
  it('two views are never both chosen, whatever the order of promises and acceptances of rival proposers', () => {
    // Three acceptors, two proposers. Each event: a proposer (ballot by proposer and round) sends PREPARE to one acceptor,
    // or, once it has a majority of promises, ACCEPT of its value to one acceptor. Events of
    // rival proposers interleave freely, as messages arriving out of order do.
    const event = fc.record({ proposer: fc.integer({ min: 0, max: 1 }), acceptor: fc.integer({ min: 0, max: 2 }), phase: fc.constantFrom(1, 2), retry: fc.integer({ min: 0, max: 7 }).map((n) => n === 0) });
    fc.assert(fc.property(fc.array(event, { minLength: 1, maxLength: 30 }), (events) => {
      const acceptors: AcceptorState[] = Array.from({ length: 3 }, () => freshAcceptor(1));
      const round = [1, 1];
      const promises = [new Map<number, Accepted | null>(), new Map<number, Accepted | null>()];
      const values: (AgreedView | null)[] = [null, null];
      const acceptedBy = new Map<string, Set<number>>();
      const chosen = new Set<string>();
      for (const e of events) {
        const p = e.proposer;
        if (e.retry && values[p] === null) {
          round[p] = (round[p] ?? 1) + 1; // a refused proposer asks again, higher
          promises[p]?.clear();
        }
        const ballot: Ballot = { ts: (round[p] ?? 1) * 10, peer: p };
        if (e.phase === 1) {
          const next = promise(acceptors[e.acceptor]!, 1, ballot);
          if (next === null) continue;
          acceptors[e.acceptor] = next;
          promises[p]?.set(e.acceptor, next.accepted);
          if ((promises[p]?.size ?? 0) >= 2 && values[p] === null) values[p] = valueToPropose(1, [...(promises[p]?.values() ?? [])], proposalOf(p));
          continue;
        }
        const value = values[p];
        if (value === null || value === undefined) continue;
        const next = accept(acceptors[e.acceptor]!, ballot, value);
        if (next === null) continue;
        acceptors[e.acceptor] = next;
        const key = `${ballot.ts}.${ballot.peer}`;
        const set = acceptedBy.get(key) ?? new Set<number>();
        set.add(e.acceptor);
        acceptedBy.set(key, set);
        if (set.size >= 2) chosen.add(value.members.at(-1)?.id ?? '');
      }
      expect(chosen.size).toBeLessThanOrEqual(1);
    }), { numRuns: 5000 });
  });
});
