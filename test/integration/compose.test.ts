/**
 * The docker compose demo and the Dockerfile, checked without a Docker engine:
 * - docker-compose.yml is read by a strict parser of the plain block YAML it is written in
 *   (anything outside that subset fails the test), then checked against the Dockerfile,
 *   deploy/cluster.compose.json and deploy/demo.env: ids, hostnames, ports, mounts,
 *   healthchecks, the workers' peers;
 * - the Dockerfile's COPY sources exist and pass .dockerignore, its binaries exist in dist/,
 *   and everything the binaries import at run time is a production dependency;
 * - where a compose client exists (`docker compose` or `docker-compose`), `config -q` too.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { builtinModules } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config.js';
import { limits } from '../../src/limits.js';
import { freePort } from '../../src/tools/local-cluster.js';
import { waitFor } from '../support/wait.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const read = (path: string): string => readFileSync(join(root, path), 'utf8');

type Yaml = string | number | null | Yaml[] | { [key: string]: Yaml };
type YamlMap = { [key: string]: Yaml };

interface Line {
  readonly n: number;
  readonly indent: number;
  readonly text: string;
}

/** Plain scalars, double-quoted strings, and JSON-compatible flow sequences: nothing else. */
function scalar(raw: string, n: number): Yaml {
  if (raw.startsWith('"') || raw.startsWith('[')) {
    try {
      return JSON.parse(raw) as Yaml;
    } catch {
      throw new Error(`line ${n}: ${raw} is not a JSON-compatible YAML string or sequence`);
    }
  }
  if (/^[{&*!|>'%@`#]/.test(raw) || raw.includes(': ') || raw.includes(' #')) throw new Error(`line ${n}: unsupported YAML: ${raw}`);
  return /^\d+$/.test(raw) ? Number(raw) : raw;
}

function block(lines: readonly Line[], at: number, indent: number): [Yaml, number] {
  const first = lines[at];
  if (first === undefined || first.indent < indent) return [null, at];
  if (first.indent !== indent) throw new Error(`line ${first.n}: unexpected indent`);
  const isSeq = first.text.startsWith('- ');
  const seq: Yaml[] = [];
  const map: YamlMap = {};
  let i = at;
  while (i < lines.length) {
    const line = lines[i] as Line;
    if (line.indent < indent) break;
    if (line.indent > indent) throw new Error(`line ${line.n}: unexpected indent`);
    if (isSeq !== line.text.startsWith('- ')) throw new Error(`line ${line.n}: sequence and mapping mixed`);
    if (isSeq) {
      seq.push(scalar(line.text.slice(2), line.n));
      i += 1;
      continue;
    }
    const m = /^([A-Za-z0-9_.-]+):(?: (.+))?$/.exec(line.text);
    if (m === null) throw new Error(`line ${line.n}: not a "key: value" line: ${line.text}`);
    const key = m[1] as string;
    if (key in map) throw new Error(`line ${line.n}: duplicate key ${key}`);
    if (m[2] !== undefined) {
      map[key] = scalar(m[2], line.n);
      i += 1;
    } else {
      const [value, next] = block(lines, i + 1, (lines[i + 1]?.indent ?? 0) > indent ? (lines[i + 1] as Line).indent : indent + 2);
      map[key] = value;
      i = next;
    }
  }
  return [isSeq ? seq : map, i];
}

/** Parses the compose file's YAML subset; throws on anything outside it. */
function parseYamlSubset(text: string): YamlMap {
  const lines: Line[] = [];
  text.split('\n').forEach((raw, idx) => {
    if (raw.includes('\t')) throw new Error(`line ${idx + 1}: tab`);
    const trimmed = raw.trim();
    if (trimmed === '' || trimmed.startsWith('#')) return;
    lines.push({ n: idx + 1, indent: raw.length - raw.trimStart().length, text: trimmed });
  });
  const [doc, end] = block(lines, 0, 0);
  if (end !== lines.length) throw new Error(`line ${lines[end]?.n ?? '?'}: unparsed`);
  return doc as YamlMap;
}

function map(v: Yaml | undefined, what: string): YamlMap {
  if (v === null || v === undefined || typeof v !== 'object' || Array.isArray(v)) throw new Error(`${what} is not a mapping`);
  return v;
}

function strings(v: Yaml | undefined, what: string): string[] {
  if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) throw new Error(`${what} is not a list of strings`);
  return v as string[];
}

/** Dockerfile instructions with continuation lines joined. */
function dockerfile(): Array<{ op: string; args: string }> {
  const joined = read('Dockerfile').split('\n').filter((l) => !l.trimStart().startsWith('#')).join('\n').replace(/\\\n/g, ' ');
  return joined.split('\n').map((l) => l.trim()).filter((l) => l !== '').map((l) => {
    const [op = '', ...rest] = l.split(/\s+/);
    return { op: op.toUpperCase(), args: rest.join(' ') };
  });
}

function dockerJson(op: string): string[] {
  const line = dockerfile().find((d) => d.op === op);
  if (line === undefined) throw new Error(`no ${op} in the Dockerfile`);
  return JSON.parse(line.args) as string[];
}

/** Runs the Dockerfile's HEALTHCHECK command (node -e ...) as Docker would, against `port`. */
function healthcheck(port: number): boolean {
  const health = dockerfile().find((d) => d.op === 'HEALTHCHECK')?.args ?? '';
  const check = JSON.parse(health.slice(health.indexOf('CMD ') + 4)) as string[];
  try {
    execFileSync(process.execPath, check.slice(1), { env: { ...process.env, LAMPORT_HTTP_PORT: String(port) }, stdio: 'ignore', timeout: 5000 });
    return true;
  } catch {
    return false;
  }
}

const compose = parseYamlSubset(read('docker-compose.yml'));
const services = map(compose['services'], 'services');
const entrypoint = dockerJson('ENTRYPOINT');
const cmd = dockerJson('CMD');
const flag = (args: readonly string[], name: string): string => (args.includes(name) ? (args[args.indexOf(name) + 1] ?? '') : '');
const httpPort = flag(cmd, '--http').split(':')[1] ?? '';
const secret = /^LAMPORT_SECRET=(.+)$/m.exec(read('deploy/demo.env'))?.[1] ?? '';
const config = parseConfig(JSON.parse(read('deploy/cluster.compose.json')), { LAMPORT_SECRET: secret });

/** Where the demo's peers and workers read the API token. */
const tokenFile = '/var/lib/lamport-token/token';

describe('docker-compose.yml', () => {
  it('writes a private random API token once, into a volume the image\'s user owns', () => {
    const t = map(services['api-token'], 'services.api-token');
    expect(t['image']).toBe(map(services['peer-a'], 'peer-a')['image']);
    expect(strings(t['volumes'], 'volumes')).toEqual([`api-token:${dirname(tokenFile)}`]);
    const [script = ''] = strings(t['command'], 'command');
    expect(script).toMatch(/^umask 077 && test -s \/var\/lib\/lamport-token\/token \|\| node -e .*randomBytes\(32\).* > \/var\/lib\/lamport-token\/token$/);
    expect(Object.keys(map(compose['volumes'], 'volumes'))).toContain('api-token');
    const chown = dockerfile().find((d) => d.op === 'RUN' && d.args.includes('chown node:node'))?.args ?? '';
    expect(chown).toContain(dirname(tokenFile));
  });

  it('runs one healthy peer service per configured peer, reachable by its ws hostname', () => {
    expect(config.peers.map((p) => p.id)).toEqual(['a', 'b', 'c']);
    for (const p of config.peers) {
      const s = map(services[`peer-${p.id}`], `services.peer-${p.id}`);
      const ws = new URL(p.ws);
      expect(ws.hostname).toBe(`peer-${p.id}`);
      expect(s['hostname']).toBe(ws.hostname);
      expect(dockerfile().find((d) => d.op === 'EXPOSE')?.args.split(' ')).toEqual(expect.arrayContaining([httpPort, ws.port]));
      expect(s['build']).toBe('.');
      const command = strings(s['command'], 'command');
      expect(command.slice(0, 4)).toEqual(['--id', p.id, '--http', `0.0.0.0:${httpPort}`]);
      // Beyond loopback the peer needs a token (issue 14): the one api-token writes in its volume.
      expect(flag(command, '--token-file')).toBe(tokenFile);
      expect(map(map(s['depends_on'], 'depends_on')['api-token'], 'depends_on.api-token')['condition']).toBe('service_completed_successfully');
      // The Host names clients use: the service name (the workers), the published ports (a browser on the host).
      const allowed = command.filter((_, i) => command[i - 1] === '--http-allow-host');
      expect(allowed).toContain(`peer-${p.id}`);
      for (const port of strings(s['ports'], 'ports')) {
        const published = port.split(':')[1] ?? '';
        expect(allowed).toEqual(expect.arrayContaining([`127.0.0.1:${published}`, `localhost:${published}`]));
      }
      expect(strings(s['env_file'], 'env_file').every((f) => existsSync(join(root, f)))).toBe(true);
      const volumes = strings(s['volumes'], 'volumes');
      expect(volumes).toContain(`./deploy/cluster.compose.json:${flag(entrypoint, '--config')}:ro`);
      expect(volumes).toContain(`peer-${p.id}-data:${flag(entrypoint, '--data-dir')}`);
      expect(volumes).toContain(`api-token:${dirname(tokenFile)}:ro`);
      expect(Object.keys(map(compose['volumes'], 'volumes'))).toContain(`peer-${p.id}-data`);
      for (const port of strings(s['ports'], 'ports')) expect(port).toMatch(new RegExp(`^127\\.0\\.0\\.1:\\d+:${httpPort}$`));
      const health = map(s['healthcheck'], 'healthcheck');
      const test = strings(health['test'], 'healthcheck.test');
      expect(test.slice(0, 3)).toEqual(['CMD', 'node', '-e']);
      expect(test[3]).toContain(`fetch('http://127.0.0.1:${httpPort}/readyz')`);
      expect(strings(s['networks'], 'networks').every((n) => n in map(compose['networks'], 'networks'))).toBe(true);
    }
    expect(secret.length).toBeGreaterThanOrEqual(limits.secretCharsMin);
  });

  it('runs a worker per peer that loops `lamport-lock run` against its own peer once it is healthy', () => {
    for (const p of config.peers) {
      const w = map(services[`worker-${p.id}`], `services.worker-${p.id}`);
      expect(map(map(w['depends_on'], 'depends_on')[`peer-${p.id}`], 'depends_on.peer')['condition']).toBe('service_healthy');
      expect(map(w['environment'], 'environment')['LAMPORT_PEER']).toBe(`http://peer-${p.id}:${httpPort}`);
      expect(map(w['environment'], 'environment')['LAMPORT_TOKEN_FILE']).toBe(tokenFile);
      expect(strings(w['volumes'], 'volumes')).toContain(`api-token:${dirname(tokenFile)}:ro`);
      expect(strings(w['entrypoint'], 'entrypoint')).toEqual(['/bin/sh', '-c']);
      const [loop = ''] = strings(w['command'], 'command');
      expect(loop).toMatch(/^while true; do lamport-lock run demo-job .* -- .*; done$/);
      expect(map(w['healthcheck'], 'healthcheck')['disable']).toBe('true');
      expect(w['image']).toBe(map(services['peer-a'], 'peer-a')['image']);
    }
  });

  it('runs a peer with the demo\'s token script and command line, which its healthcheck and a worker\'s client pass', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'lamport-compose-'));
    const token = join(dir, 'token');
    const [script = ''] = strings(map(services['api-token'], 'api-token')['command'], 'command');
    execFileSync('/bin/sh', ['-c', script.replaceAll(tokenFile, token)]);
    expect(statSync(token).mode & 0o777).toBe(0o600);
    const [http, ws] = [await freePort(), await freePort()];
    const configPath = join(dir, 'cluster.json');
    writeFileSync(configPath, JSON.stringify({ cluster: 'compose', secret, peers: [{ id: 'a', ws: `ws://127.0.0.1:${ws}`, http: `127.0.0.1:${http}` }] }));
    const command = strings(map(services['peer-a'], 'peer-a')['command'], 'command').map((a) => a.replace(`:${httpPort}`, `:${http}`).replace(tokenFile, token));
    const peer = spawn(process.execPath, [join(root, 'dist/bin/lamport-peer.js'), '--config', configPath, '--data-dir', dir, ...command], { stdio: 'ignore' });
    try {
      const health = strings(map(map(services['peer-a'], 'peer-a')['healthcheck'], 'healthcheck')['test'], 'healthcheck.test');
      const probe = (): boolean => {
        try {
          execFileSync(process.execPath, ['-e', (health[3] ?? '').replace(`:${httpPort}/`, `:${http}/`)], { stdio: 'ignore', timeout: 5000 });
          return true;
        } catch {
          return false;
        }
      };
      await waitFor('the compose healthcheck passes', probe, 10_000, 100);
      // A worker reaches its peer by the service name, with the token from LAMPORT_TOKEN_FILE.
      const ask = (authorization?: string): Promise<number> => new Promise((res, rej) => {
        const req = request({ host: '127.0.0.1', port: http, path: '/v1/locks', headers: { host: `peer-a:${http}`, ...(authorization === undefined ? {} : { authorization }) } }, (r) => {
          r.resume();
          res(r.statusCode ?? 0);
        });
        req.on('error', rej);
        req.end();
      });
      expect(await ask()).toBe(401);
      expect(await ask(`Bearer ${readFileSync(token, 'utf8').trim()}`)).toBe(200);
    } finally {
      const exited = new Promise<number | null>((r) => peer.once('exit', (code) => r(code)));
      peer.kill('SIGTERM');
      expect(await exited).toBe(0);
    }
  }, 20_000);

  const client = ['docker compose', 'docker-compose'].find((c) => {
    const [cmd = '', ...args] = c.split(' ');
    try {
      execFileSync(cmd, [...args, 'version'], { stdio: 'ignore', timeout: 10_000 });
      return true;
    } catch {
      return false;
    }
  });
  if (client === undefined) process.stdout.write('\n[compose.test] NOTE: no compose client (`docker compose` / `docker-compose`): `config -q` not run; the structural checks above still ran.\n\n');
  it.skipIf(client === undefined)('passes `docker compose config -q`', () => {
    const [cmd = '', ...args] = (client ?? '').split(' ');
    expect(() => execFileSync(cmd, [...args, '-f', 'docker-compose.yml', 'config', '-q'], { cwd: root, stdio: 'pipe', timeout: 30_000 })).not.toThrow();
  });
});

describe('Dockerfile', () => {
  it('copies only paths that exist and that .dockerignore lets through', () => {
    const allowed = read('.dockerignore').split('\n').filter((l) => l.startsWith('!')).map((l) => l.slice(1).replace(/\/$/, ''));
    const copies = dockerfile().filter((d) => d.op === 'COPY' && !d.args.startsWith('--from'));
    expect(copies.length).toBeGreaterThan(0);
    for (const c of copies) {
      const sources = c.args.split(' ').slice(0, -1);
      for (const s of sources) {
        expect(existsSync(join(root, s)), `COPY source ${s}`).toBe(true);
        expect(allowed, `.dockerignore lets ${s} through`).toContain(s);
      }
    }
  });

  it('installs the package tarball of the build stage globally and runs its binary, as a non-root user, checked by node fetch', () => {
    const steps = dockerfile();
    const stages = steps.filter((d) => d.op === 'FROM').map((d) => d.args);
    expect(stages).toEqual(['${NODE_IMAGE} AS build', '${NODE_IMAGE} AS runtime']);
    const runtimeAt = steps.findIndex((d) => d.op === 'FROM' && d.args.endsWith('AS runtime'));
    const build = steps.slice(0, runtimeAt);
    const runtime = steps.slice(runtimeAt);
    // The build stage packs what a host installs (npm pack, package.json "files").
    const pack = build.find((d) => d.op === 'RUN' && d.args.includes('npm pack'))?.args ?? '';
    const packDir = /--pack-destination (\S+)/.exec(pack)?.[1];
    expect(packDir).toBeDefined();
    const [, from = '', to = ''] = runtime.find((d) => d.op === 'COPY' && d.args.startsWith('--from=build'))?.args.split(' ') ?? [];
    expect(from).toBe(packDir);
    // The runtime stage installs that tarball globally and never sees the sources or dev dependencies.
    expect(runtime.some((d) => d.op === 'RUN' && new RegExp(`npm install -g .*${to}/lamport-lock-\\*\\.tgz`).test(d.args))).toBe(true);
    expect(runtime.filter((d) => d.op === 'COPY').map((d) => d.args.split(' ')[0])).toEqual(['--from=build']);
    expect(runtime.some((d) => d.op === 'RUN' && d.args.includes('npm ci'))).toBe(false);
    // The entrypoint is the installed binary itself: a bin of the package, on PATH after npm install -g.
    const pkg = JSON.parse(read('package.json')) as { bin: Record<string, string> };
    expect(Object.keys(pkg.bin)).toContain(entrypoint[0]);
    expect(entrypoint[0]).toBe('lamport-peer');
    const user = steps.filter((d) => d.op === 'USER').at(-1)?.args;
    expect(user).toBe('node');
    const health = steps.find((d) => d.op === 'HEALTHCHECK')?.args ?? '';
    expect(health).toContain(`fetch('http://127.0.0.1:' + process.env.LAMPORT_HTTP_PORT + '/healthz')`);
    expect(steps.some((d) => d.op === 'ENV' && d.args === `LAMPORT_HTTP_PORT=${httpPort}`)).toBe(true);
    expect(httpPort).toMatch(/^\d+$/);
  });

  it('builds on a Node LTS line still maintained at the release (22 or 24; Node 20 ended in April 2026)', () => {
    const image = dockerfile().find((d) => d.op === 'ARG' && d.args.startsWith('NODE_IMAGE='))?.args ?? '';
    const major = /^NODE_IMAGE=node:(\d+)[-.]/.exec(image)?.[1];
    expect(['22', '24'], image).toContain(major);
  });

  it('starts a peer with the image\'s entrypoint flags that its own HEALTHCHECK command finds healthy', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'lamport-docker-'));
    const [httpPort, wsPort] = [await freePort(), await freePort()];
    const configPath = join(dir, 'cluster.json');
    writeFileSync(configPath, JSON.stringify({ cluster: 'img', secret: 'image-test-secret-0123456789abcdef', peers: [{ id: 'a', ws: `ws://127.0.0.1:${wsPort}`, http: `127.0.0.1:${httpPort}` }] }));
    // The container's command line, with the container's paths replaced by temp ones and
    // the installed binary by the one it is built from (test/integration/install.test.ts
    // runs the installed one).
    const args = entrypoint.slice(1).map((a) => (a === flag(entrypoint, '--config') ? configPath : a === flag(entrypoint, '--data-dir') ? dir : a));
    const bin = (JSON.parse(read('package.json')) as { bin: Record<string, string> }).bin[entrypoint[0] ?? ''] ?? '';
    const peer = spawn(process.execPath, [join(root, bin), ...args, '--id', 'a'], { stdio: 'ignore' });
    try {
      const health = dockerfile().find((d) => d.op === 'HEALTHCHECK')?.args ?? '';
      expect(health).toMatch(/CMD \["node", "-e", /);
      await waitFor('the image healthcheck passes', () => healthcheck(httpPort), 10_000, 100);
    } finally {
      const exited = new Promise<number | null>((r) => peer.once('exit', (code) => r(code)));
      peer.kill('SIGTERM');
      expect(await exited).toBe(0);
    }
    expect(healthcheck(httpPort)).toBe(false);
  }, 20_000);

  it('needs nothing at run time beyond the production dependencies', () => {
    const pkg = JSON.parse(read('package.json')) as { dependencies: Record<string, string> };
    const builtins = new Set(builtinModules);
    const seen = new Set<string>();
    const bare = new Set<string>();
    const visit = (file: string): void => {
      if (seen.has(file)) return;
      seen.add(file);
      const text = readFileSync(file, 'utf8');
      for (const m of text.matchAll(/(?:^|[\s;])(?:import|export)\s[^'"]*?from\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)|^import\s+['"]([^'"]+)['"]/gm)) {
        const spec = m[1] ?? m[2] ?? m[3] ?? '';
        if (spec.startsWith('.')) visit(resolve(dirname(file), spec));
        else bare.add(spec);
      }
    };
    visit(join(root, 'dist/bin/lamport-peer.js'));
    visit(join(root, 'dist/bin/lamport-lock.js'));
    expect(seen.size).toBeGreaterThan(10);
    // The package tarball the image installs carries only dist/src and dist/bin.
    for (const file of seen) expect(file.startsWith(join(root, 'dist/src/')) || file.startsWith(join(root, 'dist/bin/')), file).toBe(true);
    const packages = [...bare].filter((s) => !s.startsWith('node:') && !builtins.has(s)).map((s) => (s.startsWith('@') ? s.split('/').slice(0, 2).join('/') : (s.split('/')[0] ?? s)));
    expect(packages.length).toBeGreaterThan(0);
    for (const p of packages) expect(Object.keys(pkg.dependencies), `${p} is a production dependency`).toContain(p);
  });
});
