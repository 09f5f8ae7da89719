/**
 * The agreed view in the data dir, on real processes (docs/reconfiguration.md; src/runtime/
 * view-store.ts): a peer with --data-dir keeps `view.json` from its first start, its acceptor id
 * across restarts, and shows that view in GET /v1/members (changes: member-changes.test.ts).
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { LocalCluster } from '../../src/tools/local-cluster.js';
import { loadViewRecord } from '../../src/runtime/view-store.js';
import { call, startTestCluster } from './helpers.js';

let cluster: LocalCluster | undefined;
afterEach(async () => {
  await cluster?.stop();
  cluster = undefined;
});

describe('the agreed view in the data dir', () => {
  it('is kept from the first start, with its acceptor id, and shown by GET /v1/members', async () => {
    cluster = await startTestCluster();
    const c = cluster;
    const dir = c.peer('c').dataDir;
    const record = loadViewRecord(dir);
    expect(record?.chain.map((v) => [v.epoch, v.members.map((m) => m.id)])).toEqual([[0, ['a', 'b', 'c']]]);
    const members = (await call(c.url('c'), '/v1/members')).body;
    expect([members['epoch'], (members['members'] as Array<Record<string, unknown>>).map((m) => m['id'])]).toEqual([0, ['a', 'b', 'c']]);
    await c.stopPeer('c');
    c.startPeer('c');
    await c.waitReady();
    expect(loadViewRecord(dir)?.acceptorId).toBe(record?.acceptorId);
  });
});
