/**
 * `lamport-lock run` and `elect`: hold the locks while a command runs, stop the command when
 * the hold is lost, and never let it outlive the CLI that holds its lock (a watchdog that
 * the CLI's death, kill -9 included, wakes).
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { constants } from 'node:os';
import { LockError } from '../errors.js';
import { exitCodes } from './cli-support.js';
import type { LockClient } from './lock-client.js';
import type { AcquireAllRequest, AcquireRequest, LockSpec } from './wire.js';

/** Each name of `names` in the mode the flags ask for (the same for every one), and the options they share. */
export function lockSpecs(names: readonly string[], opts: AcquireRequest): { locks: LockSpec[]; shared: AcquireAllRequest } {
  const { mode, limit, permits, ...shared } = opts;
  const locks = names.map((name) => ({ name, ...(mode === undefined ? {} : { mode }), ...(limit === undefined ? {} : { limit }), ...(permits === undefined ? {} : { permits }) }));
  return { locks, shared };
}

/** What `run` holds while CMD runs: one lock (its own routes), or several (one hold of them all). */
interface RunHold {
  readonly id: string;
  readonly token: bigint;
  readonly ended: Promise<string>;
  close(): void;
  refresh(ttlMs: number): Promise<unknown>;
  release(): Promise<void>;
}

async function acquireForRun(client: LockClient, names: readonly string[], opts: AcquireRequest): Promise<RunHold> {
  const [first] = names;
  if (names.length === 1 && first !== undefined) {
    const hold = await client.acquireOnConnection(first, opts);
    return { id: hold.id, token: hold.token, ended: hold.ended, close: hold.close, refresh: (ttlMs) => client.refresh(first, hold.id, ttlMs), release: () => client.release(first, hold.id) };
  }
  const { locks, shared } = lockSpecs(names, opts);
  const hold = await client.acquireAllOnConnection(locks, shared);
  return { id: hold.id, token: hold.token, ended: hold.ended, close: hold.close, refresh: (ttlMs) => client.refreshHold(hold.id, ttlMs), release: () => client.releaseHold(hold.id) };
}

/**
 * The watchdog of a command: a tiny shell that reads one line from a pipe only this process
 * writes to. When this process ends without saying `done` (kill -9 included: the kernel
 * closes the pipe), the hold it had is already ending, so the shell sends the command
 * SIGTERM, then SIGKILL after `graceMs`, as on a lost hold. Node has no parent-death signal;
 * a process group of the command's own would take it off the terminal (a command reading
 * the terminal would stop on SIGTTIN), so the watchdog stops the command itself, as a lost
 * hold does. It ignores the terminal's signals: Ctrl-C is for the command and this process.
 */
const watchdogScript = [
  'trap "" INT TERM HUP QUIT',
  'IFS= read -r word',
  '[ "$word" = done ] && exit 0',
  'kill -0 "$1" 2>/dev/null || exit 0',
  'echo "lamport-lock: the lamport-lock process that held the lock for pid $1 is gone; stopping the command" >&2',
  'kill -TERM "$1" 2>/dev/null',
  'i=0',
  'while kill -0 "$1" 2>/dev/null; do',
  '  if [ "$i" -ge "$2" ]; then kill -KILL "$1" 2>/dev/null; exit 0; fi',
  '  sleep 0.1; i=$((i+1))',
  'done',
].join('\n');

/** Starts the watchdog of `child`; the returned function tells it the command is over (call it first thing on exit). */
function watchCommand(child: ChildProcess, graceMs: number): () => void {
  if (child.pid === undefined) return () => undefined;
  const dog = spawn('/bin/sh', ['-c', watchdogScript, 'lamport-lock-watchdog', String(child.pid), String(Math.ceil(graceMs / 100))], { stdio: ['pipe', 'ignore', 'inherit'] });
  dog.on('error', (err) => process.stderr.write(`lamport-lock: cannot start the watchdog of the command (/bin/sh): ${err.message}\n`));
  dog.stdin?.on('error', () => undefined);
  dog.unref();
  return () => {
    dog.stdin?.end('done\n');
  };
}

/** What `run` was asked: the locks, the command, the acquire, the grace, and how to say them. */
export interface RunPlan {
  readonly names: readonly string[];
  readonly cmd: readonly string[];
  readonly opts: AcquireRequest;
  readonly graceMs: number;
  readonly election?: boolean;
  /** Added to the sentence when CMD cannot be started. */
  readonly hint?: string;
}

/**
 * Runs CMD while holding the locks; stops it if the hold is lost. Once CMD has exited, the
 * hold ending (our own release fires `ended` too) is no longer a loss: CMD's status stands.
 */
export async function runUnderLock(client: LockClient, plan: RunPlan): Promise<number> {
  const { names, cmd, graceMs, election = false, hint = '' } = plan;
  const ttlMs = plan.opts.ttlMs ?? 60_000;
  const hold = await acquireForRun(client, names, { ...plan.opts, ttlMs });
  const [file, ...args] = cmd;
  const token = hold.token.toString();
  const child = spawn(file ?? 'true', args, {
    stdio: 'inherit',
    // LAMPORT_LOCK_NAMES: one name a line (a name may hold spaces, never a control character).
    env: { ...process.env, LAMPORT_LOCK_NAME: names[0] ?? '', LAMPORT_LOCK_NAMES: names.join('\n'), LAMPORT_LOCK_TOKEN: token, LAMPORT_LOCK_ID: hold.id, ...(election ? { LAMPORT_TERM: token } : {}) },
  });
  const commandOver = watchCommand(child, graceMs);
  const what = names.length === 1 ? `${election ? 'the leadership of' : 'the lock'} ${JSON.stringify(names[0])}` : `the locks ${names.map((n) => JSON.stringify(n)).join(', ')}`;
  let exited = false;
  let lost: string | null = null;
  const stopChild = (reason: string): void => {
    if (lost !== null || exited) return;
    lost = reason;
    process.stderr.write(`lamport-lock: lost ${what} (${reason}); stopping the command\n`);
    child.kill('SIGTERM');
    setTimeout(() => child.kill('SIGKILL'), graceMs).unref();
  };
  void hold.ended.then((reason) => stopChild(reason));
  const refresher = setInterval(() => {
    hold.refresh(ttlMs).catch((err: unknown) => stopChild(err instanceof LockError ? String(err.details['reason'] ?? err.code) : 'refresh failed'));
  }, Math.max(100, Math.floor(ttlMs / 3)));
  const forward = (sig: NodeJS.Signals): void => void child.kill(sig);
  process.on('SIGINT', forward);
  process.on('SIGTERM', forward);
  const code = await new Promise<number>((resolve) => {
    child.on('error', (err) => {
      exited = true;
      commandOver();
      process.stderr.write(`lamport-lock: cannot run ${file ?? ''}: ${err.message}${hint}\n`);
      resolve(exitCodes.cannotRun);
    });
    child.on('exit', (c, signal) => {
      exited = true;
      commandOver();
      resolve(c ?? 128 + (signal === null ? 0 : (constants.signals[signal] ?? 0)));
    });
  });
  clearInterval(refresher);
  if (lost === null) await hold.release().catch(() => undefined);
  hold.close();
  return lost !== null ? exitCodes.lockLost : code;
}
