/**
 * Where the local HTTP API listens: `host:port`, or `unix:/path` for a unix domain socket
 * (issue 14). A socket file left by a peer that died is removed at start, but only when
 * nothing answers on it: two peers must never share one path. The socket gets its mode
 * and group once bound; it is bound under a umask that leaves it private until then. Its
 * directory must be writable by this user (or root) alone, sticky or not (issue 37): where
 * others may create files, another user can bind the path while the peer is down and answer
 * its clients in its place (`checkSocketDir`).
 */
import { chmodSync, chownSync, lstatSync, readFileSync, statSync, unlinkSync } from 'node:fs';
import { connect } from 'node:net';
import { dirname, isAbsolute } from 'node:path';
import { parseHostPort } from '../config.js';
import { ErrorCode, LockError } from '../errors.js';

/** A parsed `--http` value. */
export type ListenTarget = { readonly kind: 'tcp'; readonly host: string; readonly port: number } | { readonly kind: 'unix'; readonly path: string };

/** Who may open the socket file. */
export interface SocketAccess {
  /** File mode, e.g. 0o660 (connecting needs write permission). */
  readonly mode: number;
  /** Group name or numeric id; undefined keeps the process's group. */
  readonly group?: string | undefined;
}

/** The default socket mode: owner and group may connect, others may not. */
export const socketModeDefault = 0o660;

function refuse(message: string): LockError {
  return new LockError(ErrorCode.ConfigInvalid, message, { problems: [message] });
}

/** Parses `host:port` or `unix:/absolute/path`. */
export function parseListenTarget(text: string): ListenTarget {
  if (text.startsWith('unix:')) {
    const path = text.slice('unix:'.length);
    if (!isAbsolute(path)) throw refuse(`--http ${JSON.stringify(text)}: a unix socket path must be absolute (unix:/run/lamport-lock/peer.sock)`);
    return { kind: 'unix', path };
  }
  const addr = parseHostPort(text);
  if (addr === undefined) throw refuse(`--http ${JSON.stringify(text)} must look like host:port or unix:/path/to/peer.sock`);
  return { kind: 'tcp', ...addr };
}

/** Parses an octal file mode such as `0660` or `660`. */
export function parseSocketMode(text: string): number {
  if (!/^0?[0-7]{3}$/.test(text)) throw refuse(`socket mode ${JSON.stringify(text)} must be octal, like 0660`);
  return Number.parseInt(text, 8);
}

/** A group name (looked up in /etc/group) or a numeric id. */
function groupId(group: string): number {
  if (/^\d+$/.test(group)) return Number(group);
  let lines: string[];
  try {
    lines = readFileSync('/etc/group', 'utf8').split('\n');
  } catch (err) {
    throw refuse(`cannot look up group ${JSON.stringify(group)}: ${(err as Error).message}; give its numeric id`);
  }
  for (const line of lines) {
    const [name, , gid] = line.split(':');
    if (name === group && gid !== undefined && /^\d+$/.test(gid)) return Number(gid);
  }
  throw refuse(`no group named ${JSON.stringify(group)} in /etc/group`);
}

/** True when a process accepts connections on the socket at `path`. */
function answers(path: string): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const socket = connect(path);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'ECONNREFUSED') resolve(false);
      else reject(refuse(`cannot check the socket ${path}: ${err.message}`));
    });
  });
}

/**
 * Refuses a socket path whose directory another user may write to or owns: that user could
 * create the path first (before this peer starts, or while it restarts) and serve its
 * clients. A sticky bit (/tmp) does not help: it only keeps others from removing our file.
 */
export function checkSocketDir(path: string): void {
  const dir = dirname(path);
  let mode: number;
  let uid: number;
  try {
    ({ mode, uid } = statSync(dir));
  } catch (err) {
    throw refuse(`cannot inspect the directory of the socket ${path}: ${(err as Error).message}`);
  }
  const self = process.getuid?.();
  const owner = self === undefined || uid === self || uid === 0;
  if ((mode & 0o022) !== 0 || !owner) {
    throw refuse(`the socket directory ${dir} (mode 0${(mode & 0o7777).toString(8)}, owner uid ${uid}) may be written by other users: one of them could create ${path} first and answer this peer's clients; use a directory only this user may write (e.g. /run/lamport-lock, systemd RuntimeDirectory)`);
  }
}

/** Makes `path` free to bind: absent, or a dead socket (removed). Anything else refuses the start. */
export async function clearStaleSocket(path: string): Promise<void> {
  let isSocket: boolean;
  try {
    isSocket = lstatSync(path).isSocket();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw refuse(`cannot inspect ${path}: ${(err as Error).message}`);
  }
  if (!isSocket) throw refuse(`${path} exists and is not a socket; refusing to replace it`);
  if (await answers(path)) throw refuse(`another process already serves on ${path}`);
  unlinkSync(path);
}

/** Gives a bound socket its mode and group. */
export function applySocketAccess(path: string, access: SocketAccess): void {
  try {
    if (access.group !== undefined) chownSync(path, -1, groupId(access.group));
    chmodSync(path, access.mode);
  } catch (err) {
    if (err instanceof LockError) throw err;
    throw refuse(`cannot set the mode or group of ${path}: ${(err as Error).message}`);
  }
}
