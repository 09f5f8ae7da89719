/**
 * The binaries as a user runs them: `lamport-lock run|acquire|release|status` exit codes
 * and output, and `lamport-peer` refusing bad configs with every problem listed.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exitCodes } from '../../src/client/cli-support.js';
import { LocalCluster, freePort } from '../../src/tools/local-cluster.js';
import { acquire, holders, release, waitFor } from './helpers.js';

const lockBin = resolve('dist/bin/lamport-lock.js');
const peerBin = resolve('dist/bin/lamport-peer.js');

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

let cluster: LocalCluster;
let a: string;

beforeAll(async () => {
  cluster = await LocalCluster.start({ peers: 3, heartbeatMs: 100, leaseMs: 1000, evictMs: 3000 });
  a = cluster.url('a');
});

afterAll(async () => {
  await cluster?.stop();
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
    const held = await acquire(cluster.url('b'), 'taken');
    const r = await runBin(lockBin, ['--peer', a, 'run', 'taken', '--timeout', '200ms', '--', 'sh', '-c', 'echo ran']).done;
    expect(r.code).toBe(exitCodes.notAcquired);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain('ERR_TIMEOUT');
    await release(cluster.url('b'), 'taken', held.body['id']);
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
});

describe('lamport-lock acquire, release, status', () => {
  it('acquires, shows the holder in a table and as JSON, and releases', async () => {
    const got = await runBin(lockBin, ['--peer', a, 'acquire', 'scripted', '--owner', 'ci-job', '--ttl', '30s']).done;
    expect(got.code).toBe(0);
    const grant = JSON.parse(got.stdout) as { id: string; token: string; lock: string };
    expect(grant.lock).toBe('scripted');
    const table = await runBin(lockBin, ['--peer', cluster.url('c'), 'status']).done;
    expect(table.stdout).toMatch(/^LOCK\s+STATE\s+PEER\s+OWNER\s+MODE\s+TOKEN\s+FOR$/m);
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

describe('lamport-lock run when the hold is lost', () => {
  it('stops the command and exits 76 when its peer shuts down', async () => {
    const run = runBin(lockBin, ['--peer', a, 'run', 'long', '--grace', '2s', '--', 'sleep', '30']);
    await waitFor('run holds the lock', async () => (await holders(cluster.url('b'), 'long')).length === 1);
    await cluster.stopPeer('a', 'SIGTERM');
    const r = await run.done;
    expect(r.code).toBe(exitCodes.lockLost);
    expect(r.stderr).toContain('lost the lock "long" (shutdown)');
  });
});
