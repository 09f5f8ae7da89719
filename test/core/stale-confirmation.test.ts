/**
 * Regression for the safety bug the long fault run found (seed 20261122): Membership kept
 * the confirmations of an earlier silence of a peer after hearing it again, and counted them
 * towards a later eviction. (A core unit test; kept here beside the run that found it until
 * the core tests adopt it.)
 */
import { describe, expect, it } from 'vitest';
import { Membership } from '../../src/core/membership.js';

describe('majority-confirmed eviction', () => {
  it('does not count a confirmation from an earlier silence once the suspect was heard again', () => {
    const x = { startMs: 1000, nonce: 1 };
    const m = new Membership({ self: 0, peerCount: 5, evictMs: 3000, nowMs: 0 });
    m.heard(1, x, 0);
    m.tick(3000);
    expect(m.onMessage(2, { t: 'confirm', peer: 1, inc: x }, 3000).some((e) => e.type === 'evict')).toBe(false);
    m.heard(1, x, 3500); // Peer 2 may have heard (and echoed) it too: that silence is over.
    const effects = [...m.tick(6500), ...m.onMessage(4, { t: 'confirm', peer: 1, inc: x }, 6500)];
    expect(effects.some((e) => e.type === 'evict')).toBe(false);
    // A majority silent at once still evicts.
    const again = m.onMessage(2, { t: 'confirm', peer: 1, inc: x }, 6600);
    expect(again).toContainEqual({ type: 'evict', peer: 1, inc: x });
  });
});
