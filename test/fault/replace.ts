/**
 * The `replace` fault of the nemesis (issue 40; docs/operations.md, "Replace a dead host"), as an
 * operator does it: kill -9 of a member, wait until every running member evicted it, then
 * `lamport-lock member replace OLD NEW --ws --http` (the built CLI) against a live member, NEW
 * started with the join ticket as soon as the CLI prints it (the CLI then waits for NEW to join,
 * promotes it, removes and retires OLD). OLD stays stopped: a removed peer refuses to start.
 *
 * Known limits (LocalCluster.addHost): NEW's outgoing links go through proxies of their own, so
 * faults can cut what carries NEW's lease, but the links TO NEW do not: the running peers dial
 * it at its real address (their config files, read at their start, do not name it), so a
 * partition or a stall never cuts q -> NEW and is not complete once a replacement runs.
 */
import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import type { LocalCluster } from '../../src/tools/local-cluster.js';
import { peerBinPath } from '../../src/tools/local-cluster.js';
import { waitFor } from '../support/wait.js';

/** What a replace needs of the nemesis. */
export interface ReplaceContext {
  readonly cluster: LocalCluster;
  /** The members now, OLD among them. */
  readonly members: readonly string[];
  readonly evictMs: number;
  readonly note: (what: string) => void;
  /** NEW was started with its ticket (the checker and the lease probe must know it from now). */
  readonly started: (neu: string) => void;
}

/** How a replace went: null when every step was made, else what went wrong. */
export type ReplaceProblem = string | null;

/** A `lamport-lock` run whose stdout lines are seen as they come. */
function runLockCli(args: readonly string[], line: (text: string) => void): { done: Promise<{ code: number | null; stdout: string; stderr: string }>; stdout: () => string } {
  const bin = join(dirname(peerBinPath()), 'lamport-lock.js');
  const child = spawn(process.execPath, [bin, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  let partial = '';
  child.stdout.on('data', (d: Buffer) => {
    stdout += d.toString();
    partial += d.toString();
    const lines = partial.split('\n');
    partial = lines.pop() ?? '';
    for (const l of lines) line(l);
  });
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const done = new Promise<{ code: number | null; stdout: string; stderr: string }>((res) => child.on('close', (code) => res({ code, stdout, stderr })));
  return { done, stdout: () => stdout };
}

/** Whether `at` answers GET /v1/members with `id` evicted. */
async function evictedAt(cluster: LocalCluster, at: string, id: string): Promise<boolean> {
  const body = await fetch(`${cluster.url(at)}/v1/members`, { signal: AbortSignal.timeout(2000) }).then((r) => r.json() as Promise<{ members?: Array<{ id: string; evicted?: boolean | null }> }>, () => null);
  return body?.members?.some((m) => m.id === id && m.evicted === true) === true;
}

/** A running member other than `old` that answers /readyz 200 within `boundMs`; null when none does. */
async function readyMember(cluster: LocalCluster, members: readonly string[], old: string, boundMs: number): Promise<string | null> {
  let found: string | null = null;
  await waitFor('a ready member', async () => {
    for (const id of members) {
      if (id === old || cluster.peer(id).proc === null) continue;
      const ok = await fetch(`${cluster.url(id)}/readyz`, { signal: AbortSignal.timeout(2000) }).then((r) => r.status === 200, () => false);
      if (ok) found = id;
      if (ok) return true;
    }
    return false;
  }, boundMs, 100).catch(() => undefined);
  return found;
}

/** The state of each member in the view `at` answers (GET /v1/members); null when it does not answer. */
async function statesAt(cluster: LocalCluster, at: string): Promise<Map<string, string> | null> {
  const body = await fetch(`${cluster.url(at)}/v1/members`, { signal: AbortSignal.timeout(2000) }).then((r) => r.json() as Promise<{ members?: Array<{ id: string; state: string }> }>, () => null);
  return body?.members === undefined ? null : new Map(body.members.map((m) => [m.id, m.state]));
}

/** The change the runbook makes next after a replace stopped, by the view: null when none is left. */
function nextMend(states: ReadonlyMap<string, string>, old: string, neu: string, neuRuns: boolean): string[] | null {
  if (neuRuns) {
    if (states.get(neu) === 'learner') return ['member', 'promote', neu];
    if (states.get(old) === 'voter') return ['member', 'remove', old];
    if (states.get(old) === 'leaving') return ['member', 'retire', old];
    return null;
  }
  // NEW never ran: a learner added for it goes, and OLD comes back (the replace became a kill).
  return states.get(neu) === 'learner' ? ['member', 'remove', neu] : null;
}

/**
 * After a replace stopped: the changes left, one command at a time as an operator runs them
 * (docs/operations.md: "run them once the cause is mended"), each read off the view anew.
 * 'replaced' when NEW runs and OLD is out; 'restore' when NEW never ran (OLD is to be
 * restarted); else what failed.
 */
export async function mendReplace(ctx: ReplaceContext, old: string, neu: string): Promise<'replaced' | 'restore' | string> {
  const { cluster } = ctx;
  const neuRuns = cluster.peers.some((p) => p.id === neu && p.proc !== null);
  for (let i = 0; i < 4; i++) {
    const via = await readyMember(cluster, ctx.members.filter((id) => id !== neu), old, 3 * ctx.evictMs + 10_000);
    const states = via === null ? null : await statesAt(cluster, via);
    if (via === null || states === null) return `no member ready to mend the replace of ${old} by ${neu}`;
    const args = nextMend(states, old, neu, neuRuns);
    if (args === null) return neuRuns ? 'replaced' : 'restore';
    const run = await runLockCli(['--peer', cluster.url(via), ...args, '--admin-token-file', cluster.adminTokenFile ?? ''], () => undefined).done;
    ctx.note(`mending the replace of ${old} by ${neu}: lamport-lock ${args.join(' ')} via ${via} exited ${run.code}`);
    if (run.code !== 0) return `lamport-lock ${args.join(' ')} via ${via} exited ${run.code}: ${run.stderr.trim().split('\n').join(' | ')}`;
  }
  return `the replace of ${old} by ${neu} was not mended in 4 changes`;
}

/**
 * Replaces the dead member `old` by the new host `neu`: waits for its eviction by every running
 * member, adds the host, runs `member replace` and starts `neu` with the ticket it prints.
 */
export async function replaceDeadMember(ctx: ReplaceContext, old: string, neu: string): Promise<ReplaceProblem> {
  const { cluster } = ctx;
  const adminTokenFile = cluster.adminTokenFile;
  if (adminTokenFile === null) return 'the cluster has no admin token (LocalCluster option adminToken)';
  const running = ctx.members.filter((id) => id !== old && cluster.peer(id).proc !== null);
  const boundMs = 3 * ctx.evictMs + 10_000;
  try {
    await waitFor(`${old} evicted by ${running.join(',')}`, async () => (await Promise.all(running.map((id) => evictedAt(cluster, id, old)))).every(Boolean), boundMs, 100);
  } catch (err) {
    return (err as Error).message;
  }
  ctx.note(`${old} evicted by every running member [${running.join(',')}]`);
  const via = await readyMember(cluster, running, old, boundMs);
  if (via === null) return `no member ready to run member replace ${old} ${neu} against`;
  const host = await cluster.addHost(neu);
  const cli = runLockCli(['--peer', cluster.url(via), 'member', 'replace', old, neu, '--ws', host.ws, '--http', host.http, '--admin-token-file', adminTokenFile], (line) => {
    if (line.startsWith('step ')) ctx.note(`member replace ${old} ${neu}: ${line}`);
  });
  let ticket: string | undefined;
  let exited = false;
  void cli.done.then(() => (exited = true));
  await waitFor(`the join line of member replace ${old} ${neu}`, () => {
    ticket = /--join (\S+)/.exec(cli.stdout())?.[1];
    return ticket !== undefined || exited;
  }, 60_000, 20).catch(() => undefined);
  if (ticket !== undefined) {
    cluster.startPeer(neu, { args: ['--join', ticket] });
    ctx.started(neu);
    ctx.note(`started ${neu} with its join ticket (member replace ${old} ${neu} via ${via})`);
  }
  const result = await cli.done;
  if (result.code !== 0 || !result.stdout.includes(`${old} is replaced by ${neu}`)) {
    return `member replace ${old} ${neu} via ${via} exited ${result.code}${ticket === undefined ? ' before printing a join ticket' : ''}: ${result.stderr.trim().split('\n').join(' | ')}`;
  }
  return null;
}
