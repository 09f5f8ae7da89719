/**
 * The agreed view and its one-step changes (src/core/view.ts; docs/reconfiguration.md rule M1).
 */
import { describe, expect, it } from 'vitest';
import type { AgreedView } from '../../src/core/view.js';
import { applyChange, canonicalView, firstView, isAgreedView, membersOf, sameView } from '../../src/core/view.js';

const peers = ['a', 'b', 'c'].map((id, i) => ({ id, ws: `ws://127.0.0.1:${7000 + i}`, http: `127.0.0.1:${8000 + i}` }));

function changed(v: AgreedView | string): AgreedView {
  if (typeof v === 'string') throw new Error(v);
  return v;
}

describe('AgreedView', () => {
  it('a config file seeds epoch 0 with its peers as ordinals 0..N-1', () => {
    const v = firstView(peers, 9);
    expect(v.epoch).toBe(0);
    expect(v.members.map((m) => [m.id, m.ordinal])).toEqual([['a', 0], ['b', 1], ['c', 2]]);
    expect(v.nextOrdinal).toBe(3);
    expect(isAgreedView(v)).toBe(true);
  });

  it('changes one voter at a time and never gives an ordinal twice', () => {
    let v = firstView(peers, 9);
    v = changed(applyChange(v, { op: 'remove', id: 'b' }));
    expect(v.members.map((m) => m.state)).toEqual(['voter', 'leaving', 'voter']);
    expect(membersOf(v, 0).size).toBe(2);
    v = changed(applyChange(v, { op: 'retire', id: 'b' }));
    v = changed(applyChange(v, { op: 'add', id: 'd', ws: 'ws://127.0.0.1:7003', http: '127.0.0.1:8003' }));
    expect(v.members.map((m) => [m.id, m.ordinal, m.state])).toEqual([['a', 0, 'voter'], ['c', 2, 'voter'], ['d', 3, 'learner']]);
    v = changed(applyChange(v, { op: 'remove', id: 'd' })); // a learner goes at once
    v = changed(applyChange(v, { op: 'add', id: 'b', ws: 'ws://127.0.0.1:7001', http: '127.0.0.1:8001' }));
    v = changed(applyChange(v, { op: 'promote', id: 'b' }));
    expect(v.epoch).toBe(6);
    expect(v.members.map((m) => [m.id, m.ordinal, m.state])).toEqual([['a', 0, 'voter'], ['c', 2, 'voter'], ['b', 4, 'voter']]);
    expect(v.nextOrdinal).toBe(5);
    expect(isAgreedView(v)).toBe(true);
    const m = membersOf(v, 4);
    expect([m.size, m.majority, m.capacity, m.voter]).toEqual([3, 2, 5, true]);
  });

  it('refuses a change that is not one step, with a sentence', () => {
    const v = firstView(peers, 9);
    expect(applyChange(v, { op: 'add', id: 'a', ws: 'ws://h:1', http: 'h:2' })).toBe('a is a member already');
    expect(applyChange(v, { op: 'add', id: 'd', ws: 'ws://127.0.0.1:7000', http: 'h:2' })).toMatch(/listens at ws:\/\/127.0.0.1:7000 already/);
    expect(applyChange(v, { op: 'remove', id: 'z' })).toBe('z is not a member');
    expect(applyChange(firstView([peers[0]!], 9), { op: 'remove', id: 'a' })).toMatch(/last voter/);
    expect(applyChange(v, { op: 'promote', id: 'a' })).toBe('a is a voter');
    expect(applyChange(v, { op: 'retire', id: 'a' })).toBe('a is not leaving');
    expect(applyChange(v, { op: 'level', level: 10 })).toMatch(/not spoken by every member/);
    expect(changed(applyChange(v, { op: 'level', level: 10 }, 10)).level).toBe(10);
    expect(applyChange(v, { op: 'level', level: 9 }, 10)).toMatch(/at level 9 already/);
    expect(applyChange({ ...v, nextOrdinal: 1024 }, { op: 'add', id: 'd', ws: 'ws://h:1', http: 'h:2' })).toMatch(/every ordinal/);
  });

  it('compares views by content, whatever the key order', () => {
    const v = firstView(peers, 9);
    const shuffled = JSON.parse(JSON.stringify({ level: v.level, members: v.members, nextOrdinal: v.nextOrdinal, epoch: v.epoch })) as AgreedView;
    expect(sameView(v, shuffled)).toBe(true);
    expect(sameView(v, { ...v, epoch: 1 })).toBe(false);
    expect(canonicalView(v)).not.toBe(canonicalView(changed(applyChange(v, { op: 'remove', id: 'c' }))));
    // Agreement is on who the members are, not where each host reaches them: the view each
    // host's config file seeds names the others at its own addresses (NAT, proxies).
    const elsewhere = { ...v, members: v.members.map((m) => ({ ...m, ws: `ws://proxy:${m.ordinal}`, http: `proxy:${m.ordinal}` })) };
    expect(sameView(v, elsewhere)).toBe(true);
    expect(canonicalView(v)).not.toBe(canonicalView(elsewhere));
    expect(sameView(v, changed(applyChange(v, { op: 'remove', id: 'c' })))).toBe(false);
  });

  it('refuses a malformed view from the network or the disk', () => {
    const v = firstView(peers, 9);
    const bad: unknown[] = [
      null, [], { ...v, epoch: -1 }, { ...v, members: [] },
      { ...v, members: [v.members[1], v.members[0]] },
      { ...v, members: [v.members[0], v.members[0]] },
      { ...v, members: [v.members[0], { ...v.members[1], id: 'a' }] },
      { ...v, nextOrdinal: 2 },
      { ...v, nextOrdinal: 1025 },
      { ...v, members: [{ ...v.members[0], ws: 'x'.repeat(257) }] },
      { ...v, members: [{ ...v.members[0], ordinal: 1.5 }] },
      { ...v, members: [{ ...v.members[0], state: 'boss' }] },
      { ...v, members: [{ ...v.members[0], state: 'learner' }] },
    ];
    for (const b of bad) expect(isAgreedView(b)).toBe(false);
  });
});
