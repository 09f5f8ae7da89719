/**
 * The install path of a real host (README "Install on a host"), as CI can run it: the
 * package tarball that `npm pack` makes from the built dist/, installed with
 * `npm install -g --prefix` into a fresh temp prefix (its dependencies come from the npm
 * registry, never from this checkout), then a 3-peer cluster run by the installed
 * `lamport-peer` binaries from a directory outside the repo, and a lock taken, shown,
 * released and run through the installed `lamport-lock`. SIGTERM to the installed binary
 * reaches the peer itself (no npm wrapper in between): it exits 0.
 */
import { execFile, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { peerExitCodes } from '../../src/peer-exit-codes.js';
import { freePort } from '../../src/tools/local-cluster.js';
import { waitFor } from '../support/wait.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const work = mkdtempSync(join(tmpdir(), 'lamport-install-'));
const prefix = join(work, 'prefix');
/** Where the peers and the CLI run: not the repo, so nothing can resolve from its node_modules. */
const outside = join(work, 'host');

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a command to its end (bounded) and collects its output. */
function run(file: string, args: readonly string[], cwd: string, timeoutMs = 60_000): Promise<Run> {
  return new Promise((res) => {
    execFile(file, args, { cwd, timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
      const code = err === null ? 0 : typeof err.code === 'number' ? err.code : null;
      res({ code, stdout, stderr });
    });
  });
}

/** Every relative import of a compiled ES module (the forms tsc emits). */
function importsOf(text: string): string[] {
  const found: string[] = [];
  for (const m of text.matchAll(/(?:^|[\s;])(?:import|export)\s[^'"]*?from\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)|^import\s+['"]([^'"]+)['"]/gm)) {
    found.push(m[1] ?? m[2] ?? m[3] ?? '');
  }
  return found;
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true }).filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name));
}

let tarball = '';
let packed: string[] = [];
let installErr = '';
/** The flags of README's install line (`sudo npm install -g ... ./lamport-lock-0.1.0.tgz`), which this file installs with. */
const readmeFlags = (/^sudo npm install (.+?) \.\/lamport-lock-[\d.]+\.tgz/m.exec(readFileSync(join(root, 'README.md'), 'utf8'))?.[1] ?? '').split(/\s+/).filter((f) => f.startsWith('-') && f !== '--prefix');
const adminToken = join(work, 'admin-token');
const peers: Array<{ id: string; proc: ChildProcess; http: string; exited: Promise<number | null> }> = [];

beforeAll(async () => {
  // dist/ is built by `npm test` (and `npm ci`): --ignore-scripts packs it as it is,
  // instead of rebuilding it under the other test files that read it.
  const pack = await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', work], root);
  expect(pack.code, pack.stderr).toBe(0);
  const info = (JSON.parse(pack.stdout) as Array<{ filename: string; files: Array<{ path: string }> }>)[0];
  tarball = join(work, info?.filename ?? '');
  packed = (info?.files ?? []).map((f) => f.path);
  const install = await run('npm', ['install', ...readmeFlags, '--prefix', prefix, '--no-audit', '--no-fund', '--prefer-offline', tarball], work, 120_000);
  expect(install.code, install.stderr).toBe(0);
  installErr = install.stderr;
}, 150_000);

afterAll(async () => {
  for (const p of peers) p.proc.kill('SIGKILL');
  await Promise.all(peers.map((p) => p.exited));
});

describe('npm pack', () => {
  it('packs only what runs: the two binaries (and the peer\'s main), dist/src, the OpenAPI description, README, LICENSE, package.json', () => {
    const top = ['package.json', 'README.md', 'LICENSE', 'dist/bin/lamport-peer.js', 'dist/bin/lamport-lock.js', 'dist/bin/peer-main.js', 'dist/openapi.json'];
    expect(packed).toEqual(expect.arrayContaining([...top, 'dist/src/client/lock-client.js', 'dist/src/client/lock-client.d.ts']));
    const stray = packed.filter((p) => !top.includes(p) && !p.startsWith('dist/src/'));
    expect(stray).toEqual([]);
    expect(packed.filter((p) => p.endsWith('.map') || p.startsWith('dist/src/tools/'))).toEqual([]);
    expect(packed.length).toBeLessThan(220);
  });

  it('installs a package whose code imports only itself, node builtins and its dependencies', () => {
    const pkgDir = join(prefix, 'lib', 'node_modules', 'lamport-lock');
    const pkg = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
    const files = new Set(filesUnder(join(pkgDir, 'dist')));
    const builtins = new Set(builtinModules);
    for (const file of [...files].filter((f) => f.endsWith('.js'))) {
      for (const spec of importsOf(readFileSync(file, 'utf8'))) {
        if (spec.startsWith('.')) {
          // A relative import that leaves the package (test/, bench/, tools/) fails here.
          expect(files.has(resolve(dirname(file), spec)), `${relative(pkgDir, file)} imports ${spec}`).toBe(true);
        } else if (!spec.startsWith('node:') && !builtins.has(spec)) {
          const name = spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : (spec.split('/')[0] ?? spec);
          expect(Object.keys(pkg.dependencies), `${relative(pkgDir, file)} imports ${spec}`).toContain(name);
        }
      }
    }
  });
});

describe('npm install of the tarball, as README says it', () => {
  it('is quiet, ships no install-time script, and loads msgpackr\'s native extension (prebuilt, no build script)', async () => {
    expect(readmeFlags).toEqual(expect.arrayContaining(['-g', '--ignore-scripts']));
    expect(installErr.split('\n').filter((l) => l.startsWith('npm warn'))).toEqual([]);
    const pkgDir = join(prefix, 'lib', 'node_modules', 'lamport-lock');
    const scripts = (JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8')) as { scripts?: Record<string, string> }).scripts ?? {};
    expect(Object.keys(scripts).filter((k) => ['preinstall', 'install', 'postinstall', 'prepare'].includes(k))).toEqual([]);
    const native = await run(process.execPath, ['--input-type=module', '-e', 'import("msgpackr").then((m) => console.log(m.isNativeAccelerationEnabled))'], pkgDir);
    expect(native.stdout.trim(), native.stderr).toBe('true');
  });

  it('gives types that resolve under moduleResolution node10 (tsc on a fixture project)', async () => {
    const fixture = join(work, 'types-node10');
    mkdirSync(join(fixture, 'node_modules'), { recursive: true });
    symlinkSync(join(prefix, 'lib', 'node_modules', 'lamport-lock'), join(fixture, 'node_modules', 'lamport-lock'));
    writeFileSync(join(fixture, 'tsconfig.json'), JSON.stringify({
      compilerOptions: { module: 'commonjs', moduleResolution: 'node10', ignoreDeprecations: '6.0', target: 'es2022', strict: true, noEmit: true, typeRoots: [join(root, 'node_modules', '@types')], types: ['node'] },
      files: ['index.ts'],
    }));
    writeFileSync(join(fixture, 'index.ts'), [
      'import { LockClient, LockError } from \'lamport-lock/client\';',
      'import type { Hold } from \'lamport-lock/client\';',
      'const client: LockClient = new LockClient({ peer: \'127.0.0.1:7001\' });',
      'export const held: Promise<Hold> = client.acquire(\'x\', { timeoutMs: 1 });',
      'export const isError = (e: unknown): boolean => e instanceof LockError;',
    ].join('\n'));
    const tsc = await run(process.execPath, [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', fixture], fixture);
    expect(tsc.stdout + tsc.stderr, 'tsc output').toBe('');
    expect(tsc.code).toBe(0);
  }, 60_000);
});

describe('the installed binaries, outside the repo', () => {
  const peerBin = join(prefix, 'bin', 'lamport-peer');
  const lockBin = join(prefix, 'bin', 'lamport-lock');

  it('run a 3-peer cluster that the installed lamport-lock takes a lock through', async () => {
    const ids = ['a', 'b', 'c'];
    const addrs = await Promise.all(ids.map(async (id) => ({ id, ws: `ws://127.0.0.1:${await freePort()}`, http: `127.0.0.1:${await freePort()}` })));
    mkdirSync(outside, { recursive: true });
    writeFileSync(join(outside, 'cluster.json'), JSON.stringify({ cluster: 'installed', secret: 'install-test-secret-0123456789abcdef', heartbeat_ms: 100, lease_ms: 1000, evict_ms: 3000, peers: addrs }));
    writeFileSync(adminToken, 'installed-admin-token-0123456789abcdef\n', { mode: 0o600 });
    for (const a of addrs) {
      const proc = spawn(peerBin, ['--config', 'cluster.json', '--id', a.id, '--data-dir', join(outside, a.id), '--admin-token-file', adminToken, '--no-log-pretty', '--log-level', 'warn'], { cwd: outside, stdio: ['ignore', 'ignore', 'pipe'] });
      const exited = new Promise<number | null>((res) => proc.once('exit', (code) => res(code)));
      peers.push({ id: a.id, proc, http: a.http, exited });
    }
    for (const p of peers) {
      await waitFor(`installed peer ${p.id} ready`, async () => {
        if (p.proc.exitCode !== null) throw new Error(`installed peer ${p.id} exited with ${p.proc.exitCode}`);
        return fetch(`http://${p.http}/readyz`).then((r) => r.status === 200, () => false);
      }, 20_000);
    }
    const [a, b, c] = peers as [typeof peers[0], typeof peers[0], typeof peers[0]];
    const got = await run(lockBin, ['--peer', `http://${a.http}`, 'acquire', 'installed-job', '--owner', 'ci', '--ttl', '30s'], outside);
    expect(got.code, got.stderr).toBe(0);
    const grant = JSON.parse(got.stdout) as { id: string; token: string; granted_at: number; expires_at: number };
    expect(grant.expires_at - grant.granted_at).toBe(30_000);
    // Another peer sees the holder: the installed peers talk to each other.
    const status = await run(lockBin, ['--peer', b.http, 'status', 'installed-job', '--json'], outside);
    expect(status.code, status.stderr).toBe(0);
    expect((JSON.parse(status.stdout) as { holders: Array<{ owner: string; peer: string }> }).holders).toEqual([expect.objectContaining({ owner: 'ci', peer: 'a' })]);
    expect((await run(lockBin, ['--peer', `http://${a.http}`, 'release', 'installed-job', grant.id], outside)).code).toBe(0);
    const ran = await run(lockBin, ['--peer', `http://${c.http}`, 'run', 'installed-job', '--timeout', '5s', '--', 'sh', '-c', 'echo "held $LAMPORT_LOCK_NAME"; exit 7'], outside);
    expect(ran.stdout).toBe('held installed-job\n');
    expect(ran.code).toBe(7);
  }, 60_000);

  it('serve the installed typed client: host:port, { signal }, the default owner, and a force-release that withLock sees', async () => {
    const [a] = peers;
    const app = join(outside, 'app');
    mkdirSync(join(app, 'node_modules'), { recursive: true });
    symlinkSync(join(prefix, 'lib', 'node_modules', 'lamport-lock'), join(app, 'node_modules', 'lamport-lock'));
    writeFileSync(join(app, 'app.mjs'), clientApp);
    const r = await run(process.execPath, ['app.mjs', a?.http ?? '', readFileSync(adminToken, 'utf8').trim()], app, 30_000);
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as Record<string, unknown>;
    expect(out).toEqual({
      owner: `${process.env['USER'] ?? 'root'}@pid${String(out['pid'])}`, pid: out['pid'],
      abortedAcquire: { code: 'ERR_TIMEOUT', reason: 'aborted' }, abortedWithLock: { code: 'ERR_TIMEOUT', reason: 'aborted' },
      forceReleased: { code: 'ERR_NOT_HELD', reason: 'released', fnSawIt: true },
    });
  }, 30_000);

  it('stop on SIGTERM sent to the installed binary itself, with exit 0', async () => {
    expect(peers).toHaveLength(3);
    for (const p of peers) p.proc.kill('SIGTERM');
    expect(await Promise.all(peers.map((p) => p.exited))).toEqual([0, 0, 0]);
  }, 30_000);

  it('run the systemd unit\'s ExecStart as written, with the install prefix in place of /usr/local', async () => {
    const unit = readFileSync(join(root, 'deploy/lamport-peer.service'), 'utf8');
    const exec = /^ExecStart=(.+)$/m.exec(unit)?.[1] ?? '';
    expect(exec.startsWith('/usr/local/bin/lamport-peer ')).toBe(true);
    // What an invalid config exits with is never retried; a busy port is.
    expect(/^RestartPreventExitStatus=(.+)$/m.exec(unit)?.[1]?.split(/\s+/)).toEqual([String(peerExitCodes.invalidConfig)]);
    expect(/^Restart=(.+)$/m.exec(unit)?.[1]).toBe('on-failure');
    const [http, ws] = [await freePort(), await freePort()];
    const etc = join(work, 'etc');
    mkdirSync(etc, { recursive: true });
    writeFileSync(join(etc, 'cluster.json'), JSON.stringify({ cluster: 'unit', secret: 'unit-test-secret-0123456789abcdef', peers: [{ id: 'solo', ws: `ws://127.0.0.1:${ws}`, http: `127.0.0.1:${http}` }] }));
    const env: Record<string, string> = { LAMPORT_PEER_ID: 'solo', LAMPORT_LOG_LEVEL: 'warn', LAMPORT_HTTP: `127.0.0.1:${http}`, LAMPORT_HTTP_FLAGS: '' };
    // systemd: ${NAME} is one word; a bare $NAME is split into words (none when empty).
    const argv = exec.split(/\s+/).flatMap((a) => {
      const bare = /^\$(\w+)$/.exec(a);
      if (bare !== null) return (env[bare[1] ?? ''] ?? '').split(/\s+/).filter((w) => w !== '');
      return [a
        .replace(/^\/usr\/local\//, `${prefix}/`)
        .replace(/^\/etc\/lamport-lock\//, `${etc}/`)
        .replace(/^\/var\/lib\/lamport-lock$/, join(work, 'state'))
        .replace(/^\$\{(\w+)\}$/, (_, name: string) => env[name] ?? `unset-${name}`)];
    });
    const [file = '', ...args] = argv;
    const proc = spawn(file, args, { cwd: outside, stdio: 'ignore' });
    const exited = new Promise<number | null>((res) => proc.once('exit', (code) => res(code)));
    try {
      await waitFor('the unit\'s peer ready', async () => {
        if (proc.exitCode !== null) throw new Error(`the unit's command exited with ${proc.exitCode}: ${argv.join(' ')}`);
        return fetch(`http://127.0.0.1:${http}/readyz`).then((r) => r.status === 200, () => false);
      }, 20_000);
    } finally {
      proc.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
  }, 30_000);
});

/**
 * An application of the installed package (`lamport-lock/client` from its node_modules):
 * argv[2] the peer as host:port, argv[3] the admin token. Prints what it saw as JSON.
 */
const clientApp = `import { LockClient } from 'lamport-lock/client';
const [peer, adminToken] = process.argv.slice(2);
const client = new LockClient({ peer });
const admin = new LockClient({ peer, token: adminToken });
const codeOf = (e) => ({ code: e.code, reason: e.details.reason });
const out = { pid: process.pid };
const held = await client.acquire('app/owner', { ttlMs: 30000 });
out.owner = (await client.status('app/owner')).holders[0].owner;
// A signal in the options, as Node APIs take it: the acquire and withLock stop waiting.
const ac = new AbortController();
setTimeout(() => ac.abort(), 200);
out.abortedAcquire = await client.acquire('app/owner', { timeoutMs: 10000 }, { signal: ac.signal }).then(() => 'granted', codeOf);
const ac2 = new AbortController();
setTimeout(() => ac2.abort(), 200);
out.abortedWithLock = await client.withLock('app/owner', async () => 'ran', { timeoutMs: 10000, signal: ac2.signal }).then((v) => v, codeOf);
await client.release('app/owner', held.id);
// An administrator's force-release ends the hold: withLock rejects, whatever fn returns.
let fnSawIt = false;
out.forceReleased = await client.withLock('app/forced', async (hold, signal) => {
  await admin.forceRelease('app/forced');
  if (!signal.aborted) await new Promise((r) => signal.addEventListener('abort', r, { once: true }));
  fnSawIt = true;
  return 'finished anyway';
}).then((v) => v, (e) => ({ ...codeOf(e), fnSawIt }));
console.log(JSON.stringify(out));
client.close();
admin.close();
`;
