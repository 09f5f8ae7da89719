/**
 * The system under test: a lamport-lock cluster of N peers started from the built
 * `dist/bin/lamport-peer.js`, with a generated cluster config (docs/design.md section 8), and
 * clients that use the local HTTP API of docs/design.md section 6 with keep-alive sockets.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { call, closeEndpoint, endpoint, stringField } from '../http-json.js';
import type { Endpoint } from '../http-json.js';
import { freePorts, logTail, waitUntil } from '../procs.js';
import type { ProcessGroup, Proc } from '../procs.js';
import type { Grant, LockSession, LockSystem } from './types.js';

/** TTL asked for each hold; every hold in the benchmark is far shorter. */
const holdTtlMs = 60_000;
/** How long a cluster may take until every peer's /readyz answers 200. */
const startTimeoutMs = 30_000;
/** Slack on top of the server-side timeout before the client gives up on a call. */
const clientSlackMs = 5000;
/** Sockets kept alive per peer: one per concurrently waiting client suffices. */
const socketsPerPeer = 256;

/** One running peer. */
export interface PeerHandle {
  readonly id: string;
  readonly proc: Proc;
  readonly ep: Endpoint;
}

/** A running lamport-lock cluster. */
export interface LamportCluster extends LockSystem {
  readonly peers: readonly PeerHandle[];
}

/** Options of one cluster start. */
export interface LamportOptions {
  readonly peerBin: string;
  readonly peerCount: number;
  /** Node flags for the peers (e.g. `--cpu-prof`, for `npm run bench:floor -- --profile DIR`). */
  readonly nodeArgs?: readonly string[];
  /** The peers' nice value, when not the group's `serverNice` (bench/procs.ts). */
  readonly nice?: number;
}

/** Whether the peer daemon has been built. */
export function peerBinExists(peerBin: string): boolean {
  return existsSync(peerBin);
}

/** Starts N peers on free ports of 127.0.0.1 and waits until every one is ready. */
export async function startLamport(group: ProcessGroup, opts: LamportOptions): Promise<LamportCluster> {
  const ports = await freePorts(opts.peerCount * 2);
  const ids = Array.from({ length: opts.peerCount }, (_, i) => String.fromCharCode(97 + i));
  const config = {
    cluster: `bench-${opts.peerCount}`,
    secret: randomBytes(16).toString('hex'),
    peers: ids.map((id, i) => ({ id, ws: `ws://127.0.0.1:${ports[2 * i]}`, http: `127.0.0.1:${ports[2 * i + 1]}` })),
  };
  const configPath = join(group.dir, `cluster-${opts.peerCount}.json`);
  writeFileSync(configPath, JSON.stringify(config, null, 2));
  const peers = ids.map((id, i) => ({
    id,
    proc: group.spawn({
      label: `peer-${opts.peerCount}-${id}`,
      server: true,
      ...(opts.nice === undefined ? {} : { nice: opts.nice }),
      command: process.execPath,
      // A data dir as deployed (deploy/lamport-peer.service): the peer fsyncs its bounds there.
      // One per cluster started (the ports tell them apart): a fresh cluster must not honour
      // the bounds an earlier one of the same size left.
      args: [...(opts.nodeArgs ?? []), opts.peerBin, '--config', configPath, '--id', id, '--data-dir', join(group.dir, `data-${opts.peerCount}-${id}-${ports[2 * i] ?? 0}`), '--log-level', 'warn'],
    }),
    ep: endpoint('127.0.0.1', ports[2 * i + 1] ?? 0, socketsPerPeer),
  }));
  for (const peer of peers) {
    const ready = await waitUntil(async () => isReady(peer.ep), startTimeoutMs);
    if (!ready) throw new Error(`peer ${peer.id} not ready within ${startTimeoutMs} ms:\n${logTail(peer.proc.logPath)}`);
  }
  return lamportSystem(group, peers);
}

async function isReady(ep: Endpoint): Promise<boolean> {
  const answer = await call(ep, { method: 'GET', path: '/readyz', deadlineMs: 2000 });
  return answer.status === 200;
}

function lamportSystem(group: ProcessGroup, peers: readonly PeerHandle[]): LamportCluster {
  return {
    name: 'lamport-lock',
    clientNote: 'HTTP API of docs/design.md section 6 (POST /v1/locks/{name}/acquire, /release), node:http keep-alive, workers spread over the peers round-robin',
    peers,
    async openSession(worker: number): Promise<LockSession> {
      const peer = peers[worker % peers.length];
      if (peer === undefined) throw new Error('cluster has no peer');
      return lamportSession(peer.ep);
    },
    async stop(): Promise<void> {
      peers.forEach((p) => closeEndpoint(p.ep));
      await Promise.all(peers.map((p) => group.stop(p.proc)));
    },
  };
}

/** A client of one peer's local HTTP API; holds get `ttlMs` (default 60 s). */
export function lamportSession(ep: Endpoint, opts: { ttlMs?: number } = {}): LockSession {
  const ttlMs = opts.ttlMs ?? holdTtlMs;
  return {
    async acquire(lock: string, timeoutMs: number): Promise<Grant> {
      const answer = await call(ep, {
        method: 'POST',
        path: `/v1/locks/${encodeURIComponent(lock)}/acquire`,
        body: { timeout_ms: timeoutMs, ttl_ms: ttlMs },
        deadlineMs: timeoutMs + clientSlackMs,
      });
      const id = stringField(answer.body, 'id');
      const token = stringField(answer.body, 'token');
      if (answer.status !== 200 || id === undefined) throw new Error(`acquire ${lock}: ${answer.status} ${answer.text}`);
      return { lock, handle: id, token: token === undefined ? null : BigInt(token), failedPolls: 0 };
    },
    async release(held: Grant): Promise<void> {
      const answer = await call(ep, {
        method: 'POST',
        path: `/v1/locks/${encodeURIComponent(held.lock)}/release`,
        body: { id: held.handle },
        deadlineMs: clientSlackMs * 2,
      });
      if (answer.status !== 200) throw new Error(`release ${held.lock}: ${answer.status} ${answer.text}`);
    },
    async close(): Promise<void> {
      // Sockets belong to the peer's shared agent, closed with the cluster.
    },
  };
}

/**
 * Sums over every peer of the samples of each named counter in `GET /metrics`; a counter
 * absent from any peer's exposition is null.
 */
export async function sumCounters(peers: readonly PeerHandle[], metrics: readonly string[]): Promise<Map<string, number | null>> {
  const totals = new Map<string, number | null>(metrics.map((m) => [m, 0]));
  for (const peer of peers) {
    const answer = await call(peer.ep, { method: 'GET', path: '/metrics', deadlineMs: 5000 });
    for (const metric of metrics) {
      const value = answer.status === 200 ? counterValue(answer.text, metric) : null;
      const total = totals.get(metric);
      totals.set(metric, value === null || total === null || total === undefined ? null : total + value);
    }
  }
  return totals;
}

/** Sum of every sample of `metric` (any labels) in a Prometheus text exposition, or null. */
export function counterValue(text: string, metric: string): number | null {
  let found = false;
  let total = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(metric)) continue;
    const rest = line.slice(metric.length);
    if (!rest.startsWith(' ') && !rest.startsWith('{')) continue;
    const value = Number(rest.slice(rest.lastIndexOf(' ') + 1));
    if (Number.isFinite(value)) {
      found = true;
      total += value;
    }
  }
  return found ? total : null;
}

/**
 * Times the peers logged the loss of their lease (warn level, "no lease: ..."): under load
 * that stalls a peer's event loop past lease_ms, its holds end with `lease_lost`.
 */
export function leaseLossCount(peers: readonly PeerHandle[]): number {
  return logLineCount(peers, '"msg":"no lease');
}

/**
 * Evictions the peers logged ("peer evicted by a majority"). The benchmark kills no peer, so
 * every one is a false eviction: a healthy peer silent for evict_ms under load.
 */
export function evictionCount(peers: readonly PeerHandle[]): number {
  return logLineCount(peers, '"msg":"peer evicted by a majority');
}

function logLineCount(peers: readonly PeerHandle[], needle: string): number {
  let count = 0;
  for (const peer of peers) {
    if (!existsSync(peer.proc.logPath)) continue;
    for (const line of readFileSync(peer.proc.logPath, 'utf8').split('\n')) if (line.includes(needle)) count++;
  }
  return count;
}
