/**
 * Strangers on the peer port (issue 37, point 3): how long a restarted peer takes to be ready
 * again, and whether a healthy peer whose links are reset is evicted, with and without a
 * client that holds connections to every peer port open without ever saying hello
 * (bench/flood-client.ts, a process of its own). Three peers at the config's default
 * timings, every peer link through a TCP proxy so that one peer's links can be reset.
 *
 *   npm run bench:flood [-- --trials 3 --keep 600]
 *
 * Per trial: kill -9 of peer c and its restart, ms until its /readyz answers 200; then every
 * link of peer a reset at once (its proxies cut every connection), whether a was evicted
 * (its log says it rejoins) or lost its lease within the next 3 s.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { LocalCluster } from '../src/tools/local-cluster.js';

const { values } = parseArgs({ options: { trials: { type: 'string', default: '3' }, keep: { type: 'string', default: '600' } } });
const trials = Number(values.trials);

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function readyMs(cluster: LocalCluster, id: string, timeoutMs: number): Promise<number> {
  const started = performance.now();
  for (;;) {
    const ok = await fetch(`${cluster.url(id)}/readyz`).then((r) => r.status === 200, () => false);
    if (ok) return performance.now() - started;
    if (performance.now() - started > timeoutMs) return Number.POSITIVE_INFINITY;
    await sleep(20);
  }
}

/** Lines of a peer's log matching `pattern`. */
function countLog(cluster: LocalCluster, id: string, pattern: RegExp): number {
  return readFileSync(join(cluster.dir, `${id}.log`), 'utf8').split('\n').filter((l) => pattern.test(l)).length;
}

async function trial(cluster: LocalCluster): Promise<{ rejoinMs: number; evicted: boolean; leaseLost: boolean }> {
  await cluster.stopPeer('c', 'SIGKILL');
  cluster.startPeer('c');
  const rejoinMs = await readyMs(cluster, 'c', 30_000);
  await cluster.waitReady(30_000);
  const evictedBefore = countLog(cluster, 'a', /rejoining as a new incarnation/);
  const lostBefore = countLog(cluster, 'a', /"valid":false/);
  for (const [from, to, proxy] of cluster.links()) if (from === 'a' || to === 'a') proxy.killAll();
  await sleep(3000);
  await cluster.waitReady(30_000);
  return { rejoinMs, evicted: countLog(cluster, 'a', /rejoining as a new incarnation/) > evictedBefore, leaseLost: countLog(cluster, 'a', /"valid":false/) > lostBefore };
}

function startFlood(cluster: LocalCluster): ChildProcess {
  const client = fileURLToPath(new URL('./flood-client.js', import.meta.url));
  const ports = cluster.peers.map((p) => new URL(p.ws).port);
  const child = spawn(process.execPath, [client, '--keep', String(values.keep), '--seconds', '3600', ...ports], { stdio: ['ignore', 'pipe', 'inherit'] });
  child.stdout?.resume();
  return child;
}

const median = (xs: number[]): number => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)] ?? Number.NaN;

async function main(): Promise<void> {
  for (const flood of [false, true]) {
    const cluster = await LocalCluster.start({ peers: 3, linkProxies: true });
    const flooder = flood ? startFlood(cluster) : null;
    try {
      if (flooder !== null) await sleep(2000);
      const results = [];
      for (let t = 0; t < trials; t++) results.push(await trial(cluster));
      const label = flood ? `with a stranger holding ${values.keep} connections to each peer port` : 'without strangers';
      const rejoin = results.map((r) => r.rejoinMs);
      process.stdout.write(`${label}: restart to ready ${rejoin.map((x) => Math.round(x)).join(', ')} ms (median ${Math.round(median(rejoin))}); ` +
        `a evicted after its links were reset in ${results.filter((r) => r.evicted).length} of ${trials}, lost its lease in ${results.filter((r) => r.leaseLost).length} of ${trials}\n`);
    } finally {
      flooder?.kill('SIGKILL');
      await cluster.stop();
    }
  }
}

await main();
