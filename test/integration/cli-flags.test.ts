/**
 * `lamport-lock` as people arriving from flock(1), `etcdctl lock` and `consul lock` type it,
 * through the built binary against real peers: durations (a bare number is seconds), short
 * flags, names that flags split, refused values (exit 64), retryable refusals (exit 75),
 * --dial-timeout, force-release, members, watches across a peer's restart, and `run` when
 * lamport-lock itself is killed with kill -9.
 */
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { exitCodes } from '../../src/client/cli-support.js';
import { waitFor } from '../support/wait.js';
import { acquire, call, holders, release, runBin, useTestCluster, type BinRun } from './helpers.js';

const lockBin = resolve('dist/bin/lamport-lock.js');
const cluster = useTestCluster();
let a: string;

beforeAll(() => {
  a = cluster().url('a');
});

describe('durations and flock-style flags', () => {
  it('reads a bare number as seconds, in --ttl and in -w (flock -w 5 waits 5 s)', async () => {
    const got = await runBin(lockBin, ['--peer', a, 'acquire', 'dur/ttl', '--ttl', '30']).done;
    expect(got.code, got.stderr).toBe(0);
    const grant = JSON.parse(got.stdout) as { id: string; granted_at: number; expires_at: number };
    expect(grant.expires_at - grant.granted_at).toBe(30_000);
    const started = Date.now();
    const waited = await runBin(lockBin, ['--peer', a, 'acquire', 'dur/ttl', '-w', '1']).done;
    expect(waited.code).toBe(exitCodes.notAcquired);
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
    await release(a, 'dur/ttl', grant.id);
  });

  it('takes -s shared, -x exclusive, and -n for "do not wait" (exit 75 at once)', async () => {
    const first = await runBin(lockBin, ['--peer', a, 'acquire', 'short/s', '-s']).done;
    const second = await runBin(lockBin, ['--peer', a, 'acquire', 'short/s', '-s', '-n']).done;
    expect([first.code, second.code], first.stderr + second.stderr).toEqual([0, 0]);
    expect((await holders(a, 'short/s')).map((h) => h['mode'])).toEqual(['shared', 'shared']);
    const excl = await runBin(lockBin, ['--peer', a, 'acquire', 'short/s', '-x', '-n']).done;
    expect(excl.code).toBe(exitCodes.notAcquired);
    expect(excl.stderr).toContain('ERR_TIMEOUT');
    const both = await runBin(lockBin, ['--peer', a, 'acquire', 'short/s', '-x', '-s']).done;
    expect(both.code).toBe(exitCodes.usage);
    for (const r of [first, second]) await release(a, 'short/s', (JSON.parse(r.stdout) as { id: string }).id);
  });

  it('shows the defaults, the duration rule and the exit codes in --help', async () => {
    const top = await runBin(lockBin, ['--help']).done;
    const sub = await runBin(lockBin, ['acquire', '--help']).done;
    for (const text of [top.stdout, sub.stdout]) {
      expect(text).toContain('a bare number is seconds');
      expect(text).toMatch(/^ {2}75 {3}worth retrying/m);
      expect(text).toMatch(/^ {2}64 {3}bad flags or arguments/m);
    }
    expect(sub.stdout).toMatch(/-w, --timeout .*\[default: 30s\]/);
    expect(sub.stdout).toMatch(/-n, --nonblock/);
  });
});

describe('what the CLI refuses (exit 64, nothing held)', () => {
  it('refuses names split by a flag instead of taking two locks', async () => {
    const r = await runBin(lockBin, ['--peer', a, 'acquire', 'split/x', '--timeout', '5', 'seconds']).done;
    expect(r.code).toBe(exitCodes.usage);
    expect(r.stderr).toContain('"seconds" comes after a flag');
    expect([await holders(a, 'split/x'), await holders(a, 'seconds')]).toEqual([[], []]);
  });

  it('refuses --limit abc and --permits 1.5 instead of dropping them', async () => {
    for (const bad of [['--limit', 'abc'], ['--limit', '2', '--permits', '1.5']]) {
      const r = await runBin(lockBin, ['--peer', a, 'acquire', 'bad/limit', '--mode', 'semaphore', ...bad]).done;
      expect(r.code, bad.join(' ')).toBe(exitCodes.usage);
      expect(r.stderr).toContain('must be a whole number');
    }
    expect(await holders(a, 'bad/limit')).toEqual([]);
  });

  it('exits 64 for a name or value the peer refuses (ERR_BAD_REQUEST), and for an empty name', async () => {
    const long = await runBin(lockBin, ['--peer', a, 'acquire', 'n'.repeat(300)]).done;
    expect(long.code).toBe(exitCodes.usage);
    expect(long.stderr).toContain('ERR_BAD_REQUEST');
    const permits = await runBin(lockBin, ['--peer', a, 'acquire', 'bad/permits', '--limit', '2', '--permits', '3']).done;
    expect(permits.code).toBe(exitCodes.usage);
    expect(permits.stderr).toContain('ERR_BAD_REQUEST');
    const empty = await runBin(lockBin, ['--peer', a, 'acquire', '']).done;
    expect(empty.code).toBe(exitCodes.usage);
    expect(empty.stderr).toContain('a lock name must not be empty');
    expect(empty.stderr).not.toContain('no route');
  });
});

describe('retryable refusals', () => {
  it('exit 75 for ERR_LEASE_LOST, ERR_EVICTED, ERR_NOT_READY (a stand-in peer answers them)', async () => {
    let code = 'ERR_LEASE_LOST';
    const server = createServer((req, res) => {
      req.resume();
      const body = req.url === '/v1/cluster' ? { id: 'stub' } : { error: code, message: 'stand-in refusal' };
      res.writeHead(req.url === '/v1/cluster' ? 200 : 503, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const stub = `127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      for (code of ['ERR_LEASE_LOST', 'ERR_EVICTED', 'ERR_NOT_READY']) {
        const r = await runBin(lockBin, ['--peer', stub, 'acquire', 'retry/x']).done;
        expect(r.code, code).toBe(exitCodes.notAcquired);
        expect(r.stderr).toContain(code);
      }
    } finally {
      server.close();
    }
  });
});

describe('a peer that comes and goes', () => {
  it('waits up to --dial-timeout for a peer that is starting', async () => {
    const c = cluster().url('c');
    await cluster().stopPeer('c');
    const r = runBin(lockBin, ['--peer', c, 'status', '--json', '--dial-timeout', '30s']);
    await waitFor('the CLI dials the stopped peer', () => r.out().code === null);
    cluster().startPeer('c');
    const done = await r.done;
    expect(done.code, done.stderr).toBe(0);
    await cluster().waitReady(30_000);
  });

  it('resumes status --watch and leader --watch when their peer restarts, and says so', async () => {
    const b = cluster().url('b');
    const watch = runBin(lockBin, ['--peer', b, 'status', '--watch', '--prefix', 'rw/']);
    const leader = runBin(lockBin, ['--peer', b, 'leader', 'rw-election', '--watch']);
    await waitFor('both watches opened', () => watch.out().stdout.includes('no locks') && leader.out().stdout.includes('no leader'));
    await cluster().stopPeer('b');
    await waitFor('both say they reconnect', () => watch.out().stderr.includes('reconnecting') && leader.out().stderr.includes('reconnecting'));
    cluster().startPeer('b');
    await cluster().waitReady(30_000);
    const held = await acquire(b, 'rw/after', { ttl_ms: 30_000 });
    expect(held.status).toBe(200);
    await waitFor('the watch shows a grant after the restart', () => /granted\s+rw\/after/.test(watch.out().stdout), 15_000);
    await waitFor('the leader watch printed the state again', () => leader.out().stdout.split('no leader').length >= 3, 15_000);
    for (const r of [watch, leader]) {
      expect(r.out().stderr).toContain('reconnected to the peer at');
      expect(r.out().code).toBeNull();
      process.kill(r.pid ?? 0, 'SIGINT');
    }
    expect((await watch.done).code).toBe(0);
    await release(b, 'rw/after', held.body['id']);
  }, 60_000);
});

describe('members', () => {
  it('is the older name of member list: its table, and GET /v1/members with --json', async () => {
    // b restarted above: ready needs a majority, a line 'connected' both sockets. A link can
    // still drop and come back between the two runs on a loaded host (CI runs files side by
    // side), so the pair is taken again until both saw the same links.
    const steady = (out: string): string[] => out.split('\n').map((l) => l.replace(/\s+(\d+ms ago|-)\s+(\d+(\.\d+)?ms|-)$/, ''));
    let r: BinRun = { code: null, stdout: '', stderr: '' };
    let list = r;
    await waitFor('members and member list print the same table, every link up', async () => {
      await cluster().waitConnected();
      r = await runBin(lockBin, ['--peer', a, 'members']).done;
      list = await runBin(lockBin, ['--peer', a, 'member', 'list']).done;
      expect([r.code, list.code], r.stderr + list.stderr).toEqual([0, 0]);
      // The same lines but for the times (last heard, round trip), which move between the two runs.
      return JSON.stringify(steady(r.stdout)) === JSON.stringify(steady(list.stdout)) && /^b\s+1\s+voter\s+\S+\s+\S+\s+yes\s/m.test(r.stdout);
    }, 30_000);
    expect(steady(r.stdout)).toEqual(steady(list.stdout));
    expect(r.stdout).toMatch(/^ID\s+ORDINAL\s+STATE\s+WS\s+HTTP\s+CONNECTED\s+EVICTED\s+NEWEST_LEVEL\s+LAST_HEARD\s+RTT$/m);
    expect(r.stdout).toMatch(/^a\s+0\s+voter\s+\S+\s+\S+\s+self\s/m);
    expect(r.stdout).toMatch(/^b\s+1\s+voter\s+\S+\s+\S+\s+yes\s+no\s/m);
    const json = await runBin(lockBin, ['--peer', a, 'members', '--json']).done;
    expect(Object.keys(JSON.parse(json.stdout) as object).sort()).toEqual(Object.keys((await call(a, '/v1/members')).body).sort());
  });
});

describe('lamport-lock run killed with kill -9', () => {
  it('stops the command, which never runs on without the lock', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'lamport-k9-'));
    const pidFile = join(dir, 'pid');
    const run = runBin(lockBin, ['--peer', a, 'run', 'k9/job', '--grace', '2s', '--', 'sh', '-c', `echo $$ > ${pidFile}.tmp; mv ${pidFile}.tmp ${pidFile}; while :; do sleep 0.05; done`]);
    await waitFor('the command runs under the lock', () => existsSync(pidFile));
    const pid = Number(readFileSync(pidFile, 'utf8'));
    const gone = (): boolean => {
      try {
        return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.startsWith('Z') === true; // A zombie is gone.
      } catch {
        return true;
      }
    };
    try {
      process.kill(run.pid ?? 0, 'SIGKILL');
      await run.done;
      await waitFor('the command stopped', gone, 5000);
      const next = await acquire(cluster().url('b'), 'k9/job', { timeout_ms: 5000 });
      expect(next.status).toBe(200);
      await release(cluster().url('b'), 'k9/job', next.body['id']);
    } finally {
      if (!gone()) process.kill(pid, 'SIGKILL');
    }
  });
});

describe('force-release', () => {
  const dir = mkdtempSync(join(tmpdir(), 'lamport-admin-'));
  const tokenFile = join(dir, 'admin-token');
  writeFileSync(tokenFile, 'admin-token-for-the-cli-test-0123456789\n', { mode: 0o600 });
  const admin = useTestCluster({ peers: 1, peerArgs: ['--admin-token-file', tokenFile] });

  it('ends the holds of NAME on the asked peer with the admin token, and is refused without it', async () => {
    const url = admin().url('a');
    const held = await acquire(url, 'fr/job', { ttl_ms: 60_000 });
    expect(held.status).toBe(200);
    const refused = await runBin(lockBin, ['--peer', url, 'force-release', 'fr/job']).done;
    expect(refused.code).toBe(exitCodes.error);
    expect(refused.stderr).toContain('ERR_ADMIN_REQUIRED');
    const r = await runBin(lockBin, ['--peer', url, 'force-release', 'fr/job', '--admin-token-file', tokenFile]).done;
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ lock: 'fr/job', released: [held.body['id']] });
    expect(await holders(url, 'fr/job')).toEqual([]);
  });
});
