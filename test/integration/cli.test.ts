/**
 * The binaries as a user runs them: `lamport-lock run|acquire|release|status` exit codes
 * and output, and `lamport-peer` refusing bad configs with every problem listed.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { exitCodes } from '../../src/client/cli-support.js';
import { peerExitCodes } from '../../src/peer-exit-codes.js';
import { freePort } from '../../src/tools/local-cluster.js';
import { waitFor } from '../support/wait.js';
import { acquire, holders, release, useTestCluster } from './helpers.js';

const lockBin = resolve('dist/bin/lamport-lock.js');
const peerBin = resolve('dist/bin/lamport-peer.js');
const demoBin = resolve('dist/bin/demo.js');

/** A stack trace line, which a user should never see for a bad flag or config. */
const stackLine = /^\s+at /m;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function runBin(bin: string, args: string[], env: Record<string, string> = {}): { done: Promise<Run>; pid: number | undefined } {
  const child = spawn(process.execPath, [bin, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const done = new Promise<Run>((res) => child.on('close', (code) => res({ code, stdout, stderr })));
  return { done, pid: child.pid };
}

const cluster = useTestCluster();
let a: string;

beforeAll(() => {
  a = cluster().url('a');
});

describe('lamport-lock run', () => {
  it('runs the command with the lock name and token, and exits with its code', async () => {
    const r = await runBin(lockBin, ['--peer', a, 'run', 'job', '--', 'sh', '-c', 'echo "$LAMPORT_LOCK_NAME $LAMPORT_LOCK_TOKEN"; exit 3']).done;
    expect(r.code).toBe(3);
    const [name, token] = r.stdout.trim().split(' ');
    expect(name).toBe('job');
    expect(token).toMatch(/^\d+$/);
    expect(await holders(a, 'job')).toEqual([]);
  });

  it('exits 75 when the lock is not acquired in time, without running the command', async () => {
    const held = await acquire(cluster().url('b'), 'taken');
    const r = await runBin(lockBin, ['--peer', a, 'run', 'taken', '--timeout', '200ms', '--', 'sh', '-c', 'echo ran']).done;
    expect(r.code).toBe(exitCodes.notAcquired);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain('ERR_TIMEOUT');
    await release(cluster().url('b'), 'taken', held.body['id']);
  });

  it('exits 127 when the command cannot be started', async () => {
    const r = await runBin(lockBin, ['--peer', a, 'run', 'nocmd', '--', '/nonexistent/cmd']).done;
    expect(r.code).toBe(exitCodes.cannotRun);
  });

  it('exits 69 when the local peer is unreachable', async () => {
    const port = await freePort();
    const r = await runBin(lockBin, ['--peer', `http://127.0.0.1:${port}`, 'run', 'x', '--', 'true']).done;
    expect(r.code).toBe(exitCodes.unavailable);
    expect(r.stderr).toContain('ERR_UNREACHABLE');
  });

  it('exits 64 on bad usage', async () => {
    expect((await runBin(lockBin, ['run', 'x', '--timeout', 'soon', '--', 'true']).done).code).toBe(exitCodes.usage);
    expect((await runBin(lockBin, ['frobnicate']).done).code).toBe(exitCodes.usage);
  });

  it('exits 64 with a sentence when run is given no command', async () => {
    const r = await runBin(lockBin, ['--peer', a, 'run', 'y']).done;
    expect(r.code).toBe(exitCodes.usage);
    expect(r.stderr).toContain('run needs a command');
    expect(r.stderr).not.toMatch(stackLine);
    expect(await holders(a, 'y')).toEqual([]);
  });

  // A command killed by a signal exits 128 + n, as in a shell; our own release firing the
  // hold's end must not be read as a lost lock (it once exited 76 for all of these).
  for (const [signal, n] of [['TERM', 15], ['INT', 2], ['HUP', 1], ['USR1', 10], ['ABRT', 6]] as const) {
    it(`exits ${128 + n} when the command is killed by SIG${signal}, and does not call it a lost lock`, async () => {
      const r = await runBin(lockBin, ['--peer', a, 'run', `sig-${signal}`, '--', 'sh', '-c', `kill -${signal} $$`]).done;
      expect(r.code).toBe(128 + n);
      expect(r.stderr).not.toContain('lost the lock');
      expect(await holders(a, `sig-${signal}`)).toEqual([]);
    });
  }
});

describe('lamport-lock --mode semaphore', () => {
  it('takes a semaphore with --limit, and answers --mode semaphore without one with a sentence and exit 64', async () => {
    const bad = await runBin(lockBin, ['--peer', a, 'acquire', 'sem', '--mode', 'semaphore']).done;
    expect(bad.code).toBe(exitCodes.usage);
    expect(bad.stderr).toContain('--mode semaphore needs --limit');
    const got = await runBin(lockBin, ['--peer', a, 'acquire', 'sem', '--mode', 'semaphore', '--limit', '2']).done;
    expect(got.code, got.stderr).toBe(0);
    const grant = JSON.parse(got.stdout) as { id: string; mode: string };
    expect(grant.mode).toBe('semaphore');
    expect((await runBin(lockBin, ['--peer', a, 'release', 'sem', grant.id]).done).code).toBe(0);
  });
});

describe('lamport-lock --peer', () => {
  it('takes host:port without a scheme as http://host:port, from the flag and from LAMPORT_PEER', async () => {
    const hostPort = a.replace(/^http:\/\//, '');
    const r = await runBin(lockBin, ['--peer', hostPort, 'status']).done;
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('');
    expect((await runBin(lockBin, ['status', '--json'], { LAMPORT_PEER: hostPort }).done).code).toBe(0);
  });

  it('answers a --peer that is not a URL with a sentence and exit 64', async () => {
    for (const bad of ['ht tp://x', '127.0.0.1:99999']) {
      const r = await runBin(lockBin, ['--peer', bad, 'status']).done;
      expect(r.code, bad).toBe(exitCodes.usage);
      expect(r.stderr).toContain('is not a URL of the local peer');
      expect(r.stderr).not.toMatch(stackLine);
    }
  });
});

describe('npm run demo flags', () => {
  it('answers a bad --duration with one sentence and exit 64, before starting anything', async () => {
    const r = await runBin(demoBin, ['--duration', 'bogus']).done;
    expect(r.code).toBe(exitCodes.usage);
    expect(r.stderr).toContain('invalid duration "bogus"');
    expect(r.stderr).not.toMatch(stackLine);
    expect(r.stdout).toBe('');
  });
});

describe('lamport-lock acquire, release, status', () => {
  it('acquires, shows the holder in a table and as JSON, and releases', async () => {
    const got = await runBin(lockBin, ['--peer', a, 'acquire', 'scripted', '--owner', 'ci-job', '--ttl', '30s']).done;
    expect(got.code).toBe(0);
    const grant = JSON.parse(got.stdout) as { id: string; token: string; lock: string };
    expect(grant.lock).toBe('scripted');
    // The HTTP API's names (README, docs/design.md section 6), not the typed client's camelCase.
    expect(Object.keys(grant).sort()).toEqual(['expires_at', 'granted_at', 'id', 'lock', 'mode', 'peer', 'token']);
    expect((grant as unknown as { expires_at: number }).expires_at - (grant as unknown as { granted_at: number }).granted_at).toBe(30_000);
    const table = await runBin(lockBin, ['--peer', cluster().url('c'), 'status']).done;
    expect(table.stdout).toMatch(/^LOCK\s+STATE\s+PEER\s+OWNER\s+MODE\s+TOKEN\s+AGE$/m);
    expect(table.stdout).toMatch(new RegExp(`^scripted\\s+held\\s+a\\s+ci-job\\s+exclusive\\s+${grant.token}\\s`, 'm'));
    const json = await runBin(lockBin, ['--peer', a, 'status', 'scripted', '--json']).done;
    expect((JSON.parse(json.stdout) as { holders: unknown[] }).holders).toHaveLength(1);
    expect((await runBin(lockBin, ['--peer', a, 'release', 'scripted', grant.id]).done).code).toBe(0);
    const again = await runBin(lockBin, ['--peer', a, 'release', 'scripted', grant.id]).done;
    expect(again.code).toBe(exitCodes.notHeld);
    expect(again.stderr).toContain('released');
  });
});

describe('lamport-peer config errors', () => {
  it('refuses an invalid config listing every problem, and exits 2', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'lamport-cfg-'));
    const path = join(dir, 'bad.json');
    writeFileSync(path, JSON.stringify({
      secret: 'short', colour: 1, lease_ms: 100, evict_ms: 120,
      peers: [{ id: 'a', ws: 'http://nope', http: '127.0.0.1:1' }, { id: 'a', ws: 'ws://127.0.0.1:2', http: 'x' }],
    }));
    const r = await runBin(peerBin, ['--config', path, '--id', 'a']).done;
    expect(r.code).toBe(2);
    for (const problem of ['unknown key "colour"', 'cluster must be', 'secret', 'peers[0].ws', 'peers[1].http', 'id "a" appears more than once', 'evict_ms (120)']) {
      expect(r.stderr).toContain(problem);
    }
  });

  it('refuses a config that is not JSON and an id that is not configured', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'lamport-cfg-'));
    const path = join(dir, 'broken.json');
    writeFileSync(path, '{"cluster": ');
    const r = await runBin(peerBin, ['--config', path, '--id', 'a']).done;
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('ERR_CONFIG_INVALID');
    const unknown = await runBin(peerBin, ['--config', resolve('cluster.example.json'), '--id', 'zz']).done;
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('"zz" is not in the config');
  });
});

describe('lamport-peer exit codes', () => {
  it('refuses a ws port of 99999 as an invalid config (exit 2), with a sentence and no stack', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'lamport-cfg-'));
    const path = join(dir, 'port.json');
    writeFileSync(path, JSON.stringify({ cluster: 'p', secret: 'port-test-secret-0123456789abcdef', peers: [{ id: 'a', ws: 'ws://127.0.0.1:99999', http: `127.0.0.1:${await freePort()}` }] }));
    const r = await runBin(peerBin, ['--config', path, '--id', 'a', '--no-log-pretty']).done;
    expect(r.code).toBe(peerExitCodes.invalidConfig);
    expect(r.stderr).toContain('ERR_CONFIG_INVALID: invalid config: peers[0].ws must look like ws://host:port, with a port from 1 to 65535');
    expect(r.stderr).not.toMatch(stackLine);
  });

  it('refuses unknown flags with exit 2 and a sentence', async () => {
    const r = await runBin(peerBin, ['--config', resolve('cluster.example.json'), '--id', 'a', '--colour']).done;
    expect(r.code).toBe(peerExitCodes.invalidConfig);
    expect(r.stderr).toContain('Unknown argument: colour');
  });

  it('exits 75 (worth retrying), not 2, when its HTTP or ws port is already in use', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'lamport-cfg-'));
    const taken = createServer();
    const takenPort = await freePort();
    await new Promise<void>((res) => taken.listen(takenPort, '127.0.0.1', () => res()));
    try {
      for (const which of ['http', 'ws'] as const) {
        const http = which === 'http' ? takenPort : await freePort();
        const ws = which === 'ws' ? takenPort : await freePort();
        const path = join(dir, `${which}.json`);
        writeFileSync(path, JSON.stringify({ cluster: 'p', secret: 'port-test-secret-0123456789abcdef', peers: [{ id: 'a', ws: `ws://127.0.0.1:${ws}`, http: `127.0.0.1:${http}` }] }));
        const r = await runBin(peerBin, ['--config', path, '--id', 'a', '--data-dir', dir, '--no-log-pretty']).done;
        expect(r.code, which).toBe(peerExitCodes.startFailed);
        expect(r.stderr, which).toContain('cannot start (exit 75, worth retrying)');
        expect(r.stderr, which).toContain('EADDRINUSE');
      }
    } finally {
      taken.close();
    }
  });
});

describe('lamport-lock run and acquire with several locks', () => {
  it('gives the command every name (one a line), the first, the token and the id, exits with its code, and releases every name after it', async () => {
    const script = 'echo "$LAMPORT_LOCK_TOKEN|$LAMPORT_LOCK_ID|$LAMPORT_LOCK_NAME"; printf "%s\\n" "$LAMPORT_LOCK_NAMES"; exit 4';
    const r = await runBin(lockBin, ['--peer', a, 'run', 'multi/a', 'multi/b', 'multi c', '--', 'sh', '-c', script]).done;
    expect(r.code, r.stderr).toBe(4);
    const [head, ...names] = r.stdout.split('\n');
    const [token, id, first] = (head ?? '').split('|');
    expect(token).toMatch(/^\d+$/);
    expect(id).toMatch(/^\S+$/);
    expect(first).toBe('multi/a');
    expect(names).toEqual(['multi/a', 'multi/b', 'multi c', '']); // One a line: a name may hold a space.
    for (const name of ['multi/a', 'multi/b', 'multi c']) expect(await holders(a, name), name).toEqual([]);
  });

  it('runs sh -c \'echo $LAMPORT_LOCK_TOKEN\' under two locks, the token one grant\'s on both', async () => {
    const marker = join(mkdtempSync(join(tmpdir(), 'lamport-multi-')), 'token');
    const run = runBin(lockBin, ['--peer', a, 'run', 'multi/x', 'multi/y', '--', 'sh', '-c', `echo $LAMPORT_LOCK_TOKEN > ${marker}.tmp; mv ${marker}.tmp ${marker}; while [ -e ${marker} ]; do sleep 0.05; done; echo $LAMPORT_LOCK_TOKEN`]);
    await waitFor('the command runs under both locks', () => existsSync(marker));
    const token = readFileSync(marker, 'utf8').trim();
    for (const name of ['multi/x', 'multi/y']) expect((await holders(a, name)).map((h) => h['token']), name).toEqual([token]);
    rmSync(marker);
    const r = await run.done;
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.trim()).toBe(token);
  });

  it('exits 75 without running the command when one of the names is taken, and holds none of them', async () => {
    const held = await acquire(cluster().url('b'), 'multi/taken');
    const r = await runBin(lockBin, ['--peer', a, 'run', 'multi/free', 'multi/taken', '--timeout', '0', '--', 'sh', '-c', 'echo ran']).done;
    expect(r.code).toBe(exitCodes.notAcquired);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain('ERR_TIMEOUT');
    const free = await acquire(cluster().url('c'), 'multi/free', { timeout_ms: 0 });
    expect(free.status).toBe(200);
    await release(cluster().url('c'), 'multi/free', free.body['id']);
    await release(cluster().url('b'), 'multi/taken', held.body['id']);
  });

  it('exits 64 with a sentence for several names and no command after --, or a name given twice', async () => {
    const none = await runBin(lockBin, ['--peer', a, 'run', 'multi/n1', 'multi/n2', '--']).done;
    expect(none.code).toBe(exitCodes.usage);
    expect(none.stderr).toContain('run needs a command to run while holding the locks, after --');
    expect(none.stderr).not.toMatch(stackLine);
    const twice = await runBin(lockBin, ['--peer', a, 'run', 'multi/n1', 'multi/n1', '--', 'true']).done;
    expect(twice.code).toBe(exitCodes.usage);
    expect(twice.stderr).toContain('lock name "multi/n1" is given twice');
    expect(await holders(a, 'multi/n1')).toEqual([]);
  });

  it('keeps run NAME CMD without --, and says how to hold several locks when that CMD is not a command', async () => {
    const one = await runBin(lockBin, ['--peer', a, 'run', 'multi/old', 'sh']).done;
    expect(one.code, one.stderr).toBe(0);
    const r = await runBin(lockBin, ['--peer', a, 'run', 'multi/p', 'multi/q', 'true']).done;
    expect(r.code).toBe(exitCodes.cannotRun);
    expect(r.stderr).toContain('to hold several locks, give the command after --: lamport-lock run "multi/p" "multi/q" -- CMD');
  });

  it('acquire NAME NAME prints one grant of every name, which release NAME ID ends whole', async () => {
    const got = await runBin(lockBin, ['--peer', a, 'acquire', 'multi/s1', 'multi/s2', '--mode', 'shared', '--owner', 'ci-job']).done;
    expect(got.code, got.stderr).toBe(0);
    const grant = JSON.parse(got.stdout) as { id: string; token: string; locks: Array<Record<string, unknown>> };
    expect(Object.keys(grant).sort()).toEqual(['expires_at', 'granted_at', 'id', 'lock', 'locks', 'mode', 'peer', 'token']);
    expect(grant).toMatchObject({ lock: 'multi/s1', mode: 'shared', peer: 'a' });
    expect(grant.locks).toEqual([{ lock: 'multi/s1', mode: 'shared', token: grant.token }, { lock: 'multi/s2', mode: 'shared', token: grant.token }]);
    expect((await holders(a, 'multi/s2')).map((h) => h['owner'])).toEqual(['ci-job']);
    expect((await runBin(lockBin, ['--peer', a, 'release', 'multi/s2', grant.id]).done).code).toBe(0);
    for (const name of ['multi/s1', 'multi/s2']) expect(await holders(a, name), name).toEqual([]);
  });
});

describe('lamport-lock run when the hold is lost', () => {
  it('stops the command and exits 76 when its peer shuts down', async () => {
    // The command starts only once the lock is granted: its marker file says so. Another
    // peer's holder list is not enough, since it shows the head of its queue, which may not
    // be granted yet where it was asked; stopping the peer then fails the acquire instead.
    const marker = join(mkdtempSync(join(tmpdir(), 'lamport-run-')), 'running');
    const run = runBin(lockBin, ['--peer', a, 'run', 'long', '--grace', '2s', '--', 'sh', '-c', `touch ${marker}; exec sleep 30`]);
    await waitFor('run holds the lock and runs its command', () => existsSync(marker));
    await cluster().stopPeer('a', 'SIGTERM');
    const r = await run.done;
    expect(r.code, r.stderr).toBe(exitCodes.lockLost);
    expect(r.stderr).toContain('lost the lock "long" (shutdown)');
  });
});
