/**
 * PeerView's gates (docs/design.md sections 3 and 5): when a new incarnation may ack.
 */
import { Members } from '../../src/core/members.js';
import { describe, expect, it } from 'vitest';
import { PeerView } from '../../src/core/peer-view.js';

const A = { startMs: 1000, nonce: 1 };
const B = { startMs: 1000, nonce: 2 };

describe('PeerView.joinedByQuorum: an incarnation acks once any lease majority of a predecessor meets the peers that let it in', () => {
  it('in three peers, one restarted peer that let us in is not enough: it may never have known our predecessor (seed 101577)', () => {
    const v = new PeerView(Members.first(0, 3));
    v.admit(1, A);
    v.heard(1, 10);
    expect(v.joinedByMet).toBe(true);
    expect(v.joinedByQuorum).toBe(false);
    v.admit(2, B);
    expect(v.joinedByQuorum).toBe(false); // met, but it has not let us in (no packet yet)
    v.heard(2, 11);
    expect(v.joinedByQuorum).toBe(true);
  });

  it('counts a peer evicted here, or never met whose newest incarnation the evictors knew was evicted (seed 348)', () => {
    const met = new PeerView(Members.first(0, 3));
    met.admit(1, A);
    met.heard(1, 10);
    met.admit(2, B);
    expect(met.evict(2, B)).toBe(true);
    expect(met.joinedByQuorum).toBe(true);
    const unmet = new PeerView(Members.first(0, 3));
    unmet.admit(1, A);
    unmet.heard(1, 10);
    unmet.gone(2, B);
    expect(unmet.evict(2, B)).toBe(false); // a notice of an incarnation never met: 2 stays in the view
    expect(unmet.joinedByQuorum).toBe(true);
  });

  it('does not count a peer never met whose evicted incarnation is an old one: a newer one may echo our predecessor (seed 199 --net link)', () => {
    const v = new PeerView(Members.first(0, 3));
    v.admit(1, A);
    v.heard(1, 10);
    expect(v.evict(2, B)).toBe(false);
    expect(v.joinedByQuorum).toBe(false);
    // Met later, that newer one counts once it lets us in, not before.
    v.gone(2, B);
    v.admit(2, { startMs: 2000, nonce: 1 });
    expect(v.joinedByQuorum).toBe(false);
    v.heard(2, 11);
    expect(v.joinedByQuorum).toBe(true);
  });

  it('in five peers needs three of the four others (5 - 3 + 1)', () => {
    const v = new PeerView(Members.first(4, 5));
    for (const p of [0, 1]) {
      v.admit(p, A);
      v.heard(p, 10);
    }
    expect(v.joinedByQuorum).toBe(false);
    v.admit(2, A);
    v.heard(2, 10);
    expect(v.joinedByQuorum).toBe(true);
  });

  it('a lone peer and a pair: nobody else, or the other one', () => {
    expect(new PeerView(Members.first(0, 1)).joinedByQuorum).toBe(true);
    const pair = new PeerView(Members.first(1, 2));
    expect(pair.joinedByQuorum).toBe(false);
    pair.admit(0, A);
    pair.heard(0, 5);
    expect(pair.joinedByQuorum).toBe(true);
  });
});
