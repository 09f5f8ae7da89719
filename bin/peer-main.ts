/**
 * lamport-peer's main (bin/lamport-peer.ts): parses flags, loads the config, starts the peer;
 * no logic of its own. `build` is what the binary is built with: the protocol levels it speaks
 * (transport/codec.ts `protocolLevels`). A test stands in for the next release by running this
 * main with a wider range (test/integration/fixtures/next-release-peer.ts).
 */
import yargs from 'yargs';
import { checkConfigFile } from '../src/check-config.js';
import { LockClient } from '../src/client/lock-client.js';
import { loadConfig } from '../src/config.js';
import { ErrorCode, isLockError } from '../src/errors.js';
import { parseSocketMode } from '../src/http/listen-target.js';
import { limits } from '../src/limits.js';
import type { Logger } from '../src/log.js';
import { createLogger, logLevels } from '../src/log.js';
import { readableSecretWarning } from '../src/secret.js';
import { peerExitCodes, startFailureExitCode } from '../src/peer-exit-codes.js';
import { startPeerServer } from '../src/server.js';
import { decodeJoinTicket } from '../src/runtime/view-store.js';
import type { ProtocolLevels } from '../src/transport/codec.js';
import { protocolLevels } from '../src/transport/codec.js';

/** What a binary is built with. */
export interface PeerBuild {
  readonly levels: ProtocolLevels;
}

/** The command line, parsed; a bad one exits 2 with a sentence. */
function parseArgs(args: readonly string[]) {
  return yargs(args)
    .scriptName('lamport-peer')
    .usage('$0 --config cluster.json --id a [--http 127.0.0.1:7001 | --http unix:/run/lamport-lock/peer.sock] [--token-file FILE] [--data-dir DIR]\n$0 --check-config cluster.json [--peer URL [--token-file FILE]]')
    .option('config', { type: 'string', describe: 'cluster config file (JSON)' })
    .option('id', { type: 'string', describe: 'this peer\'s id in the config' })
    .option('check-config', { type: 'string', describe: 'validate FILE, print its cluster fingerprint and what it covers, and exit: 0 valid (and matching --peer), 1 differs from --peer\'s cluster, 2 invalid' })
    .option('peer', { type: 'string', describe: 'with --check-config: also compare FILE with the cluster of the running peer at this URL (http://host:port or unix:/path)' })
    .check((a) => {
      if (a['check-config'] !== undefined) return true;
      if (a.config === undefined || a.id === undefined) throw new Error('--config and --id are required (or --check-config FILE)');
      if (a.peer !== undefined) throw new Error('--peer goes with --check-config');
      return true;
    })
    .option('http', { type: 'string', describe: 'HTTP listen host:port or unix:/path (default: the peer\'s "http" in the config)' })
    .option('http-socket-mode', { type: 'string', describe: 'file mode of the unix socket (default 0660: owner and group may connect)' })
    .option('http-socket-group', { type: 'string', describe: 'group of the unix socket (name or id; default the process\'s group)' })
    .option('http-allow-host', { type: 'string', array: true, describe: 'another name clients use in Host: NAME (on the served port) or NAME:PORT (a published port); repeatable' })
    .option('token-file', { type: 'string', describe: 'file with the API token required on every request (mode 0600); needed to listen beyond loopback' })
    .option('admin-token-file', { type: 'string', describe: 'file with the admin token for administrative operations (mode 0600)' })
    .option('data-dir', { type: 'string', describe: 'directory for the persisted clock high-water mark and the bound of the confirmation promises given' })
    .option('join', { type: 'string', describe: 'join a running cluster as the member that `lamport-lock member add` added, with the ticket it printed (needs --data-dir; ignored once joined)' })
    .option('force-new-cluster', { type: 'boolean', describe: 'after a lost majority: start a new cluster with this peer its only voter (needs --data-dir; docs/operations.md, "Recover from a lost majority"); wipe or fence the lost hosts first' })
    .option('clock-from', { type: 'string', array: true, describe: 'with --force-new-cluster: a data dir or a clock.json of another host of the old cluster; the new clock starts above every one given (repeatable)' })
    .option('accept-config-change', { type: 'boolean', describe: 'start though the config differs from the one --data-dir last ran with (a change made on purpose, with every peer stopped: docs/operations.md)' })
    .option('log-level', { choices: logLevels, default: 'info' as const })
    .option('log-pretty', { type: 'boolean', describe: 'human-readable logs (default: when stderr is a terminal)' })
    .strict()
    // Bad flags are a refused start like a bad config: one sentence, exit 2, no restart loop.
    .fail((msg, err) => {
      process.stderr.write(`lamport-peer: ${err?.message ?? msg}\nTry lamport-peer --help\n`);
      process.exit(peerExitCodes.invalidConfig);
    })
    .parseSync();
}

type PeerArgs = ReturnType<typeof parseArgs>;


/** `--check-config FILE [--peer URL]`: prints, exits; no peer is started. */
async function checkConfig(argv: PeerArgs, path: string, build: PeerBuild): Promise<never> {
  let cluster: Record<string, unknown> | undefined;
  if (argv.peer !== undefined) {
    const client = new LockClient({ peer: argv.peer, ...(argv['token-file'] === undefined ? {} : { tokenFile: argv['token-file'] }) });
    try {
      cluster = await client.cluster();
    } catch (err) {
      process.stderr.write(`lamport-peer: cannot ask the peer at ${argv.peer}: ${(err as Error).message}\n`);
      process.exit(peerExitCodes.startFailed);
    } finally {
      client.close();
    }
  }
  const check = checkConfigFile(path, process.env, cluster, build.levels);
  process.stdout.write(check.text);
  process.exit(check.exitCode);
}

/** Starts the peer, and stops it on SIGTERM or SIGINT. */
async function main(argv: PeerArgs, build: PeerBuild, logger: Logger): Promise<void> {
  const config = loadConfig(argv.config ?? '', process.env);
  const readable = readableSecretWarning(argv.config ?? '', process.env);
  if (readable !== null) logger.warn({ code: ErrorCode.ConfigInvalid }, readable);
  const access = {
    tokenFile: argv['token-file'],
    adminTokenFile: argv['admin-token-file'],
    socketMode: argv['http-socket-mode'] === undefined ? undefined : parseSocketMode(argv['http-socket-mode']),
    socketGroup: argv['http-socket-group'],
    allowHosts: argv['http-allow-host'],
  };
  const join = argv.join === undefined ? undefined : decodeJoinTicket(argv.join);
  const forceNewCluster = argv['force-new-cluster'] === true ? { clockFrom: argv['clock-from'] ?? [] } : undefined;
  const server = await startPeerServer({ config, id: argv.id ?? '', http: argv.http, access, dataDir: argv['data-dir'], acceptConfigChange: argv['accept-config-change'], join, forceNewCluster, levels: build.levels, logger });
  let signals = 0;
  const stop = (signal: string): void => {
    signals += 1;
    if (signals > 1) process.exit(peerExitCodes.failed);
    logger.info({ signal }, 'stopping: ending local holds, sending releases');
    const force = setTimeout(() => process.exit(peerExitCodes.failed), limits.stopMsMax);
    force.unref();
    server.stop().then(
      () => {
        logger.flush();
        process.exit(peerExitCodes.stopped);
      },
      (err: unknown) => {
        logger.error({ err }, 'error while stopping');
        process.exit(peerExitCodes.failed);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

/** Runs lamport-peer with the command line `args` (without node and the script). */
export async function runPeerMain(args: readonly string[], build: PeerBuild = { levels: protocolLevels }): Promise<void> {
  const argv = parseArgs(args);
  if (argv['check-config'] !== undefined) await checkConfig(argv, argv['check-config'], build);
  const logger = createLogger({ level: argv['log-level'], peer: argv.id ?? '?', ...(argv['log-pretty'] === undefined ? {} : { pretty: argv['log-pretty'] }) });
  await main(argv, build, logger).catch((err: unknown) => failedStart(err, logger));
}

/** A refused or failed start: the sentence, then the exit code that tells a supervisor whether to retry. */
function failedStart(err: unknown, logger: Logger): void {
  const code = startFailureExitCode(err);
  if (isLockError(err)) {
    const problems = err.details['problems'];
    logger.fatal({ code: err.code, problems, exit: code }, err.message);
    process.stderr.write(`lamport-peer: ${err.code}: ${err.message}\n`);
  } else {
    // Not the config: a port still held, an address not up yet. It may pass, so the exit
    // code says "try again" (75) and a supervisor restarts the peer.
    logger.fatal({ err, exit: code }, 'failed to start');
    process.stderr.write(`lamport-peer: cannot start (exit ${code}, worth retrying): ${(err as Error).message}\n`);
  }
  logger.flush();
  setTimeout(() => process.exit(code), 50);
}
