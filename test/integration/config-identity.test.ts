/**
 * One agreed cluster (docs/design.md section 4): a peer whose config differs from the others'
 * (another order of the peers, a peer left out, an old peer list, disjoint views, other
 * timings) is refused on every link and never forms a second cluster. Each case races two
 * clients on two peers for one exclusive lock, round after round, and counts the rounds in
 * which both held it (before the check, 52 of 200 with the order changed on one host, and
 * every round in the other cases). Then every surface must name the difference.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { LocalCluster } from '../../src/tools/local-cluster.js';
import { acquire, call, release, startTestCluster } from './helpers.js';

const rounds = 150;
let cluster: LocalCluster | undefined;

afterEach(async () => {
  await cluster?.stop();
  cluster = undefined;
});

interface PeerEntry { readonly id: string }

/** The config's peers, reordered or filtered by `ids` (ids of the peers to keep, in the order wanted). */
function withPeers(ids: readonly string[]): (c: Record<string, unknown>) => Record<string, unknown> {
  return (c) => {
    const all = c['peers'] as PeerEntry[];
    return { ...c, peers: ids.map((id) => all.find((p) => p.id === id)) };
  };
}

/**
 * Two clients ask peers `x` and `y` for lock `name` at the same moment, each waiting at most
 * 150 ms and holding until both answered: the rounds in which both held it.
 */
async function doubleGrants(c: LocalCluster, x: string, y: string, name: string): Promise<{ doubles: number; grants: number }> {
  // Five locks raced side by side, `rounds` rounds in all: the same race, a fifth of the time.
  const lanes = await Promise.all([0, 1, 2, 3, 4].map((lane) => raceLane(c, x, y, `${name}-${lane}`, rounds / 5)));
  return { doubles: lanes.reduce((n, l) => n + l.doubles, 0), grants: lanes.reduce((n, l) => n + l.grants, 0) };
}

async function raceLane(c: LocalCluster, x: string, y: string, name: string, count: number): Promise<{ doubles: number; grants: number }> {
  let doubles = 0;
  let grants = 0;
  for (let i = 0; i < count; i++) {
    const [ax, ay] = await Promise.all([acquire(c.url(x), name, { timeout_ms: 150 }), acquire(c.url(y), name, { timeout_ms: 150 })]);
    if (ax.status === 200 && ay.status === 200) doubles++;
    grants += (ax.status === 200 ? 1 : 0) + (ay.status === 200 ? 1 : 0);
    await Promise.all([[ax, x], [ay, y]].map(async ([a, at]) => {
      const answer = a as { status: number; body: Record<string, unknown> };
      if (answer.status === 200) await release(c.url(at as string), name, answer.body['id']);
    }));
  }
  return { doubles, grants };
}

/** Polls until `check` holds (bounded), for states that settle within an eviction. */
async function until<T>(what: string, read: () => Promise<T>, check: (v: T) => boolean, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    // A peer just restarted may not listen yet: a refused connection is a "not yet".
    const v = await read().catch((err: unknown) => err as T);
    if (!(v instanceof Error) && check(v)) return v;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms; last ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** `lamport-peer ARGS` to its exit: what it printed and its code. */
function peerBin(args: readonly string[]): Promise<{ out: string; code: number | null }> {
  return new Promise((res, rej) => {
    const child = spawn(process.execPath, [resolve('dist/bin/lamport-peer.js'), ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    child.on('error', rej);
    child.on('exit', (code) => res({ out, code }));
  });
}

/** `lamport-lock status` against a peer, as an operator would run it. */
function statusText(base: string): Promise<string> {
  return new Promise((res, rej) => {
    const child = spawn(process.execPath, [resolve('dist/bin/lamport-lock.js'), '--peer', base, 'status'], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.on('error', rej);
    child.on('exit', () => res(out));
  });
}

/**
 * Restarts `id` (kill -9) with its config rewritten by `mutate`, forcing it past its data
 * dir's memory of the cluster (--accept-config-change): what a fresh host, a lost data dir
 * or a forced change looks like. The links must refuse it all the same.
 */
async function restartWith(c: LocalCluster, id: string, mutate: (cfg: Record<string, unknown>) => Record<string, unknown>): Promise<void> {
  c.rewriteConfig(id, mutate);
  await c.stopPeer(id, 'SIGKILL');
  c.startPeer(id, { args: ['--accept-config-change'] });
}

/** The readyz of `id` answers 503 ERR_CONFIG_MISMATCH with a sentence containing `needle`. */
async function mismatchNamed(c: LocalCluster, id: string, needle: string): Promise<void> {
  const r = await until(`${id} /readyz names the difference`, () => call(c.url(id), '/readyz'), (a) => a.status === 503 && String(a.body['message'] ?? '').includes(needle));
  expect(r.body['error']).toBe('ERR_CONFIG_MISMATCH');
}

describe('one agreed cluster: a peer whose config differs is refused, never a second cluster', () => {
  it('the same peers in another order on one host', async () => {
    cluster = await startTestCluster();
    await restartWith(cluster, 'c', withPeers(['a', 'c', 'b']));
    await mismatchNamed(cluster, 'c', 'peer a lists the peers [a, b, c]; this peer lists [a, c, b]');
    await mismatchNamed(cluster, 'a', 'peer c lists the peers [a, c, b]; this peer lists [a, b, c]');
    const race = await doubleGrants(cluster, 'a', 'c', 'order');
    expect(race.doubles).toBe(0);
    expect(race.grants).toBeGreaterThan(0); // a and b go on granting once c's old process is evicted
    // Every surface says it: /v1/cluster, the status command, the metrics.
    const info = (await call(cluster.url('c'), '/v1/cluster')).body;
    expect(info['fingerprint']).toMatch(/^[0-9a-f]{24}$/);
    expect(info['fingerprint']).not.toBe((await call(cluster.url('a'), '/v1/cluster')).body['fingerprint']);
    const refused = info['refused_links'] as Array<Record<string, unknown>>;
    expect(refused.some((r) => r['peer'] === 'a' && r['direction'] === 'by_peer' && r['reason'] === 'wrong_config')).toBe(true);
    const text = await statusText(cluster.url('c'));
    expect(text).toContain(`config fingerprint ${String(info['fingerprint'])}`);
    expect(text).toMatch(/REFUSED: peer [ab] refuses this peer \(wrong_config\): peer [ab] lists the peers \[a, b, c\]; this peer lists \[a, c, b\]/);
    const metrics = await fetch(`${cluster.url('a')}/metrics`).then((r) => r.text());
    expect(metrics).toMatch(/^lamport_config_mismatch 1$/m);
    expect(metrics).toMatch(/^lamport_link_refusals_total\{reason="wrong_config"\} [1-9]/m);
  });

  it('lamport-peer --check-config validates a file, prints its fingerprint, and compares it with a running peer\'s cluster', async () => {
    cluster = await startTestCluster();
    const running = (await call(cluster.url('a'), '/v1/cluster')).body['fingerprint'];
    const same = await peerBin(['--check-config', cluster.configPath, '--peer', cluster.url('a')]);
    expect(same.code).toBe(0);
    expect(same.out).toContain(`fingerprint ${String(running)}`);
    expect(same.out).toContain('matches the cluster peer a is in');
    cluster.rewriteConfig('c', withPeers(['a', 'c', 'b']));
    const other = await peerBin(['--check-config', cluster.configOf('c'), '--peer', cluster.url('a')]);
    expect(other.code).toBe(1);
    expect(other.out).toContain('peer a lists the peers [a, b, c]; this file lists [a, c, b]');
    cluster.rewriteConfig('b', (cfg) => ({ ...cfg, lease_ms: 'long' }));
    const invalid = await peerBin(['--check-config', cluster.configOf('b')]);
    expect(invalid.code).toBe(2);
    expect(invalid.out).toContain('lease_ms must be an integer');
  });

  it('a peer restarted on its data dir with a changed file refuses to start, naming the change', async () => {
    cluster = await startTestCluster();
    cluster.rewriteConfig('c', withPeers(['a', 'c', 'b']));
    await cluster.stopPeer('c', 'SIGKILL');
    cluster.startPeer('c');
    const proc = cluster.peer('c').proc;
    const code = await new Promise<number | null>((res) => proc?.once('exit', (c) => res(c)));
    expect(code).toBe(2);
    const log = readFileSync(join(cluster.dir, 'c.log'), 'utf8');
    expect(log).toContain('the config this data dir last ran with lists the peers [a, b, c]; this peer lists [a, c, b]');
    expect(log).toContain('--accept-config-change');
  });

  it('a wrong secret on one host: both sides list the refused link and why', async () => {
    cluster = await startTestCluster();
    await restartWith(cluster, 'c', (cfg) => ({ ...cfg, secret: 'another-secret-of-32-characters-0123456789' }));
    await mismatchNamed(cluster, 'a', 'peer c refuses this peer (bad_mac): the handshake proof does not match: wrong cluster secret');
    await mismatchNamed(cluster, 'c', 'refuses this peer (bad_mac)');
    const refused = (await call(cluster.url('a'), '/v1/cluster')).body['refused_links'] as Array<Record<string, unknown>>;
    expect(refused.some((r) => r['peer'] === 'c' && r['reason'] === 'bad_mac' && r['direction'] === 'by_peer')).toBe(true);
    expect(await statusText(cluster.url('a'))).toContain('REFUSED: peer c refuses this peer (bad_mac)');
    expect((await doubleGrants(cluster, 'a', 'c', 'secret')).doubles).toBe(0);
  });

  it('a live peer left out of one host\'s file', async () => {
    cluster = await startTestCluster();
    await restartWith(cluster, 'c', withPeers(['a', 'c']));
    await mismatchNamed(cluster, 'c', 'lists the peers [a, b, c]; this peer lists [a, c]');
    await mismatchNamed(cluster, 'a', 'peer c lists the peers [a, c]; this peer lists [a, b, c]');
    expect((await doubleGrants(cluster, 'a', 'c', 'left-out')).doubles).toBe(0);
  });

  it('the old 3-peer file put back on one host of four, d still running', async () => {
    cluster = await startTestCluster({ peers: 4 });
    await restartWith(cluster, 'a', withPeers(['a', 'b', 'c']));
    await mismatchNamed(cluster, 'd', 'peer a lists the peers [a, b, c]; this peer lists [a, b, c, d]');
    await mismatchNamed(cluster, 'a', 'lists the peers [a, b, c, d]; this peer lists [a, b, c]');
    expect((await doubleGrants(cluster, 'a', 'd', 'old-file')).doubles).toBe(0);
  });

  it('disjoint views: a lists [a, b], b [a, b, c], c [b, c]', async () => {
    cluster = await startTestCluster();
    await restartWith(cluster, 'a', withPeers(['a', 'b']));
    await restartWith(cluster, 'c', withPeers(['b', 'c']));
    await mismatchNamed(cluster, 'b', 'this peer lists [a, b, c]');
    await mismatchNamed(cluster, 'a', 'peer b lists the peers [a, b, c]; this peer lists [a, b]');
    await mismatchNamed(cluster, 'c', 'peer b lists the peers [a, b, c]; this peer lists [b, c]');
    expect((await doubleGrants(cluster, 'a', 'c', 'disjoint')).doubles).toBe(0);
  });

  it('other timings on one host (halfway through raising them host by host)', async () => {
    cluster = await startTestCluster();
    await restartWith(cluster, 'c', (cfg) => ({ ...cfg, lease_ms: 5000, evict_ms: 8500 }));
    await mismatchNamed(cluster, 'c', "lease_ms is 1000; here 5000");
    await mismatchNamed(cluster, 'a', "peer c's lease_ms is 5000; here 1000");
    expect((await doubleGrants(cluster, 'a', 'c', 'timings')).doubles).toBe(0);
    // c never holds a lease: nothing it grants could outlive one.
    const c = (await call(cluster.url('c'), '/v1/cluster')).body;
    expect((c['lease'] as Record<string, unknown>)['valid']).toBe(false);
  });
});
