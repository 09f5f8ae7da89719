/**
 * Changes of the members on real processes, through the built CLI (issue 40; docs/operations.md,
 * "Changing the members"): a cluster of three grows to four (a host added, started with the join
 * ticket, promoted) and shrinks to three (a founder removed, then retired), while a hold of
 * another peer's client is kept through every change; the added voter is granted a lock with a
 * token of its own ordinal; the removed peer answers ERR_REMOVED and refuses to start again
 * (exit 2); a member restarted with its old config file comes back into the changed cluster,
 * and the added one restarted with its ticket again starts from its data dir.
 */
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { LocalCluster } from '../../src/tools/local-cluster.js';
import { loadViewRecord } from '../../src/runtime/view-store.js';
import { acquire, call, startTestCluster } from './helpers.js';
import { adminTokenFile, admin as runAdmin } from '../fault/member-changes.js';
import type { BinRun } from './helpers.js';
import { waitFor } from '../support/wait.js';

const tokenFile = adminTokenFile('member-changes');

let cluster: LocalCluster | undefined;
afterAll(async () => {
  await cluster?.stop();
});

/** `lamport-lock --peer <at> ARGS... --admin-token-file <file>`, run to its end. */
function admin(c: LocalCluster, at: string, ...args: string[]): Promise<BinRun> {
  return runAdmin(c, at, tokenFile, ...args);
}

/** Epoch and `id:state` of each member, as peer `at` answers GET /v1/members. */
async function viewAt(c: LocalCluster, at: string): Promise<string> {
  const b = (await call(c.url(at), '/v1/members')).body;
  return `${String(b['epoch'])} ${(b['members'] as Array<Record<string, unknown>>).map((m) => `${String(m['id'])}:${String(m['state'])}`).join(',')}`;
}

/** Whether peer `at` shows its link to `id` up. */
async function connected(c: LocalCluster, at: string, id: string): Promise<boolean> {
  const b = (await call(c.url(at), '/v1/members')).body;
  return (b['members'] as Array<Record<string, unknown>>).some((m) => m['id'] === id && m['connected'] === true && m['evicted'] === false);
}

describe('changing the members of a running cluster', () => {
  it('grows 3 -> 4 and shrinks back to 3 while a hold of another peer is kept', async () => {
    cluster = await startTestCluster({ peerArgs: ['--admin-token-file', tokenFile] });
    const c = cluster;
    const kept = await acquire(c.url('b'), 'kept', { ttl_ms: 120_000 });
    expect(kept.status).toBe(200);

    // Add d: a learner; the CLI prints the line that starts it.
    const d = await c.addHost('d');
    const add = await admin(c, 'a', 'member', 'add', 'd', '--ws', d.ws, '--http', d.http);
    expect(add.code, add.stderr).toBe(0);
    expect(add.stdout).toContain('added d as a learner');
    const ticket = /--join (\S+)/.exec(add.stdout)?.[1];
    expect(ticket).toBeDefined();
    expect(await viewAt(c, 'c')).toBe('1 a:voter,b:voter,c:voter,d:learner');
    // Promoting it before it runs would stall every request: refused.
    const early = await admin(c, 'a', 'member', 'promote', 'd');
    expect(early.stderr).toContain('d has not joined yet');

    c.startPeer('d', { args: ['--join', ticket ?? ''] });
    await waitFor('d joined a', () => connected(c, 'a', 'd'), 20_000);
    const promote = await admin(c, 'b', 'member', 'promote', 'd');
    expect(promote.code, promote.stderr).toBe(0);
    await c.waitReady(20_000, ['d']);
    const onD = await acquire(c.url('d'), 'x', { ttl_ms: 10_000 });
    expect(onD.status).toBe(200);
    expect(BigInt(String(onD.body['token'])) % 1024n).toBe(3n); // d's ordinal: never given before

    // Remove a founder, then retire it once it left.
    const remove = await admin(c, 'b', 'member', 'remove', 'a');
    expect(remove.code, remove.stderr).toBe(0);
    const onA = await acquire(c.url('a'), 'y', { timeout_ms: 1000 });
    expect([onA.status, onA.body['error']]).toEqual([503, 'ERR_REMOVED']);
    const retire = await admin(c, 'c', 'member', 'retire', 'a');
    expect(retire.code, retire.stderr).toBe(0);
    for (const id of ['b', 'c', 'd']) expect(await viewAt(c, id)).toBe('4 b:voter,c:voter,d:voter');

    // The hold of b's client lived through the four changes.
    const lock = (await call(c.url('b'), '/v1/locks/kept')).body;
    expect((lock['holders'] as Array<Record<string, unknown>>).map((h) => h['id'])).toEqual([kept.body['id']]);

    // The removed host refuses to start again; a member restarted with its old file comes back.
    expect(await c.stopPeer('a')).not.toBeNull();
    c.startPeer('a');
    const exit = await new Promise<number | null>((res) => c.peer('a').proc?.once('exit', (code) => res(code)));
    expect(exit).toBe(2);
    expect(readFileSync(join(c.dir, 'a.log'), 'utf8')).toContain('it was removed from the cluster');
    c.peer('a').proc = null;
    await c.stopPeer('c');
    c.startPeer('c');
    await c.waitReady(20_000, ['b', 'c', 'd']);
    // --join is read once: d restarted with it again starts from its data dir.
    await c.stopPeer('d');
    c.startPeer('d', { args: ['--join', ticket ?? ''] });
    await c.waitReady(20_000, ['b', 'c', 'd']);
    expect(await viewAt(c, 'd')).toBe('4 b:voter,c:voter,d:voter');
    expect(await viewAt(c, 'c')).toBe('4 b:voter,c:voter,d:voter');
    const onC = await acquire(c.url('c'), 'z', { ttl_ms: 10_000 });
    expect(onC.status).toBe(200);
    await c.stop();
  }, 120_000);

  it('recognises a voter whose data dir was wiped: its votes count for nothing, and the runbook takes it out and back in', async () => {
    cluster = await startTestCluster({ peerArgs: ['--admin-token-file', tokenFile] });
    const c = cluster;
    const first = loadViewRecord(c.peer('c').dataDir)?.acceptorId;
    await c.stopPeer('c', 'SIGKILL');
    rmSync(c.peer('c').dataDir, { recursive: true, force: true });
    // Back after its eviction, on an empty data dir: a new acceptor id.
    await waitFor('c evicted at a', async () => ((await call(c.url('a'), '/v1/members')).body['members'] as Array<Record<string, unknown>>).some((m) => m['id'] === 'c' && m['evicted'] === true), 20_000);
    c.startPeer('c');
    await c.waitReady(30_000, ['a', 'b', 'c']);
    expect(loadViewRecord(c.peer('c').dataDir)?.acceptorId).not.toBe(first);
    await waitFor('a names c replaced', () => readFileSync(join(c.dir, 'a.log'), 'utf8').includes('peer c runs on another data dir than the one it voted with before'), 10_000);
    expect(loadViewRecord(c.peer('a').dataDir)?.acceptorIds?.['2']).toBe(first);
    // The runbook: remove it (a and b vote), retire it once evicted, add it again as a new member.
    expect((await admin(c, 'a', 'member', 'remove', 'c')).code).toBe(0);
    await c.stopPeer('c');
    rmSync(c.peer('c').dataDir, { recursive: true, force: true });
    await waitFor('c evicted', async () => {
      const r = await admin(c, 'b', 'member', 'retire', 'c', '--timeout', '2s');
      return r.code === 0;
    }, 30_000, 200);
    const add = await admin(c, 'a', 'member', 'add', 'c', '--ws', c.peer('c').ws, '--http', c.peer('c').http);
    expect(add.code, add.stderr).toBe(0);
    c.startPeer('c', { args: ['--join', /--join (\S+)/.exec(add.stdout)?.[1] ?? ''] });
    await waitFor('c joined a', () => connected(c, 'a', 'c'), 20_000);
    expect((await admin(c, 'b', 'member', 'promote', 'c')).code).toBe(0);
    expect(await viewAt(c, 'c')).toBe('4 a:voter,b:voter,c:voter');
    await c.stop();
  }, 120_000);

  it('grows a two-peer cluster to three, a hold kept, and then survives a peer going away', async () => {
    cluster = await startTestCluster({ peers: 2, peerArgs: ['--admin-token-file', tokenFile] });
    const c = cluster;
    const kept = await acquire(c.url('a'), 'kept', { ttl_ms: 120_000 });
    const host = await c.addHost('c');
    const add = await admin(c, 'b', 'member', 'add', 'c', '--ws', host.ws, '--http', host.http);
    expect(add.code, add.stderr).toBe(0);
    c.startPeer('c', { args: ['--join', /--join (\S+)/.exec(add.stdout)?.[1] ?? ''] });
    await waitFor('c joined b', () => connected(c, 'b', 'c'), 20_000);
    expect((await admin(c, 'a', 'member', 'promote', 'c')).code).toBe(0);
    for (const id of ['a', 'b', 'c']) expect(await viewAt(c, id)).toBe('2 a:voter,b:voter,c:voter');
    // Three voters: b gone for good, a and c go on (a pair would wait for it).
    await c.stopPeer('b', 'SIGKILL');
    const onC = await acquire(c.url('c'), 'y', { ttl_ms: 10_000, timeout_ms: 20_000 });
    expect(onC.status).toBe(200);
    const lock = (await call(c.url('a'), '/v1/locks/kept')).body;
    expect((lock['holders'] as Array<Record<string, unknown>>).map((h) => h['id'])).toEqual([kept.body['id']]);
  }, 120_000);
});
