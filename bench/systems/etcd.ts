/**
 * The etcd anchor: a 3-member etcd cluster on loopback, and clients that use etcd's own
 * v3 Lock RPC (`v3lockpb.Lock/Lock`, blocking on the server) through etcd's grpc-gateway
 * JSON endpoint `POST /v3/lock/lock`, with one lease per client session as
 * `concurrency.NewSession` + `etcdctl lock` do. The `etcd3` npm package's Lock is not the
 * RPC (it does the revision dance client-side), so it is not what is measured here.
 */
import { join } from 'node:path';
import { call, closeEndpoint, endpoint, stringField } from '../http-json.js';
import type { Endpoint } from '../http-json.js';
import { commandExists, commandOutput, freePorts, logTail, waitUntil } from '../procs.js';
import type { ProcessGroup, Proc } from '../procs.js';
import type { Grant, LockSession, LockSystem } from './types.js';

/** Members of the etcd cluster. */
const memberCount = 3;
/** Lease TTL of one client session; every run is far shorter than this. */
const sessionLeaseTtlS = 120;
/** How long the cluster may take to elect a leader and answer /health. */
const startTimeoutMs = 30_000;
/** Deadline of a non-blocking etcd call (lease grant, unlock, revoke). */
const callDeadlineMs = 10_000;
/** Sockets per member kept alive; one per concurrently waiting client suffices. */
const socketsPerMember = 256;

/** The etcd binary, or null when etcd is not installed. */
export function etcdBinary(): string | null {
  if (commandExists('etcd')) return 'etcd';
  return null;
}

/** `etcd --version`, first line, for the report. */
export function etcdVersion(binary: string): string {
  return commandOutput(binary, ['--version'])?.split('\n')[0] ?? 'unknown';
}

/** Starts a 3-member etcd on 127.0.0.1 under the group's dir and waits for /health. */
export async function startEtcd(group: ProcessGroup, binary: string): Promise<LockSystem> {
  const ports = await freePorts(memberCount * 2);
  const members = Array.from({ length: memberCount }, (_, i) => ({
    name: `etcd${i + 1}`,
    clientPort: ports[2 * i] ?? 0,
    peerPort: ports[2 * i + 1] ?? 0,
  }));
  const initialCluster = members.map((m) => `${m.name}=http://127.0.0.1:${m.peerPort}`).join(',');
  const procs: Proc[] = members.map((m) =>
    group.spawn({
      label: m.name,
      server: true,
      command: binary,
      args: [
        '--name', m.name,
        '--data-dir', join(group.dir, `${m.name}.data`),
        '--listen-client-urls', `http://127.0.0.1:${m.clientPort}`,
        '--advertise-client-urls', `http://127.0.0.1:${m.clientPort}`,
        '--listen-peer-urls', `http://127.0.0.1:${m.peerPort}`,
        '--initial-advertise-peer-urls', `http://127.0.0.1:${m.peerPort}`,
        '--initial-cluster', initialCluster,
        '--initial-cluster-token', 'lamport-bench',
        '--initial-cluster-state', 'new',
        '--log-level', 'warn',
      ],
    }),
  );
  const endpoints = members.map((m) => endpoint('127.0.0.1', m.clientPort, socketsPerMember));
  for (const [i, ep] of endpoints.entries()) {
    const ready = await waitUntil(async () => isHealthy(ep), startTimeoutMs);
    const proc = procs[i];
    if (!ready && proc !== undefined) throw new Error(`etcd member ${proc.label} not healthy:\n${logTail(proc.logPath)}`);
  }
  return etcdSystem(group, procs, endpoints);
}

async function isHealthy(ep: Endpoint): Promise<boolean> {
  const answer = await call(ep, { method: 'GET', path: '/health', deadlineMs: 2000 });
  return answer.status === 200 && stringField(answer.body, 'health') === 'true';
}

function etcdSystem(group: ProcessGroup, procs: readonly Proc[], endpoints: readonly Endpoint[]): LockSystem {
  return {
    name: 'etcd',
    clientNote:
      'etcd v3 Lock RPC (v3lockpb.Lock/Lock, blocking server-side) through the grpc-gateway JSON endpoint POST /v3/lock/lock, ' +
      'one lease per client from /v3/lease/grant, node:http keep-alive; workers spread over the 3 members',
    async openSession(worker: number): Promise<LockSession> {
      const ep = endpoints[worker % endpoints.length];
      if (ep === undefined) throw new Error('etcd has no endpoint');
      return openEtcdSession(ep);
    },
    async stop(): Promise<void> {
      endpoints.forEach(closeEndpoint);
      await Promise.all(procs.map((p) => group.stop(p)));
    },
  };
}

async function openEtcdSession(ep: Endpoint): Promise<LockSession> {
  const grant = await call(ep, { method: 'POST', path: '/v3/lease/grant', body: { TTL: sessionLeaseTtlS }, deadlineMs: callDeadlineMs });
  const leaseId = stringField(grant.body, 'ID');
  if (grant.status !== 200 || leaseId === undefined) throw new Error(`etcd lease grant failed: ${grant.status} ${grant.text}`);
  return {
    async acquire(lock: string, timeoutMs: number): Promise<Grant> {
      const name = Buffer.from(lock).toString('base64');
      const answer = await call(ep, { method: 'POST', path: '/v3/lock/lock', body: { name, lease: leaseId }, deadlineMs: timeoutMs });
      const key = stringField(answer.body, 'key');
      if (answer.status !== 200 || key === undefined) throw new Error(`etcd lock failed: ${answer.status} ${answer.text}`);
      return { lock, handle: key, token: null, failedPolls: 0 };
    },
    async release(held: Grant): Promise<void> {
      const answer = await call(ep, { method: 'POST', path: '/v3/lock/unlock', body: { key: held.handle }, deadlineMs: callDeadlineMs });
      if (answer.status !== 200) throw new Error(`etcd unlock failed: ${answer.status} ${answer.text}`);
    },
    async close(): Promise<void> {
      await call(ep, { method: 'POST', path: '/v3/lease/revoke', body: { ID: leaseId }, deadlineMs: callDeadlineMs }).catch(() => undefined);
    },
  };
}
