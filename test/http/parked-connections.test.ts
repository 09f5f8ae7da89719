/**
 * Parking wired into the HTTP API (issue 15): past `liveMax` waiting connections, a client
 * that leaves is noticed only when a sweep reads its socket, at most `sweepSocketsMax` per
 * sweep, so a burst of clients leaving at once cannot land in one event-loop turn; and a
 * parked waiter that is granted still gets its answer. Real sockets on 127.0.0.1, a stub
 * runtime, and sweeps run by hand.
 */
import { request } from 'node:http';
import type { ClientRequest, IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Timer } from '../../src/env.js';
import { HttpApi } from '../../src/http/api.js';
import { AccessPolicy } from '../../src/http/access.js';
import type { ParkingClock } from '../../src/http/parked-sockets.js';
import { silentLogger } from '../../src/log.js';
import type { Grant, RequestCallbacks, RequestHandle } from '../../src/runtime/holds.js';
import type { PeerRuntime } from '../../src/runtime/peer.js';
import { post } from './post.js';

/**
 * Sweeps run when the test says (`sweep`), from a timer as the interval runs them in a peer
 * (the timers phase: the sockets it resumes are polled in that turn, and its setImmediate
 * pauses them after the poll).
 */
class HandSweeps implements ParkingClock {
  #sweep: (() => void) | null = null;
  #now = 0;
  /** Every sweep comes on time. */
  now(): number {
    return this.#now;
  }
  every(_ms: number, fn: () => void): Timer {
    this.#sweep = fn;
    return 1 as unknown as Timer;
  }
  soon(fn: () => void): void {
    setImmediate(fn);
  }
  clear(): void {
    this.#sweep = null;
  }
  sweep(): Promise<void> {
    return new Promise((resolve) =>
      setTimeout(() => {
        this.#now += 100;
        this.#sweep?.();
        resolve();
      }, 0),
    );
  }
}

/** A runtime whose requests wait until the test grants them, and which records the clients that left. */
class WaitingRuntime {
  readonly waiting: RequestCallbacks[] = [];
  readonly gone: number[] = [];
  request(_lock: string, _opts: unknown, cb: RequestCallbacks): RequestHandle {
    const n = this.waiting.push(cb) - 1;
    return { id: `h${n}`, clientGone: () => this.gone.push(n) };
  }
}

function grantOf(lock: string, id: string): Grant {
  return { lock, locks: [{ lock, mode: 'exclusive' }], id, token: 1025n, mode: 'exclusive', peer: 'a', grantedAt: 1, expiresAt: null };
}

let api: HttpApi | null = null;
const clients: ClientRequest[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) c.destroy();
  const a = api;
  api = null;
  if (a !== null) {
    a.closeAll();
    await a.close();
  }
});

async function start(liveMax: number, sweepSocketsMax: number): Promise<{ runtime: WaitingRuntime; sweeps: HandSweeps; port: number }> {
  const runtime = new WaitingRuntime();
  const sweeps = new HandSweeps();
  const access = new AccessPolicy({ unix: false, listenHost: null, allowHosts: [], token: null, adminToken: null });
  api = new HttpApi(runtime as unknown as PeerRuntime, silentLogger(), access, { liveMax, sweepSocketsMin: sweepSocketsMax, sweepSocketsMax, sweepEveryMs: 100, lateMs: 50, clock: sweeps });
  const bound: AddressInfo = await api.listen('127.0.0.1', 0);
  return { runtime, sweeps, port: bound.port };
}

/**
 * Opens one waiting acquire on its own connection; resolves with its answer if it gets one: the
 * whole body of a TTL hold's, the first line of a connection-bound hold's.
 */
function wait(port: number, lock: string, hold: 'ttl' | 'connection' = 'ttl'): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const body = JSON.stringify(hold === 'ttl' ? { ttl_ms: 60_000, timeout_ms: 60_000 } : { hold, ttl_ms: 0, timeout_ms: 60_000 });
    const req = request(
      { host: '127.0.0.1', port, method: 'POST', agent: false, path: `/v1/locks/${lock}/acquire`, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
      (res: IncomingMessage) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          text += c;
          if (hold === 'connection' && text.includes('\n')) resolve({ status: res.statusCode ?? 0, text });
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on('error', (err) => (req.destroyed ? undefined : reject(err)));
    clients.push(req);
    req.end(body);
  });
}

describe('waiting connections past liveMax', () => {
  it('are read only by the sweeps, sweepSocketsMax at a time, once their clients left', async () => {
    const { runtime, sweeps, port } = await start(2, 2);
    for (let i = 0; i < 7; i++) void wait(port, 'x').catch(() => undefined);
    await vi.waitFor(() => expect(runtime.waiting).toHaveLength(7));
    for (const c of clients.splice(0)) c.destroy();
    // The two read as usual are noticed at once.
    await vi.waitFor(() => expect(runtime.gone).toHaveLength(2));
    // A round trip after the clients' ends: the five parked ones are not read meanwhile.
    expect((await post(port, '/v1/nothing', {})).status).toBe(404);
    expect(runtime.gone).toHaveLength(2);
    // Each sweep reads at most two of them: 2 + 2 + 2 + 1.
    for (const expected of [4, 6]) {
      await sweeps.sweep();
      await vi.waitFor(() => expect(runtime.gone).toHaveLength(expected));
      expect((await post(port, '/v1/nothing', {})).status).toBe(404);
      expect(runtime.gone).toHaveLength(expected);
    }
    await sweeps.sweep();
    await vi.waitFor(() => expect(runtime.gone).toHaveLength(7));
    expect(new Set(runtime.gone).size).toBe(7);
  });

  it('get their answer when granted, and are read as usual from then on', async () => {
    const { runtime, port } = await start(1, 1);
    const answers = [wait(port, 'a'), wait(port, 'b'), wait(port, 'c'), wait(port, 'd', 'connection')];
    await vi.waitFor(() => expect(runtime.waiting).toHaveLength(4));
    runtime.waiting[2]?.granted(grantOf('c', 'h2'));
    const answer = await answers[2];
    expect(answer?.status).toBe(200);
    expect(JSON.parse(answer?.text ?? '{}')).toMatchObject({ id: 'h2', token: '1025' });
    // A connection-bound hold granted while parked ends when its client leaves, with no sweep.
    runtime.waiting[3]?.granted(grantOf('d', 'h3'));
    expect(JSON.parse((await answers[3])?.text ?? '{}')).toMatchObject({ id: 'h3' });
    clients[3]?.destroy();
    await vi.waitFor(() => expect(runtime.gone).toEqual([3]));
  });
});
