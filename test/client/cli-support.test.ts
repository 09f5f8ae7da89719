/**
 * `lamport-lock status`'s degraded lines, from GET /v1/cluster `degraded` (docs/design.md
 * section 6): one line per peer every grant waits for, saying when its eviction is due.
 */
import { describe, expect, it } from 'vitest';
import { formatDegraded } from '../../src/client/cli-support.js';

function cluster(waiting: unknown[]): Record<string, unknown> {
  return { id: 'a', degraded: { active: waiting.length > 0, waiting_for: waiting } };
}

describe('formatDegraded', () => {
  it('prints one line per waited-for peer with its link, its silence and when its eviction is due', () => {
    const text = formatDegraded(cluster([
      { peer: 'c', connected: false, silent_ms: 1840, eviction_due_in_ms: 1160 },
      { peer: 'd', connected: true, silent_ms: 3500, eviction_due_in_ms: 0 },
      { peer: 'e', connected: false, silent_ms: 90_000, eviction_due_in_ms: null },
    ]));
    expect(text.split('\n')).toEqual([
      'DEGRADED: every grant waits for peer c (link down, silent 1.8s); eviction due in 1.2s',
      'DEGRADED: every grant waits for peer d (link up, silent 3.5s); eviction due now, waiting for a majority to confirm',
      'DEGRADED: every grant waits for peer e (link down, silent 1m30s); this peer will not evict it (two peers, or never met): waiting until it returns',
      '',
    ]);
  });

  it('prints nothing for a healthy cluster or a peer that does not report degraded', () => {
    expect(formatDegraded(cluster([]))).toBe('');
    expect(formatDegraded({ id: 'a' })).toBe('');
    expect(formatDegraded({ degraded: { waiting_for: [null, 3] } })).toBe('');
  });
});
