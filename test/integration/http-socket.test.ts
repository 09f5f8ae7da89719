/**
 * The API on a unix domain socket, and the starts a peer refuses (issue 14 section 2), with
 * real lamport-peer processes: the socket's mode and group, the typed client, the CLI and
 * LAMPORT_PEER over it, a stale socket file replaced but a live one never, force-release
 * allowed over the socket; no listener beyond loopback without a token, no token file that
 * others may read.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LockClient } from '../../src/client/lock-client.js';
import { freePort, peerBinPath } from '../../src/tools/local-cluster.js';
import { waitFor } from '../support/wait.js';

const lockBin = resolve('dist/bin/lamport-lock.js');
const dir = mkdtempSync(join(tmpdir(), 'lamport-socket-'));
const sock = join(dir, 'peer.sock');
const running: ChildProcess[] = [];
/**
 * The socket's group: root (as in CI) may give it any group, so a group other than its own,
 * by name; anyone else, their own group by number.
 */
const group = process.getuid?.() === 0 && /^nogroup:/m.test(readFileSync('/etc/group', 'utf8'))
  ? { name: 'nogroup', gid: Number(/^nogroup:[^:]*:(\d+):/m.exec(readFileSync('/etc/group', 'utf8'))?.[1]) }
  : { name: String(process.getgid?.() ?? 0), gid: process.getgid?.() ?? 0 };

interface Exit {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

function spawnBin(bin: string, args: string[], env: Record<string, string> = {}): { proc: ChildProcess; done: Promise<Exit> } {
  const proc = spawn(process.execPath, [bin, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  running.push(proc);
  let stdout = '';
  let stderr = '';
  proc.stdout?.on('data', (d: Buffer) => (stdout += d.toString()));
  proc.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  return { proc, done: new Promise((res) => proc.on('close', (code) => res({ code, stdout, stderr }))) };
}

/** A one-peer cluster config (a single peer is its own majority). */
async function writeConfig(): Promise<string> {
  const path = join(dir, `cluster-${running.length}.json`);
  const peers = [{ id: 'a', ws: `ws://127.0.0.1:${await freePort()}`, http: `127.0.0.1:${await freePort()}` }];
  writeFileSync(path, JSON.stringify({ cluster: 'socket-test', secret: 'socket-test-secret-0123456789abcdef', peers }));
  return path;
}

function startPeer(config: string, args: string[]): { proc: ChildProcess; done: Promise<Exit> } {
  return spawnBin(peerBinPath(), ['--config', config, '--id', 'a', '--data-dir', join(dir, 'data'), '--no-log-pretty', ...args]);
}

/** GET over the socket, as any local process would. */
function getOverSocket(path: string): Promise<number> {
  return new Promise((res, rej) => {
    const req = request({ socketPath: sock, path }, (r) => {
      r.resume();
      r.on('end', () => res(r.statusCode ?? 0));
    });
    req.on('error', rej);
    req.end();
  });
}

async function ready(): Promise<void> {
  await waitFor('the peer ready on its socket', async () => (await getOverSocket('/readyz').catch(() => 0)) === 200, 15_000);
}

afterAll(() => {
  for (const p of running) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
});

describe('a peer on a unix socket', () => {
  let config: string;
  let peer: ChildProcess;

  beforeAll(async () => {
    config = await writeConfig();
    peer = startPeer(config, ['--http', `unix:${sock}`, '--http-socket-mode', '0600', '--http-socket-group', group.name]).proc;
    await ready();
  });

  it('creates the socket with the given mode and group', () => {
    const st = statSync(sock);
    expect(st.isSocket()).toBe(true);
    expect(st.mode & 0o777).toBe(0o600);
    expect(st.gid).toBe(group.gid);
  });

  it('serves the typed client, the CLI by --peer and by LAMPORT_PEER', async () => {
    const client = new LockClient({ peer: `unix:${sock}` });
    const hold = await client.acquire('over-socket', { ttlMs: 30_000, owner: 'socket client' });
    expect(hold.lock).toBe('over-socket');
    const status = spawnBin(lockBin, ['--peer', `unix:${sock}`, 'status', 'over-socket', '--json']);
    const out = await status.done;
    expect(out.code).toBe(0);
    expect((JSON.parse(out.stdout) as { holders: Array<{ owner: string }> }).holders.map((h) => h.owner)).toEqual(['socket client']);
    const run = await spawnBin(lockBin, ['run', 'by-env', '--', 'sh', '-c', 'echo "$LAMPORT_LOCK_NAME"'], { LAMPORT_PEER: `unix:${sock}` }).done;
    expect(run).toMatchObject({ code: 0, stdout: 'by-env\n' });
    await client.release('over-socket', hold.id);
    client.close();
  });

  it('allows force-release over the socket (its file mode says who may connect)', async () => {
    const client = new LockClient({ peer: `unix:${sock}` });
    const bound = await client.acquireOnConnection('stuck-socket', { ttlMs: 60_000 });
    const answer = await new Promise<{ status: number; body: string }>((res, rej) => {
      const req = request({ socketPath: sock, path: '/v1/locks/stuck-socket/force-release', method: 'POST', headers: { 'content-type': 'application/json' } }, (r) => {
        let body = '';
        r.on('data', (d: Buffer) => (body += d.toString()));
        r.on('end', () => res({ status: r.statusCode ?? 0, body }));
      });
      req.on('error', rej);
      req.end('{}');
    });
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body)).toEqual({ released: [bound.id] });
    expect(await bound.ended).toBe('released');
    client.close();
  });

  it('takes the CLI\'s changes of the members over the socket without a token: the peer checks the change itself', async () => {
    const r = await spawnBin(lockBin, ['--peer', `unix:${sock}`, 'member', 'remove', 'x']).done;
    expect(r).toMatchObject({ code: 1, stdout: '', stderr: 'lamport-lock: ERR_CHANGE_REFUSED: x is not a member (the view at epoch 0)\n' });
  });

  it('refuses to start a second peer on a socket that is served, and leaves it alone', async () => {
    const second = await startPeer(await writeConfig(), ['--http', `unix:${sock}`]).done;
    expect(second.code).toBe(2);
    expect(second.stderr).toContain('ERR_CONFIG_INVALID');
    expect(second.stderr).toContain('another process already serves');
    expect(await getOverSocket('/healthz')).toBe(200);
  });

  it('replaces the socket file of a peer that died, and removes its own at a clean stop', async () => {
    const killed = new Promise((res) => peer.once('exit', res));
    peer.kill('SIGKILL');
    await killed;
    expect(statSync(sock).isSocket()).toBe(true);
    const again = startPeer(config, ['--http', `unix:${sock}`]);
    await ready();
    expect(statSync(sock).mode & 0o777).toBe(0o660);
    const stopped = again.done;
    again.proc.kill('SIGTERM');
    expect((await stopped).code).toBe(0);
    expect(existsSync(sock)).toBe(false);
  });

  it('refuses a socket path that is some other file', async () => {
    const file = join(dir, 'not-a-socket');
    writeFileSync(file, 'data');
    const r = await startPeer(await writeConfig(), ['--http', `unix:${file}`]).done;
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('is not a socket');
  });
});

describe('starts a peer refuses', () => {
  it('refuses to listen beyond loopback without a token, and starts with one', async () => {
    const port = await freePort();
    const r = await startPeer(await writeConfig(), ['--http', `0.0.0.0:${port}`]).done;
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/ERR_CONFIG_INVALID: refusing to serve the HTTP API on 0\.0\.0\.0.*without a token/);
    const tokenFile = join(dir, 'token');
    writeFileSync(tokenFile, 'a-token-of-enough-length-42\n', { mode: 0o600 });
    const ok = startPeer(await writeConfig(), ['--http', `0.0.0.0:${port}`, '--token-file', tokenFile]);
    const client = new LockClient({ peer: `http://127.0.0.1:${port}`, tokenFile });
    await waitFor('the peer ready on 0.0.0.0', async () => (await client.cluster().catch(() => null)) !== null, 15_000);
    const hold = await client.acquire('with-a-token');
    await client.release('with-a-token', hold.id);
    client.close();
    ok.proc.kill('SIGTERM');
    expect((await ok.done).code).toBe(0);
  });

  it('refuses a token file that group or others may read', async () => {
    const tokenFile = join(dir, 'loose-token');
    writeFileSync(tokenFile, 'a-token-of-enough-length-42\n');
    chmodSync(tokenFile, 0o640);
    const r = await startPeer(await writeConfig(), ['--token-file', tokenFile]).done;
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`ERR_CONFIG_INVALID: the token file ${tokenFile} has mode 0640`);
  });
});
