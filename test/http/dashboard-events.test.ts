/**
 * The dashboard feed (GET /v1/events) against a fake runtime, on virtual time: snapshot on connect,
 * throttled pushes, activity from hold events and queue diffs, the client limit, and the
 * runtime listeners removed when the last client goes.
 */
import { EventEmitter } from 'node:events';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Script } from 'node:vm';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RateWindow } from '../../src/http/dashboard-activity.js';
import { DashboardFeed } from '../../src/http/dashboard-events.js';
import { dashboardScript } from '../../src/http/dashboard/script.js';
import type { ClusterView, HoldEvent, LockView, PeerEvents, QueueView } from '../../src/runtime/peer.js';
import { limits } from '../../src/limits.js';
import { ManualEnv } from '../support/manual-env.js';
import { waitFor } from '../support/wait.js';

class FakePeer {
  readonly events = new EventEmitter<PeerEvents>();
  lockList: LockView[] = [];
  cluster(): ClusterView {
    return {
      id: 'a', cluster: 't', fingerprint: '0'.repeat(24), refusedLinks: [], configMismatch: null,
      shape: { cluster: 't', peers: ['a'], heartbeatMs: 200, leaseMs: 1000, evictMs: 1700, marginMilli: 1500, protocol: 9 }, protocolLevel: 9, protocolLevels: { oldest: 9, newest: 9 }, epoch: 0,
      incarnation: '1.1', clock: 1, synced: true, lease: { valid: true, validForMs: 1000 }, echoesHeldForMs: 0,
      stats: { locks: 0, queued: 0, own: 0, waiting: 0, granted: 0 }, degraded: { active: false, waitingFor: [], minority: null }, superseded: null, peers: [],
    };
  }
  /** The `entriesMax` of each locks() call: the feed must never ask for whole queues. */
  readonly asked: Array<number | undefined> = [];
  locks(entriesMax?: number): LockView[] {
    this.asked.push(entriesMax);
    return this.lockList;
  }
  /** The feed reads through the peer's inspector: this fake is its own. */
  get inspect(): this {
    return this;
  }
}

function view(peer: string, token: string, local = false): QueueView {
  return { peer, owner: `o-${peer}`, meta: null, token, mode: 'exclusive', limit: 1, permits: 1, requestedAtMs: 1, grantedAtMs: null, expiresAtMs: null, local };
}

interface SseMessage {
  readonly event: string;
  readonly data: unknown;
}

/** Opens the stream; collects parsed messages until `close()`. */
async function open(url: string): Promise<{ status: number; messages: SseMessage[]; close: () => void }> {
  const ctl = new AbortController();
  const res = await fetch(url, { signal: ctl.signal });
  const messages: SseMessage[] = [];
  if (res.status === 200 && res.body !== null) {
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    let buf = '';
    void (async () => {
      for (;;) {
        const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true }));
        if (done === true) return;
        buf += value ?? '';
        let cut: number;
        while ((cut = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, cut);
          buf = buf.slice(cut + 2);
          const event = /^event: (.*)$/m.exec(block)?.[1];
          const data = /^data: (.*)$/m.exec(block)?.[1];
          if (event !== undefined && data !== undefined) messages.push({ event, data: JSON.parse(data) });
        }
      }
    })();
  }
  return { status: res.status, messages, close: () => ctl.abort() };
}

let peer: FakePeer;
let env: ManualEnv;
let feed: DashboardFeed;
let server: Server;
let url: string;

/** Messages of one event type a client has received so far. */
function count(c: { messages: SseMessage[] }, event: string): number {
  return c.messages.filter((m) => m.event === event).length;
}

beforeEach(async () => {
  peer = new FakePeer();
  env = new ManualEnv();
  feed = new DashboardFeed(peer, { clientsMax: 2, pushIntervalMs: 100, linkRefreshMs: 50, clock: env });
  server = createServer((req, res) => feed.route(req, res));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/events`;
});

afterEach(async () => {
  feed.close();
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

// The feed runs on virtual time (ManualEnv): the test decides when each timer fires, and
// waits only for the bytes already written to reach its client.
describe('dashboard feed', () => {
  it('sends the remembered activity and a full state on connect', async () => {
    peer.lockList = [{ name: 'x', holders: [view('b', '11')], waiters: [], queued: 1 }];
    const c = await open(url);
    await waitFor('the messages sent on connect', () => c.messages.length >= 2);
    expect(c.messages.map((m) => m.event)).toEqual(['activity', 'state']);
    expect(c.messages[1]?.data).toMatchObject({ locks: [{ name: 'x', holders: [{ peer: 'b', token: '11' }], waiters_total: 0 }], locks_total: 1 });
    c.close();
  });

  it('reads only the first entries of each queue, and counts the waiters beyond them (a burst must not cost every push)', async () => {
    peer.lockList = [{ name: 'x', holders: [view('b', '11')], waiters: [view('c', '12')], queued: 100_000 }];
    const c = await open(url);
    await waitFor('the messages sent on connect', () => c.messages.length >= 2);
    peer.events.emit('changed');
    env.advance(0);
    await waitFor('the pushed state', () => count(c, 'state') === 2);
    expect(c.messages[1]?.data).toMatchObject({ locks: [{ name: 'x', waiters_total: 99_999 }] });
    expect(peer.asked.length).toBeGreaterThan(1);
    expect(peer.asked.every((n) => n === limits.dashboardWaitersPerLockMax + limits.dashboardHoldersPerLockMax)).toBe(true);
    c.close();
  });

  it('pushes at most one state per interval however many changes arrive', async () => {
    const c = await open(url);
    await waitFor('the state sent on connect', () => count(c, 'state') === 1);
    // A change every ms for 250 ms: the first is pushed at once (t=0), the others at most
    // once per 100 ms (t=100, 200), and the last ones at t=300.
    for (let t = 0; t < 250; t++) {
      peer.events.emit('changed');
      env.advance(1);
    }
    env.advance(150);
    // The link state goes out every 50 ms, after any state pushed before it: once the one
    // of t=400 is in, every state push has arrived too.
    await waitFor('the link pushes up to t=400', () => count(c, 'cluster') === 8);
    expect(count(c, 'state') - 1).toBe(4);
    c.close();
  });

  it('reports local hold events exactly and remote queue changes by diff', async () => {
    const c = await open(url);
    await waitFor('the messages sent on connect', () => c.messages.length >= 2);
    peer.lockList = [{ name: 'x', holders: [view('b', '21')], waiters: [view('c', '33')], queued: 2 }];
    peer.events.emit('changed');
    env.advance(0);
    await waitFor('the first activity push', () => count(c, 'activity') === 2);
    const hold: HoldEvent = { type: 'ended', lock: 'y', id: 'i', owner: 'me', mode: 'exclusive', token: '7', peer: 'a', reason: 'expired', at: 5 };
    peer.lockList = [{ name: 'x', holders: [view('c', '33')], waiters: [], queued: 1 }];
    peer.events.emit('hold', hold);
    env.advance(100);
    await waitFor('the second activity push', () => count(c, 'activity') === 3);
    const lines = c.messages.filter((m) => m.event === 'activity').flatMap((m) => m.data as Array<Record<string, unknown>>);
    expect(lines.map((l) => [l['type'], l['peer'], l['token']])).toEqual([
      ['held', 'b', '21'], ['queued', 'c', '33'],
      ['ended', 'a', '7'], ['held', 'c', '33'], ['gone', 'b', '21'],
    ]);
    expect(lines[2]).toMatchObject({ reason: 'expired', local: true });
    c.close();
  });

  it('pushes link state periodically without any change', async () => {
    const c = await open(url);
    env.advance(50);
    env.advance(50);
    await waitFor('two link pushes', () => count(c, 'cluster') === 2);
    expect(count(c, 'state')).toBe(1);
    c.close();
  });

  it('answers 503 past the client limit and frees the slot when a client leaves', async () => {
    const c1 = await open(url);
    const c2 = await open(url);
    const c3 = await open(url);
    expect([c1.status, c2.status, c3.status]).toEqual([200, 200, 503]);
    c1.close();
    await waitFor('the feed saw the client leave', () => feed.clientCount() === 1);
    const c4 = await open(url);
    expect(c4.status).toBe(200);
    c2.close();
    c4.close();
  });

  it('records activity while no page is open, keeps only the last activityMax, and shows it to a page opened later', async () => {
    feed.close();
    feed = new DashboardFeed(peer, { clientsMax: 2, pushIntervalMs: 10, linkRefreshMs: 50, activityMax: 3, clock: env });
    // Listening from the start, not from the first page (it once recorded only while a page was open).
    expect(peer.events.listenerCount('hold')).toBe(1);
    for (let i = 1; i <= 5; i++) {
      peer.events.emit('hold', { type: 'granted', lock: 'bg', id: `i${i}`, owner: 'cron', mode: 'exclusive', token: String(i), peer: 'a', reason: null, at: env.wallMs() });
    }
    env.advance(10);
    expect(feed.activity().map((a) => a.token)).toEqual(['3', '4', '5']);
    server.removeAllListeners('request');
    server.on('request', (req, res) => feed.route(req, res));
    const c = await open(url);
    await waitFor('the first activity message', () => c.messages.length >= 2, 2000);
    expect(c.messages[0]?.event).toBe('activity');
    expect((c.messages[0]?.data as Array<Record<string, unknown>>).map((a) => a['token'])).toEqual(['3', '4', '5']);
    expect(c.messages[1]?.data).toMatchObject({ activity_max: 3, rates: { window_ms: 10_000 } });
    c.close();
    feed.close();
    expect(peer.events.listenerCount('hold')).toBe(0);
    expect(peer.events.listenerCount('changed')).toBe(0);
  });
});

describe('grants per second', () => {
  it('averages whole seconds of the window, forgets older ones, and needs no memory per grant', () => {
    const w = new RateWindow(10_000);
    const t0 = 1_000_000_000_000;
    for (let i = 0; i < 10; i++) w.add(t0 + i * 1000, 5);
    expect(w.perSecond(t0 + 10_000)).toBe(5);
    // The current, partial second does not count yet.
    w.add(t0 + 10_500, 100);
    expect(w.perSecond(t0 + 10_600)).toBe(5);
    // Five seconds on, the first five seconds have left the window; the partial one is in.
    expect(w.perSecond(t0 + 15_000)).toBe((5 * 5 + 100) / 10);
    expect(w.perSecond(t0 + 60_000)).toBe(0);
  });
});

describe('dashboard script', () => {
  it('is valid JavaScript and never writes markup from data', () => {
    expect(() => new Script(dashboardScript)).not.toThrow();
    expect(dashboardScript).not.toMatch(/innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(/);
    expect(dashboardScript).not.toMatch(/setInterval|setTimeout/);
  });
});
