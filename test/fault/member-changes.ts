/**
 * Changes of the members on real processes while clients contend (issue 40): the driver that
 * test/integration/member-replace.test.ts checks and `npm run member-change-time` measures.
 * Clients on the members loop acquire / hold / release on one lock; every grant's token and
 * interval is recorded, so the caller can check that tokens strictly increase in grant order
 * and that no two holds overlap, and read the grant latencies inside and outside each change.
 * The changes are made with the built CLI (`lamport-lock member ...`), as an operator would.
 */
import { performance } from 'node:perf_hooks';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { LocalCluster } from '../../src/tools/local-cluster.js';
import { runBin } from '../integration/helpers.js';
import type { BinRun } from '../integration/helpers.js';
import { waitFor } from '../support/wait.js';

const lockBin = resolve('dist/bin/lamport-lock.js');

/** One grant a contending client got: its peer, token, when asked, granted and released (performance.now ms). */
export interface Granted {
  readonly peer: string;
  readonly token: bigint;
  readonly askedAt: number;
  readonly grantedAt: number;
  releasedAt: number;
}

/** Clients that contend for one lock, each on the peer `peerOf` names at each turn. */
export class Contenders {
  readonly grants: Granted[] = [];
  /** Answers other than a grant (a timeout while a peer is evicted, a peer restarting): counted, not fatal. */
  readonly refusals = new Map<string, number>();
  #stopping = false;
  readonly #loops: Promise<void>[] = [];
  /** Turns under way on each peer, from the acquire sent to the release sent. */
  readonly #busy = new Map<string, number>();

  constructor(readonly cluster: LocalCluster, readonly lock: string, readonly holdMs: number) {}

  /** Starts `n` clients; client i asks the peer `peerOf(i)` names at each turn. */
  start(n: number, peerOf: (i: number) => string): void {
    for (let i = 0; i < n; i++) this.#loops.push(this.#loop(i, peerOf));
  }

  async #loop(i: number, peerOf: (i: number) => string): Promise<void> {
    while (!this.#stopping) {
      const peer = peerOf(i);
      this.#busy.set(peer, (this.#busy.get(peer) ?? 0) + 1);
      try {
        await this.#turn(peer);
      } finally {
        this.#busy.set(peer, (this.#busy.get(peer) ?? 1) - 1);
      }
    }
  }

  /**
   * Whether no client has a turn under way on `peer`: a peer stopped then ends no hold of theirs
   * (a stop releases at once, while the client would hold on for its hold time).
   */
  idle(peer: string): boolean {
    return (this.#busy.get(peer) ?? 0) === 0;
  }

  /** One acquire / hold / release on `peer`; a refusal is counted and waited out. */
  async #turn(peer: string): Promise<void> {
    const askedAt = performance.now();
    const answer = await post(`${this.cluster.url(peer)}/v1/locks/${this.lock}/acquire`, { timeout_ms: 5000, ttl_ms: 60_000 }).catch(() => null);
    if (answer === null || answer.status !== 200) {
      const key = answer === null ? 'no answer' : `${answer.status} ${String(answer.body['error'])}`;
      this.refusals.set(key, (this.refusals.get(key) ?? 0) + 1);
      await new Promise((r) => setTimeout(r, 20));
      return;
    }
    const g: Granted = { peer, token: BigInt(String(answer.body['token'])), askedAt, grantedAt: performance.now(), releasedAt: Number.POSITIVE_INFINITY };
    this.grants.push(g);
    await new Promise((r) => setTimeout(r, this.holdMs));
    g.releasedAt = performance.now();
    await post(`${this.cluster.url(peer)}/v1/locks/${this.lock}/release`, { id: answer.body['id'] }).catch(() => null);
  }

  async stop(): Promise<void> {
    this.#stopping = true;
    await Promise.all(this.#loops);
  }

  /**
   * What breaks the lock's promises, in words: a token not above the one granted before it,
   * or two holds whose intervals overlap as the clients saw them (a client sees its grant after
   * the peer made it and its release before the peer does, so a real overlap shows).
   */
  violations(): string[] {
    const byGrant = [...this.grants].sort((a, b) => a.grantedAt - b.grantedAt);
    const out: string[] = [];
    for (let i = 1; i < byGrant.length; i++) {
      const prev = byGrant[i - 1];
      const cur = byGrant[i];
      if (prev === undefined || cur === undefined) continue;
      if (cur.token <= prev.token) out.push(`token ${cur.token} on ${cur.peer} granted after ${prev.token} on ${prev.peer}`);
      if (cur.grantedAt < prev.releasedAt) out.push(`hold on ${cur.peer} (token ${cur.token}) granted while ${prev.peer}'s (token ${prev.token}) was held`);
    }
    return out;
  }

  /** Grant latencies (asked to granted, ms) of the grants asked and granted within [fromMs, toMs). */
  latencies(fromMs: number, toMs: number): number[] {
    return this.grants.filter((g) => g.askedAt >= fromMs && g.grantedAt < toMs).map((g) => g.grantedAt - g.askedAt);
  }
}

async function post(url: string, body: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(url, { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** A fresh admin token file (mode 0600) for a test's or a run's peers, named after `what`. */
export function adminTokenFile(what: string): string {
  const file = join(mkdtempSync(join(tmpdir(), `lamport-${what}-`)), 'admin-token');
  writeFileSync(file, `admin-token-for-${what}-${randomBytes(8).toString('hex')}\n`, { mode: 0o600 });
  return file;
}

/** `lamport-lock --peer <at> ARGS... --admin-token-file FILE`, run to its end. */
export function admin(cluster: LocalCluster, at: string, tokenFile: string, ...args: string[]): Promise<BinRun> {
  return runBin(lockBin, ['--peer', cluster.url(at), ...args, '--admin-token-file', tokenFile]).done;
}

/** What one change took, ms: the CLI's run, and the whole step as the caller defines it. */
export interface Timed {
  readonly startedAt: number;
  readonly endedAt: number;
}

/**
 * `member replace old neu` through the CLI at peer `at`, starting `neu` (a host added with
 * `cluster.addHost`) with the ticket as soon as the CLI prints it. Resolves with the CLI's run
 * and when it started and ended.
 */
export async function replaceHost(cluster: LocalCluster, at: string, tokenFile: string, old: string, neu: string, timeoutMs = 60_000): Promise<BinRun & Timed> {
  const host = await cluster.addHost(neu);
  const startedAt = performance.now();
  const run = runBin(lockBin, ['--peer', cluster.url(at), 'member', 'replace', old, neu, '--ws', host.ws, '--http', host.http, '--timeout', `${Math.ceil(timeoutMs / 1000)}s`, '--admin-token-file', tokenFile]);
  let ticket: string | undefined;
  let finished = false;
  void run.done.then(() => (finished = true));
  await waitFor(`the join ticket of ${neu}`, () => {
    ticket = /--join (\S+)/.exec(run.out().stdout)?.[1];
    return ticket !== undefined || finished;
  }, timeoutMs, 20);
  if (ticket !== undefined) cluster.startPeer(neu, { args: ['--join', ticket] });
  const done = await run.done;
  return { ...done, startedAt, endedAt: performance.now() };
}

/** The median and the 99th percentile of `xs` (ms), as text. */
export function spread(xs: readonly number[]): string {
  if (xs.length === 0) return 'no grants';
  const s = [...xs].sort((a, b) => a - b);
  const at = (q: number): number => s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? 0;
  return `p50 ${at(0.5).toFixed(1)} ms, p99 ${at(0.99).toFixed(1)} ms over ${s.length} grants`;
}
