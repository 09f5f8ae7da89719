/**
 * LocalHolds (src/runtime/local-holds.ts) on a real protocol core and virtual time: the host
 * the runtime gives it is built here the way PeerRuntime builds it (its step is a Machine's,
 * and the core's effects go back to LocalHolds as PeerRuntime#execute sends them), with a
 * ManualEnv for the TTLs, wait deadlines and expected_ms. Every outcome is exact: nothing
 * here waits on the wall clock.
 */
import { Members } from '../../src/core/members.js';
import { beforeEach, describe, expect, it } from 'vitest';
import { Machine } from '../../src/core/machine.js';
import type { MachineEvent } from '../../src/core/machine.js';
import type { EndReason, Incarnation } from '../../src/core/types.js';
import { firstView } from '../../src/core/view.js';
import { ErrorCode, LockError } from '../../src/errors.js';
import { limits } from '../../src/limits.js';
import { silentLogger } from '../../src/log.js';
import type { AcquireOptions, Grant, LocalRequest } from '../../src/runtime/holds.js';
import { LocalRequests } from '../../src/runtime/holds.js';
import type { HoldsHost } from '../../src/runtime/local-holds.js';
import { LocalHolds } from '../../src/runtime/local-holds.js';
import { PeerMetrics } from '../../src/runtime/peer-metrics.js';
import type { QueueView } from '../../src/runtime/status-views.js';
import { ManualEnv } from '../support/manual-env.js';

const opts: AcquireOptions = { timeoutMs: 1000, ttlMs: 5000, mode: 'exclusive', limit: 1, permits: 1, owner: 'o', meta: null, hold: 'ttl', expectedMs: null };
const peerIds = ['a', 'b'];

/** What one request heard through its callbacks, in order. */
interface Heard {
  readonly grants: Grant[];
  readonly failures: LockError[];
  readonly ends: EndReason[];
}

class Harness {
  readonly env = new ManualEnv();
  readonly machine: Machine;
  readonly holds: LocalHolds;
  readonly metrics: PeerMetrics;
  readonly emitted: string[] = [];
  silentPeers: string[] = [];

  constructor(peerCount: number) {
    this.machine = new Machine({ members: Members.first(0, peerCount), clockFloor: 100 });
    const machine = this.machine;
    this.metrics = new PeerMetrics({
      linkStats: () => ({ framesSent: 0, messagesSent: 0, bytesSent: 0, framesReceived: 0, messagesDropped: 0 }),
      links: () => [],
      coreStats: () => ({ ...machine.stats(), clock: machine.clock }),
      configMismatch: () => null, protocolLevel: () => 9, ready: () => machine.leaseValid && machine.synced,
      degraded: () => ({ active: false, waitingFor: [], minority: null }),
      superseded: () => null,
      nowMs: () => this.env.monoMs(),
      view: () => firstView(Array.from({ length: peerCount }, (_, i) => ({ id: `p${i}`, ws: `ws://127.0.0.1:${7100 + i}`, http: `127.0.0.1:${7000 + i}` })), 9),
    }, false);
    const host: HoldsHost = {
      id: 'a',
      env: this.env,
      metrics: this.metrics,
      log: silentLogger(),
      requests: new LocalRequests(limits.endedIdsMax),
      step: (event) => this.step(event),
      inspect: {
        explain: (ref) => machine.explain(ref),
        // The holders a timeout names; the runtime's inspector adds ids, ages and expiries.
        lock: (name) => ({
          name, waiters: [], queued: machine.queueSize(name),
          holders: machine.queue(name).filter((e) => e.held).map((e): QueueView => ({
            peer: peerIds[e.peer] ?? '?', owner: e.owner, meta: e.meta, token: e.token.toString(), mode: e.mode, limit: e.limit,
            permits: e.permits, requestedAtMs: e.requestedAtMs, grantedAtMs: null, expiresAtMs: null, local: e.peer === 0,
          })),
        }),
        peerId: (index) => peerIds[index] ?? '?',
        leaseSilentPeers: () => this.silentPeers,
        superseded: () => null,
      },
      emitHold: (type: 'granted' | 'ended', req: LocalRequest, reason: EndReason | null) => void this.emitted.push(`${type} ${req.id}${reason === null ? '' : ` ${reason}`}`),
    };
    this.holds = new LocalHolds(host);
  }

  /** The runtime's step: the core's local effects go back to the holds, as PeerRuntime#execute does. */
  step(event: MachineEvent): void {
    for (const e of this.machine.step(event)) {
      if (e.type === 'granted') this.holds.onGranted(e.ref, e.token);
      else if (e.type === 'refused') this.holds.onRefused(e.ref, e.ahead);
      else if (e.type === 'full') this.holds.onQueueFull(e.ref, e.lock);
      else if (e.type === 'ended') this.holds.endByCore(e.ref, e.reason);
    }
  }

  request(lock: string | readonly string[], o: Partial<AcquireOptions> = {}): { id: string; heard: Heard; clientGone: () => void } {
    const heard: Heard = { grants: [], failures: [], ends: [] };
    const all = { ...opts, ...o };
    const locks = typeof lock === 'string' ? [lock] : lock;
    const handle = this.holds.request(locks.map((l) => ({ lock: l, mode: all.mode, limit: all.limit, permits: all.permits })), all, {
      granted: (g) => void heard.grants.push(g),
      failed: (e) => void heard.failures.push(e),
      ended: (r) => void heard.ends.push(r),
    });
    return { id: handle.id, heard, clientGone: () => handle.clientGone() };
  }

  async counter(name: string, labels: Record<string, string> = {}): Promise<number> {
    const metric = this.metrics.registry.getSingleMetric(name);
    const values = (await metric?.get())?.values ?? [];
    return values.find((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x))?.value ?? 0;
  }
}

/** Joins peer 1 to a two-peer machine; `ack` then sends its packets, which ack everything so far. */
function withPeer(h: Harness): { ack: () => void } {
  const inc: Incarnation = { startMs: 1, nonce: 1 };
  h.step({ type: 'joined', peer: 1, inc, clock: 0 });
  let c = 0;
  const ack = (): void => h.step({ type: 'packet', from: 1, inc, packet: { c: (c = Math.max(c, h.machine.clock) + 1), m: [] } });
  ack();
  return { ack };
}

function thrown(fn: () => unknown): LockError {
  try {
    fn();
  } catch (err) {
    if (err instanceof LockError) return err;
    throw err;
  }
  throw new Error('expected a LockError');
}

let h: Harness;
beforeEach(() => {
  h = new Harness(1);
});

describe('LocalHolds: all-or-nothing requests', () => {
  it('grants several locks as one hold with one token, and a release by id frees every one of them', () => {
    const r = h.request(['x', 'y']);
    expect(r.heard.grants).toEqual([{ lock: 'x', locks: [{ lock: 'x', mode: 'exclusive' }, { lock: 'y', mode: 'exclusive' }], id: r.id, token: 101n * 1024n, mode: 'exclusive', peer: 'a', grantedAt: h.env.wallMs(), expiresAt: h.env.wallMs() + opts.ttlMs }]);
    expect(h.machine.queue('y').map((e) => e.ref)).toEqual(h.machine.queue('x').map((e) => e.ref));
    const single = h.request('y');
    expect(h.holds.stateOf(single.id)).toBe('waiting');
    h.holds.release(null, r.id);
    expect(r.heard.ends).toEqual(['released']);
    expect(single.heard.grants.map((g) => g.lock)).toEqual(['y']);
    expect(h.machine.queue('x')).toEqual([]);
  });

  it('waits while one of its locks is held, holding the others for no one, and names any of its locks in release', () => {
    const first = h.request('y');
    const multi = h.request(['x', 'y']);
    const later = h.request('x');
    expect([h.holds.stateOf(multi.id), h.holds.stateOf(later.id)]).toEqual(['waiting', 'waiting']); // x waits behind the multi request: FIFO.
    h.holds.release('y', first.id);
    expect(multi.heard.grants).toHaveLength(1);
    expect(thrown(() => h.holds.release('z', multi.id)).code).toBe(ErrorCode.NotHeld);
    h.holds.release('y', multi.id);
    expect(later.heard.grants.map((g) => g.lock)).toEqual(['x']);
  });

  it('refuses a no-wait request when any of its locks is taken, and leaves the others free', () => {
    const held = h.request('y');
    const multi = h.request(['x', 'y'], { timeoutMs: 0 });
    expect(multi.heard.failures.map((e) => e.code)).toEqual([ErrorCode.Timeout]);
    expect(multi.heard.failures[0]?.message).toBe('the lock is held or requested by others (timeout_ms 0 does not wait) (held: "y")');
    expect(multi.heard.failures[0]?.details['holders']).toHaveLength(1);
    expect(h.request('x').heard.grants).toHaveLength(1);
    expect(held.heard.ends).toEqual([]);
  });
});

describe('LocalHolds: grants and TTLs', () => {
  it('ends everything at a shutdown without granting a waiter it would end at once', () => {
    const held = h.request('x');
    const waiter = h.request('x');
    expect(h.holds.stateOf(waiter.id)).toBe('waiting');
    h.holds.endAll('shutdown', new LockError(ErrorCode.ShuttingDown, 'stopping'));
    expect(held.heard.ends).toEqual(['shutdown']);
    expect(waiter.heard.grants).toEqual([]);
    expect(waiter.heard.failures.map((e) => e.code)).toEqual(['ERR_SHUTTING_DOWN']);
  });

  it('grants a free lock at once, with its token, times and a hold event', () => {
    const r = h.request('x');
    expect(r.heard.grants).toEqual([{ lock: 'x', locks: [{ lock: 'x', mode: 'exclusive' }], id: r.id, token: 101n * 1024n, mode: 'exclusive', peer: 'a', grantedAt: h.env.wallMs(), expiresAt: h.env.wallMs() + opts.ttlMs }]);
    expect(h.holds.stateOf(r.id)).toBe('held');
    expect(h.emitted).toEqual([`granted ${r.id}`]);
  });

  it('ends a hold whose TTL passes unrefreshed as expired, tells its holder once, and remembers why', async () => {
    const r = h.request('x');
    h.env.advance(opts.ttlMs - 1);
    expect(r.heard.ends).toEqual([]);
    h.env.advance(1);
    expect(r.heard.ends).toEqual(['expired']);
    expect(h.holds.stateOf(r.id)).toBe('expired');
    expect(h.machine.queue('x')).toEqual([]); // Released in the cluster.
    expect(thrown(() => h.holds.release('x', r.id))).toMatchObject({ code: 'ERR_NOT_HELD', details: { reason: 'expired' } });
    expect(await h.counter('lamport_lock_holds_ended_total', { reason: 'expired' })).toBe(1);
    h.env.advance(10 * opts.ttlMs);
    expect(r.heard.ends).toEqual(['expired']);
  });

  it('moves the expiry on refresh, with the hold\'s own TTL or a new one', () => {
    const r = h.request('x');
    h.env.advance(opts.ttlMs / 2);
    expect(h.holds.refresh('x', r.id)).toBe(h.env.wallMs() + opts.ttlMs);
    h.env.advance(opts.ttlMs - 1);
    expect(h.holds.stateOf(r.id)).toBe('held');
    expect(h.holds.refresh('x', r.id, 10)).toBe(h.env.wallMs() + 10);
    h.env.advance(10);
    expect(r.heard.ends).toEqual(['expired']);
  });

  it('keeps a hold without TTL (connection-bound, ttl 0) until it is released', () => {
    const r = h.request('x', { ttlMs: 0, hold: 'connection' });
    expect(r.heard.grants[0]?.expiresAt).toBeNull();
    h.env.advance(limits.ttlMsMax);
    expect(h.holds.stateOf(r.id)).toBe('held');
    h.holds.release('x', r.id);
    expect(r.heard.ends).toEqual(['released']);
  });

  it('counts and logs a hold kept past its expected_ms, and nothing else changes', async () => {
    const r = h.request('x', { expectedMs: 100 });
    h.env.advance(99);
    expect(await h.counter('lamport_lock_overdue_holds_total')).toBe(0);
    h.env.advance(1);
    expect(await h.counter('lamport_lock_overdue_holds_total')).toBe(1);
    expect(h.holds.stateOf(r.id)).toBe('held');
  });

  it('answers a release or refresh of a hold that is not live with ERR_NOT_HELD and a reason', () => {
    const held = h.request('x');
    const waiting = h.request('x');
    expect(thrown(() => h.holds.release('x', waiting.id))).toMatchObject({ code: 'ERR_NOT_HELD', details: { reason: 'waiting' } });
    expect(thrown(() => h.holds.release('y', held.id))).toMatchObject({ code: 'ERR_NOT_HELD', details: { reason: 'unknown' } });
    expect(thrown(() => h.holds.refresh('x', 'nope'))).toMatchObject({ code: 'ERR_NOT_HELD', details: { reason: 'unknown' } });
    h.holds.release('x', held.id);
    expect(held.heard.ends).toEqual(['released']);
    expect(waiting.heard.grants).toHaveLength(1); // The next in line got it.
  });

  it('remembers the last endedIdsMax ended ids, and forgets older ones', () => {
    const first = h.request('x');
    h.holds.release('x', first.id);
    for (let i = 0; i < limits.endedIdsMax - 1; i++) h.holds.release('x', h.request('x').id);
    expect(h.holds.stateOf(first.id)).toBe('released');
    h.holds.release('x', h.request('x').id);
    expect(h.holds.stateOf(first.id)).toBeUndefined();
  });
});

describe('LocalHolds: waiting', () => {
  it('refuses a no-wait request behind others with ERR_TIMEOUT and the number of requests that were ahead of it', () => {
    h.request('x');
    h.request('x', { timeoutMs: 1000 });
    const r = h.request('x', { timeoutMs: 0 });
    expect(r.heard.failures).toHaveLength(1);
    expect(r.heard.failures[0]).toMatchObject({ code: 'ERR_TIMEOUT', details: { queuePosition: 2 } });
    expect(h.machine.queue('x')).toHaveLength(2);
  });

  it('fails a waiter whose timeout passes behind a holder with ERR_TIMEOUT, its position and the holders, and withdraws it', () => {
    const held = h.request('x');
    const r = h.request('x', { timeoutMs: 100 });
    h.env.advance(99);
    expect(r.heard.failures).toEqual([]);
    h.env.advance(1);
    expect(r.heard.failures).toHaveLength(1);
    expect(r.heard.failures[0]).toMatchObject({ code: 'ERR_TIMEOUT', details: { queuePosition: 1, holders: [{ peer: 'a', token: held.heard.grants[0]?.token.toString() }] } });
    expect(h.holds.stateOf(r.id)).toBe('timeout');
    expect(h.machine.queue('x')).toHaveLength(1);
  });

  it('fails a waiter whose acks are missing with ERR_UNREACHABLE naming the silent peers', () => {
    h = new Harness(2);
    withPeer(h);
    const r = h.request('x', { timeoutMs: 100 });
    h.env.advance(100);
    expect(r.heard.failures[0]).toMatchObject({ code: 'ERR_UNREACHABLE', details: { unreachablePeers: ['b'] } });
    expect(h.machine.stats().own).toBe(0);
  });

  it('grants a waiter once the other peer acks, and then clears its wait deadline', () => {
    h = new Harness(2);
    const peer = withPeer(h);
    const r = h.request('x', { timeoutMs: 100 });
    expect(r.heard.grants).toEqual([]);
    peer.ack();
    expect(r.heard.grants).toHaveLength(1);
    h.env.advance(100);
    expect(r.heard.failures).toEqual([]);
  });

  it('refuses a no-wait request at once when others hold, and waits noWaitAckBoundMs at most for missing acks', () => {
    h.request('x');
    const refused = h.request('x', { timeoutMs: 0 });
    expect(refused.heard.failures[0]).toMatchObject({ code: 'ERR_TIMEOUT' });
    expect(h.machine.queue('x')).toHaveLength(1);

    h = new Harness(2);
    withPeer(h);
    const noAck = h.request('y', { timeoutMs: 0 });
    h.env.advance(limits.noWaitAckBoundMs - 1);
    expect(noAck.heard.failures).toEqual([]);
    h.env.advance(1);
    expect(noAck.heard.failures[0]).toMatchObject({ code: 'ERR_UNREACHABLE', details: { unreachablePeers: ['b'] } });
  });

  it('withdraws a waiter whose client left, without telling it, and releases a connection-bound hold whose client left', () => {
    h.request('x');
    const waiter = h.request('x');
    waiter.clientGone();
    expect(waiter.heard.failures).toEqual([]);
    expect(h.holds.stateOf(waiter.id)).toBe('cancelled');
    // Ended here at once; released in the core at the end of the turn, in a batch.
    expect(h.machine.queue('x')).toHaveLength(2);
    h.env.advance(0);
    expect(h.machine.queue('x')).toHaveLength(1);

    const conn = h.request('c', { ttlMs: 0, hold: 'connection' });
    conn.clientGone();
    expect(conn.heard.ends).toEqual([]);
    expect(h.holds.stateOf(conn.id)).toBe('released');
    h.env.advance(0);
    expect(h.machine.queue('c')).toEqual([]);

    const ttl = h.request('t');
    ttl.clientGone(); // A TTL hold outlives its HTTP request.
    expect(h.holds.stateOf(ttl.id)).toBe('held');
  });
});

describe('LocalHolds: clients that leave in a burst (issue 15)', () => {
  it('tells a waiter whose client left nothing, even when the core grants it before its release is stepped', () => {
    const held = h.request('x');
    const waiter = h.request('x');
    waiter.clientGone();
    h.holds.release('x', held.id); // The core grants the waiter: its withdrawal is still pending.
    expect(waiter.heard.grants).toEqual([]);
    expect(h.machine.stats()).toMatchObject({ own: 1, granted: 1 });
    h.env.advance(0);
    expect(h.machine.stats()).toMatchObject({ own: 0, granted: 0 });
    expect(h.machine.queue('x')).toEqual([]);
  });

  it(`withdraws at most limits.clientsGonePerTurnMax (${limits.clientsGonePerTurnMax}) leavers per turn, the rest in the next turns`, () => {
    h.request('x');
    const waiters = Array.from({ length: limits.clientsGonePerTurnMax + 10 }, () => h.request('x'));
    // Each end-of-turn task is run by hand, one turn at a time.
    const turns: Array<() => void> = [];
    h.env.soon = (fn) => {
      turns.push(fn);
      return h.env.after(3_600_000, () => undefined);
    };
    for (const w of waiters) w.clientGone();
    expect(h.machine.queue('x')).toHaveLength(waiters.length + 1);
    expect(turns).toHaveLength(1);
    turns.shift()?.();
    expect(h.machine.queue('x')).toHaveLength(11);
    expect(turns).toHaveLength(1);
    turns.shift()?.();
    expect(h.machine.queue('x')).toHaveLength(1);
    expect(turns).toHaveLength(0);
  });
});

describe('LocalHolds: ends it does not choose', () => {
  it('tells a holder lease_lost and fails a waiter with ERR_LEASE_LOST naming the silent peers when the lease lapses', () => {
    const held = h.request('x');
    const waiter = h.request('x');
    h.silentPeers = ['b', 'c'];
    h.step({ type: 'lease', valid: false });
    expect(held.heard.ends).toEqual(['lease_lost']);
    expect(h.holds.stateOf(waiter.id)).not.toBe('waiting');
    h.env.advance(0); // The waiter is answered at the end of the turn.
    expect(h.holds.stateOf(waiter.id)).toBe('lease_lost');
    expect(waiter.heard.failures[0]).toMatchObject({ code: 'ERR_LEASE_LOST', details: { unreachablePeers: ['b', 'c'] } });
    expect(h.emitted).toEqual([`granted ${held.id}`, `ended ${held.id} lease_lost`]);
    expect(h.machine.stats()).toMatchObject({ own: 0, queued: 0 });
  });

  it(`answers at most limits.waitersFailedPerTurnMax (${limits.waitersFailedPerTurnMax}) waiters per turn when the lease lapses, all with one error`, () => {
    const held = h.request('x');
    const waiters = Array.from({ length: limits.waitersFailedPerTurnMax + 10 }, () => h.request('x'));
    const turns: Array<() => void> = [];
    h.env.soon = (fn) => {
      turns.push(fn);
      return h.env.after(3_600_000, () => undefined);
    };
    h.silentPeers = ['b'];
    h.step({ type: 'lease', valid: false });
    // Ended at once, in the core and here; only the answers wait.
    expect(held.heard.ends).toEqual(['lease_lost']);
    expect(h.machine.stats()).toMatchObject({ own: 0, queued: 0 });
    expect(waiters.some((w) => h.holds.stateOf(w.id) === 'waiting')).toBe(false);
    const told = (): number => waiters.filter((w) => w.heard.failures.length === 1).length;
    expect(told()).toBe(0);
    expect(turns).toHaveLength(1);
    turns.shift()?.();
    expect(told()).toBe(limits.waitersFailedPerTurnMax);
    expect(turns).toHaveLength(1);
    turns.shift()?.();
    expect(told()).toBe(waiters.length);
    expect(turns).toHaveLength(0);
    expect(waiters.every((w) => h.holds.stateOf(w.id) === 'lease_lost')).toBe(true);
    const errors = new Set(waiters.map((w) => w.heard.failures[0]));
    expect(errors.size).toBe(1);
    expect([...errors][0]).toMatchObject({ code: 'ERR_LEASE_LOST', details: { unreachablePeers: ['b'] } });
  });

  it('does not answer a waiter the lease loss ended whose client left before the answer', () => {
    h.request('x');
    const waiter = h.request('x');
    h.step({ type: 'lease', valid: false });
    waiter.clientGone();
    h.env.advance(0);
    expect(waiter.heard.failures).toEqual([]);
    expect(h.holds.stateOf(waiter.id)).toBe('lease_lost');
  });

  it('answers the waiters a lapsed lease ended before endAll returns, once each', () => {
    h.request('x');
    const waiter = h.request('x');
    h.step({ type: 'lease', valid: false });
    h.holds.endAll('shutdown', new LockError(ErrorCode.ShuttingDown, 'stopping'));
    expect(waiter.heard.failures.map((e) => e.code)).toEqual(['ERR_LEASE_LOST']);
    h.env.advance(0);
    expect(waiter.heard.failures).toHaveLength(1);
  });

  it('ends every hold and fails every waiter on endAll, withdrawing them all', () => {
    h = new Harness(2);
    const peer = withPeer(h);
    const held = h.request('x');
    peer.ack();
    const waiter = h.request('y'); // Waits for b's ack.
    h.holds.endAll('evicted', new LockError('ERR_EVICTED', 'rejoining'));
    expect(held.heard.ends).toEqual(['evicted']);
    expect(waiter.heard.failures.map((e) => e.code)).toEqual(['ERR_EVICTED']);
    expect([h.holds.stateOf(held.id), h.holds.stateOf(waiter.id)]).toEqual(['evicted', 'evicted']);
    expect(h.machine.stats()).toMatchObject({ own: 0, queued: 0 });
    expect(h.env.pendingTimers).toBe(0);
  });

  it('fails a request on a full queue with ERR_LIMIT_EXCEEDED and keeps no trace of it', () => {
    h = new Harness(2); // Never joined: every request stays pending, and counts.
    for (let i = 0; i < limits.queuedPerLockMax; i++) h.request('x', { timeoutMs: limits.timeoutMsMax });
    const r = h.request('x');
    expect(r.heard.failures[0]).toMatchObject({ code: 'ERR_LIMIT_EXCEEDED' });
    expect(h.holds.stateOf(r.id)).toBeUndefined();
    expect(h.env.pendingTimers).toBe(limits.queuedPerLockMax);
  });
});
