#!/usr/bin/env node
/**
 * lamport-lock: the client CLI (docs/design.md section 7). `run NAME -- CMD` holds a lock while a
 * command runs (the flock / etcdctl lock / consul lock habit), `run NAME NAME... -- CMD` holds
 * several, taken all or nothing in one request; `acquire`, `release`, `status` are for
 * scripts. Exit codes are listed in exitCodes and the README.
 */
import yargs from 'yargs';
import { hideBin } from 'yargs/helpers';
import { dial, follow, formatMemberList, formatMembers, memberListJson } from '../src/client/cli-peer.js';
import { lockSpecs, runUnderLock } from '../src/client/cli-run.js';
import { checkNames, checkNamesTogether, exitCodeOf, exitCodes, formatClusterHeader, formatDegraded, formatGrant, formatMultiGrant, formatStatus, formatWatchChange, parseCount, parseDuration, parsePeerUrl, runTarget, UsageError } from '../src/client/cli-support.js';
import { LockClient, LockError } from '../src/client/lock-client.js';
import type { AcquireRequest } from '../src/client/lock-client.js';
import { readTokenFile } from '../src/token-file.js';

const durationOpt = { type: 'string', coerce: (s: string) => parseDuration(s) } as const;
const args = hideBin(process.argv);

/** Flags that take a value: a word after one is its value, not a lock name (checkNamesTogether). */
const valuedFlags = new Set(['peer', 'token-file', 'admin-token-file', 'dial-timeout', 'timeout', 'w', 'ttl', 'mode', 'limit', 'permits', 'owner', 'grace', 'value', 'prefix']);

interface LockFlags {
  timeout?: number | undefined;
  nonblock?: boolean | undefined;
  ttl?: number | undefined;
  mode?: string | undefined;
  shared?: boolean | undefined;
  exclusive?: boolean | undefined;
  limit?: number | undefined;
  permits?: number | undefined;
  owner?: string | undefined;
}

/** The mode of -s / -x / --mode, which say one thing or are refused. */
function modeOf(a: LockFlags): string | undefined {
  const said = [a.mode, a.shared === true ? 'shared' : undefined, a.exclusive === true ? 'exclusive' : undefined].filter((m) => m !== undefined);
  if (new Set(said).size > 1) fail(new UsageError(`give one mode: ${[a.mode === undefined ? '' : `--mode ${a.mode}`, a.shared === true ? '-s' : '', a.exclusive === true ? '-x' : ''].filter((w) => w !== '').join(', ')} disagree`));
  return said[0];
}

function acquireOpts(a: LockFlags): AcquireRequest {
  const mode = modeOf(a);
  if (a.nonblock === true && a.timeout !== undefined && a.timeout !== 0) fail(new UsageError('-n (do not wait) and --timeout disagree: give one'));
  const timeout = a.nonblock === true ? 0 : a.timeout;
  if (mode === 'semaphore' && a.limit === undefined) fail(new UsageError('--mode semaphore needs --limit N (at most N permits held at once)'));
  return {
    ...(timeout === undefined ? {} : { timeoutMs: timeout }),
    ...(a.ttl === undefined ? {} : { ttlMs: a.ttl }),
    ...(mode === 'shared' ? { mode: 'shared' as const } : {}),
    ...(a.limit === undefined ? {} : { limit: a.limit }),
    ...(a.permits === undefined ? {} : { permits: a.permits }),
    ...(a.owner === undefined ? {} : { owner: a.owner }),
  };
}

function fail(err: unknown): never {
  if (err instanceof UsageError) {
    process.stderr.write(`lamport-lock: ${err.message}\nTry lamport-lock --help\n`);
    process.exit(exitCodes.usage);
  }
  if (err instanceof LockError) {
    process.stderr.write(`lamport-lock: ${err.code}: ${err.message}\n`);
    process.exit(exitCodeOf(err.code));
  }
  process.stderr.write(`lamport-lock: ${(err as Error).message}\n`);
  process.exit(exitCodes.error);
}

/** The names of a command, checked: together on the command line, none empty. */
function namesOf(names: ReadonlyArray<string | undefined>): string[] {
  try {
    checkNamesTogether(args, valuedFlags);
    const out = names.filter((n): n is string => n !== undefined).map(String);
    checkNames(out);
    return out;
  } catch (err) {
    fail(err);
  }
}

interface PeerFlags {
  peer?: string | undefined;
  'token-file'?: string | undefined;
  'dial-timeout'?: number | undefined;
}

/**
 * A client of the peer named by --peer / LAMPORT_PEER, with the token of --token-file /
 * LAMPORT_TOKEN_FILE (or `token`, the admin token), once that peer answers: it waits up to
 * --dial-timeout for a peer that is starting.
 */
async function clientOf(a: PeerFlags, token?: string): Promise<LockClient> {
  const env = process.env['LAMPORT_PEER'];
  let client: LockClient;
  try {
    const peer = a.peer ?? (env === undefined || env === '' ? undefined : parsePeerUrl(env, 'LAMPORT_PEER'));
    client = new LockClient({ ...(peer === undefined ? {} : { peer }), ...(a['token-file'] === undefined ? {} : { tokenFile: a['token-file'] }), ...(token === undefined ? {} : { token }) });
  } catch (err) {
    if (err instanceof LockError) {
      process.stderr.write(`lamport-lock: ${err.code}: ${err.message}\n`);
      process.exit(exitCodes.usage);
    }
    return fail(err);
  }
  await dial(client, a['dial-timeout'] ?? 2000).catch(fail);
  return client;
}

function peerOf(a: PeerFlags): string {
  return a.peer ?? process.env['LAMPORT_PEER'] ?? 'http://127.0.0.1:7001';
}

const lockOptions = {
  timeout: { ...durationOpt, alias: 'w', describe: 'how long to wait for the lock: 500ms, 30s, 2m; a bare number is seconds (flock -w) [default: 30s]' },
  nonblock: { type: 'boolean', alias: 'n', describe: 'do not wait: exit 75 at once if the lock is taken (--timeout 0)' },
  ttl: { ...durationOpt, describe: 'hold lease, refreshed while held [default: 60s]' },
  mode: { choices: ['exclusive', 'shared', 'semaphore'] as const, describe: 'lock mode (semaphore needs --limit) [default: exclusive]' },
  shared: { type: 'boolean', alias: 's', describe: 'shared mode (--mode shared)' },
  exclusive: { type: 'boolean', alias: 'x', describe: 'exclusive mode (--mode exclusive)' },
  limit: { type: 'string', coerce: (s: string) => parseCount(s, '--limit'), describe: 'semaphore: at most this many permits held at once' },
  permits: { type: 'string', coerce: (s: string) => parseCount(s, '--permits'), describe: 'semaphore: permits this holder takes [default: 1]' },
  owner: { type: 'string', describe: 'owner name shown in status [default: $USER@pidN]' },
} as const;

const graceOpt = { ...durationOpt, default: '10s', describe: 'SIGTERM to SIGKILL delay when the hold is lost (or lamport-lock dies)' } as const;

const epilog = `Durations: 500ms, 30s, 2m, 1h; a bare number is seconds (-w 5 waits 5 s, as flock -w 5).

Exit codes:
  CMD's code  run/elect: CMD ran and exited (128 + N when killed by signal N)
  0    done
  1    any other failure
  64   bad flags or arguments, or a name or value the peer refuses (ERR_BAD_REQUEST)
  69   the local peer is unreachable (after --dial-timeout), or peers are (ERR_UNREACHABLE)
  75   worth retrying: not acquired within --timeout (ERR_TIMEOUT), or the peer refused
       for a reason that passes (ERR_LEASE_LOST, ERR_EVICTED, ERR_NOT_READY, ERR_SHUTTING_DOWN,
       ERR_LIMIT_EXCEEDED, ERR_STORAGE)
  76   run/elect: the hold was lost while CMD ran; CMD was stopped
  77   release of a hold that is not live (ERR_NOT_HELD)
  127  run/elect: CMD could not be started`;

await yargs(args)
  .scriptName('lamport-lock')
  .parserConfiguration({ 'populate--': true })
  .option('peer', { type: 'string', coerce: (s: string) => parsePeerUrl(s, '--peer'), describe: 'local peer: http://host:port, host:port or unix:/path/peer.sock [default: $LAMPORT_PEER or http://127.0.0.1:7001]' })
  .option('token-file', { type: 'string', describe: 'file with the peer\'s API token [default: $LAMPORT_TOKEN_FILE]' })
  .option('dial-timeout', { ...durationOpt, describe: 'how long to wait for a peer that does not answer yet (starting) [default: 2s]' })
  .command('run <name> [cmd..]', 'hold NAME while CMD runs; exit with its code. run NAME NAME... -- CMD holds every NAME (all or nothing)', (y) =>
    y.positional('name', { type: 'string', demandOption: true }).positional('cmd', { type: 'string', array: true })
      .options(lockOptions).option('grace', graceOpt).epilog(epilog),
    async (a) => {
      // yargs drops a `--` with nothing after it; whether one was given decides what the words before it are.
      const dashed = args.includes('--');
      const words = namesOf([a.name, ...(a.cmd ?? [])]);
      let target: ReturnType<typeof runTarget>;
      try {
        target = runTarget(words, dashed ? ((a as { '--'?: unknown[] })['--'] ?? []).map(String) : null);
      } catch (err) {
        fail(err);
      }
      // Without --, `run a b c` runs `b c` under a: say how to hold several if `b` is no command.
      const hint = dashed ? '' : ` (to hold several locks, give the command after --: lamport-lock run ${words.slice(0, 2).map((w) => JSON.stringify(w)).join(' ')} -- CMD)`;
      const opts = acquireOpts(a);
      const client = await clientOf(a);
      const code = await runUnderLock(client, { names: target.names, cmd: target.cmd, opts, graceMs: a.grace ?? 10_000, hint }).catch(fail);
      client.close();
      process.exit(code);
    })
  .command('elect <name> [cmd..]', 'campaign in election NAME; run CMD while leading (LAMPORT_TERM: the term, a fencing token)', (y) =>
    y.positional('name', { type: 'string', demandOption: true }).positional('cmd', { type: 'string', array: true })
      .option('value', { type: 'string', demandOption: true, describe: 'what this leader announces (an address, a name): GET /v1/elections/NAME shows it' })
      .options({ timeout: lockOptions.timeout, nonblock: lockOptions.nonblock, ttl: lockOptions.ttl, owner: lockOptions.owner })
      .option('grace', graceOpt).epilog(epilog),
    async (a) => {
      const [name = ''] = namesOf([a.name]);
      const rest = (a as { '--'?: unknown[] })['--'] ?? [];
      const cmd = [...(a.cmd ?? []), ...rest].map(String);
      if (cmd.length === 0) fail(new UsageError('elect needs a command to run while leading, after --: lamport-lock elect NAME --value V -- CMD [ARGS...]'));
      const opts = { ...acquireOpts(a), meta: { value: a.value } };
      const client = await clientOf(a);
      const code = await runUnderLock(client, { names: [name], cmd, opts, graceMs: a.grace ?? 10_000, election: true }).catch(fail);
      client.close();
      process.exit(code);
    })
  .command('leader <name>', 'who leads election NAME (peer, owner, value, term)', (y) => y.positional('name', { type: 'string', demandOption: true })
    .option('watch', { type: 'boolean', describe: 'then print every change of leader until interrupted; reconnects when the peer restarts' }).option('json', { type: 'boolean', describe: 'JSON lines' }),
    async (a) => {
      const [name = ''] = namesOf([a.name]);
      const client = await clientOf(a);
      const line = (leader: Record<string, unknown> | null, at?: unknown): string => {
        if (a.json === true) return `${JSON.stringify({ name, leader, ...(at === undefined ? {} : { at }) })}\n`;
        const when = typeof at === 'number' ? `${new Date(at).toISOString()} ` : '';
        return leader === null ? `${when}no leader\n` : `${when}leader ${String(leader['owner'])} on peer ${String(leader['peer'])}, value ${JSON.stringify(leader['value'])}, term ${String(leader['term'])}\n`;
      };
      if (a.watch !== true) {
        process.stdout.write(line(await client.leader(name).catch(fail)));
        client.close();
        return;
      }
      process.on('SIGINT', () => process.exit(0));
      await follow(() => client.observe(name), (e) => {
        const leader = e.data['leader'];
        process.stdout.write(line(typeof leader === 'object' && leader !== null ? (leader as Record<string, unknown>) : null, e.data['at']));
      }, peerOf(a)).catch(fail);
    })
  .command('acquire <name> [names..]', 'acquire NAME (or every NAME, all or nothing, as one hold); print the grant as JSON', (y) =>
    y.positional('name', { type: 'string', demandOption: true }).positional('names', { type: 'string', array: true }).options(lockOptions).epilog(epilog),
    async (a) => {
      const names = namesOf([a.name, ...(a.names ?? [])]);
      const opts = acquireOpts(a);
      const client = await clientOf(a);
      const [first] = names;
      if (names.length === 1 && first !== undefined) {
        const hold = await client.acquire(first, opts).catch(fail);
        process.stdout.write(`${JSON.stringify(formatGrant(hold))}\n`);
      } else {
        const { locks, shared } = lockSpecs(names, opts);
        const hold = await client.acquireAll(locks, shared).catch(fail);
        process.stdout.write(`${JSON.stringify(formatMultiGrant(hold))}\n`);
      }
      client.close();
    })
  .command('release <name> <id>', 'release a hold by id (a hold of several locks: by any of its names)', (y) => y.positional('name', { type: 'string', demandOption: true }).positional('id', { type: 'string', demandOption: true }),
    async (a) => {
      const [name = ''] = namesOf([a.name]);
      const client = await clientOf(a);
      await client.release(name, a.id).catch(fail);
      client.close();
    })
  .command('force-release <name>', 'end every hold of NAME that this peer\'s clients have (admin: --admin-token-file, or the unix socket); print their ids', (y) => y.positional('name', { type: 'string', demandOption: true })
    .option('admin-token-file', { type: 'string', describe: 'file with the peer\'s admin token [default: $LAMPORT_ADMIN_TOKEN_FILE]' }),
    async (a) => {
      const [name = ''] = namesOf([a.name]);
      const file = a['admin-token-file'] ?? process.env['LAMPORT_ADMIN_TOKEN_FILE'];
      let token: string | undefined;
      try {
        token = file === undefined || file === '' ? undefined : readTokenFile(file, 'admin token file', { private: false });
      } catch (err) {
        fail(err instanceof LockError ? new UsageError(err.message) : err);
      }
      const client = await clientOf(a, token);
      const ids = await client.forceRelease(name).catch(fail);
      process.stdout.write(`${JSON.stringify({ lock: name, released: ids })}\n`);
      client.close();
    })
  .command('members', 'the peers as the local peer sees them: connected, down, evicted; last heard, round trip (GET /v1/cluster)', (y) => y.option('json', { type: 'boolean', describe: 'GET /v1/cluster as it is' }),
    async (a) => {
      const client = await clientOf(a);
      const cluster = await client.cluster().catch(fail);
      process.stdout.write(a.json === true ? `${JSON.stringify(cluster, null, 2)}\n` : formatMembers(cluster));
      client.close();
    })
  .command('member', 'the members of the cluster as they agreed them (the agreed view): member list', (y) => y
    .command('list', 'the agreed view: its epoch and level; each member\'s ordinal, state, addresses, and its link as the local peer sees it (GET /v1/members)', (z) => z.option('json', { type: 'boolean', describe: 'GET /v1/members as it is' }),
      async (a) => {
        const client = await clientOf(a);
        const members = await client.members().catch(fail);
        process.stdout.write(a.json === true ? `${JSON.stringify(memberListJson(members), null, 2)}\n` : formatMemberList(members));
        client.close();
      })
    .demandCommand(1, 'give a member command: list'),
  () => undefined)
  .command('status [name]', 'holders and waiters, cluster-wide', (y) => y.positional('name', { type: 'string' }).option('json', { type: 'boolean', describe: 'raw JSON' })
    .option('watch', { type: 'boolean', describe: 'then print every change until interrupted (of NAME, or of every lock starting with --prefix); reconnects when the peer restarts' })
    .option('prefix', { type: 'string', describe: 'with --watch and no NAME: the locks whose name starts with this [default: every lock]' }),
    async (a) => {
      const [name] = namesOf([a.name]);
      const client = await clientOf(a);
      if (a.watch === true) {
        if (name !== undefined && a.prefix !== undefined) fail(new UsageError('give NAME or --prefix, not both'));
        process.on('SIGINT', () => process.exit(0));
        await follow(() => client.watch(name ?? { prefix: a.prefix ?? '' }), (e) => {
          if (a.json === true) process.stdout.write(`${JSON.stringify({ event: e.type, ...e.data })}\n`);
          else process.stdout.write(e.type === 'state' ? formatStatus(e.data) : formatWatchChange(e.type, e.data));
        }, peerOf(a)).catch(fail);
        return;
      }
      if (a.prefix !== undefined) fail(new UsageError('--prefix goes with --watch'));
      const [body, cluster] = await Promise.all([client.status(name), a.json === true ? null : client.cluster()]).catch(fail);
      process.stdout.write(a.json === true ? `${JSON.stringify(body, null, 2)}\n` : formatClusterHeader(cluster ?? {}) + formatDegraded(cluster ?? {}) + formatStatus(body));
      client.close();
    })
  .demandCommand(1)
  .strict()
  .epilog(epilog)
  .wrap(null)
  .fail((msg, err) => {
    if (err instanceof LockError) fail(err);
    process.stderr.write(`lamport-lock: ${err?.message ?? msg}\nTry lamport-lock --help\n`);
    process.exit(exitCodes.usage);
  })
  .parseAsync();
