/**
 * Helpers for tests against real peer processes on 127.0.0.1.
 */
import { request } from 'node:http';

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
