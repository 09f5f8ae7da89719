/**
 * Opens the local HTTP API where `--http` says, guarded as issue 14 asks: tokens read from
 * private files, no listener beyond loopback without a token, a unix socket with its mode
 * and group. Everything that can refuse the start is checked before the runtime starts.
 */
import { readTokenFile } from '../token-file.js';
import { ErrorCode, LockError } from '../errors.js';
import { AccessPolicy, isLoopbackHost } from './access.js';
import type { HttpApi } from './api.js';
import type { ListenTarget } from './listen-target.js';
import { checkSocketDir, clearStaleSocket, socketModeDefault } from './listen-target.js';

/** How the API is guarded and its socket set up (flags of lamport-peer). */
export interface HttpAccessOptions {
  /** File holding the client token, required on every request when set. */
  readonly tokenFile?: string | undefined;
  /** File holding the admin token, for administrative operations. */
  readonly adminTokenFile?: string | undefined;
  /** Mode of the unix socket file (default 0660). */
  readonly socketMode?: number | undefined;
  /** Group of the unix socket file (default the process's group). */
  readonly socketGroup?: string | undefined;
  /** More names clients may use in `Host` (`name` or `name:port`). */
  readonly allowHosts?: readonly string[] | undefined;
}

function refuse(message: string): LockError {
  return new LockError(ErrorCode.ConfigInvalid, message, { problems: [message] });
}

/** Reads the tokens, checks the target, clears a stale socket; returns the policy of every request. */
export async function prepareHttp(target: ListenTarget, opts: HttpAccessOptions): Promise<AccessPolicy> {
  const token = opts.tokenFile === undefined ? null : readTokenFile(opts.tokenFile, 'token file', { private: true });
  const adminToken = opts.adminTokenFile === undefined ? null : readTokenFile(opts.adminTokenFile, 'admin token file', { private: true });
  if (token !== null && token === adminToken) throw refuse('the admin token must differ from the client token');
  if (target.kind === 'tcp' && !isLoopbackHost(target.host) && token === null) {
    throw refuse(`refusing to serve the HTTP API on ${target.host}, beyond this host's loopback, without a token: give --token-file (or listen on 127.0.0.1 or unix:/path)`);
  }
  if (target.kind === 'tcp' && (opts.socketMode !== undefined || opts.socketGroup !== undefined)) {
    throw refuse('--http-socket-mode and --http-socket-group go with --http unix:/path');
  }
  if (target.kind === 'unix') {
    checkSocketDir(target.path);
    await clearStaleSocket(target.path);
  }
  return new AccessPolicy({
    unix: target.kind === 'unix',
    listenHost: target.kind === 'tcp' ? target.host : null,
    allowHosts: opts.allowHosts ?? [],
    token,
    adminToken,
  });
}

/** Listens; returns what clients use to reach the API (`http://host:port` or `unix:/path`). */
export async function listenHttp(api: HttpApi, target: ListenTarget, opts: HttpAccessOptions): Promise<string> {
  if (target.kind === 'unix') {
    await api.listenPath(target.path, { mode: opts.socketMode ?? socketModeDefault, group: opts.socketGroup });
    return `unix:${target.path}`;
  }
  const bound = await api.listen(target.host, target.port);
  const host = bound.family === 'IPv6' ? `[${bound.address}]` : bound.address;
  return `http://${host}:${bound.port}`;
}
