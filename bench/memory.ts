/**
 * (f) Peer memory: RSS (VmRSS of /proc/PID/status) of each peer of a fresh 3-peer
 * cluster at rest, after many distinct lock names were acquired and released once, and
 * while many requests wait behind held locks. A waiting HTTP request is an open request
 * on its own socket (the API has no other way to wait), so the client needs one file
 * descriptor per waiter, the peers one per local waiter; the harness raises the limit
 * with prlimit where it may and measures with as many waiters as the limit allows.
 */
import { request } from 'node:http';
import type { ClientRequest } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { call } from './http-json.js';
import { fileLimitOf, rssBytesOf, waitUntil } from './procs.js';
import { nowMs } from './stats.js';
import type { LamportCluster, PeerHandle } from './systems/lamport.js';
import type { Grant, LockSession } from './systems/types.js';

/** Sizes of (f). */
export interface MemorySizes {
  readonly idleNames: number;
  readonly waiters: number;
  readonly heldLocks: number;
}

/** RSS of every peer, in bytes, at one moment. */
export type RssSample = Readonly<Record<string, number | null>>;

/** What (f) measured. */
export interface MemoryFigures {
  readonly baseline: RssSample;
  readonly idleNames: number;
  readonly idleNamesDurationMs: number;
  readonly afterIdleNames: RssSample;
  readonly waitersAsked: number;
  readonly waitersOpened: number;
  /** Waiters the peers report in `GET /v1/locks/{name}`, or null when not observable. */
  readonly waitersSeen: number | null;
  readonly waitersFailed: number;
  readonly heldLocks: number;
  readonly whileWaiting: RssSample;
  readonly afterCancel: RssSample;
  readonly notes: readonly string[];
}

/** Time the client gives one batch of waiters to be sent. */
const batchDeadlineMs = 60_000;
/** Waiters opened at once. */
const batchSize = 2000;
/** Waiting requests ask for this long a wait; they are cancelled well before. */
const waiterTimeoutMs = 3_600_000;
/** Polls of an unchanged waiter count after which it is taken as settled. */
const settleStablePolls = 5;
/** File descriptors the client keeps for everything but waiters. */
const fdReserve = 2000;
/** Source addresses for waiter sockets (destination stays 127.0.0.1), past the ephemeral port range of one. */
const sourceAddresses = ['127.0.0.1', '127.0.0.2', '127.0.0.3', '127.0.0.4'];

/** RSS of every peer now. */
export function sampleRss(peers: readonly PeerHandle[]): RssSample {
  return Object.fromEntries(peers.map((p) => [p.id, rssBytesOf(p.proc.pid)]));
}

/** Runs (f) against a fresh cluster. */
export async function measureMemory(cluster: LamportCluster, sizes: MemorySizes): Promise<MemoryFigures> {
  const notes: string[] = [];
  await sleep(1000);
  const baseline = sampleRss(cluster.peers);
  const t0 = nowMs();
  await acquireDistinctNames(cluster, sizes.idleNames);
  const idleNamesDurationMs = nowMs() - t0;
  await sleep(1000);
  const afterIdleNames = sampleRss(cluster.peers);
  const fdLimit = Math.min(fileLimitOf(process.pid), ...cluster.peers.map((p) => fileLimitOf(p.proc.pid) * cluster.peers.length));
  const waitersAsked = Math.min(sizes.waiters, Math.max(0, fdLimit - fdReserve));
  if (waitersAsked < sizes.waiters) notes.push(`open-files limit ${fdLimit} allows only ${waitersAsked} of ${sizes.waiters} waiting requests (one socket each)`);
  const waiting = await holdWaiters(cluster, { waiters: waitersAsked, heldLocks: sizes.heldLocks }, notes);
  return { baseline, idleNames: sizes.idleNames, idleNamesDurationMs, afterIdleNames, waitersAsked, heldLocks: sizes.heldLocks, notes, ...waiting };
}

async function acquireDistinctNames(cluster: LamportCluster, count: number): Promise<void> {
  const workers = 64;
  const sessions = await Promise.all(Array.from({ length: workers }, (_, w) => cluster.openSession(w)));
  let next = 0;
  const worker = async (session: LockSession): Promise<void> => {
    for (let i = next++; i < count; i = next++) {
      const grant = await session.acquire(`bench-f-idle-${i}`, 20_000);
      await session.release(grant);
    }
  };
  await Promise.all(sessions.map(worker));
}

interface WaitingResult {
  readonly waitersOpened: number;
  readonly waitersSeen: number | null;
  readonly waitersFailed: number;
  readonly whileWaiting: RssSample;
  readonly afterCancel: RssSample;
}

async function holdWaiters(cluster: LamportCluster, opts: { waiters: number; heldLocks: number }, notes: string[]): Promise<WaitingResult> {
  const holder = await cluster.openSession(0);
  const locks = Array.from({ length: opts.heldLocks }, (_, i) => `bench-f-held-${i}`);
  const held: Grant[] = [];
  for (const lock of locks) held.push(await holder.acquire(lock, 20_000));
  const pool = new WaiterPool(cluster.peers);
  try {
    for (let start = 0; start < opts.waiters; start += batchSize) {
      const end = Math.min(opts.waiters, start + batchSize);
      await pool.openBatch(start, end, (i) => locks[i % locks.length] ?? 'bench-f-held-0');
    }
    const waitersSeen = await settleWaiters(cluster.peers[0], locks, pool.opened, notes);
    const whileWaiting = sampleRss(cluster.peers);
    pool.cancelAll();
    await settleWaiters(cluster.peers[0], locks, 0, []);
    await sleep(1000);
    const afterCancel = sampleRss(cluster.peers);
    if (pool.failures.length > 0) notes.push(`first waiter failure: ${pool.failures[0]}`);
    return { waitersOpened: pool.opened, waitersSeen, waitersFailed: pool.failures.length, whileWaiting, afterCancel };
  } finally {
    pool.cancelAll();
    for (const g of held) await holder.release(g).catch(() => undefined);
  }
}

/**
 * Waits until the peer reports `expected` waiters over `locks`, or until the count has not
 * moved for a few polls (bounded), and returns what it saw last.
 */
async function settleWaiters(peer: PeerHandle | undefined, locks: readonly string[], expected: number, notes: string[]): Promise<number | null> {
  if (peer === undefined) return null;
  let seen: number | null = null;
  let stablePolls = 0;
  await waitUntil(async () => {
    const previous = seen;
    seen = await countWaiters(peer, locks);
    stablePolls = seen === previous ? stablePolls + 1 : 0;
    return seen === null || seen === expected || stablePolls >= settleStablePolls;
  }, 60_000, 1000);
  if (seen === null) {
    notes.push('GET /v1/locks/{name} shows no `waiters` array: waiter count not observable; measured 5 s after the last request was sent');
    await sleep(5000);
  } else if (seen !== expected) {
    notes.push(`peer a reports ${seen} waiters where ${expected} were expected`);
  }
  return seen;
}

async function countWaiters(peer: PeerHandle, locks: readonly string[]): Promise<number | null> {
  let total = 0;
  for (const lock of locks) {
    const answer = await call(peer.ep, { method: 'GET', path: `/v1/locks/${encodeURIComponent(lock)}`, deadlineMs: 30_000 });
    if (typeof answer.body !== 'object' || answer.body === null) return null;
    const waiters = (answer.body as Record<string, unknown>)['waiters'];
    if (!Array.isArray(waiters)) return null;
    total += waiters.length;
  }
  return total;
}

/** Open waiting requests, one socket each, spread over the peers. */
class WaiterPool {
  readonly requests: ClientRequest[] = [];
  readonly failures: string[] = [];
  opened = 0;
  private cancelled = false;

  constructor(private readonly peers: readonly PeerHandle[]) {}

  /** Opens waiters number `start` to `end - 1` and waits until each is sent or failed. */
  async openBatch(start: number, end: number, lockOf: (i: number) => string): Promise<void> {
    const sent: Promise<void>[] = [];
    for (let i = start; i < end; i++) sent.push(this.open(i, lockOf(i)));
    await Promise.race([Promise.all(sent), sleep(batchDeadlineMs)]);
  }

  cancelAll(): void {
    this.cancelled = true;
    for (const req of this.requests) req.destroy();
    this.requests.length = 0;
  }

  private open(i: number, lock: string): Promise<void> {
    const peer = this.peers[i % this.peers.length];
    if (peer === undefined) return Promise.resolve();
    const body = JSON.stringify({ timeout_ms: waiterTimeoutMs, ttl_ms: 60_000 });
    return new Promise((resolve) => {
      const req = request({
        host: '127.0.0.1', port: peer.ep.port, method: 'POST', agent: false,
        localAddress: sourceAddresses[Math.floor(i / this.peers.length) % sourceAddresses.length],
        path: `/v1/locks/${encodeURIComponent(lock)}/acquire`,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      });
      req.on('response', (res) => {
        this.fail(`answered ${res.statusCode ?? 0} while the lock was held`);
        res.resume();
      });
      req.on('error', (err) => {
        this.fail(err.message);
        resolve();
      });
      req.on('finish', () => {
        this.opened++;
        resolve();
      });
      this.requests.push(req);
      req.end(body);
    });
  }

  private fail(reason: string): void {
    if (!this.cancelled) this.failures.push(reason);
  }
}
