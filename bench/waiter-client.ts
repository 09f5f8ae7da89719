/**
 * Child process of (f): holds many waiting acquire requests open, one socket each, so the
 * harness can go past one process's open-files limit by forking several of these. Talks to
 * its parent over the IPC channel: it reports `WaiterReport` once every request is sent,
 * and on `cancel` reports again (failures while waiting included), destroys them all and exits.
 */
import { request } from 'node:http';
import type { ClientRequest } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';

/** What the parent passes as argv[2], JSON-encoded. */
export interface WaiterPlan {
  /** HTTP ports of the peers on 127.0.0.1; waiter i goes to peer i mod the count. */
  readonly ports: readonly number[];
  /** Held locks; waiter i waits for lock i mod the count. */
  readonly locks: readonly string[];
  /** Global index of this child's first waiter, and how many it opens. */
  readonly first: number;
  readonly count: number;
  readonly timeoutMs: number;
  /** Requests this child has in flight at once; all children together stay under the peers' listen backlog. */
  readonly batchSize: number;
}

/** What the child reports to its parent. */
export interface WaiterReport {
  readonly opened: number;
  readonly failed: number;
  readonly firstFailure: string | null;
}

/** Time one batch may take to be sent. */
const batchDeadlineMs = 60_000;
/** Source addresses for waiter sockets (destination stays 127.0.0.1), to stay clear of one address's ephemeral ports. */
const sourceAddresses = ['127.0.0.1', '127.0.0.2', '127.0.0.3', '127.0.0.4'];

const requests: ClientRequest[] = [];
let opened = 0;
const failures: string[] = [];
let cancelled = false;

function fail(reason: string): void {
  if (!cancelled) failures.push(reason);
}

function open(plan: WaiterPlan, i: number): Promise<void> {
  const port = plan.ports[i % plan.ports.length] ?? 0;
  const lock = plan.locks[i % plan.locks.length] ?? '';
  const body = JSON.stringify({ timeout_ms: plan.timeoutMs, ttl_ms: 60_000 });
  return new Promise((resolve) => {
    const req = request({
      host: '127.0.0.1', port, method: 'POST', agent: false,
      localAddress: sourceAddresses[Math.floor(i / plan.ports.length) % sourceAddresses.length],
      path: `/v1/locks/${encodeURIComponent(lock)}/acquire`,
      headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
    });
    req.on('response', (res) => {
      fail(`answered ${res.statusCode ?? 0} while the lock was held`);
      res.resume();
    });
    req.on('error', (err) => {
      fail(err.message);
      resolve();
    });
    req.on('finish', () => {
      opened++;
      resolve();
    });
    requests.push(req);
    req.end(body);
  });
}

async function openAll(plan: WaiterPlan): Promise<void> {
  const batchSize = Math.max(1, plan.batchSize);
  for (let start = plan.first; start < plan.first + plan.count; start += batchSize) {
    const end = Math.min(plan.first + plan.count, start + batchSize);
    const sent: Promise<void>[] = [];
    for (let i = start; i < end; i++) sent.push(open(plan, i));
    await Promise.race([Promise.all(sent), sleep(batchDeadlineMs)]);
  }
}

function cancelAll(): void {
  cancelled = true;
  for (const req of requests) req.destroy();
  requests.length = 0;
}

async function main(): Promise<void> {
  const plan = JSON.parse(process.argv[2] ?? '{}') as WaiterPlan;
  if (process.send === undefined) throw new Error('waiter-client must be started with an IPC channel');
  process.on('message', (msg: unknown) => {
    if (msg !== 'cancel') return;
    const final: WaiterReport = { opened, failed: failures.length, firstFailure: failures[0] ?? null };
    cancelAll();
    process.send?.(final, () => process.exit(0));
  });
  process.on('disconnect', () => {
    cancelAll();
    process.exit(0);
  });
  await openAll(plan);
  const report: WaiterReport = { opened, failed: failures.length, firstFailure: failures[0] ?? null };
  process.send(report);
}

main().catch((err: unknown) => {
  process.stderr.write(`waiter-client: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
