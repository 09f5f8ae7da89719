/**
 * Leader election on real peer processes (docs/design.md section 6, "Elections"): a campaign
 * is an exclusive, connection-bound hold of the election's lock; every peer names the leader,
 * its value and its term; observe tells each change of leader, vacant included; a leader that
 * dies is replaced; `lamport-lock elect` runs a command while leading and `lamport-lock leader`
 * names the leader.
 */
import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { LockClient } from '../../src/client/lock-client.js';
import { waitFor } from '../support/wait.js';
import { call, useTestCluster } from './helpers.js';

const lockBin = resolve('dist/bin/lamport-lock.js');
const cluster = useTestCluster();

async function leaderOn(base: string, name: string): Promise<Record<string, unknown> | null> {
  return (await call(base, `/v1/elections/${encodeURIComponent(name)}`)).body['leader'] as Record<string, unknown> | null;
}

describe('elections', () => {
  it('elect one leader at a time, named with its value and term on every peer, and observed as it changes', async () => {
    const [a, b, c] = [cluster().url('a'), cluster().url('b'), cluster().url('c')];
    const watcher = new LockClient({ peer: c });
    const ac = new AbortController();
    const seen: string[] = [];
    // Caught here, so that a stream broken by a failing test cannot outlive it unhandled.
    const observing = (async () => {
      for await (const e of watcher.observe('db-primary', ac.signal)) {
        const l = e.data['leader'] as Record<string, unknown> | null;
        seen.push(l === null ? e.type : `${e.type} ${String(l['value'])} ${String(l['term'])}`);
      }
    })().then(() => null, (err: unknown) => err);
    await waitFor('observe says vacant first', () => seen.length === 1);
    expect(seen[0]).toBe('vacant');

    const first = new LockClient({ peer: a });
    const second = new LockClient({ peer: b });
    let firstTerm = 0n;
    let secondTerm = 0n;
    let stepDown: () => void = () => undefined;
    // The campaign's function runs once the grant reaches the client, which may be after
    // the peers already name the leader: the test waits for the function itself.
    let leading: (announce: (value: unknown) => Promise<void>) => void = () => undefined;
    const started = new Promise<(value: unknown) => Promise<void>>((r) => (leading = r));
    const firstRun = first.campaign('db-primary', 'host-a:5432', async (term, _signal, announce) => {
      firstTerm = term;
      const down = new Promise<void>((r) => (stepDown = r));
      leading(announce);
      await down;
    }, { owner: 'first' });
    const proclaim = await started;
    await waitFor('a leads', async () => (await leaderOn(c, 'db-primary'))?.['value'] === 'host-a:5432');
    // The leader announces a new value: every peer names it, the term stays.
    await proclaim('host-a:6543');
    await waitFor('c names the new value', async () => (await leaderOn(c, 'db-primary'))?.['value'] === 'host-a:6543');
    expect((await leaderOn(c, 'db-primary'))?.['term']).toBe(firstTerm.toString());
    const secondRun = second.campaign('db-primary', 'host-b:5432', async (term) => {
      secondTerm = term;
      // Only one leader at a time: a's campaign has ended by now.
      expect(await leaderOn(b, 'db-primary')).toMatchObject({ value: 'host-b:5432', owner: 'second', local: true });
    }, { owner: 'second' });
    await waitFor('b waits behind a', async () => ((await call(a, '/v1/locks/db-primary')).body['waiters'] as unknown[]).length === 1);
    const onA = await leaderOn(a, 'db-primary');
    expect(onA).toMatchObject({ peer: 'a', owner: 'first', value: 'host-a:6543', term: firstTerm.toString(), local: true });
    expect(typeof onA?.['granted_at']).toBe('number');
    expect(await leaderOn(c, 'db-primary')).toMatchObject({ peer: 'a', value: 'host-a:6543', term: firstTerm.toString(), local: false, granted_at: null });
    stepDown();
    await firstRun;
    await secondRun;
    expect(secondTerm).toBeGreaterThan(firstTerm);
    await waitFor('vacant again', async () => (await leaderOn(c, 'db-primary')) === null);
    await waitFor('observe saw it all', () => seen.length >= 5);
    ac.abort();
    expect(await observing).toBeNull();
    expect(seen).toEqual(['vacant', `leader host-a:5432 ${firstTerm}`, `leader host-a:6543 ${firstTerm}`, `leader host-b:5432 ${secondTerm}`, 'vacant']);
    for (const cl of [watcher, first, second]) cl.close();
  });

  it('lamport-lock elect runs its command while leading, with the term; lamport-lock leader names the leader', async () => {
    const a = cluster().url('a');
    const child = spawn(process.execPath, [lockBin, '--peer', a, 'elect', 'cli-election', '--value', 'svc-1', '--owner', 'cli', '--', process.execPath, '-e', 'console.log("TERM=" + process.env.LAMPORT_TERM); setTimeout(() => {}, 60000)'], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((r) => child.on('close', (code) => r(code)));
    await waitFor('the command runs as leader', () => /TERM=\d+/.test(out));
    const term = /TERM=(\d+)/.exec(out)?.[1];
    const leader = spawn(process.execPath, [lockBin, '--peer', cluster().url('b'), 'leader', 'cli-election'], { stdio: ['ignore', 'pipe', 'inherit'] });
    let said = '';
    leader.stdout.on('data', (d: Buffer) => (said += d.toString()));
    await new Promise((r) => leader.on('close', r));
    expect(said).toBe(`leader cli on peer a, value "svc-1", term ${term}\n`);
    child.kill('SIGTERM');
    await exited;
    await waitFor('vacant once the command ended', async () => (await leaderOn(a, 'cli-election')) === null);
  });

  it('answer a campaign over HTTP with the term and value, and refuse a campaign without a value', async () => {
    const a = cluster().url('a');
    const missing = await call(a, '/v1/elections/http-election/campaign', { owner: 'x' });
    expect(missing.status).toBe(400);
    expect(missing.body['error']).toBe('ERR_BAD_REQUEST');
    const ctl = new AbortController();
    const res = await fetch(`${a}/v1/elections/http-election/campaign`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ value: { url: 'http://x' } }), signal: ctl.signal });
    expect(res.status).toBe(200);
    const reader = res.body?.pipeThrough(new TextDecoderStream()).getReader();
    const first = (await reader?.read())?.value ?? '';
    const line = JSON.parse(first.split('\n')[0] ?? '{}') as Record<string, unknown>;
    expect(line).toMatchObject({ lock: 'http-election', value: { url: 'http://x' } });
    expect(line['term']).toBe(line['token']);
    expect(await leaderOn(a, 'http-election')).toMatchObject({ value: { url: 'http://x' }, term: line['term'] });
    expect(await call(a, '/v1/elections/http-election/proclaim', { id: line['id'], value: 'next' })).toEqual({ status: 200, body: { proclaimed: true } });
    expect(await leaderOn(a, 'http-election')).toMatchObject({ value: 'next', term: line['term'] });
    const stale = await call(a, '/v1/elections/http-election/proclaim', { id: 'not-a-hold', value: 'x' });
    expect([stale.status, stale.body['error']]).toEqual([404, 'ERR_NOT_HELD']);
    const resigned = await call(a, '/v1/elections/http-election/resign', { id: line['id'] });
    expect(resigned).toEqual({ status: 200, body: { resigned: true } });
    ctl.abort();
    expect(await leaderOn(a, 'http-election')).toBeNull();
  });
});
