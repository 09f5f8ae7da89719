/**
 * What changes of the members cost (issue 40), on real processes with 12 clients contending for
 * one lock throughout: `npm run member-change-time [-- --timings default|test]` after a build.
 * Measures, on a cluster of three at the timings asked (default: the config's defaults):
 * - add: from `member add d` to d's first grant as a voter (the add, d's start with the ticket
 *   and its join, the promotion, its acquire);
 * - replace of a dead peer: from kill -9 of c to its eviction, then `member replace c e` (add,
 *   join, promote, remove, retire) to e's first grant;
 * - the contenders' grant latency outside any change, and inside each change;
 * - holds interrupted: a hold of another peer's client kept through every change (ended: 0
 *   expected), and the contenders' refusals (a client of the killed peer finds it gone).
 * Prints each figure; exits 1 if a token went backwards or two holds overlapped.
 */
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { timingDefaults } from '../../src/config.js';
import { LocalCluster } from '../../src/tools/local-cluster.js';
import { acquire, call } from '../integration/helpers.js';
import { waitFor } from '../support/wait.js';
import { admin, adminTokenFile, Contenders, replaceHost, spread } from './member-changes.js';

const testTimings = { heartbeatMs: 100, leaseMs: 1000, evictMs: 3000 };

function say(line: string): void {
  process.stdout.write(`${line}\n`);
}

async function membersOf(cluster: LocalCluster, at: string): Promise<Array<Record<string, unknown>>> {
  return (await call(cluster.url(at), '/v1/members')).body['members'] as Array<Record<string, unknown>>;
}

/** ms from `fromMs` until `id` is granted a lock of its own as a voter. */
async function firstGrant(cluster: LocalCluster, id: string, fromMs: number): Promise<number> {
  await cluster.waitReady(60_000, [id]);
  const got = await acquire(cluster.url(id), `first-${id}`, { timeout_ms: 30_000, ttl_ms: 1000 });
  if (got.status !== 200) throw new Error(`${id}'s first acquire answered ${got.status} ${JSON.stringify(got.body)}`);
  return performance.now() - fromMs;
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { timings: { type: 'string', default: 'default' } } });
  const timings = values.timings === 'test' ? testTimings : values.timings === 'default' ? timingDefaults : null;
  if (timings === null) throw new Error('--timings takes default or test');
  const tokenFile = adminTokenFile('member-change-time');
  const cluster = await LocalCluster.start({ peers: 3, ...timings, peerArgs: ['--admin-token-file', tokenFile] });
  say(`member-change-time: 3 peers, heartbeat/lease/evict ${timings.heartbeatMs}/${timings.leaseMs}/${timings.evictMs} ms, 12 clients on one lock`);
  let live = ['a', 'b', 'c'];
  const contenders = new Contenders(cluster, 'contended', 5);
  try {
    const kept = await acquire(cluster.url('b'), 'kept', { ttl_ms: 600_000 });
    contenders.start(12, (i) => live[i % live.length] ?? 'a');
    await new Promise((r) => setTimeout(r, 3000));
    const quietEnd = performance.now();

    const addStart = performance.now();
    const host = await cluster.addHost('d');
    const added = await admin(cluster, 'a', tokenFile, 'member', 'add', 'd', '--ws', host.ws, '--http', host.http);
    const ticket = /--join (\S+)/.exec(added.stdout)?.[1];
    if (added.code !== 0 || ticket === undefined) throw new Error(`member add: ${added.stderr}`);
    const addedMs = performance.now() - addStart;
    cluster.startPeer('d', { args: ['--join', ticket] });
    await waitFor('d joined', async () => (await membersOf(cluster, 'a')).some((m) => m['id'] === 'd' && m['connected'] === true && m['evicted'] === false), 60_000);
    const joinedMs = performance.now() - addStart;
    const promoted = await admin(cluster, 'b', tokenFile, 'member', 'promote', 'd');
    if (promoted.code !== 0) throw new Error(`member promote: ${promoted.stderr}`);
    const addToGrant = await firstGrant(cluster, 'd', addStart);
    const addEnd = performance.now();
    live = ['a', 'b', 'c', 'd'];
    say(`add: member add ${addedMs.toFixed(0)} ms; d joined ${joinedMs.toFixed(0)} ms after it; d's first grant as a voter ${addToGrant.toFixed(0)} ms after member add`);

    // Apart from the add's window: grants asked before the kill wait for c's eviction.
    await new Promise((r) => setTimeout(r, 2000));
    const killAt = performance.now();
    live = ['a', 'b', 'd'];
    await cluster.stopPeer('c', 'SIGKILL');
    await waitFor('c evicted', async () => (await membersOf(cluster, 'a')).some((m) => m['id'] === 'c' && m['evicted'] === true), 60_000, 20);
    const evictedMs = performance.now() - killAt;
    const replaced = await replaceHost(cluster, 'a', tokenFile, 'c', 'e');
    if (replaced.code !== 0) throw new Error(`member replace: ${replaced.stderr}`);
    const replaceToGrant = await firstGrant(cluster, 'e', replaced.startedAt);
    const replaceEnd = performance.now();
    live = ['a', 'b', 'd', 'e'];
    say(`replace of a dead peer: c evicted ${evictedMs.toFixed(0)} ms after kill -9; member replace c e ${(replaced.endedAt - replaced.startedAt).toFixed(0)} ms; e's first grant ${replaceToGrant.toFixed(0)} ms after it began`);

    await new Promise((r) => setTimeout(r, 2000));
    await contenders.stop();
    say(`grant latency outside changes: ${spread(contenders.latencies(0, quietEnd))}`);
    say(`grant latency during the add (member add to d's first grant): ${spread(contenders.latencies(addStart, addEnd))}`);
    say(`grant latency from kill -9 of c to its eviction (a failover, no change yet): ${spread(contenders.latencies(killAt, replaced.startedAt))}`);
    say(`grant latency during the replace (member replace to e's first grant): ${spread(contenders.latencies(replaced.startedAt, replaceEnd))}`);
    const holders = ((await call(cluster.url('b'), '/v1/locks/kept')).body['holders'] as Array<Record<string, unknown>>).map((h) => h['id']);
    say(`holds of other peers ended by the changes: ${holders.includes(kept.body['id']) ? 0 : 1} (b's client's hold kept through 7 changes)`);
    say(`contenders: ${contenders.grants.length} grants; refusals ${JSON.stringify(Object.fromEntries(contenders.refusals))} (clients of the killed peer find it gone until they move)`);
    const violations = contenders.violations();
    say(`violations: ${violations.length}${violations.length > 0 ? `\n${violations.slice(0, 10).join('\n')}` : ''}`);
    if (violations.length > 0) process.exitCode = 1;
  } finally {
    await contenders.stop();
    await cluster.stop();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`member-change-time: ${(err as Error).stack ?? String(err)}\n`);
  process.exitCode = 1;
});
