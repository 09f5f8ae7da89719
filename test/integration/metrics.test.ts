/**
 * GET /metrics of real peer processes after known traffic: every documented metric is
 * there with its Prometheus type, and the counts match what the test did.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../support/wait.js';
import { acquire, release, useTestCluster } from './helpers.js';

/** Samples and `# TYPE` lines of one scrape. */
interface Scrape {
  readonly types: Map<string, string>;
  /** Keyed by `name{labels as exposed}`; labels sorted as prom-client prints them. */
  readonly samples: Map<string, number>;
}

function parse(text: string): Scrape {
  const types = new Map<string, string>();
  const samples = new Map<string, number>();
  for (const line of text.split('\n')) {
    const t = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (t !== null) types.set(t[1] ?? '', t[2] ?? '');
    const s = /^([a-zA-Z_:][\w:]*(?:\{[^}]*\})?) (\S+)$/.exec(line);
    if (s !== null) samples.set(s[1] ?? '', Number(s[2]));
  }
  return { types, samples };
}

async function scrape(base: string): Promise<Scrape> {
  const res = await fetch(`${base}/metrics`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return parse(await res.text());
}

function value(s: Scrape, key: string): number {
  const v = s.samples.get(key);
  if (v === undefined) throw new Error(`no sample ${key}; have ${[...s.samples.keys()].filter((k) => k.startsWith(key.split('{')[0] ?? '')).join(', ')}`);
  return v;
}

const cluster = useTestCluster();
let a: string;
let b: string;

beforeAll(() => {
  [a, b] = [cluster().url('a'), cluster().url('b')];
});

describe('GET /metrics', () => {
  it('exposes every documented metric with its type', async () => {
    // Ready means a lease (a majority): wait for both links and a heartbeat echo on each.
    const linked = (x: Scrape): boolean => ['b', 'c'].every((p) => x.samples.get(`lamport_peer_connected{peer="${p}"}`) === 1 && x.samples.has(`lamport_peer_rtt_seconds{peer="${p}"}`));
    await waitFor('links to b and c up with an RTT sample', async () => linked(await scrape(a)), 5000);
    const s = await scrape(a);
    const expected: Record<string, string> = {
      lamport_lock_acquire_duration_seconds: 'histogram',
      lamport_lock_hold_duration_seconds: 'histogram',
      lamport_lock_waiters: 'gauge',
      lamport_lock_holders: 'gauge',
      lamport_lock_queued_requests: 'gauge',
      lamport_lock_names: 'gauge',
      lamport_lock_grants_total: 'counter',
      lamport_lock_holds_ended_total: 'counter',
      lamport_lock_overdue_holds_total: 'counter',
      lamport_peer_connected: 'gauge',
      lamport_peer_rtt_seconds: 'gauge',
      lamport_peer_last_heard_seconds: 'gauge',
      lamport_peer_messages_sent_total: 'counter',
      lamport_peer_frames_sent_total: 'counter',
      lamport_peer_bytes_sent_total: 'counter',
      lamport_peer_frames_received_total: 'counter',
      lamport_peer_messages_dropped_total: 'counter',
      lamport_clock: 'gauge',
      lamport_lease_valid: 'gauge',
      lamport_cluster_degraded: 'gauge',
      lamport_superseded: 'gauge',
      lamport_peers_unreachable: 'gauge',
      process_cpu_seconds_total: 'counter',
      process_resident_memory_bytes: 'gauge',
      nodejs_eventloop_lag_seconds: 'gauge',
      nodejs_heap_size_used_bytes: 'gauge',
    };
    expect(Object.fromEntries([...Object.keys(expected)].map((n) => [n, s.types.get(n)]))).toEqual(expected);
    // Not the defaults that walk every socket of the process at each scrape (issue 15).
    for (const walking of ['nodejs_active_handles', 'nodejs_active_handles_total', 'nodejs_active_requests', 'nodejs_active_resources_total']) {
      expect(s.types.has(walking), walking).toBe(false);
    }
    expect(s.types.get('process_open_fds')).toBe('gauge');
    for (const reason of ['released', 'expired', 'lease_lost', 'evicted', 'shutdown']) {
      expect(s.samples.has(`lamport_lock_holds_ended_total{reason="${reason}"}`)).toBe(true);
    }
    expect(value(s, 'lamport_lease_valid')).toBe(1);
    expect(value(s, 'lamport_cluster_degraded')).toBe(0);
    expect(value(s, 'lamport_superseded')).toBe(0);
    expect(value(s, 'lamport_peers_unreachable')).toBe(0);
    expect(value(s, 'lamport_clock')).toBeGreaterThan(Date.now() - 3_600_000);
    for (const peer of ['b', 'c']) {
      expect(value(s, `lamport_peer_connected{peer="${peer}"}`)).toBe(1);
      const rtt = value(s, `lamport_peer_rtt_seconds{peer="${peer}"}`);
      expect(rtt).toBeGreaterThan(0);
      expect(rtt).toBeLessThan(1);
      expect(value(s, `lamport_peer_last_heard_seconds{peer="${peer}"}`)).toBeLessThan(1);
    }
  });

  it('counts grants, ends by reason, waits, timeouts and overdue holds as they happened', async () => {
    const before = await scrape(a);
    const grantsBefore = value(before, 'lamport_lock_grants_total{mode="exclusive"}');
    const framesBefore = value(before, 'lamport_peer_frames_sent_total');
    for (let i = 0; i < 3; i++) {
      const g = await acquire(a, `m-${i}`);
      expect((await release(a, `m-${i}`, g.body['id'])).status).toBe(200);
    }
    const shared = await acquire(a, 'm-shared', { mode: 'shared' });
    await release(a, 'm-shared', shared.body['id']);

    const expiring = await acquire(a, 'm-ttl', { ttl_ms: 150 });
    expect(expiring.status).toBe(200);
    const overdue = await acquire(a, 'm-slow', { expected_ms: 100 });
    const held = await scrape(a);
    expect(value(held, 'lamport_lock_holders')).toBe(2);
    // b waits behind a's hold and times out: a waiter on b, then an acquire outcome "timeout".
    const waiting = acquire(b, 'm-slow', { timeout_ms: 400 });
    await waitFor('b waits', async () => value(await scrape(b), 'lamport_lock_waiters') === 1, 2000);
    expect((await waiting).status).toBe(423);
    await waitFor('the hold kept past its expected_ms', async () => value(await scrape(a), 'lamport_lock_overdue_holds_total') === 1, 2000);
    await release(a, 'm-slow', overdue.body['id']);
    await waitFor('the TTL hold expired', async () => value(await scrape(a), 'lamport_lock_holds_ended_total{reason="expired"}') === 1, 2000);

    const s = await scrape(a);
    expect(value(s, 'lamport_lock_grants_total{mode="exclusive"}') - grantsBefore).toBe(5);
    expect(value(s, 'lamport_lock_grants_total{mode="shared"}')).toBe(1);
    expect(value(s, 'lamport_lock_holds_ended_total{reason="released"}')).toBe(5);
    expect(value(s, 'lamport_lock_holds_ended_total{reason="expired"}')).toBe(1);
    expect(value(s, 'lamport_lock_overdue_holds_total')).toBe(1);
    expect(value(s, 'lamport_lock_acquire_duration_seconds_count{mode="exclusive",outcome="granted"}')).toBe(5);
    expect(value(s, 'lamport_lock_hold_duration_seconds_count{mode="exclusive",reason="expired"}')).toBe(1);
    expect(value(s, 'lamport_lock_hold_duration_seconds_sum{mode="exclusive",reason="expired"}')).toBeGreaterThanOrEqual(0.14);
    expect(value(s, 'lamport_lock_holders')).toBe(0);
    expect(value(s, 'lamport_lock_waiters')).toBe(0);
    expect(value(s, 'lamport_peer_frames_sent_total')).toBeGreaterThan(framesBefore);
    expect(value(s, 'lamport_peer_messages_sent_total')).toBeGreaterThan(0);
    expect(value(s, 'lamport_peer_bytes_sent_total')).toBeGreaterThan(value(s, 'lamport_peer_frames_sent_total'));

    const sb = await scrape(b);
    expect(value(sb, 'lamport_lock_acquire_duration_seconds_count{mode="exclusive",outcome="timeout"}')).toBe(1);
    expect(value(sb, 'lamport_lock_grants_total{mode="exclusive"}')).toBe(0);
    expect(value(sb, 'lamport_lock_waiters')).toBe(0);
  });

  it('grows the mirrored link counters by the traffic between two scrapes', async () => {
    const first = await scrape(a);
    const g = await acquire(a, 'm-link');
    await release(a, 'm-link', g.body['id']);
    const second = await scrape(a);
    for (const name of ['lamport_peer_frames_sent_total', 'lamport_peer_bytes_sent_total', 'lamport_peer_frames_received_total']) {
      expect(value(second, name)).toBeGreaterThan(value(first, name));
    }
  });
});
