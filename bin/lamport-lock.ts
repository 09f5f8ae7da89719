#!/usr/bin/env node
/**
 * lamport-lock: the client CLI (docs/design.md section 7). `run NAME -- CMD` holds a lock while a
 * command runs (the flock / etcdctl lock / consul lock habit), `run NAME NAME... -- CMD` holds
 * several, taken all or nothing in one request; `acquire`, `release`, `status` are for
 * scripts. Exit codes are listed in exitCodes and the README.
 */
import { spawn } from 'node:child_process';
import { constants } from 'node:os';
import yargs from 'yargs';
import { hideBin } from 'yargs/helpers';
import { LockClient, LockError } from '../src/client/lock-client.js';
import type { AcquireRequest, LockSpec } from '../src/client/lock-client.js';
import { exitCodes, formatClusterHeader, formatDegraded, formatGrant, formatMultiGrant, formatStatus, formatWatchChange, parseDuration, parsePeerUrl, runTarget, UsageError } from '../src/client/cli-support.js';

const durationOpt = { type: 'string', coerce: (s: string) => parseDuration(s) } as const;

function acquireOpts(a: { timeout?: number | undefined; ttl?: number | undefined; mode?: string | undefined; limit?: number | undefined; permits?: number | undefined; owner?: string | undefined }): AcquireRequest {
  if (a.mode === 'semaphore' && a.limit === undefined) fail(new UsageError('--mode semaphore needs --limit N (at most N permits held at once)'));
  return {
    ...(a.timeout === undefined ? {} : { timeoutMs: a.timeout }),
    ...(a.ttl === undefined ? {} : { ttlMs: a.ttl }),
    ...(a.mode === 'shared' ? { mode: 'shared' as const } : {}),
    ...(a.limit === undefined ? {} : { limit: a.limit }),
    ...(a.permits === undefined ? {} : { permits: a.permits }),
    owner: a.owner ?? `${process.env['USER'] ?? 'user'}@pid${process.pid}`,
  };
}

function fail(err: unknown): never {
  if (err instanceof UsageError) {
    process.stderr.write(`lamport-lock: ${err.message}\nTry lamport-lock --help\n`);
    process.exit(exitCodes.usage);
  }
  if (err instanceof LockError) {
    process.stderr.write(`lamport-lock: ${err.code}: ${err.message}\n`);
    const code = err.code === 'ERR_TIMEOUT' ? exitCodes.notAcquired : err.code === 'ERR_UNREACHABLE' ? exitCodes.unavailable : err.code === 'ERR_NOT_HELD' ? exitCodes.notHeld : exitCodes.error;
    process.exit(code);
  }
  process.stderr.write(`lamport-lock: ${(err as Error).message}\n`);
  process.exit(exitCodes.error);
}

/** Each name of `names` in the mode the flags ask for (the same for every one), and the options they share. */
function lockSpecs(names: readonly string[], opts: AcquireRequest): { locks: LockSpec[]; shared: Omit<AcquireRequest, 'mode' | 'limit' | 'permits'> } {
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
 * Runs CMD while holding the locks; stops it if the hold is lost. Once CMD has exited, the
 * hold ending (our own release fires `ended` too) is no longer a loss: CMD's status stands.
 * `hint` is added to the sentence when CMD cannot be started.
 */
async function run(client: LockClient, names: readonly string[], cmd: readonly string[], opts: AcquireRequest, graceMs: number, election = false, hint = ''): Promise<number> {
  const ttlMs = opts.ttlMs ?? 60_000;
  const hold = await acquireForRun(client, names, { ...opts, ttlMs });
  const [file, ...args] = cmd;
  const token = hold.token.toString();
  const child = spawn(file ?? 'true', args, {
    stdio: 'inherit',
    // LAMPORT_LOCK_NAMES: one name a line (a name may hold spaces, never a control character).
    env: { ...process.env, LAMPORT_LOCK_NAME: names[0] ?? '', LAMPORT_LOCK_NAMES: names.join('\n'), LAMPORT_LOCK_TOKEN: token, LAMPORT_LOCK_ID: hold.id, ...(election ? { LAMPORT_TERM: token } : {}) },
  });
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
      process.stderr.write(`lamport-lock: cannot run ${file ?? ''}: ${err.message}${hint}\n`);
      resolve(exitCodes.cannotRun);
    });
    child.on('exit', (c, signal) => {
      exited = true;
      resolve(c ?? 128 + (signal === null ? 0 : (constants.signals[signal] ?? 0)));
    });
  });
  clearInterval(refresher);
  if (lost === null) await hold.release().catch(() => undefined);
  hold.close();
  return lost !== null ? exitCodes.lockLost : code;
}

/** A client of the peer named by --peer / LAMPORT_PEER, with the token of --token-file / LAMPORT_TOKEN_FILE. */
function clientOf(a: { peer?: string | undefined; 'token-file'?: string | undefined }): LockClient {
  const env = process.env['LAMPORT_PEER'];
  const peer = a.peer ?? (env === undefined || env === '' ? undefined : parsePeerUrl(env, 'LAMPORT_PEER'));
  try {
    return new LockClient({ ...(peer === undefined ? {} : { peer }), ...(a['token-file'] === undefined ? {} : { tokenFile: a['token-file'] }) });
  } catch (err) {
    if (err instanceof LockError) {
      process.stderr.write(`lamport-lock: ${err.code}: ${err.message}\n`);
      process.exit(exitCodes.usage);
    }
    throw err;
  }
}

const lockOptions = {
  timeout: { ...durationOpt, describe: 'how long to wait (e.g. 500ms, 30s, 2m; 0 = do not wait)' },
  ttl: { ...durationOpt, describe: 'hold lease, refreshed while held (default 60s)' },
  mode: { choices: ['exclusive', 'shared', 'semaphore'] as const, describe: 'lock mode (semaphore needs --limit)' },
  limit: { type: 'number', describe: 'semaphore: at most this many holders' },
  permits: { type: 'number', describe: 'semaphore: permits this holder takes (default 1)' },
  owner: { type: 'string', describe: 'owner name shown in status' },
} as const;

await yargs(hideBin(process.argv))
  .scriptName('lamport-lock')
  .parserConfiguration({ 'populate--': true })
  .option('peer', { type: 'string', coerce: (s: string) => parsePeerUrl(s, '--peer'), describe: 'local peer: http://host:port, host:port or unix:/path/peer.sock (default $LAMPORT_PEER or http://127.0.0.1:7001)' })
  .option('token-file', { type: 'string', describe: 'file with the peer\'s API token (default $LAMPORT_TOKEN_FILE)' })
  .command('run <name> [cmd..]', 'hold NAME while CMD runs; exit with its code. run NAME NAME... -- CMD holds every NAME (all or nothing)', (y) =>
    y.positional('name', { type: 'string', demandOption: true }).positional('cmd', { type: 'string', array: true })
      .options(lockOptions).option('grace', { ...durationOpt, default: '10s', describe: 'SIGTERM to SIGKILL delay when the hold is lost' }),
    async (a) => {
      // yargs drops a `--` with nothing after it; whether one was given decides what the words before it are.
      const dashed = hideBin(process.argv).includes('--');
      const words = [a.name, ...(a.cmd ?? [])].map(String);
      let target: ReturnType<typeof runTarget>;
      try {
        target = runTarget(words, dashed ? ((a as { '--'?: unknown[] })['--'] ?? []).map(String) : null);
      } catch (err) {
        fail(err);
      }
      // Without --, `run a b c` runs `b c` under a: say how to hold several if `b` is no command.
      const hint = dashed ? '' : ` (to hold several locks, give the command after --: lamport-lock run ${words.slice(0, 2).map((w) => JSON.stringify(w)).join(' ')} -- CMD)`;
      const client = clientOf(a);
      const code = await run(client, target.names, target.cmd, acquireOpts(a), a.grace ?? 10_000, false, hint).catch(fail);
      client.close();
      process.exit(code);
    })
  .command('elect <name> [cmd..]', 'campaign in election NAME; run CMD while leading (LAMPORT_TERM: the term, a fencing token)', (y) =>
    y.positional('name', { type: 'string', demandOption: true }).positional('cmd', { type: 'string', array: true })
      .option('value', { type: 'string', demandOption: true, describe: 'what this leader announces (an address, a name): GET /v1/elections/NAME shows it' })
      .options({ timeout: lockOptions.timeout, ttl: lockOptions.ttl, owner: lockOptions.owner })
      .option('grace', { ...durationOpt, default: '10s', describe: 'SIGTERM to SIGKILL delay when leadership is lost' }),
    async (a) => {
      const rest = (a as { '--'?: unknown[] })['--'] ?? [];
      const cmd = [...(a.cmd ?? []), ...rest].map(String);
      if (cmd.length === 0) fail(new UsageError('elect needs a command to run while leading, after --: lamport-lock elect NAME --value V -- CMD [ARGS...]'));
      const client = clientOf(a);
      const code = await run(client, [a.name], cmd, { ...acquireOpts(a), meta: { value: a.value } }, a.grace ?? 10_000, true).catch(fail);
      client.close();
      process.exit(code);
    })
  .command('leader <name>', 'who leads election NAME (peer, owner, value, term)', (y) => y.positional('name', { type: 'string', demandOption: true })
    .option('watch', { type: 'boolean', describe: 'then print every change of leader until interrupted' }).option('json', { type: 'boolean', describe: 'JSON lines' }),
    async (a) => {
      const client = clientOf(a);
      const line = (leader: Record<string, unknown> | null, at?: unknown): string => {
        if (a.json === true) return `${JSON.stringify({ name: a.name, leader, ...(at === undefined ? {} : { at }) })}\n`;
        const when = typeof at === 'number' ? `${new Date(at).toISOString()} ` : '';
        return leader === null ? `${when}no leader\n` : `${when}leader ${String(leader['owner'])} on peer ${String(leader['peer'])}, value ${JSON.stringify(leader['value'])}, term ${String(leader['term'])}\n`;
      };
      if (a.watch !== true) {
        process.stdout.write(line(await client.leader(a.name).catch(fail)));
        client.close();
        return;
      }
      process.on('SIGINT', () => process.exit(0));
      try {
        for await (const e of client.observe(a.name)) {
          const leader = e.data['leader'];
          process.stdout.write(line(typeof leader === 'object' && leader !== null ? (leader as Record<string, unknown>) : null, e.data['at']));
        }
      } catch (err) {
        fail(err);
      }
    })
  .command('acquire <name> [names..]', 'acquire NAME (or every NAME, all or nothing, as one hold); print the grant as JSON', (y) =>
    y.positional('name', { type: 'string', demandOption: true }).positional('names', { type: 'string', array: true }).options(lockOptions),
    async (a) => {
      const names = [a.name, ...(a.names ?? [])].map(String);
      const client = clientOf(a);
      if (names.length === 1) {
        const hold = await client.acquire(a.name, acquireOpts(a)).catch(fail);
        process.stdout.write(`${JSON.stringify(formatGrant(hold))}\n`);
      } else {
        const { locks, shared } = lockSpecs(names, acquireOpts(a));
        const hold = await client.acquireAll(locks, shared).catch(fail);
        process.stdout.write(`${JSON.stringify(formatMultiGrant(hold))}\n`);
      }
      client.close();
    })
  .command('release <name> <id>', 'release a hold by id (a hold of several locks: by any of its names)', (y) => y.positional('name', { type: 'string', demandOption: true }).positional('id', { type: 'string', demandOption: true }),
    async (a) => {
      const client = clientOf(a);
      await client.release(a.name, a.id).catch(fail);
      client.close();
    })
  .command('status [name]', 'holders and waiters, cluster-wide', (y) => y.positional('name', { type: 'string' }).option('json', { type: 'boolean', describe: 'raw JSON' })
    .option('watch', { type: 'boolean', describe: 'then print every change until interrupted (of NAME, or of every lock starting with --prefix)' })
    .option('prefix', { type: 'string', describe: 'with --watch and no NAME: the locks whose name starts with this (default: every lock)' }),
    async (a) => {
      const client = clientOf(a);
      if (a.watch === true) {
        if (a.name !== undefined && a.prefix !== undefined) fail(new UsageError('give NAME or --prefix, not both'));
        process.on('SIGINT', () => process.exit(0));
        try {
          for await (const e of client.watch(a.name ?? { prefix: a.prefix ?? '' })) {
            if (a.json === true) process.stdout.write(`${JSON.stringify({ event: e.type, ...e.data })}\n`);
            else process.stdout.write(e.type === 'state' ? formatStatus(e.data) : formatWatchChange(e.type, e.data));
          }
        } catch (err) {
          fail(err);
        }
        return;
      }
      if (a.prefix !== undefined) fail(new UsageError('--prefix goes with --watch'));
      const [body, cluster] = await Promise.all([client.status(a.name), a.json === true ? null : client.cluster()]).catch(fail);
      process.stdout.write(a.json === true ? `${JSON.stringify(body, null, 2)}\n` : formatClusterHeader(cluster ?? {}) + formatDegraded(cluster ?? {}) + formatStatus(body));
      client.close();
    })
  .demandCommand(1)
  .strict()
  .fail((msg, err) => {
    if (err instanceof LockError) fail(err);
    process.stderr.write(`lamport-lock: ${err?.message ?? msg}\nTry lamport-lock --help\n`);
    process.exit(exitCodes.usage);
  })
  .parseAsync();
