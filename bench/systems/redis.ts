/**
 * The Redis anchor: one redis-server with persistence off, and clients that do what
 * redis-mutex and redlock do on one instance: `SET key value NX PX ttl` to acquire,
 * polling with 1 to 5 ms random jitter while the lock is taken, and a compare-and-delete
 * Lua script (EVALSHA) to release. Each client is its own ioredis connection.
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { commandExists, commandOutput, freePorts, logTail, waitUntil } from '../procs.js';
import type { ProcessGroup } from '../procs.js';
import type { Grant, LockSession, LockSystem } from './types.js';

/** Lock TTL; every hold in the benchmark is far shorter. */
const lockTtlMs = 30_000;
/** Polling jitter bounds, as redis-mutex / redlock clients use. */
const pollJitterMsMin = 1;
const pollJitterMsMax = 5;
/** How long redis-server may take to answer PING. */
const startTimeoutMs = 15_000;

/** Releases only if the value is still ours (the documented Redis lock release). */
const releaseScript = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end`;

/** The redis-server binary, or null when Redis is not installed. */
export function redisBinary(): string | null {
  return commandExists('redis-server') ? 'redis-server' : null;
}

/** `redis-server --version`, for the report. */
export function redisVersion(binary: string): string {
  return commandOutput(binary, ['--version']) ?? 'unknown';
}

/** Starts one redis-server on a free port of 127.0.0.1 and waits for PING. */
export async function startRedis(group: ProcessGroup, binary: string): Promise<LockSystem> {
  const [port] = await freePorts(1);
  if (port === undefined) throw new Error('no free port for redis');
  const proc = group.spawn({
    label: 'redis',
    server: true,
    command: binary,
    args: ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', group.dir],
  });
  const probe = new Redis({ host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => 50 });
  probe.on('error', () => undefined); // refused connections are expected until the server listens
  const ready = await waitUntil(async () => {
    if (probe.status === 'wait') await probe.connect();
    return (await probe.ping()) === 'PONG';
  }, startTimeoutMs);
  probe.disconnect();
  if (!ready) throw new Error(`redis-server not answering PING:\n${logTail(proc.logPath)}`);
  return {
    name: 'redis',
    clientNote: `ioredis, SET NX PX ${lockTtlMs} + compare-and-delete Lua release, polling with ${pollJitterMsMin}-${pollJitterMsMax} ms random jitter; one connection per client`,
    openSession: async () => openRedisSession(port),
    stop: async () => group.stop(proc),
  };
}

async function openRedisSession(port: number): Promise<LockSession> {
  const client = new Redis({ host: '127.0.0.1', port, lazyConnect: true, enableAutoPipelining: false });
  await client.connect();
  const releaseSha = String(await client.script('LOAD', releaseScript));
  const prefix = randomBytes(6).toString('hex');
  let counter = 0;
  return {
    async acquire(lock: string, timeoutMs: number): Promise<Grant> {
      const value = `${prefix}:${counter++}`;
      const deadline = Date.now() + timeoutMs;
      for (let failedPolls = 0; ; failedPolls++) {
        const ok = await client.set(lock, value, 'PX', lockTtlMs, 'NX');
        if (ok === 'OK') return { lock, handle: value, token: null, failedPolls };
        if (Date.now() >= deadline) throw new Error(`redis lock ${lock} not acquired within ${timeoutMs} ms`);
        await sleep(pollJitterMsMin + Math.random() * (pollJitterMsMax - pollJitterMsMin));
      }
    },
    async release(held: Grant): Promise<void> {
      const deleted = await client.evalsha(releaseSha, 1, held.lock, held.handle);
      if (deleted !== 1) throw new Error(`redis lock ${held.lock} was no longer ours at release`);
    },
    async close(): Promise<void> {
      client.disconnect();
    },
  };
}
