/**
 * Consecutive packets for one peer merged before they are sent (core/messages.ts
 * `mergePackets`, docs/design.md section 4, "Batching"): the rule itself, and real cores
 * under random schedules with every packet merged into the undelivered one before it.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Packet } from '../../src/core/messages.js';
import { mergePackets } from '../../src/core/messages.js';
import { limits } from '../../src/limits.js';
import { testSeed } from '../support/seed.js';
import { Net, outcomes } from './harness.js';

const rel = (ts: number): Packet['m'][number] => ({ t: 'rel', lock: 'a', ts });

describe('mergePackets', () => {
  it('keeps the later clock and both message lists in order', () => {
    expect(mergePackets({ c: 5, m: [rel(3)] }, { c: 7, m: [rel(4)] })).toEqual({ c: 7, m: [rel(3), rel(4)] });
    expect(mergePackets({ c: 5, m: [] }, { c: 6, m: [] })).toEqual({ c: 6, m: [] });
    expect(mergePackets({ c: 5, m: [], u: true }, { c: 6, m: [rel(1)], u: true })).toEqual({ c: 6, m: [rel(1)], u: true });
  });

  it('keeps apart an unready packet and a ready one, and lists past the bound', () => {
    expect(mergePackets({ c: 5, m: [], u: true }, { c: 6, m: [] })).toBeNull();
    expect(mergePackets({ c: 5, m: [] }, { c: 6, m: [], u: true })).toBeNull();
    const many = Array.from({ length: limits.packetMessagesMergedMax }, (_, i) => rel(i + 1));
    expect(mergePackets({ c: 200, m: many }, { c: 201, m: [] })).not.toBeNull();
    expect(mergePackets({ c: 200, m: many }, { c: 201, m: [rel(1)] })).toBeNull();
  });
});

/** One thing a schedule does: a peer acquires or releases, or one packet is delivered. */
type Op = { kind: 'acquire' | 'release'; peer: number } | { kind: 'deliver'; from: number; to: number };

const peers = 3;
const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constantFrom('acquire' as const, 'release' as const), peer: fc.nat(peers - 1) }),
  fc.record({ kind: fc.constant('deliver' as const), from: fc.nat(peers - 1), to: fc.nat(peers - 1) }),
);

/**
 * Runs `ops` on one exclusive lock, then releases every hold and delivers everything until
 * quiet; returns every grant in order and the largest number of holders at once.
 */
function run(ops: readonly Op[], merge: boolean): { grants: string[]; maxHolders: number; asked: number } {
  const net = new Net(peers, { merge });
  net.joinAll();
  let ref = 0;
  let asked = 0;
  const held = new Map<number, number>(); // ref -> peer
  const waiting = new Map<number, number>();
  const grants: string[] = [];
  let maxHolders = 0;
  const note = (peer: number, effects: readonly string[]): void => {
    for (const o of effects) {
      const [kind, r] = o.split(' ');
      if (kind !== 'granted') continue;
      const granted = Number(r);
      waiting.delete(granted);
      held.set(granted, peer);
      grants.push(`p${peer} ${granted}`);
      maxHolders = Math.max(maxHolders, held.size);
    }
  };
  const deliverAll = (): void => {
    for (let moved = true; moved;) {
      moved = false;
      for (let from = 0; from < peers; from++) {
        for (let to = 0; to < peers; to++) {
          if (net.pending(from, to).length === 0) continue;
          note(to, outcomes(net.deliver(from, to)));
          moved = true;
        }
      }
    }
  };
  for (const o of ops) {
    if (o.kind === 'acquire') {
      ref++;
      asked++;
      waiting.set(ref, o.peer);
      note(o.peer, outcomes(net.acquire(o.peer, ref, 'a')));
    } else if (o.kind === 'release') {
      const mine = [...held].find(([, p]) => p === o.peer);
      if (mine !== undefined) {
        held.delete(mine[0]);
        note(o.peer, outcomes(net.release(o.peer, mine[0])));
      }
    } else if (o.kind === 'deliver' && net.pending(o.from, o.to).length > 0) {
      note(o.to, outcomes(net.deliver(o.from, o.to)));
    }
  }
  // Drain: release whatever is held until every request was granted once.
  for (let round = 0; round < 1000 && (held.size > 0 || waiting.size > 0); round++) {
    deliverAll();
    for (const [r, p] of [...held]) {
      held.delete(r);
      note(p, outcomes(net.release(p, r)));
    }
  }
  deliverAll();
  return { grants, maxHolders, asked };
}

describe('merged packets between real cores', () => {
  it('grant one holder at a time and every request in the end, under any schedule', () => {
    fc.assert(fc.property(fc.array(op, { maxLength: 60 }), (ops) => {
      const merged = run(ops, true);
      expect(merged.maxHolders).toBeLessThanOrEqual(1);
      expect(merged.grants).toHaveLength(merged.asked);
    }), { seed: testSeed('merged packets, exclusion and liveness'), numRuns: 500 });
  });

  it('merge packets on a link while earlier ones wait (the schedules above exercise it)', () => {
    const net = new Net(peers, { merge: true });
    net.joinAll();
    net.acquire(0, 1, 'a');
    net.acquire(0, 2, 'b');
    expect(net.pending(0, 1)).toHaveLength(1);
    expect(net.pending(0, 1)[0]?.m.map((m) => 'lock' in m && m.lock)).toEqual(['a', 'b']);
  });
});
