#!/usr/bin/env node
/**
 * lamport-lock: the client CLI (docs/design.md section 7). `run NAME -- CMD` holds a lock while a
 * command runs (the flock / etcdctl lock / consul lock habit), `run NAME NAME... -- CMD` holds
 * several, taken all or nothing in one request; `acquire`, `release`, `status` are for
 * scripts. Exit codes are listed in exitCodes and the README.
 */
import yargs from 'yargs';
import { hideBin } from 'yargs/helpers';
import type { ChangeStep } from '../src/client/cli-member.js';
import { formatStopped, formatView, joinText, replaceSteps, runSteps, StepsStopped, viewJson } from '../src/client/cli-member.js';
import { dial, follow, formatMemberList, memberListJson } from '../src/client/cli-peer.js';
import { lockSpecs, runUnderLock } from '../src/client/cli-run.js';
import { checkNames, checkNamesTogether, exitCodeOf, exitCodes, formatClusterHeader, formatDegraded, formatGrant, formatMultiGrant, formatStatus, formatWatchChange, parseCount, parseDuration, parsePeerUrl, runTarget, UsageError } from '../src/client/cli-support.js';
import { LockClient, LockError } from '../src/client/lock-client.js';
import type { AcquireRequest, ChangeRequest, View } from '../src/client/lock-client.js';
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

/** A client with the admin token of --admin-token-file / LAMPORT_ADMIN_TOKEN_FILE, if any (else the unix socket must make it admin). */
async function adminClientOf(a: PeerFlags & { 'admin-token-file'?: string | undefined }): Promise<LockClient> {
  const file = a['admin-token-file'] ?? process.env['LAMPORT_ADMIN_TOKEN_FILE'];
  let token: string | undefined;
  try {
    token = file === undefined || file === '' ? undefined : readTokenFile(file, 'admin token file', { private: false });
  } catch (err) {
    fail(err instanceof LockError ? new UsageError(err.message) : err);
  }
  return clientOf(a, token);
}

interface ChangeFlags extends PeerFlags {
  'admin-token-file'?: string | undefined;
  timeout?: number | undefined;
  json?: boolean | undefined;
}

/** Makes one change of the members and prints the view that has it (`said` first), or fails with the peer's code. */
async function changeMembers(a: ChangeFlags, run: ChangeStep['run'], said: string): Promise<void> {
  const client = await adminClientOf(a);
  const view = await run(client, changeOpts(a)).catch(fail);
  const join = a.json !== true && view.join !== undefined ? joinText(view.members[view.members.length - 1]?.id ?? '', view.join) : '';
  process.stdout.write(a.json === true ? `${JSON.stringify(viewJson(view))}\n` : `${said}\n${formatView(view)}${join}`);
  client.close();
}

function changeOpts(a: ChangeFlags): ChangeRequest {
  return a.timeout === undefined ? {} : { timeoutMs: a.timeout };
}

/** `member replace`: its four changes in order, a line (or a JSON line) each; at a failure, what was made and what is left. */
async function replaceMember(a: ChangeFlags & { old: string; new: string; ws: string; http: string }): Promise<void> {
  const client = await adminClientOf(a);
  const steps = replaceSteps(a.old, a.new, a.ws, a.http, (ticket) => {
    if (a.json !== true) process.stdout.write(joinText(a.new, ticket).replace(/\nthen, .*\n$/, `\nwaiting for ${a.new} to join (--timeout)...\n`));
  });
  const print = (step: ChangeStep, i: number, view: View): void => {
    process.stdout.write(a.json === true ? `${JSON.stringify({ step: i + 1, command: step.command, view: viewJson(view) })}\n` : `step ${i + 1}/${steps.length} made: lamport-lock ${step.command} (view epoch ${view.epoch})\n`);
  };
  try {
    const view = await runSteps(client, steps, changeOpts(a), print);
    if (a.json !== true && view !== null) process.stdout.write(`${a.old} is replaced by ${a.new}\n${formatView(view)}`);
  } catch (err) {
    if (!(err instanceof StepsStopped)) fail(err);
    if (a.json === true) process.stdout.write(`${JSON.stringify({ error: err.cause.code, message: err.cause.message, done: err.done, left: err.left })}\n`);
    process.stderr.write(`lamport-lock: ${formatStopped(err)}`);
    process.exit(exitCodeOf(err.cause.code));
  }
  client.close();
}

/** `member list` and its older name `members`: the agreed view with each member's link as the local peer sees it. */
async function listMembers(a: PeerFlags & { json?: boolean | undefined }): Promise<void> {
  const client = await clientOf(a);
  const [members, cluster] = await Promise.all([client.members(), a.json === true ? {} : client.cluster()]).catch(fail);
  process.stdout.write(a.json === true ? `${JSON.stringify(memberListJson(members), null, 2)}\n` : formatMemberList(members, cluster));
  client.close();
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

const changeOptions = {
  'admin-token-file': { type: 'string', describe: 'file with the peer\'s admin token [default: $LAMPORT_ADMIN_TOKEN_FILE]; none needed over the unix socket' },
  timeout: { ...durationOpt, describe: 'how long to wait for the change to be made [default: 30s]' },
  json: { type: 'boolean', describe: 'print the view made as JSON (replace: one JSON line per change)' },
} as const;

const changeEpilog = `Each change is one step of the agreed view (docs/operations.md, "Changing the members"); it prints
the view that has it. Exit codes: 0 made; 1 refused (ERR_CHANGE_REFUSED: it does not apply to the
view, the sentence says why; ERR_ADMIN_REQUIRED); 64 a bad argument; 69 the local peer is
unreachable; 75 worth retrying (ERR_TIMEOUT, ERR_NOT_READY, ERR_SHUTTING_DOWN).`;

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
      const client = await adminClientOf(a);
      const ids = await client.forceRelease(name).catch(fail);
      process.stdout.write(`${JSON.stringify({ lock: name, released: ids })}\n`);
      client.close();
    })
  .command('members', 'the older name of `member list`', (y) => y.option('json', { type: 'boolean', describe: 'GET /v1/members as it is' }), listMembers)
  .command('member', 'the members of the cluster as they agreed them (the agreed view); changes of them (admin: --admin-token-file, or the unix socket)', (y) => y
    .command('list', 'the agreed view: its epoch and level; each member\'s ordinal, state, addresses, and its link as the local peer sees it (GET /v1/members, GET /v1/cluster)',
      (z) => z.option('json', { type: 'boolean', describe: 'GET /v1/members as it is' }), listMembers)
    .command('add <id>', 'add a member, as a learner: it counts in no majority until promoted', (z) => z.positional('id', { type: 'string', demandOption: true })
      .option('ws', { type: 'string', demandOption: true, describe: 'where its peer links listen: ws://host:port or wss://host:port' })
      .option('http', { type: 'string', demandOption: true, describe: 'where its HTTP API listens: host:port' }).options(changeOptions).epilog(changeEpilog),
    (a) => changeMembers(a, (c, o) => c.addMember({ id: a.id, ws: a.ws, http: a.http }, o), `added ${a.id} as a learner`))
    .command('promote <id>', 'make a learner a voter', (z) => z.positional('id', { type: 'string', demandOption: true }).options(changeOptions).epilog(changeEpilog),
      (a) => changeMembers(a, (c, o) => c.promoteMember(a.id, o), `promoted ${a.id} to voter`))
    .command('remove <id>', 'remove a member: a learner goes; a voter becomes leaving (retire it once it left or was evicted)', (z) => z.positional('id', { type: 'string', demandOption: true }).options(changeOptions).epilog(changeEpilog),
      (a) => changeMembers(a, (c, o) => c.removeMember(a.id, o), `removed ${a.id}`))
    .command('retire <id>', 'take out a leaving member once it left or was evicted', (z) => z.positional('id', { type: 'string', demandOption: true }).options(changeOptions).epilog(changeEpilog),
      (a) => changeMembers(a, (c, o) => c.retireMember(a.id, o), `retired ${a.id}`))
    .command('replace <old> <new>', 'replace member OLD by NEW in four changes, in order: add NEW, promote NEW, remove OLD, retire OLD. Each is its own change of the view (there is no one-step replace, as in etcd and Consul): it prints each as it is made and stops at the first that fails, with what was made and the commands left',
      (z) => z.positional('old', { type: 'string', demandOption: true }).positional('new', { type: 'string', demandOption: true })
        .option('ws', { type: 'string', demandOption: true, describe: 'where NEW\'s peer links listen: ws://host:port or wss://host:port' })
        .option('http', { type: 'string', demandOption: true, describe: 'where NEW\'s HTTP API listens: host:port' }).options(changeOptions).epilog(changeEpilog),
      (a) => replaceMember(a))
    .demandCommand(1, 'give a member command: list, add, promote, remove, retire, replace'),
  () => undefined)
  .command('level', 'the protocol level the cluster runs at (docs/operations.md, "Protocol levels")', (y) => y
    .command('raise <level>', 'raise the cluster\'s protocol level to LEVEL, once every member\'s binary speaks it (admin: --admin-token-file, or the unix socket)',
      (z) => z.positional('level', { type: 'string', demandOption: true, coerce: (s: string) => parseCount(s, 'LEVEL') }).options(changeOptions).epilog(changeEpilog),
      (a) => changeMembers(a, (c, o) => c.raiseLevel(a.level, o), `the cluster runs at protocol level ${a.level}`))
    .demandCommand(1, 'give a level command: raise'),
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
