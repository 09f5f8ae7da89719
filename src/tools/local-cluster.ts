/**
 * Starts a lamport-lock cluster as real peer processes on 127.0.0.1: used by
 * `npm run demo` and the integration and fault tests. Each peer is `lamport-peer` from
 * dist/, with its own data dir and log file under a temp dir.
 *
 * With `linkProxies`, every ORDERED peer link i -> j goes through its own TcpProxy, so a
 * test can cut, stall or block one direction of one pair: peer i gets its own config file
 * in which every other peer j's `ws` URL is the port of proxy (i, j), while i's own `ws`
 * stays its real listen address. The handshake identifies peers by id, so the URLs may
 * differ from one peer's config to the next. Peer i dials j for the stream i -> j and j's
 * acks and heartbeat echoes come back on that socket (docs/design.md section 4), so proxy (i, j)
 * carries i's payloads to j and the echoes that keep i's lease.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import type { ChildProcess } from 'node:child_process';
import { createWriteStream, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { TcpProxy } from './tcp-proxy.js';

/** Absolute path of dist/bin/lamport-peer.js whether this file runs from src/ or dist/src/. */
export function peerBinPath(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  const root = here.includes(`${join('dist', 'src')}`) ? resolve(here, '../../..') : resolve(here, '../..');
  return join(root, 'dist', 'bin', 'lamport-peer.js');
}

/** Ports this process handed out: a port is free until its peer binds it, so never twice. */
const handedOut = new Set<number>();

/**
 * A free TCP port on 127.0.0.1, drawn below Linux's ephemeral range (32768+) so that the
 * outgoing connections of running peers cannot take it between this probe and the bind.
 * Each process draws from its own slice of 20000-31999 (by vitest worker, else by pid), and
 * never hands out a port twice: a port probed free is still free for the next probe until
 * its peer binds it, and two peers given one port made a test fail on EADDRINUSE.
 */
export async function freePort(): Promise<number> {
  const slices = 8;
  const sliceSize = 12_000 / slices;
  const slice = Number(process.env['VITEST_POOL_ID'] ?? process.pid) % slices;
  for (let attempt = 0; attempt < 100; attempt++) {
    const port = 20_000 + slice * sliceSize + Math.floor(Math.random() * sliceSize);
    if (handedOut.has(port)) continue;
    handedOut.add(port); // Before the probe: concurrent calls must not probe the same port.
    const free = await new Promise<boolean>((res) => {
      const srv = createServer();
      srv.once('error', () => res(false));
      srv.listen(port, '127.0.0.1', () => srv.close(() => res(true)));
    });
    if (free) return port;
  }
  throw new Error('no free port found in 100 attempts');
}

/** Timings and options of a local cluster. */
export interface LocalClusterOptions {
  readonly peers: number;
  readonly heartbeatMs?: number;
  readonly leaseMs?: number;
  readonly evictMs?: number;
  /** Use this config instead of generating one (the demo uses cluster.example.json). */
  readonly configPath?: string;
  /** Log level of the peers (their logs go to files under the cluster dir). */
  readonly logLevel?: string;
  /** Route every ordered peer link through its own TcpProxy (see `link`). Not with `configPath`. */
  readonly linkProxies?: boolean;
  /** An API token every peer requires (written to a mode-0600 file, given as --token-file). */
  readonly token?: string;
  /** The admin token of every peer (written to `adminTokenFile`, given as --admin-token-file). */
  readonly adminToken?: string;
  /** More lamport-peer flags, for every peer. */
  readonly peerArgs?: readonly string[];
}

/** One running (or stopped) peer process. */
export interface LocalPeer {
  readonly id: string;
  readonly http: string;
  readonly ws: string;
  readonly dataDir: string;
  proc: ChildProcess | null;
}

/** A cluster of peer processes. */
export class LocalCluster {
  readonly dir: string;
  readonly configPath: string;
  readonly peers: LocalPeer[];
  readonly #logLevel: string;
  /** Proxy of each ordered link, by `from>to`; empty without `linkProxies`. */
  readonly #links = new Map<string, TcpProxy>();
  /** Config file of each peer when it differs from `configPath` (proxied links). */
  readonly #configs = new Map<string, string>();
  /** Flags every peer is started with beyond the config, id, data dir and logging. */
  readonly #peerArgs: string[] = [];
  /** Headers of this class's own requests (the token, when the peers require one). */
  readonly #headers: Record<string, string> = {};
  /** The file of the admin token (option `adminToken`), for `lamport-lock --admin-token-file`. */
  adminTokenFile: string | null = null;

  private constructor(dir: string, configPath: string, peers: LocalPeer[], logLevel: string) {
    this.dir = dir;
    this.configPath = configPath;
    this.peers = peers;
    this.#logLevel = logLevel;
  }

  #guard(opts: LocalClusterOptions): void {
    if (opts.token !== undefined) {
      const tokenFile = join(this.dir, 'api-token');
      writeFileSync(tokenFile, `${opts.token}\n`, { mode: 0o600 });
      this.#peerArgs.push('--token-file', tokenFile);
      this.#headers['authorization'] = `Bearer ${opts.token}`;
    }
    if (opts.adminToken !== undefined) {
      this.adminTokenFile = join(this.dir, 'admin-token');
      writeFileSync(this.adminTokenFile, `${opts.adminToken}\n`, { mode: 0o600 });
      this.#peerArgs.push('--admin-token-file', this.adminTokenFile);
    }
    this.#peerArgs.push(...(opts.peerArgs ?? []));
  }

  /** Writes a config (or reads the given one) and starts every peer; waits until all are ready. */
  static async start(opts: LocalClusterOptions): Promise<LocalCluster> {
    const dir = mkdtempSync(join(tmpdir(), 'lamport-cluster-'));
    if (opts.linkProxies === true && opts.configPath !== undefined) throw new Error('linkProxies needs a generated config, not configPath');
    const cluster = opts.configPath === undefined ? await LocalCluster.#generate(dir, opts) : await LocalCluster.#fromFile(dir, opts.configPath);
    cluster.#guard(opts);
    try {
      if (opts.linkProxies === true) await cluster.#proxyLinks();
      for (const p of cluster.peers) cluster.startPeer(p.id);
      await cluster.waitReady();
      await cluster.waitConnected();
    } catch (err) {
      await cluster.stop(); // The caller never gets the cluster: nothing may outlive the failure.
      throw err;
    }
    return cluster;
  }

  static async #generate(dir: string, opts: LocalClusterOptions): Promise<LocalCluster> {
    const peers: LocalPeer[] = [];
    for (let i = 0; i < opts.peers; i++) {
      const id = String.fromCharCode(97 + i);
      peers.push({ id, http: `127.0.0.1:${await freePort()}`, ws: `ws://127.0.0.1:${await freePort()}`, dataDir: join(dir, id), proc: null });
    }
    // A name and secret of its own: a peer of another local cluster (a test's leftover dialing
    // a port now reused) is refused at the handshake instead of joining this one.
    const name = `test-${randomBytes(4).toString('hex')}`;
    const config: Record<string, unknown> = { cluster: name, secret: randomBytes(16).toString('hex'), peers: peers.map(({ id, ws, http }) => ({ id, ws, http })) };
    if (opts.heartbeatMs !== undefined) config['heartbeat_ms'] = opts.heartbeatMs;
    if (opts.leaseMs !== undefined) config['lease_ms'] = opts.leaseMs;
    if (opts.evictMs !== undefined) config['evict_ms'] = opts.evictMs;
    const configPath = join(dir, 'cluster.json');
    writeFileSync(configPath, JSON.stringify(config, null, 2));
    return new LocalCluster(dir, configPath, peers, opts.logLevel ?? 'info');
  }

  /**
   * Starts one proxy per ordered pair and writes one config per peer in which every other
   * peer's `ws` is the proxy of that link (the file is otherwise the shared config).
   */
  async #proxyLinks(): Promise<void> {
    const shared = JSON.parse(readFileSync(this.configPath, 'utf8')) as { peers: Array<{ id: string; ws: string; http: string }> };
    for (const from of this.peers) {
      const peers = [];
      for (const to of this.peers) {
        if (to.id === from.id) {
          peers.push({ id: to.id, ws: to.ws, http: to.http });
          continue;
        }
        const proxy = await TcpProxy.start();
        proxy.target = Number(new URL(to.ws).port);
        this.#links.set(`${from.id}>${to.id}`, proxy);
        peers.push({ id: to.id, ws: `ws://127.0.0.1:${proxy.port}`, http: to.http });
      }
      const path = join(this.dir, `cluster-${from.id}.json`);
      writeFileSync(path, JSON.stringify({ ...shared, peers }, null, 2));
      this.#configs.set(from.id, path);
    }
  }

  /** The proxy of the ordered link `from` -> `to` (needs `linkProxies`). */
  link(from: string, to: string): TcpProxy {
    const proxy = this.#links.get(`${from}>${to}`);
    if (proxy === undefined) throw new Error(`no proxy for link ${from} -> ${to} (start the cluster with linkProxies)`);
    return proxy;
  }

  /** Whether the ordered link `from` -> `to` goes through a proxy (see `addHost` for which do not). */
  hasLink(from: string, to: string): boolean {
    return this.#links.has(`${from}>${to}`);
  }

  /** Every link proxy, as [from, to, proxy]. */
  links(): Array<[string, string, TcpProxy]> {
    return [...this.#links].map(([key, proxy]) => {
      const [from = '', to = ''] = key.split('>');
      return [from, to, proxy];
    });
  }

  /** The config file peer `id` is started with. */
  configOf(id: string): string {
    return this.#configs.get(id) ?? this.configPath;
  }

  /**
   * Gives peer `id` a config of its own, `mutate` of the one it has now (another order of the
   * peers, a peer left out, other timings): what an operator's edit on one host does. It takes
   * effect at that peer's next start.
   */
  rewriteConfig(id: string, mutate: (config: Record<string, unknown>) => Record<string, unknown>): void {
    const current = JSON.parse(readFileSync(this.configOf(id), 'utf8')) as Record<string, unknown>;
    const path = join(this.dir, `cluster-${id}.json`);
    writeFileSync(path, JSON.stringify(mutate(current), null, 2));
    this.#configs.set(id, path);
  }

  /**
   * A new host `id` for a running cluster (`lamport-lock member add`): its ports, its empty data
   * dir, and a config file of its own, the shared one with its entry added. Not started: start it
   * with `startPeer(id, { args: ['--join', ticket] })`. With `linkProxies`, its OUTGOING links go
   * through proxies of their own (`link(id, q)`, one for every host known, its config names them),
   * which carry its lease's echoes as a founder's do. The links TO it are not proxied: the running
   * peers dial it at the `ws` given to `member add` (their config files, read at their start, do
   * not name it), so faults cannot cut or stall q -> id.
   */
  async addHost(id: string): Promise<LocalPeer> {
    if (this.peers.some((p) => p.id === id)) throw new Error(`peer ${id} exists already`);
    const peer: LocalPeer = { id, http: `127.0.0.1:${await freePort()}`, ws: `ws://127.0.0.1:${await freePort()}`, dataDir: join(this.dir, id), proc: null };
    const others = [...this.peers];
    this.peers.push(peer);
    if (this.#links.size === 0) {
      this.rewriteConfig(id, (c) => ({ ...c, peers: [...(c['peers'] as unknown[]), { id, ws: peer.ws, http: peer.http }] }));
      return peer;
    }
    const entries: Array<{ id: string; ws: string; http: string }> = [];
    for (const to of others) {
      const proxy = await TcpProxy.start();
      proxy.target = Number(new URL(to.ws).port);
      this.#links.set(`${id}>${to.id}`, proxy);
      entries.push({ id: to.id, ws: `ws://127.0.0.1:${proxy.port}`, http: to.http });
    }
    this.rewriteConfig(id, (c) => ({ ...c, peers: [...entries, { id, ws: peer.ws, http: peer.http }] }));
    return peer;
  }

  static async #fromFile(dir: string, configPath: string): Promise<LocalCluster> {
    const { loadConfig } = await import('../config.js');
    const config = loadConfig(configPath, process.env);
    const peers = config.peers.map((p) => ({ id: p.id, http: p.http, ws: p.ws, dataDir: join(dir, p.id), proc: null }));
    return new LocalCluster(dir, configPath, peers, 'info');
  }

  /** The peer with this id. */
  peer(id: string): LocalPeer {
    const p = this.peers.find((x) => x.id === id);
    if (p === undefined) throw new Error(`no peer ${id}`);
    return p;
  }

  /** Base URL of a peer's HTTP API. */
  url(id: string): string {
    return `http://${this.peer(id).http}`;
  }

  /**
   * Starts (or restarts) one peer process; its log goes to <dir>/<id>.log. `extra.args`: flags
   * beyond every peer's; `extra.env`: more environment variables for it; `extra.bin`: another
   * build of lamport-peer to run (a rolling upgrade's next release), default this one's.
   */
  startPeer(id: string, extra: { readonly args?: readonly string[]; readonly env?: Readonly<Record<string, string>>; readonly bin?: string } = {}): void {
    const extraArgs = extra.args ?? [];
    const env = extra.env ?? {};
    const p = this.peer(id);
    const log = createWriteStream(join(this.dir, `${id}.log`), { flags: 'a' });
    const proc = spawn(process.execPath, [extra.bin ?? peerBinPath(), '--config', this.configOf(id), '--id', id, '--data-dir', p.dataDir, '--log-level', this.#logLevel, '--no-log-pretty', ...this.#peerArgs, ...extraArgs], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...env },
    });
    proc.stdout?.pipe(log);
    proc.stderr?.pipe(log);
    p.proc = proc;
  }

  /** Sends a signal to one peer and waits for it to exit (SIGKILL is kill -9). */
  async stopPeer(id: string, signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
    const p = this.peer(id);
    const proc = p.proc;
    if (proc === null) return null;
    p.proc = null;
    if (proc.exitCode !== null || proc.signalCode !== null) return proc.exitCode;
    const exited = new Promise<number | null>((res) => proc.once('exit', (code) => res(code)));
    proc.kill(signal);
    return exited;
  }

  /** Pauses (SIGSTOP) or resumes (SIGCONT) one peer. */
  signal(id: string, signal: 'SIGSTOP' | 'SIGCONT'): void {
    this.peer(id).proc?.kill(signal);
  }

  /** Waits until every running peer answers /readyz 200 (bounded). */
  async waitReady(timeoutMs = 30_000, ids: readonly string[] = this.peers.filter((p) => p.proc !== null).map((p) => p.id)): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (const id of ids) {
      for (;;) {
        const ok = await fetch(`${this.url(id)}/readyz`).then((r) => r.status === 200, () => false);
        if (ok) break;
        const proc = this.peer(id).proc;
        if (proc !== null && proc.exitCode !== null) throw new Error(`peer ${id} exited with ${proc.exitCode}; see ${join(this.dir, `${id}.log`)}`);
        if (Date.now() > deadline) throw new Error(`peer ${id} not ready within ${timeoutMs} ms; see ${join(this.dir, `${id}.log`)}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  }

  /**
   * Waits until every running peer reports a live link to every other running peer
   * (ready needs only a majority; tests that count on every link wait for this).
   */
  async waitConnected(timeoutMs = 30_000): Promise<void> {
    const running = new Set(this.peers.filter((p) => p.proc !== null).map((p) => p.id));
    const deadline = Date.now() + timeoutMs;
    for (const id of running) {
      for (;;) {
        const body = await fetch(`${this.url(id)}/v1/cluster`, { headers: this.#headers }).then((r) => r.json() as Promise<{ peers: Array<{ id: string; self?: boolean; connected?: boolean }> }>, () => null);
        if (body !== null && body.peers.every((p) => p.self === true || !running.has(p.id) || p.connected === true)) break;
        if (Date.now() > deadline) throw new Error(`peer ${id} did not connect to every running peer within ${timeoutMs} ms`);
        await new Promise((r) => setTimeout(r, 20));
      }
    }
  }

  /**
   * Stops every peer (SIGTERM, then SIGKILL after a bound), then the link proxies: they
   * are opened first so the peers' last releases get through.
   */
  async stop(): Promise<void> {
    for (const proxy of this.#links.values()) proxy.resume();
    await Promise.all(this.peers.map(async (p) => {
      const proc = p.proc;
      if (proc === null) return;
      proc.kill('SIGCONT');
      const kill = setTimeout(() => proc.kill('SIGKILL'), 5000);
      await this.stopPeer(p.id, 'SIGTERM');
      clearTimeout(kill);
    }));
    await Promise.all([...this.#links.values()].map((proxy) => proxy.close()));
    this.#links.clear();
  }
}
