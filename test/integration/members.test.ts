/**
 * The read side of membership (issue 40, docs/reconfiguration.md) on real processes: GET
 * /v1/members, the epoch and each peer's ordinal and state in GET /v1/cluster, the
 * `lamport_view_epoch` gauge, and `lamport-lock member list` and `status`. Today the view is
 * the one the config file seeds: epoch 0, every peer a voter, ordinals in file order.
 */
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { exitCodes } from '../../src/client/cli-support.js';
import { waitFor } from '../support/wait.js';
import { call, runBin, useTestCluster } from './helpers.js';

const lockBin = resolve('dist/bin/lamport-lock.js');
const cluster = useTestCluster();
const ids = ['a', 'b', 'c'];

type Json = Record<string, unknown>;

async function members(id: string): Promise<{ body: Json; list: Json[] }> {
  const r = await call(cluster().url(id), '/v1/members');
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return { body: r.body, list: r.body['members'] as Json[] };
}

describe('GET /v1/members', () => {
  it('answers the view the config file seeds, each member with its link as the asked peer sees it', async () => {
    await cluster().waitConnected();
    for (const asked of ids) {
      const c = (await call(cluster().url(asked), '/v1/cluster')).body;
      const { body, list } = await members(asked);
      expect(body).toMatchObject({ epoch: 0, level: c['protocol_level'], next_ordinal: 3 });
      expect(list.map((m) => [m['id'], m['ordinal'], m['state'], m['ws'], m['http']]))
        .toEqual(ids.map((id, i) => [id, i, 'voter', cluster().peer(id).ws, cluster().peer(id).http]));
      const links = new Map((c['peers'] as Json[]).map((p) => [p['id'], p]));
      const newest = (c['protocol_levels'] as Json)['newest'];
      for (const m of list) {
        if (m['id'] === asked) {
          expect(m).toMatchObject({ self: true, connected: null, evicted: null, incarnation: c['incarnation'], newest_level: newest });
        } else {
          expect(m).toMatchObject({ self: false, connected: true, evicted: false, incarnation: links.get(m['id'])?.['incarnation'], newest_level: newest });
        }
      }
    }
  });

  it('shows a stopped member down, then evicted, and back with a new incarnation once it restarts', async () => {
    const before = (await members('a')).list.find((m) => m['id'] === 'c');
    await cluster().stopPeer('c');
    const c = async (): Promise<Json | undefined> => (await members('a')).list.find((m) => m['id'] === 'c');
    await waitFor('a sees c down', async () => (await c())?.['connected'] === false, 5000);
    await waitFor('a sees c evicted', async () => (await c())?.['evicted'] === true, 10_000);
    expect(await c()).toMatchObject({ ordinal: 2, state: 'voter' }); // Evicted is not removed: the view keeps it.
    cluster().startPeer('c');
    await cluster().waitReady();
    await waitFor('a sees c back', async () => {
      const now = await c();
      return now?.['connected'] === true && now['evicted'] === false && now['incarnation'] !== before?.['incarnation'];
    }, 15_000);
  }, 40_000);

  it('puts the epoch and each peer\'s ordinal and state in GET /v1/cluster, and the epoch in the metrics', async () => {
    const c = (await call(cluster().url('b'), '/v1/cluster')).body;
    expect(c['epoch']).toBe(0);
    expect((c['peers'] as Json[]).map((p) => [p['id'], p['ordinal'], p['state'], p['self'] ?? false])).toEqual([['a', 0, 'voter', false], ['b', 1, 'voter', true], ['c', 2, 'voter', false]]);
    const metrics = await (await fetch(`${cluster().url('b')}/metrics`)).text();
    expect(metrics).toMatch(/^lamport_view_epoch 0$/m);
  });
});

describe('lamport-lock member list', () => {
  it('prints the peer\'s lease, the epoch and level, then one line per member with its link; --json is GET /v1/members', async () => {
    await cluster().waitConnected();
    const a = cluster().url('a');
    const r = await runBin(lockBin, ['--peer', a, 'member', 'list']).done;
    expect(r.code, r.stderr).toBe(0);
    const level = (await members('a')).body['level'];
    expect(r.stdout).toMatch(/^peer a of cluster \S+: lease valid, synced$/m);
    expect(r.stdout).toMatch(new RegExp(`^view epoch 0, protocol level ${String(level)}, next ordinal 3$`, 'm'));
    expect(r.stdout).toMatch(/^ID\s+ORDINAL\s+STATE\s+WS\s+HTTP\s+CONNECTED\s+EVICTED\s+NEWEST_LEVEL\s+LAST_HEARD\s+RTT$/m);
    expect(r.stdout).toMatch(new RegExp(`^a\\s+0\\s+voter\\s+${cluster().peer('a').ws}\\s+${cluster().peer('a').http}\\s+self\\s+-\\s+${String(level)}\\s+-\\s+-$`, 'm'));
    expect(r.stdout).toMatch(new RegExp(`^b\\s+1\\s+voter\\s+${cluster().peer('b').ws}\\s+${cluster().peer('b').http}\\s+yes\\s+no\\s+${String(level)}\\s+\\d+ms ago\\s+\\d+(\\.\\d+)?ms$`, 'm'));
    expect(r.stdout).toMatch(/^c\s+2\s+voter\s/m);
    const json = await runBin(lockBin, ['--peer', a, 'member', 'list', '--json']).done;
    expect(json.code, json.stderr).toBe(0);
    const printed = JSON.parse(json.stdout) as Json;
    const served = (await members('a')).body;
    expect(Object.keys(printed).sort()).toEqual(Object.keys(served).sort());
    const strip = (b: Json): unknown[] => (b['members'] as Json[]).map((m) => ({ ...m, connected: undefined }));
    expect(strip(printed)).toEqual(strip(served));
  });

  it('asks for a member command when given none, and `status` prints the epoch beside the protocol level', async () => {
    const a = cluster().url('a');
    const bare = await runBin(lockBin, ['--peer', a, 'member']).done;
    expect(bare.code).toBe(exitCodes.usage);
    expect(bare.stderr).toContain('give a member command: list, add, promote, remove, retire, replace');
    const status = await runBin(lockBin, ['--peer', a, 'status']).done;
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toMatch(/^view epoch 0, protocol level \d+ \(this binary speaks/m);
  });
});
