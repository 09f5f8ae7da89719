/**
 * Issue 37 point 2: what watch streams cost a peer, on real processes. A 3-peer LocalCluster;
 * lock `hot` held on peer a and `--waiters` requests waiting for it there (forked
 * waiter-clients, one socket each); then `--watchers` streams `GET /v1/watch?prefix=` on a,
 * read and dropped. Reports, over `--seconds`: lease losses ("no lease" lines) and rejoins
 * after an eviction ("rejoining" lines) in every peer's log, and peer a's CPU (user+sys from
 * /proc) per second of wall time. Run after `npm run build`:
 *   node dist/bench/watch-load.js --waiters 40000 --watchers 64 --seconds 30
 *   node dist/bench/watch-load.js --waiters 8000 --watchers 1 --seconds 20   (and --watchers 0)
 */
import { fork } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { request } from 'node:http';
import type { ClientRequest } from 'node:http';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { LocalCluster } from '../src/tools/local-cluster.js';
import type { WaiterPlan, WaiterReport } from './waiter-client.js';

const { values } = parseArgs({ options: { waiters: { type: 'string', default: '40000' }, watchers: { type: 'string', default: '64' }, seconds: { type: 'string', default: '30' } } });
const waiters = Number(values.waiters);
const watchers = Number(values.watchers);
const seconds = Number(values.seconds);
const perChild = 9000;

function post(base: string, path: string, body: unknown): Promise<Record<string, unknown>> {
  return fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }).then((r) => r.json() as Promise<Record<string, unknown>>);
}

function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return (Number(fields[11]) + Number(fields[12])) / 100; // utime + stime, in clock ticks of 1/100 s
}

function linesWith(cluster: LocalCluster, text: string): number {
  let n = 0;
  for (const id of ['a', 'b', 'c']) n += readFileSync(join(cluster.dir, `${id}.log`), 'utf8').split('\n').filter((l) => l.includes(text)).length;
  return n;
}

function openWatch(base: string): ClientRequest {
  const req = request(`${base}/v1/watch?prefix=`, { agent: false }, (res) => res.resume());
  req.on('error', () => undefined);
  req.end();
  return req;
}

async function forkWaiters(port: number): Promise<ChildProcess[]> {
  const script = fileURLToPath(new URL('./waiter-client.js', import.meta.url));
  const children: ChildProcess[] = [];
  const reports: Promise<WaiterReport>[] = [];
  for (let first = 0; first < waiters; first += perChild) {
    const plan: WaiterPlan = { ports: [port], locks: ['hot'], first, count: Math.min(perChild, waiters - first), timeoutMs: 600_000, batchSize: 200 };
    const child = fork(script, [JSON.stringify(plan)], { stdio: 'ignore' });
    children.push(child);
    reports.push(new Promise((resolve) => child.once('message', (m) => resolve(m as WaiterReport))));
  }
  const done = await Promise.all(reports);
  process.stdout.write(`waiters opened: ${done.reduce((s, r) => s + r.opened, 0)}, failed: ${done.reduce((s, r) => s + r.failed, 0)}\n`);
  return children;
}

async function main(): Promise<void> {
  const cluster = await LocalCluster.start({ peers: 3, logLevel: 'info' });
  try {
    await cluster.waitReady();
    const a = cluster.url('a');
    const held = await post(a, '/v1/locks/hot/acquire', { ttl_ms: 3_600_000 });
    if (typeof held['id'] !== 'string') throw new Error(`no hold: ${JSON.stringify(held)}`);
    const children = await forkWaiters(Number(new URL(a).port));
    await sleep(3000);
    const pid = cluster.peer('a').proc?.pid ?? 0;
    const lost0 = linesWith(cluster, '"msg":"no lease');
    const rejoin0 = linesWith(cluster, 'rejoining as a new incarnation');
    const streams = Array.from({ length: watchers }, () => openWatch(a));
    const cpu0 = cpuSeconds(pid);
    const t0 = performance.now();
    await sleep(seconds * 1000);
    const cpu = (cpuSeconds(pid) - cpu0) / ((performance.now() - t0) / 1000);
    process.stdout.write(`waiters ${waiters}, watchers ${watchers}, ${seconds} s: lease losses ${linesWith(cluster, '"msg":"no lease') - lost0}, rejoins after eviction ${linesWith(cluster, 'rejoining as a new incarnation') - rejoin0}, peer a CPU ${(cpu * 100).toFixed(1)}%\n`);
    for (const s of streams) s.destroy();
    for (const c of children) c.kill();
  } finally {
    await cluster.stop();
  }
}

await main();
