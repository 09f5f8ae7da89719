/**
 * Watches on real peer processes (docs/design.md section 6, "Watches"): a stream starts with
 * the current state and then tells every queue change this peer sees, for one lock or for a
 * prefix, through the typed client's `watch`; the listing filters by prefix; bad prefixes and
 * methods get coded errors.
 */
import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { WatchEvent } from '../../src/client/lock-client.js';
import { LockClient } from '../../src/client/lock-client.js';
import { waitFor } from '../support/wait.js';
import { acquire, call, release, useTestCluster } from './helpers.js';

const cluster = useTestCluster();

/** Collects a watch's events until `until` holds for the list (or it throws). */
async function collect(events: AsyncGenerator<WatchEvent>, until: (seen: readonly WatchEvent[]) => boolean): Promise<WatchEvent[]> {
  const seen: WatchEvent[] = [];
  for await (const e of events) {
    seen.push(e);
    if (until(seen)) break;
  }
  return seen;
}

/** `type lock token reason` of each change, for compact comparisons. */
function lines(events: readonly WatchEvent[]): string[] {
  return events.filter((e) => e.type !== 'state').map((e) => {
    const request = e.data['request'] as Record<string, unknown>;
    return `${e.type} ${String(e.data['lock'])} ${String(request['owner'])} ${String(e.data['reason'])}`;
  });
}

describe('watches', () => {
  it('start with the current state and tell every grant, release and expiry of one lock, with local end reasons', async () => {
    const [a, b] = [cluster().url('a'), cluster().url('b')];
    const held = await acquire(b, 'w1', { owner: 'first', ttl_ms: 60_000 });
    expect(held.status).toBe(200);
    const client = new LockClient({ peer: a });
    const stream = client.watch('w1');
    const first = await stream.next();
    expect(first.value?.type).toBe('state');
    const state = (first.value?.data['locks'] as Array<{ holders: Array<{ owner: string }> }>)[0];
    expect(state?.holders.map((h) => h.owner)).toEqual(['first']);

    const rest = collect(stream, (seen) => seen.filter((e) => e.type === 'released').length === 2);
    const waiting = acquire(a, 'w1', { owner: 'second', ttl_ms: 300 });
    await waitFor('second queued behind first', async () => ((await call(a, '/v1/locks/w1')).body['waiters'] as unknown[]).length === 1);
    expect((await release(b, 'w1', held.body['id'])).status).toBe(200);
    expect((await waiting).status).toBe(200);
    const seen = await rest;
    // first's hold is b's: a knows it left, not why; second's is a's own: it expired.
    expect(lines(seen)).toEqual(['queued w1 second null', 'released w1 first null', 'granted w1 second null', 'released w1 second expired']);
    client.close();
  });

  it('follow every lock of a prefix and no other, and the listing filters by the same prefix', async () => {
    const a = cluster().url('a');
    const client = new LockClient({ peer: a });
    const ac = new AbortController();
    const stream = client.watch({ prefix: 'jobs/' }, ac.signal);
    expect((await stream.next()).value?.type).toBe('state');
    const rest = collect(stream, (seen) => seen.filter((e) => e.type === 'released').length === 2);
    for (const name of ['other', 'jobs/1', 'jobs/2']) {
      const got = await acquire(a, name, { owner: name });
      expect(got.status).toBe(200);
      if (name === 'jobs/2') {
        const listed = await call(a, `/v1/locks?prefix=${encodeURIComponent('jobs/')}`);
        expect((listed.body['locks'] as Array<{ name: string }>).map((l) => l.name)).toEqual(['jobs/2']);
      }
      expect((await release(a, name, got.body['id'])).status).toBe(200);
    }
    const seen = await rest;
    expect(lines(seen)).toEqual([
      'queued jobs/1 jobs/1 null', 'granted jobs/1 jobs/1 null', 'released jobs/1 jobs/1 released',
      'queued jobs/2 jobs/2 null', 'granted jobs/2 jobs/2 null', 'released jobs/2 jobs/2 released',
    ]);
    ac.abort();
    client.close();
  });

  it('lamport-lock status --watch prints the state, then a line per change, until interrupted', async () => {
    const a = cluster().url('a');
    const child = spawn(process.execPath, [resolve('dist/bin/lamport-lock.js'), '--peer', a, 'status', '--watch', 'w9'], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((r) => child.on('close', (code) => r(code)));
    await waitFor('the state table', () => out.includes('no locks held or waited for'));
    const got = await acquire(a, 'w9', { owner: 'cli' });
    expect((await release(a, 'w9', got.body['id'])).status).toBe(200);
    await waitFor('three change lines', () => out.trim().split('\n').length >= 4);
    child.kill('SIGINT');
    expect(await exited).toBe(0);
    const changes = out.trim().split('\n').slice(1).map((l) => l.split(' ').filter((w) => w !== '').slice(1, 4).join(' '));
    expect(changes).toEqual(['queued w9 owner=cli', 'granted w9 owner=cli', 'released w9 owner=cli']);
    expect(out).toMatch(/released w9 owner=cli peer=a token=\d+ reason=released/);
  });

  it('refuse a bad prefix and a POST with coded errors', async () => {
    const a = cluster().url('a');
    const bad = await call(a, `/v1/watch?prefix=${'x'.repeat(300)}`);
    expect(bad.status).toBe(400);
    expect(bad.body['error']).toBe('ERR_BAD_REQUEST');
    const post = await call(a, '/v1/locks/w1/watch', {});
    expect(post.status).toBe(404);
    expect(post.body['error']).toBe('ERR_NOT_FOUND');
  });
});
