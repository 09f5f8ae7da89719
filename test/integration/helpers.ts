/**
 * Helpers for tests against real peer processes on 127.0.0.1: the test cluster's timings and
 * its start, and shorthands for the HTTP API.
 */
import { spawn } from 'node:child_process';
import { request } from 'node:http';
import { afterAll, beforeAll } from 'vitest';
import { LocalCluster } from '../../src/tools/local-cluster.js';
import type { LocalClusterOptions } from '../../src/tools/local-cluster.js';

/**
 * The integration tests' timings: short, so that a suspicion, a lost lease or an eviction
 * happens within seconds of a kill, a stop or a pause.
 */
export const testTimings = { heartbeatMs: 100, leaseMs: 1000, evictMs: 3000 } as const;

/** Starts real peers on `testTimings`: three unless `opts` says otherwise; `opts` wins over both. */
export function startTestCluster(opts: Partial<LocalClusterOptions> = {}): Promise<LocalCluster> {
  return LocalCluster.start({ peers: 3, ...testTimings, ...opts });
}

/**
 * One test cluster (see `startTestCluster`) for the tests of a file, or of the describe block
 * it is called in: started in beforeAll, stopped in afterAll. Returns the cluster's accessor,
 * which may be called once beforeAll has run (in the tests and in later hooks).
 */
export function useTestCluster(opts: Partial<LocalClusterOptions> = {}): () => LocalCluster {
  let cluster: LocalCluster | undefined;
  beforeAll(async () => {
    cluster = await startTestCluster(opts);
  });
  afterAll(async () => {
    await cluster?.stop();
  });
  return () => {
    if (cluster === undefined) throw new Error('the test cluster is started in beforeAll: ask for it in a test or a later hook');
    return cluster;
  };
}

/** An HTTP answer with its parsed JSON body. */
export interface JsonAnswer {
  readonly status: number;
  readonly body: Record<string, unknown>;
}

/** POSTs (or GETs without a body) JSON to a peer and parses the answer. */
export async function call(base: string, path: string, body?: unknown, method = body === undefined ? 'GET' : 'POST'): Promise<JsonAnswer> {
  const res = await fetch(`${base}${path}`, {
    method,
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body), headers: { 'content-type': 'application/json' } }),
  });
  const text = await res.text();
  let parsed: Record<string, unknown>;
  try {
    parsed = JSON.parse(text) as Record<string, unknown>;
  } catch {
    parsed = { raw: text };
  }
  return { status: res.status, body: parsed };
}

/** Acquire shorthand. */
export function acquire(base: string, name: string, body: Record<string, unknown> = {}): Promise<JsonAnswer> {
  return call(base, `/v1/locks/${encodeURIComponent(name)}/acquire`, body);
}

/** Release shorthand. */
export function release(base: string, name: string, id: unknown): Promise<JsonAnswer> {
  return call(base, `/v1/locks/${encodeURIComponent(name)}/release`, { id });
}

/** An acquire whose HTTP request can be aborted by the test (a client that goes away). */
export function abortableAcquire(base: string, name: string, body: Record<string, unknown>): { answer: Promise<JsonAnswer | 'aborted'>; abort: () => void } {
  const text = JSON.stringify(body);
  let abort: () => void = () => undefined;
  const answer = new Promise<JsonAnswer | 'aborted'>((resolve, reject) => {
    const req = request(`${base}/v1/locks/${encodeURIComponent(name)}/acquire`, { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown> }));
    });
    req.on('error', (e) => (e.message.includes('socket hang up') || e.message.includes('aborted') ? resolve('aborted') : reject(e)));
    req.end(text);
    abort = () => req.destroy();
  });
  return { answer, abort };
}

/** Names of holders of a lock as one peer sees it. */
export async function holders(base: string, name: string): Promise<Array<Record<string, unknown>>> {
  const a = await call(base, `/v1/locks/${encodeURIComponent(name)}`);
  return a.body['holders'] as Array<Record<string, unknown>>;
}

/** Waiters of a lock as one peer sees it. */
export async function waiters(base: string, name: string): Promise<Array<Record<string, unknown>>> {
  const a = await call(base, `/v1/locks/${encodeURIComponent(name)}`);
  return a.body['waiters'] as Array<Record<string, unknown>>;
}

/** What a binary run to its end printed and exited with. */
export interface BinRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** A built binary run with node (`bin` a path), with its output collected as it comes. */
export function runBin(bin: string, args: readonly string[], env: Record<string, string> = {}): { done: Promise<BinRun>; pid: number | undefined; out: () => BinRun } {
  const child = spawn(process.execPath, [bin, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const seen: BinRun = { code: null, stdout: '', stderr: '' };
  child.stdout.on('data', (d: Buffer) => (seen.stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (seen.stderr += d.toString()));
  const done = new Promise<BinRun>((res) => child.on('close', (code) => res({ ...seen, code })));
  return { done, pid: child.pid, out: () => seen };
}
