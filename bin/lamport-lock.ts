#!/usr/bin/env node
/**
 * lamport-lock: the client CLI (docs/design.md section 7). `run NAME -- CMD` holds a lock while a
 * command runs (the flock / etcdctl lock / consul lock habit); `acquire`, `release`,
 * `status` are for scripts. Exit codes are listed in exitCodes and the README.
 */
import { spawn } from 'node:child_process';
import { constants } from 'node:os';
import yargs from 'yargs';
import { hideBin } from 'yargs/helpers';
import { LockClient, LockError } from '../src/client/lock-client.js';
import type { AcquireRequest, ConnectionHold } from '../src/client/lock-client.js';
import { exitCodes, formatDegraded, formatGrant, formatStatus, formatWatchChange, parseDuration, parsePeerUrl, UsageError } from '../src/client/cli-support.js';

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

/**
 * Runs CMD while holding the lock; stops it if the hold is lost. Once CMD has exited, the
 * hold ending (our own release fires `ended` too) is no longer a loss: CMD's status stands.
 */
async function run(client: LockClient, name: string, cmd: string[], opts: AcquireRequest, graceMs: number, election = false): Promise<number> {
  const ttlMs = opts.ttlMs ?? 60_000;
  const hold: ConnectionHold = await client.acquireOnConnection(name, { ...opts, ttlMs });
  const [file, ...args] = cmd;
  const child = spawn(file ?? 'true', args, {
    stdio: 'inherit',
    env: { ...process.env, LAMPORT_LOCK_NAME: name, LAMPORT_LOCK_TOKEN: hold.token.toString(), LAMPORT_LOCK_ID: hold.id, ...(election ? { LAMPORT_TERM: hold.token.toString() } : {}) },
  });
  let exited = false;
  let lost: string | null = null;
  const stopChild = (reason: string): void => {
    if (lost !== null || exited) return;
    lost = reason;
    process.stderr.write(`lamport-lock: lost ${election ? 'the leadership of' : 'the lock'} ${JSON.stringify(name)} (${reason}); stopping the command\n`);
    child.kill('SIGTERM');
    setTimeout(() => child.kill('SIGKILL'), graceMs).unref();
  };
  void hold.ended.then((reason) => stopChild(reason));
  const refresher = setInterval(() => {
    client.refresh(name, hold.id, ttlMs).catch((err: unknown) => stopChild(err instanceof LockError ? String(err.details['reason'] ?? err.code) : 'refresh failed'));
  }, Math.max(100, Math.floor(ttlMs / 3)));
  const forward = (sig: NodeJS.Signals): void => void child.kill(sig);
  process.on('SIGINT', forward);
  process.on('SIGTERM', forward);
  const code = await new Promise<number>((resolve) => {
    child.on('error', (err) => {
      exited = true;
      process.stderr.write(`lamport-lock: cannot run ${file ?? ''}: ${err.message}\n`);
      resolve(exitCodes.cannotRun);
    });
    child.on('exit', (c, signal) => {
      exited = true;
      resolve(c ?? 128 + (signal === null ? 0 : (constants.signals[signal] ?? 0)));
    });
  });
  clearInterval(refresher);
  if (lost === null) await client.release(name, hold.id).catch(() => undefined);
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
  .command('run <name> [cmd..]', 'hold NAME while CMD runs; exit with its code', (y) =>
    y.positional('name', { type: 'string', demandOption: true }).positional('cmd', { type: 'string', array: true })
      .options(lockOptions).option('grace', { ...durationOpt, default: '10s', describe: 'SIGTERM to SIGKILL delay when the hold is lost' }),
    async (a) => {
      const rest = (a as { '--'?: unknown[] })['--'] ?? [];
      const cmd = [...(a.cmd ?? []), ...rest].map(String);
      if (cmd.length === 0) fail(new UsageError('run needs a command to run while holding the lock, after --: lamport-lock run NAME -- CMD [ARGS...]'));
      const client = clientOf(a);
      const code = await run(client, a.name, cmd, acquireOpts(a), a.grace ?? 10_000).catch(fail);
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
      const code = await run(client, a.name, cmd, { ...acquireOpts(a), meta: { value: a.value } }, a.grace ?? 10_000, true).catch(fail);
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
  .command('acquire <name>', 'acquire NAME; print the grant as JSON', (y) => y.positional('name', { type: 'string', demandOption: true }).options(lockOptions),
    async (a) => {
      const client = clientOf(a);
      const hold = await client.acquire(a.name, acquireOpts(a)).catch(fail);
      process.stdout.write(`${JSON.stringify(formatGrant(hold))}\n`);
      client.close();
    })
  .command('release <name> <id>', 'release a hold by id', (y) => y.positional('name', { type: 'string', demandOption: true }).positional('id', { type: 'string', demandOption: true }),
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
      process.stdout.write(a.json === true ? `${JSON.stringify(body, null, 2)}\n` : formatDegraded(cluster ?? {}) + formatStatus(body));
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
