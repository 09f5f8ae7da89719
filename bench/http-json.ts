/**
 * A minimal JSON-over-HTTP client on node:http with keep-alive agents: what an ordinary
 * application would use against the lamport-lock peer and the etcd grpc-gateway.
 */
import { Agent, request } from 'node:http';

/** One HTTP endpoint on 127.0.0.1 with its own keep-alive agent. */
export interface Endpoint {
  readonly host: string;
  readonly port: number;
  readonly agent: Agent;
}

/** An answer: status and the parsed JSON body (or the raw text when it is not JSON). */
export interface JsonAnswer {
  readonly status: number;
  readonly body: unknown;
  readonly text: string;
}

/** Makes an endpoint whose agent keeps up to `socketsMax` sockets open. */
export function endpoint(host: string, port: number, socketsMax: number): Endpoint {
  const agent = new Agent({ keepAlive: true, maxSockets: socketsMax, maxFreeSockets: socketsMax });
  return { host, port, agent };
}

/** Options of one call. */
export interface CallOptions {
  readonly method: 'GET' | 'POST';
  readonly path: string;
  readonly body?: unknown;
  /** Client-side deadline for the whole call; the socket is destroyed past it. */
  readonly deadlineMs: number;
}

/** Sends one request and reads the whole answer. Rejects on socket errors and deadline. */
export function call(ep: Endpoint, opts: CallOptions): Promise<JsonAnswer> {
  return new Promise((resolve, reject) => {
    const payload = opts.body === undefined ? undefined : JSON.stringify(opts.body);
    const headers: Record<string, string | number> = {};
    if (payload !== undefined) {
      headers['content-type'] = 'application/json';
      headers['content-length'] = Buffer.byteLength(payload);
    }
    const req = request(
      { host: ep.host, port: ep.port, method: opts.method, path: opts.path, agent: ep.agent, headers, timeout: opts.deadlineMs },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({ status: res.statusCode ?? 0, body: parseJson(text), text });
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${opts.method} ${opts.path}: no answer within ${opts.deadlineMs} ms`)));
    req.on('error', reject);
    req.end(payload);
  });
}

/** Parses JSON, or returns null for anything that is not JSON. */
export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return null;
  }
}

/** Reads a string field of an unknown JSON object, or undefined. */
export function stringField(body: unknown, key: string): string | undefined {
  if (typeof body !== 'object' || body === null) return undefined;
  const value = (body as Record<string, unknown>)[key];
  return typeof value === 'string' ? value : typeof value === 'number' ? String(value) : undefined;
}

/** Closes every idle socket of the endpoint's agent. */
export function closeEndpoint(ep: Endpoint): void {
  ep.agent.destroy();
}
