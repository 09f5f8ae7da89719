/**
 * The recovery from a lost majority on real processes (docs/operations.md, "Recover from a lost
 * majority"; src/recovery.ts): two of three hosts lost for good, the survivor started once with
 * `--force-new-cluster --clock-from ...` is a cluster of one that grants above every token the
 * old cluster granted; a lost host that comes back unwiped is another cluster on every link and
 * counts for nothing; wiped, it joins the new cluster as a new member.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { LocalCluster } from '../../src/tools/local-cluster.js';
import { admin } from '../fault/member-changes.js';
import { acquire, call, release, startTestCluster } from './helpers.js';
import { waitFor } from '../support/wait.js';

let cluster: LocalCluster | undefined;
afterAll(async () => {
  await cluster?.stop();
});

describe('recovering from a lost majority', () => {
  it('starts a new cluster from one survivor, above every token granted, that the lost hosts cannot join unwiped', async () => {
    cluster = await startTestCluster();
    const c = cluster;
    const tokenFile = join(c.dir, 'admin-token');
    writeFileSync(tokenFile, 'admin-token-for-the-recovery-test-0123\n', { mode: 0o600 });
    let highest = 0n;
    for (const id of ['a', 'b', 'c', 'c']) {
      const got = await acquire(c.url(id), 'x', { ttl_ms: 10_000 });
      expect(got.status).toBe(200);
      highest = BigInt(String(got.body['token']));
      await release(c.url(id), 'x', got.body['id']);
    }
    for (const id of ['b', 'c']) await c.stopPeer(id, 'SIGKILL');
    await c.stopPeer('a');

    // The survivor: a new cluster of one, its clock above c's (given) and its own.
    c.startPeer('a', { args: ['--force-new-cluster', '--clock-from', c.peer('c').dataDir, '--clock-from', join(c.peer('b').dataDir, 'clock.json'), '--admin-token-file', tokenFile] });
    await c.waitReady(20_000, ['a']);
    const members = (await call(c.url('a'), '/v1/members')).body;
    expect((members['members'] as Array<Record<string, unknown>>).map((m) => `${String(m['id'])}:${String(m['state'])}`)).toEqual(['a:voter']);
    const after = await acquire(c.url('a'), 'x', { ttl_ms: 10_000 });
    expect(after.status).toBe(200);
    expect(BigInt(String(after.body['token']))).toBeGreaterThan(highest);
    await release(c.url('a'), 'x', after.body['id']);
    const log = readFileSync(join(c.dir, 'a.log'), 'utf8');
    expect(log).toContain('started a new cluster from a lost majority with a its only voter');
    expect(log).toContain('Wipe or fence every lost host');

    // b back unwiped: another cluster on every link, says what differs, grants nothing.
    c.startPeer('b');
    await waitFor('b told by a what differs', async () => {
      const refused = (await call(c.url('b'), '/v1/cluster').catch(() => ({ body: {} as Record<string, unknown> }))).body['refused_links'] as Array<Record<string, unknown>> | undefined;
      return refused?.some((r) => r['peer'] === 'a' && String(r['differences']).includes('peer a belongs to the cluster recovered as')) === true;
    }, 20_000);
    expect((await fetch(`${c.url('b')}/readyz`)).status).toBe(503);
    await c.stopPeer('b');

    // Wiped, b joins the new cluster as a new member, with a new ordinal.
    rmSync(c.peer('b').dataDir, { recursive: true, force: true });
    const add = await admin(c, 'a', tokenFile, 'member', 'add', 'b', '--ws', c.peer('b').ws, '--http', c.peer('b').http);
    expect(add.code, add.stderr).toBe(0);
    const ticket = /--join (\S+)/.exec(add.stdout)?.[1] ?? '';
    c.startPeer('b', { args: ['--join', ticket] });
    await waitFor('b joined a', async () => ((await call(c.url('a'), '/v1/members')).body['members'] as Array<Record<string, unknown>>).some((m) => m['id'] === 'b' && m['connected'] === true && m['evicted'] === false), 20_000);
    const promote = await admin(c, 'a', tokenFile, 'member', 'promote', 'b');
    expect(promote.code, promote.stderr).toBe(0);
    await c.waitReady(20_000, ['a', 'b']);
    const onB = await acquire(c.url('b'), 'x', { ttl_ms: 10_000 });
    expect(onB.status).toBe(200);
    expect(BigInt(String(onB.body['token'])) % 1024n).toBe(3n);
  }, 120_000);
});
