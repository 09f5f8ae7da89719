/**
 * The agreed view in the data dir, on real processes (docs/reconfiguration.md; src/runtime/
 * view-store.ts): a peer with --data-dir keeps `view.json` from its first start, its acceptor id
 * across restarts, shows that view in GET /v1/members, and refuses to start on a view that a
 * binary changing views made.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { applyChange } from '../../src/core/view.js';
import type { LocalCluster } from '../../src/tools/local-cluster.js';
import { loadViewRecord, withView, writeViewRecord } from '../../src/runtime/view-store.js';
import { call, startTestCluster } from './helpers.js';

let cluster: LocalCluster | undefined;
afterEach(async () => {
  await cluster?.stop();
  cluster = undefined;
});

describe('the agreed view in the data dir', () => {
  it('is kept from the first start, shown by GET /v1/members, and refused when a later binary changed it', async () => {
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
    await c.stopPeer('c');
    if (record === null) throw new Error('no record');
    const last = record.chain[0];
    const next = last === undefined ? 'none' : applyChange(last, { op: 'add', id: 'd', ws: 'ws://127.0.0.1:1', http: '127.0.0.1:2' });
    if (typeof next === 'string') throw new Error(next);
    writeViewRecord(dir, withView(record, next));
    c.startPeer('c');
    const proc = c.peer('c').proc;
    const code = await new Promise<number | null>((res) => proc?.once('exit', (n) => res(n)));
    expect(code).toBe(2);
    expect(readFileSync(join(c.dir, 'c.log'), 'utf8')).toContain('records view epoch 1: the cluster\'s members were changed by a binary that changes them');
  });
});
