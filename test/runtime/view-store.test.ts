/**
 * The agreed view in the data dir (src/runtime/view-store.ts): written atomically, read back,
 * a damaged or torn file refused with what to do.
 */
import { readdirSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { useTempDirs } from '../support/temp-dirs.js';
import { accept, promise } from '../../src/core/acceptor.js';
import { applyChange, firstView } from '../../src/core/view.js';
import type { AgreedView } from '../../src/core/view.js';
import { chainViewsMax, foundersOf, prepareViewRecord, loadViewRecord, newViewRecord, viewRecordPath, withView, writeViewRecord } from '../../src/runtime/view-store.js';
import type { JoinTicket, ViewRecord } from '../../src/runtime/view-store.js';

const dataDir = useTempDirs('view-store');

const v0 = firstView(['a', 'b', 'c'].map((id, i) => ({ id, ws: `ws://127.0.0.1:${7000 + i}`, http: `127.0.0.1:${8000 + i}` })), 9);

function added(v: AgreedView, id: string, port: number): AgreedView {
  const next = applyChange(v, { op: 'add', id, ws: `ws://127.0.0.1:${port}`, http: `127.0.0.1:${port + 1000}` });
  if (typeof next === 'string') throw new Error(next);
  return next;
}

describe('view store', () => {
  it('has nothing for a new data dir, and reads back what it wrote, promise and acceptance included', () => {
    const dir = dataDir();
    expect(loadViewRecord(dir)).toBeNull();
    const v1 = added(v0, 'd', 7003);
    let record = withView(newViewRecord('0123456789abcdef', v0), v1);
    const promised = promise(record.acceptor, 2, { ts: 40, peer: 1 });
    const accepted = promised === null ? null : accept(promised, { ts: 40, peer: 1 }, added(v1, 'e', 7004));
    if (accepted === null) throw new Error('refused');
    record = { ...record, acceptor: accepted };
    writeViewRecord(dir, record);
    expect(loadViewRecord(dir)).toEqual(record);
    expect(readdirSync(dir)).toEqual(['view.json']);
  });

  it('keeps the newest views only, each the one after the last', () => {
    let record = newViewRecord('0123456789abcdef', v0);
    let v = v0;
    for (let i = 0; i < chainViewsMax + 3; i++) {
      v = added(v, `n${i}`, 9000 + 2 * i);
      record = withView(record, v);
    }
    expect(record.chain).toHaveLength(chainViewsMax);
    expect(record.chain.at(-1)?.epoch).toBe(chainViewsMax + 3);
    expect(() => withView(record, v0)).toThrow(/is not ahead of view/);
    // Views skipped (a peer down through several changes): the chain starts again at the newest.
    const jumped = withView(newViewRecord('0123456789abcdef', v0), v);
    expect(jumped.chain).toEqual([v]);
  });

  it('refuses a damaged or torn file with what to do, never starting as if it had none', () => {
    const dir = dataDir();
    writeViewRecord(dir, newViewRecord('0123456789abcdef', v0));
    const good = JSON.parse(JSON.stringify(newViewRecord('0123456789abcdef', v0))) as Record<string, unknown>;
    const bad: string[] = [
      '{"acceptorId": "0123456789abcdef", "chain": [', // torn
      JSON.stringify({ ...good, acceptorId: 'x' }),
      JSON.stringify({ ...good, chain: [] }),
      JSON.stringify({ ...good, chain: [v0, v0] }),
      JSON.stringify({ ...good, acceptor: { epoch: 1, promised: { ts: 'a' }, accepted: null } }),
    ];
    for (const text of bad) {
      writeFileSync(viewRecordPath(dir), text);
      expect(() => loadViewRecord(dir)).toThrow(/is damaged: this peer cannot know which view/);
    }
  });
});

describe('the agreed view at start', () => {
  const peers = v0.members.map((m) => ({ id: m.id, ws: m.ws, http: m.http }));
  let ids = 0;
  const newId = (): string => `00000000000000${String(++ids).padStart(2, '0')}`;

  const prepare = (dir: string, p = peers, join?: JoinTicket): ViewRecord | null => {
    prepareViewRecord(dir, 'c', p, 9, newId, join);
    return loadViewRecord(dir);
  };

  it('is made from the config on a new data dir, with an acceptor id kept across starts', () => {
    const dir = dataDir();
    const first = prepare(dir);
    expect(first?.chain).toEqual([v0]);
    expect(first?.founders).toEqual(['a', 'b', 'c']);
    expect(prepare(dir)?.acceptorId).toBe(first?.acceptorId);
  });

  it('at epoch 0, mirrors the addresses in the config and keeps the acceptor id and state', () => {
    const dir = dataDir();
    const before = prepare(dir);
    if (before === null) throw new Error('no record');
    const promised = promise(before.acceptor, 1, { ts: 5, peer: 2 });
    writeViewRecord(dir, { ...before, acceptor: promised ?? before.acceptor });
    const moved = peers.map((p, i) => (i === 2 ? { ...p, http: '127.0.0.1:9999' } : p));
    const after = prepare(dir, moved);
    expect(after?.chain[0]?.members[2]?.http).toBe('127.0.0.1:9999');
    expect(after?.acceptorId).toBe(before.acceptorId);
    expect(after?.acceptor.promised).toEqual({ ts: 5, peer: 2 });
  });

  it('from epoch 1 on, keeps the record whatever the config file lists, and names the cluster by its founders', () => {
    const dir = dataDir();
    const v1 = added(v0, 'd', 7003);
    writeViewRecord(dir, withView(newViewRecord('0123456789abcdef', v0), v1));
    const moved = peers.slice(1);
    expect(prepare(dir, moved)?.chain.at(-1)).toEqual(v1);
    expect(foundersOf(dir, moved, undefined)).toEqual({ founders: ['a', 'b', 'c'] });
  });

  it('a host that joins starts from its ticket once, and refuses a ticket made for another host', () => {
    const v1 = added(v0, 'd', 7003);
    const ticket: JoinTicket = { cluster: 'test', founders: ['a', 'b', 'c'], view: v1 };
    const dir = dataDir();
    prepareViewRecord(dir, 'd', [], 9, newId, ticket);
    const record = loadViewRecord(dir);
    expect(record?.chain).toEqual([v1]);
    expect(record?.founders).toEqual(['a', 'b', 'c']);
    expect(foundersOf(dir, [{ id: 'd' }], ticket)).toEqual({ founders: ['a', 'b', 'c'] });
    expect(() => prepareViewRecord(dataDir(), 'e', [], 9, newId, ticket)).toThrow(/this join ticket adds d, not e/);
  });
});
