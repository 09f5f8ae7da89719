/**
 * `lamport-lock status`'s degraded lines, from GET /v1/cluster `degraded` (docs/design.md
 * section 6): one line per peer every grant waits for, saying when its eviction is due. And
 * `run`'s lock names and command, and a multi-lock grant as `acquire` prints it.
 */
import { describe, expect, it } from 'vitest';
import { checkNamesTogether, exitCodeOf, formatDegraded, formatMultiGrant, parseDuration, runTarget, UsageError } from '../../src/client/cli-support.js';

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

  it('says first that the peer is superseded, when a newer process runs with its id', () => {
    const text = formatDegraded({ ...cluster([{ peer: 'c', connected: true, silent_ms: 3500, eviction_due_in_ms: 0 }]), superseded: 'another process runs or ran with this peer id' });
    expect(text.split('\n')[0]).toBe('SUPERSEDED: another process runs or ran with this peer id');
    expect(text.split('\n')[1]).toMatch(/^DEGRADED: every grant waits for peer c/);
    expect(formatDegraded({ id: 'a', superseded: null })).toBe('');
  });

  it('prints nothing for a healthy cluster or a peer that does not report degraded', () => {
    expect(formatDegraded(cluster([]))).toBe('');
    expect(formatDegraded({ id: 'a' })).toBe('');
    expect(formatDegraded({ degraded: { waiting_for: [null, 3] } })).toBe('');
  });
});

describe('runTarget', () => {
  it('takes every word before -- as a lock name and what follows as the command', () => {
    expect(runTarget(['a', 'b', 'c'], ['sh', '-c', 'echo $LAMPORT_LOCK_TOKEN'])).toEqual({ names: ['a', 'b', 'c'], cmd: ['sh', '-c', 'echo $LAMPORT_LOCK_TOKEN'] });
    expect(runTarget(['job'], ['make', '--', 'x'])).toEqual({ names: ['job'], cmd: ['make', '--', 'x'] });
  });

  it('keeps run NAME CMD [ARGS...] without --: one lock, the rest is the command', () => {
    expect(runTarget(['job', 'make', 'all'], null)).toEqual({ names: ['job'], cmd: ['make', 'all'] });
  });

  it('refuses a run without a command, without a name, or with a name given twice, with a sentence', () => {
    expect(() => runTarget(['job'], null)).toThrow(new UsageError('run needs a command to run while holding the lock, after --: lamport-lock run NAME [NAME...] -- CMD [ARGS...]'));
    expect(() => runTarget(['a', 'b'], [])).toThrow(new UsageError('run needs a command to run while holding the locks, after --: lamport-lock run NAME [NAME...] -- CMD [ARGS...]'));
    expect(() => runTarget([], ['true'])).toThrow(UsageError);
    expect(() => runTarget(['a', 'b', 'a'], ['true'])).toThrow(new UsageError('run: lock name "a" is given twice; each lock is named once'));
  });
});

describe('formatMultiGrant', () => {
  it('prints a multi-lock grant with the HTTP API\'s field names and decimal tokens', () => {
    const grant = formatMultiGrant({
      id: 'h1', token: 123_456_789_012_345_678_901n, peer: 'b', grantedAt: 1000, expiresAt: null,
      locks: [{ lock: 'a', mode: 'exclusive', token: 123_456_789_012_345_678_901n }, { lock: 'b', mode: 'shared', token: 123_456_789_012_345_678_901n }],
    });
    expect(grant).toEqual({
      id: 'h1', locks: [{ lock: 'a', mode: 'exclusive', token: '123456789012345678901' }, { lock: 'b', mode: 'shared', token: '123456789012345678901' }],
      lock: 'a', token: '123456789012345678901', mode: 'exclusive', peer: 'b', granted_at: 1000, expires_at: null,
    });
  });
});

describe('parseDuration', () => {
  it('reads a bare number as seconds and a unit as given', () => {
    expect([parseDuration('5'), parseDuration('0.5'), parseDuration('0'), parseDuration('500ms'), parseDuration('2m')]).toEqual([5000, 500, 0, 500, 120_000]);
    expect(() => parseDuration('5 seconds')).toThrow(UsageError);
  });
});

describe('checkNamesTogether', () => {
  const valued = new Set(['timeout', 'w', 'peer']);
  it('accepts names before or after the flags, and refuses names a flag splits', () => {
    expect(() => checkNamesTogether(['--peer', 'p', 'acquire', '-w', '5', 'a', 'b'], valued)).not.toThrow();
    expect(() => checkNamesTogether(['acquire', 'a', 'b', '--timeout=5', '-n'], valued)).not.toThrow();
    expect(() => checkNamesTogether(['run', 'a', '--', 'sh', '-c', 'x y'], valued)).not.toThrow();
    expect(() => checkNamesTogether(['acquire', 'x', '--timeout', '5', 'seconds'], valued)).toThrow('"seconds" comes after a flag');
  });
});

describe('exitCodeOf', () => {
  it('gives retryable refusals 75 and refused input 64', () => {
    expect(['ERR_TIMEOUT', 'ERR_LEASE_LOST', 'ERR_EVICTED', 'ERR_NOT_READY'].map(exitCodeOf)).toEqual([75, 75, 75, 75]);
    expect(['ERR_BAD_REQUEST', 'ERR_UNREACHABLE', 'ERR_NOT_HELD', 'ERR_ADMIN_REQUIRED'].map(exitCodeOf)).toEqual([64, 69, 77, 1]);
  });
});
