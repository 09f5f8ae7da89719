/**
 * A dead peer replaced while 12 clients contend for one lock, on real processes (issue 40;
 * docs/operations.md, "Replace a dead host"): c is killed and evicted, `lamport-lock member
 * replace c e` adds e, which starts with the ticket the command prints, promotes it once it
 * joined, removes c and retires it. Throughout, every grant's token is above the one before it
 * and no two holds overlap, a hold of another peer's client lives on, and e grants once a voter.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { LocalCluster } from '../../src/tools/local-cluster.js';
import { adminTokenFile, Contenders, replaceHost } from '../fault/member-changes.js';
import { acquire, call, startTestCluster } from './helpers.js';
import { waitFor } from '../support/wait.js';

const tokenFile = adminTokenFile('member-replace');

let cluster: LocalCluster | undefined;
afterAll(async () => {
  await cluster?.stop();
});

describe('replacing a dead peer', () => {
  it('while 12 clients contend: tokens keep increasing, no holds overlap, another peer\'s hold lives on', async () => {
    cluster = await startTestCluster({ peerArgs: ['--admin-token-file', tokenFile] });
    const c = cluster;
    const kept = await acquire(c.url('b'), 'kept', { ttl_ms: 120_000 });
    expect(kept.status).toBe(200);
    let live = ['a', 'b', 'c'];
    const contenders = new Contenders(c, 'contended', 5);
    contenders.start(12, (i) => live[i % live.length] ?? 'a');
    await waitFor('grants on every peer', () => new Set(contenders.grants.map((g) => g.peer)).size === 3, 10_000);

    live = ['a', 'b'];
    await c.stopPeer('c', 'SIGKILL');
    await waitFor('c evicted at a', async () => {
      const members = (await call(c.url('a'), '/v1/members')).body['members'] as Array<Record<string, unknown>>;
      return members.some((m) => m['id'] === 'c' && m['evicted'] === true);
    }, 20_000);
    const replaced = await replaceHost(c, 'a', tokenFile, 'c', 'e');
    expect(replaced.code, replaced.stderr).toBe(0);
    expect(replaced.stdout).toContain('c is replaced by e');
    live = ['a', 'b', 'e'];
    await waitFor('grants on e', () => contenders.grants.some((g) => g.peer === 'e'), 20_000);
    await contenders.stop();

    expect(contenders.violations()).toEqual([]);
    const members = (await call(c.url('b'), '/v1/members')).body;
    expect((members['members'] as Array<Record<string, unknown>>).map((m) => `${String(m['id'])}:${String(m['state'])}`)).toEqual(['a:voter', 'b:voter', 'e:voter']);
    const lock = (await call(c.url('b'), '/v1/locks/kept')).body;
    expect((lock['holders'] as Array<Record<string, unknown>>).map((h) => h['id'])).toEqual([kept.body['id']]);
  }, 120_000);
});
