/**
 * Failover time (issues 5 and 15): from kill -9 of a peer holding a lock to the first grant
 * of that lock on the majority side, 5 times each with the config's defaults and the
 * shorter timings of the fault tests; then, with the defaults, the way back from a partition:
 * one peer of three cut off both ways for `--partition-ms` (6 s, past its eviction), and the
 * time from the heal until it is ready again (`/readyz` 200). Run after a build:
 * `npm run failover-time [-- --trials 5 --timings default|all --partition-ms 6000]` (0 skips
 * the partitions); prints every trial and the medians.
 * For comparison: etcd's default session TTL leaves a crashed holder's lock blocked for
 * 60 s, Consul's lock-delay is 15 s.
 */
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { timingDefaults } from '../../src/config.js';
import { LocalCluster } from '../../src/tools/local-cluster.js';
import { waitFor } from '../support/wait.js';

interface Timings {
  readonly name: string;
  readonly heartbeatMs: number;
  readonly leaseMs: number;
  readonly evictMs: number;
}

const defaults: Timings = { name: `default (heartbeat ${timingDefaults.heartbeatMs}, lease ${timingDefaults.leaseMs}, evict ${timingDefaults.evictMs})`, ...timingDefaults };
const timingSets: readonly Timings[] = [
  defaults,
  { name: 'fault tests (heartbeat 100, lease 1000, evict 3000)', heartbeatMs: 100, leaseMs: 1000, evictMs: 3000 },
];

async function post(url: string, body: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(url, { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** A check against a peer that may not answer yet (it is restarting): no answer is a no. */
function orFalse(check: () => Promise<boolean>): () => Promise<boolean> {
  return () => check().catch(() => false);
}

async function getJson(url: string): Promise<Record<string, unknown>> {
  return (await (await fetch(url)).json()) as Record<string, unknown>;
}

/** One trial: `victim` holds, `waiter` waits, the victim is killed; ms until the waiter's grant. */
async function trial(cluster: LocalCluster, victim: string, waiter: string, lock: string, t: Timings): Promise<number> {
  const held = await post(`${cluster.url(victim)}/v1/locks/${lock}/acquire`, { ttl_ms: 600_000 });
  if (held.status !== 200) throw new Error(`holder's acquire answered ${held.status}`);
  const waiting = post(`${cluster.url(waiter)}/v1/locks/${lock}/acquire`, { timeout_ms: 10 * t.evictMs, ttl_ms: 60_000 });
  await waitFor('the waiter queued', orFalse(async () => ((await getJson(`${cluster.url(waiter)}/v1/locks/${lock}`))['waiters'] as unknown[]).length === 1), 10_000);
  const killedAt = performance.now();
  await cluster.stopPeer(victim, 'SIGKILL');
  const got = await waiting;
  const elapsedMs = performance.now() - killedAt;
  if (got.status !== 200) throw new Error(`waiter's acquire answered ${got.status} ${JSON.stringify(got.body)}`);
  await post(`${cluster.url(waiter)}/v1/locks/${lock}/release`, { id: got.body['id'] });
  cluster.startPeer(victim);
  await cluster.waitReady(10 * t.evictMs);
  await waitFor(`${victim} back in ${waiter}'s view`, orFalse(async () => {
    const peers = (await getJson(`${cluster.url(waiter)}/v1/cluster`))['peers'] as Array<Record<string, unknown>>;
    return peers.find((p) => p['id'] === victim)?.['evicted'] === false;
  }), 10 * t.evictMs);
  return elapsedMs;
}

/** One partition trial: `cut` loses every link both ways for `partitionMs`; ms from the heal until it is ready. */
async function partitionTrial(cluster: LocalCluster, cut: string, partitionMs: number): Promise<number> {
  const links = cluster.peers.filter((p) => p.id !== cut).flatMap((p) => [cluster.link(cut, p.id), cluster.link(p.id, cut)]);
  for (const l of links) l.block();
  await waitFor(`${cut} not ready`, orFalse(async () => (await fetch(`${cluster.url(cut)}/readyz`)).status !== 200), partitionMs);
  await new Promise((resolve) => setTimeout(resolve, partitionMs));
  const healedAt = performance.now();
  for (const l of links) l.resume();
  await waitFor(`${cut} ready again`, orFalse(async () => (await fetch(`${cluster.url(cut)}/readyz`)).status === 200), 30_000, 5);
  const ms = performance.now() - healedAt;
  await cluster.waitReady(30_000);
  return ms;
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? (s[mid] ?? 0) : ((s[mid - 1] ?? 0) + (s[mid] ?? 0)) / 2;
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { trials: { type: 'string', default: '5' }, peers: { type: 'string', default: '5' }, timings: { type: 'string', default: 'all' }, 'partition-ms': { type: 'string', default: '6000' } } });
  const trials = Number(values.trials);
  const peers = Number(values.peers);
  if (values.timings !== 'all' && values.timings !== 'default') throw new Error('--timings takes default or all');
  const medians: string[] = [];
  for (const t of values.timings === 'all' ? timingSets : [defaults]) {
    const cluster = await LocalCluster.start({ peers, heartbeatMs: t.heartbeatMs, leaseMs: t.leaseMs, evictMs: t.evictMs });
    try {
      const times: number[] = [];
      for (let i = 0; i < trials; i++) {
        const victim = cluster.peers[i % peers]?.id ?? 'a';
        const waiter = cluster.peers[(i + 1) % peers]?.id ?? 'b';
        const ms = await trial(cluster, victim, waiter, `failover-${i}`, t);
        times.push(ms);
        process.stdout.write(`${t.name}: trial ${i + 1}: kill -9 of ${victim} (holder) to the grant on ${waiter}: ${ms.toFixed(0)} ms\n`);
      }
      medians.push(`${t.name}: median ${median(times).toFixed(0)} ms over ${trials} trials (min ${Math.min(...times).toFixed(0)}, max ${Math.max(...times).toFixed(0)}), ${peers} peers`);
    } finally {
      await cluster.stop();
    }
  }
  process.stdout.write(`\nkill -9 of the holder to the first grant on the majority side:\n${medians.join('\n')}\n`);
  const partitionMs = Number(values['partition-ms']);
  if (partitionMs > 0) await partitions(trials, partitionMs);
}

async function partitions(trials: number, partitionMs: number): Promise<void> {
  const cluster = await LocalCluster.start({ peers: 3, ...timingDefaults, linkProxies: true });
  try {
    await cluster.waitReady(30_000);
    const times: number[] = [];
    for (let i = 0; i < trials; i++) {
      const cut = cluster.peers[i % 3]?.id ?? 'a';
      const ms = await partitionTrial(cluster, cut, partitionMs);
      times.push(ms);
      process.stdout.write(`${defaults.name}: partition trial ${i + 1}: ${cut} cut off for ${partitionMs} ms, ready again ${ms.toFixed(0)} ms after the heal\n`);
    }
    process.stdout.write(`\nheal of a ${partitionMs} ms partition to the cut-off peer ready again, ${defaults.name}: median ${median(times).toFixed(0)} ms over ${trials} trials (min ${Math.min(...times).toFixed(0)}, max ${Math.max(...times).toFixed(0)}), 3 peers\n`);
  } finally {
    await cluster.stop();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`failover-time: ${(err as Error).stack ?? String(err)}\n`);
  process.exitCode = 1;
});
