/**
 * A second `lamport-peer` process started with the id of a live peer (issue 12, defect 1):
 * what two processes started with one `--id`, or a rollout that starts the new copy before
 * stopping the old, look like to the cluster. The twin listens on ports of its own (two
 * processes cannot bind one port) and has a fresh data dir of its own, as on a second host;
 * the other peers are named exactly as in the original's config, so it dials them through
 * the original's link proxies and announces itself as a newer incarnation of that id.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { createWriteStream, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort, peerBinPath } from '../../src/tools/local-cluster.js';
import type { LocalCluster } from '../../src/tools/local-cluster.js';

interface PeerEntry {
  readonly id: string;
  ws: string;
  http: string;
}

/** A running twin; `stop` kills it (kill -9, like a replaced process that never shut down). */
export class TwinPeer {
  readonly id: string;
  readonly #proc: ChildProcess;

  private constructor(id: string, proc: ChildProcess) {
    this.id = id;
    this.#proc = proc;
  }

  /** Starts a twin of peer `id` of `cluster`; its log goes to <dir>/<id>-twin.log. */
  static async start(cluster: LocalCluster, id: string): Promise<TwinPeer> {
    const config = JSON.parse(readFileSync(cluster.configOf(id), 'utf8')) as { peers: PeerEntry[] };
    const self = config.peers.find((p) => p.id === id);
    if (self === undefined) throw new Error(`no peer ${id} in ${cluster.configOf(id)}`);
    self.ws = `ws://127.0.0.1:${await freePort()}`;
    self.http = `127.0.0.1:${await freePort()}`;
    const configPath = join(cluster.dir, `cluster-${id}-twin.json`);
    writeFileSync(configPath, JSON.stringify(config, null, 2));
    const dataDir = join(cluster.dir, `${id}-twin`);
    rmSync(dataDir, { recursive: true, force: true }); // Every twin starts as a fresh host would.
    const log = createWriteStream(join(cluster.dir, `${id}-twin.log`), { flags: 'a' });
    const proc = spawn(process.execPath, [peerBinPath(), '--config', configPath, '--id', id, '--data-dir', dataDir, '--log-level', 'info', '--no-log-pretty'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    proc.stdout?.pipe(log);
    proc.stderr?.pipe(log);
    return new TwinPeer(id, proc);
  }

  /** Kills the twin and waits for it to exit. */
  async stop(): Promise<void> {
    if (this.#proc.exitCode !== null || this.#proc.signalCode !== null) return;
    const exited = new Promise<void>((res) => this.#proc.once('exit', () => res()));
    this.#proc.kill('SIGKILL');
    await exited;
  }
}
