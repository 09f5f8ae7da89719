/**
 * The two systems of issue 15's comparison, as load targets: a 3-peer lamport-lock cluster
 * and the 3-process floor of bench/floor-peer.ts (the same message pattern, no algorithm).
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { call, closeEndpoint, endpoint } from './http-json.js';
import { freePorts, logTail, waitUntil } from './procs.js';
import type { ProcessGroup } from './procs.js';
import type { LoadTarget } from './steady-state.js';
import { lamportSession, startLamport } from './systems/lamport.js';

/** Processes of either system: the floor's and lamport-lock's are the same count. */
export const floorProcessCount = 3;
/** How long the floor's processes may take to answer /readyz. */
const floorStartTimeoutMs = 10_000;
/** Sockets kept alive per floor process, as for a peer. */
const socketsPerProcess = 256;

/** A started system and how to stop it. */
export interface RunningTarget {
  readonly target: LoadTarget;
  stop(): Promise<void>;
}

/** Starts the floor on free ports (`processes`, default 3) and waits until every process is ready. */
export async function startFloor(group: ProcessGroup, opts: { readonly profileDir?: string; readonly processes?: number } = {}): Promise<RunningTarget> {
  const count = opts.processes ?? floorProcessCount;
  const ports = await freePorts(2 * count);
  const wsPorts = ports.slice(0, count);
  const httpPorts = ports.slice(count);
  const bin = fileURLToPath(new URL('floor-peer.js', import.meta.url));
  const procs = httpPorts.map((http, i) => group.spawn({
    label: `floor-${count}-${i}`,
    server: true,
    command: process.execPath,
    args: [...profileArgs(opts.profileDir, 'floor'), bin, '--index', String(i), '--http', String(http), '--ws', wsPorts.join(',')],
  }));
  const eps = httpPorts.map((http) => endpoint('127.0.0.1', http, socketsPerProcess));
  for (const [i, ep] of eps.entries()) {
    const ready = await waitUntil(async () => (await call(ep, { method: 'GET', path: '/readyz', deadlineMs: 1000 })).status === 200, floorStartTimeoutMs);
    if (!ready) throw new Error(`floor process ${i} not ready within ${floorStartTimeoutMs} ms:\n${logTail(procs[i]?.logPath ?? '')}`);
  }
  return {
    target: { name: 'floor', sessions: eps.map((ep) => lamportSession(ep)), pids: procs.map((p) => p.pid) },
    stop: async () => {
      eps.forEach(closeEndpoint);
      await Promise.all(procs.map((p) => group.stop(p)));
    },
  };
}

/** Options of the lamport-lock side. */
export interface PeerStart {
  readonly peerBin: string;
  /**
   * Both systems' processes write V8 CPU profiles into `DIR/lamport-lock` and `DIR/floor` when
   * they stop (npm run bench:floor -- --profile DIR).
   */
  readonly profileDir?: string;
}

/** Node flags that make a process write its CPU profile into `dir/system` on exit. */
function profileArgs(dir: string | undefined, system: string): string[] {
  return dir === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${join(dir, system)}`];
}

/** Starts a 3-peer lamport-lock cluster with one session per peer. */
export async function startLamportTarget(group: ProcessGroup, opts: PeerStart, profileName = 'lamport-lock'): Promise<RunningTarget> {
  const cluster = await startLamport(group, { peerBin: opts.peerBin, peerCount: floorProcessCount, nodeArgs: profileArgs(opts.profileDir, profileName) });
  const sessions = await Promise.all(cluster.peers.map((_, w) => cluster.openSession(w)));
  return {
    target: { name: 'lamport-lock', sessions, pids: cluster.peers.map((p) => p.proc.pid) },
    stop: () => cluster.stop(),
  };
}
