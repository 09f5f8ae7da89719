/**
 * (f) Peer memory: RSS (VmRSS of /proc/PID/status) of each peer of a fresh 3-peer
 * cluster at rest, after many distinct lock names were acquired and released once, and
 * while many requests wait behind held locks. A waiting HTTP request is an open request
 * on its own socket (the API has no other way to wait), so the client needs one file
 * descriptor per waiter and each peer one per local waiter. The client side is split over
 * forked waiter-client processes, each within its own open-files limit; the peers' limit
 * is raised with prlimit where that is permitted, and otherwise bounds the waiters, which
 * the report then says.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { call } from './http-json.js';
import { fileLimitOf, logTail, rssBytesOf, waitUntil } from './procs.js';
import type { Proc, ProcessGroup } from './procs.js';
import { nowMs } from './stats.js';
import { lamportSession, sumCounters } from './systems/lamport.js';
import type { LamportCluster, PeerHandle } from './systems/lamport.js';
import type { Grant, LockSession } from './systems/types.js';
import type { WaiterPlan, WaiterReport } from './waiter-client.js';

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

/** Waiting requests ask for this long a wait; they are cancelled well before. */
const waiterTimeoutMs = 3_600_000;
/** TTL of the held locks the waiters queue behind: longer than the whole measurement. */
const heldTtlMs = 3_600_000;
/** Local waiting requests of one peer (a gauge of the daemon's /metrics). */
const waitersGauge = 'lamport_lock_waiters';
/** Polls of an unchanged waiter count after which it is taken as settled. */
const settleStablePolls = 5;
/** File descriptors a process keeps for everything but waiters (links, logs, keep-alive sockets). */
const fdReserve = 1000;
/**
 * Connections in flight to one peer at once, over all waiter-clients: below Node's default
 * listen backlog (511), past which SYNs are dropped and retried a second or more later.
 */
const connectsInFlightPerPeer = 200;
/** How long the waiter-client children may take to send everything. */
const openDeadlineMs = 300_000;

/** RSS of every peer now. */
export function sampleRss(peers: readonly PeerHandle[]): RssSample {
  return Object.fromEntries(peers.map((p) => [p.id, rssBytesOf(p.proc.pid)]));
}

/** Runs (f) against a fresh cluster. */
export async function measureMemory(group: ProcessGroup, cluster: LamportCluster, sizes: MemorySizes): Promise<MemoryFigures> {
  const notes: string[] = [];
  await sleep(1000);
  const baseline = sampleRss(cluster.peers);
  const t0 = nowMs();
  await acquireDistinctNames(cluster, sizes.idleNames);
  const idleNamesDurationMs = nowMs() - t0;
  await sleep(1000);
  const afterIdleNames = sampleRss(cluster.peers);
  const peerFdLimit = Math.min(...cluster.peers.map((p) => fileLimitOf(p.proc.pid)));
  const waitersAsked = Math.min(sizes.waiters, Math.max(0, (peerFdLimit - fdReserve) * cluster.peers.length));
  if (waitersAsked < sizes.waiters) {
    notes.push(
      `each peer may open only ${peerFdLimit} files (prlimit could not raise it: no CAP_SYS_RESOURCE), ` +
        `so ${waitersAsked} of ${sizes.waiters} waiting requests were opened (one socket each, spread over the peers)`,
    );
  }
  const waiting = await holdWaiters(group, cluster, { waiters: waitersAsked, heldLocks: sizes.heldLocks }, notes);
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

async function holdWaiters(
  group: ProcessGroup,
  cluster: LamportCluster,
  opts: { waiters: number; heldLocks: number },
  notes: string[],
): Promise<WaitingResult> {
  const holder = lamportSession(holderEp(cluster), { ttlMs: heldTtlMs });
  const locks = Array.from({ length: opts.heldLocks }, (_, i) => `bench-f-held-${i}`);
  const held: Grant[] = [];
  for (const lock of locks) held.push(await holder.acquire(lock, 20_000));
  const children = forkWaiters(group, cluster, locks, opts.waiters);
  try {
    const sent = await Promise.all(children.map((c) => c.report));
    const late = sent.filter((r) => r === null).length;
    if (late > 0) {
      notes.push(
        `${late} of ${children.length} waiter-clients had not sent all their requests after ${openDeadlineMs / 1000} s ` +
          '(the peers accepted connections too slowly; see TcpExtListenOverflows): measured with the waiters the peers report',
      );
    }
    const reported = sent.reduce((n, r) => n + (r?.opened ?? 0), 0);
    const waitersSeen = await settleWaiters(cluster.peers, locks, late > 0 ? -1 : reported, late > 0 ? [] : notes);
    const waitersOpened = late > 0 ? (waitersSeen ?? reported) : reported;
    const whileWaiting = sampleRss(cluster.peers);
    const final = await Promise.all(children.map((c) => c.cancel()));
    await settleWaiters(cluster.peers, locks, 0, []);
    await sleep(1000);
    const afterCancel = sampleRss(cluster.peers);
    const firstFailure = final.find((r) => r.firstFailure !== null)?.firstFailure;
    if (firstFailure !== undefined && firstFailure !== null) notes.push(`first waiter failure: ${firstFailure}`);
    const waitersFailed = final.reduce((n, r) => n + r.failed, 0);
    return { waitersOpened, waitersSeen, waitersFailed, whileWaiting, afterCancel };
  } finally {
    await Promise.all(children.map((c) => group.stop(c.proc)));
    for (const g of held) await holder.release(g).catch(() => undefined);
  }
}

function holderEp(cluster: LamportCluster): PeerHandle['ep'] {
  const peer = cluster.peers[0];
  if (peer === undefined) throw new Error('cluster has no peer');
  return peer.ep;
}

/** One forked waiter-client. */
interface WaiterChild {
  readonly proc: Proc;
  /** The report sent once every request of the child is sent; null if not sent within the deadline. */
  readonly report: Promise<WaiterReport | null>;
  /** Asks the child to cancel everything; resolves with its final report. */
  cancel(): Promise<WaiterReport>;
}

/** Forks as many waiter-clients as the harness's own open-files limit requires. */
function forkWaiters(group: ProcessGroup, cluster: LamportCluster, locks: readonly string[], waiters: number): WaiterChild[] {
  const perChild = Math.max(1, fileLimitOf(process.pid) - fdReserve);
  const script = fileURLToPath(new URL('./waiter-client.js', import.meta.url));
  const ports = cluster.peers.map((p) => p.ep.port);
  const childCount = Math.ceil(waiters / perChild);
  const batchSize = Math.max(1, Math.floor((connectsInFlightPerPeer * ports.length) / Math.max(1, childCount)));
  const children: WaiterChild[] = [];
  for (let first = 0; first < waiters; first += perChild) {
    const plan: WaiterPlan = { ports, locks, first, count: Math.min(perChild, waiters - first), timeoutMs: waiterTimeoutMs, batchSize };
    const proc = group.spawn({ label: `waiters-${first}`, command: process.execPath, args: [script, JSON.stringify(plan)], ipc: true });
    children.push(waiterChild(proc));
  }
  return children;
}

function waiterChild(proc: Proc): WaiterChild {
  const nextReport = (deadlineMs: number): Promise<WaiterReport | null> =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(() => resolve(null), deadlineMs);
      proc.child.once('message', (msg: unknown) => {
        clearTimeout(timer);
        resolve(msg as WaiterReport);
      });
      void proc.exited.then((code) => reject(new Error(`${proc.label} exited (${code}) before reporting:\n${logTail(proc.logPath)}`)));
    });
  const report = nextReport(openDeadlineMs);
  return {
    proc,
    report,
    cancel: async () => {
      const final = nextReport(60_000);
      proc.child.send('cancel');
      return (await final) ?? { opened: 0, failed: 0, firstFailure: `${proc.label} sent no final report` };
    },
  };
}

/**
 * Waits until the cluster reports `expected` waiters, or until the count has not moved for
 * a few polls (bounded), and returns what it saw last.
 */
async function settleWaiters(peers: readonly PeerHandle[], locks: readonly string[], expected: number, notes: string[]): Promise<number | null> {
  let seen: number | null = null;
  let stablePolls = 0;
  await waitUntil(async () => {
    const previous = seen;
    seen = await countWaiters(peers, locks);
    stablePolls = seen === previous ? stablePolls + 1 : 0;
    return seen === null || seen === expected || stablePolls >= settleStablePolls;
  }, 60_000, 1000);
  if (seen === null) {
    notes.push('neither the lamport_lock_waiters gauge nor a `waiters` array in GET /v1/locks/{name} is there: waiter count not observable; measured 5 s after the last request was sent');
    await sleep(5000);
  } else if (seen !== expected) {
    notes.push(`the peers report ${seen} waiters where ${expected} were expected`);
  }
  return seen;
}

/**
 * Waiters cluster-wide: the sum of every peer's `lamport_lock_waiters` gauge (cheap), or,
 * without it, the `waiters` arrays of `GET /v1/locks/{name}` on the first peer.
 */
async function countWaiters(peers: readonly PeerHandle[], locks: readonly string[]): Promise<number | null> {
  const gauge = (await sumCounters(peers, [waitersGauge]).catch(() => new Map<string, number | null>())).get(waitersGauge);
  if (gauge !== null && gauge !== undefined) return gauge;
  const peer = peers[0];
  if (peer === undefined) return null;
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
