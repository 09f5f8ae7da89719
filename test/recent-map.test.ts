/** RecentMap (src/recent-map.ts): at most `max` keys, the oldest forgotten first. */
import { describe, expect, it } from 'vitest';
import { RecentMap } from '../src/recent-map.js';

describe('RecentMap', () => {
  it('forgets the key first set longest ago, round after round', () => {
    const m = new RecentMap<string, number>(3);
    for (let i = 0; i < 10; i++) m.set(`k${i}`, i);
    expect(m.size).toBe(3);
    expect(['k6', 'k7', 'k8', 'k9'].map((k) => m.get(k))).toEqual([undefined, 7, 8, 9]);
  });

  it('keeps the place of a key set again, and its newest value', () => {
    const m = new RecentMap<string, string>(2);
    m.set('a', 'first');
    m.set('b', 'b');
    m.set('a', 'again');
    expect(m.get('a')).toBe('again');
    m.set('c', 'c'); // 'a' was first set longest ago
    expect([m.has('a'), m.has('b'), m.has('c')]).toEqual([false, true, true]);
  });
});
