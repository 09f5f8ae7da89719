#!/usr/bin/env node
/**
 * `npm run demo`: the three peers of cluster.example.json as separate processes, workers
 * contending for a few locks through all three, live progress, then a check of the whole
 * run for overlapping holds and token order. Stops everything it started.
 */
import { performance } from 'node:perf_hooks';
import { resolve } from 'node:path';
import yargs from 'yargs';
import { hideBin } from 'yargs/helpers';
import { LockClient, LockError } from '../src/client/lock-client.js';
import { exitCodes, parseDuration } from '../src/client/cli-support.js';
import { checkHistory } from '../src/tools/history-check.js';
import type { HoldRecord } from '../src/tools/history-check.js';
import { LocalCluster } from '../src/tools/local-cluster.js';

const argv = yargs(hideBin(process.argv))
  .scriptName('demo')
  .option('duration', { type: 'string', default: '15s', coerce: (s: string) => parseDuration(s), describe: 'how long workers run, e.g. 15s, 2m (Ctrl-C stops early)' })
  .option('workers', { type: 'number', default: 9, describe: 'workers, spread over the peers' })
  .option('config', { type: 'string', default: 'cluster.example.json' })
  .check((a) => {
    if (!Number.isInteger(a.workers) || a.workers < 1 || a.workers > 1000) throw new Error('--workers must be a whole number from 1 to 1000');
    return true;
  })
  .strict()
  // A bad flag gets one sentence and exit 64 (EX_USAGE), as lamport-lock does; no stack trace.
  .fail((msg, err) => {
    process.stderr.write(`demo: ${err?.message ?? msg}\nTry npm run demo -- --help\n`);
    process.exit(exitCodes.usage);
  })
  .parseSync();

const locks = [
  { name: 'orders', mode: 'exclusive' as const },
  { name: 'billing', mode: 'exclusive' as const },
  { name: 'reports', mode: 'shared' as const },
  { name: 'uploads', mode: 'semaphore' as const, limit: 2 },
];

interface Stats {
  grants: Map<string, number>;
  history: HoldRecord[];
  timeouts: number;
}

async function worker(n: number, peerUrl: string, peerId: string, stats: Stats, stopAt: { t: number }): Promise<void> {
  const client = new LockClient({ peer: peerUrl });
  while (performance.now() < stopAt.t) {
    const lock = locks[(n + stats.history.length) % locks.length] ?? locks[0];
    if (lock === undefined) break;
    try {
      const hold = await client.acquire(lock.name, {
        timeoutMs: 5000, ttlMs: 10_000, owner: `worker-${n}@${peerId}`,
        ...(lock.mode === 'shared' ? { mode: 'shared' as const } : {}), ...(lock.mode === 'semaphore' ? { limit: lock.limit } : {}),
      });
      const start = performance.now();
      await new Promise((r) => setTimeout(r, 1 + Math.random() * 4));
      const end = performance.now();
      await client.release(lock.name, hold.id);
      stats.grants.set(peerId, (stats.grants.get(peerId) ?? 0) + 1);
      stats.history.push({ lock: lock.name, token: hold.token, mode: lock.mode, limit: lock.mode === 'semaphore' ? lock.limit : 1, permits: 1, start, end, who: `worker-${n}` });
    } catch (err) {
      if (!(err instanceof LockError)) throw err;
      stats.timeouts += 1;
    }
  }
  client.close();
}

async function progress(cluster: LocalCluster, stats: Stats, last: Map<string, number>): Promise<void> {
  const rates = cluster.peers.map((p) => {
    const now = stats.grants.get(p.id) ?? 0;
    const rate = now - (last.get(p.id) ?? 0);
    last.set(p.id, now);
    return `${p.id}: ${String(rate).padStart(4)}/s`;
  });
  const body = (await fetch(`${cluster.url(cluster.peers[0]?.id ?? 'a')}/v1/locks`).then((r) => r.json())) as { locks: Array<{ name: string; holders: Array<{ owner: string; token: string }>; waiters: unknown[] }> };
  const holders = body.locks.map((l) => `${l.name}=${l.holders.map((h) => h.owner).join('+') || '-'} (${l.waiters.length} waiting)`).join('  ');
  process.stdout.write(`grants ${rates.join('  ')} | ${holders}\n`);
}

async function main(): Promise<number> {
  const durationMs = argv.duration;
  process.stdout.write(`starting 3 peers from ${argv.config} ...\n`);
  const cluster = await LocalCluster.start({ peers: 3, configPath: resolve(argv.config) });
  const stats: Stats = { grants: new Map(), history: [], timeouts: 0 };
  const stopAt = { t: performance.now() + durationMs };
  process.on('SIGINT', () => {
    stopAt.t = 0;
  });
  process.stdout.write(`peers ready: ${cluster.peers.map((p) => `${p.id} http://${p.http}`).join(', ')}; ${argv.workers} workers for ${durationMs / 1000}s (Ctrl-C stops early)\n`);
  const last = new Map<string, number>();
  const ticker = setInterval(() => void progress(cluster, stats, last).catch(() => undefined), 1000);
  const workers = Array.from({ length: argv.workers }, (_, n) => {
    const peer = cluster.peers[n % cluster.peers.length];
    if (peer === undefined) throw new Error('no peers');
    return worker(n, cluster.url(peer.id), peer.id, stats, stopAt);
  });
  try {
    await Promise.all(workers);
  } finally {
    clearInterval(ticker);
    await cluster.stop();
  }
  const violations = checkHistory(stats.history);
  const perPeer = cluster.peers.map((p) => `${p.id}=${stats.grants.get(p.id) ?? 0}`).join(' ');
  process.stdout.write(`\nsummary: ${stats.history.length} holds (${perPeer}), ${stats.timeouts} timeouts, ${violations.length} violations (overlapping holds or tokens out of order)\n`);
  for (const v of violations.slice(0, 20)) process.stdout.write(`  ${v}\n`);
  process.stdout.write(`peer logs: ${cluster.dir}\n`);
  return violations.length === 0 && stats.history.length > 0 ? 0 : 1;
}

main().then((code) => process.exit(code), (err: unknown) => {
  process.stderr.write(`demo failed: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
