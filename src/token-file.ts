/**
 * API tokens live in files, never on a command line (where `ps` shows them) nor in an
 * environment a child inherits. The peer refuses a token file that anyone but its owner
 * may read or write, or that another user than itself or root owns; the client side reads
 * the file it is pointed at. The cluster secret may live in such a file too (src/secret.ts).
 */
import { readFileSync, statSync } from 'node:fs';
import { ErrorCode, LockError } from './errors.js';
import { limits } from './limits.js';

function refuse(message: string): LockError {
  return new LockError(ErrorCode.ConfigInvalid, message, { problems: [message] });
}

/** Reads a token: one line of visible ASCII, trimmed. `private` refuses a file group or others may access. */
export function readTokenFile(path: string, what: string, opts: { readonly private: boolean }): string {
  let mode: number;
  let uid: number;
  let text: string;
  try {
    ({ mode, uid } = statSync(path));
    text = readFileSync(path, 'utf8').trim();
  } catch (err) {
    throw refuse(`cannot read the ${what} ${path}: ${(err as Error).message}`);
  }
  if (opts.private && (mode & 0o077) !== 0) {
    throw refuse(`the ${what} ${path} has mode 0${(mode & 0o777).toString(8)}: group and others must have no access (chmod 600 ${path})`);
  }
  // Whoever owns the file can rewrite it: this user or root, nobody else (issue 37).
  const self = process.getuid?.();
  if (opts.private && self !== undefined && uid !== self && uid !== 0) {
    throw refuse(`the ${what} ${path} is owned by uid ${uid}: it must be owned by the user this runs as (uid ${self}) or root (chown)`);
  }
  const bytes = Buffer.byteLength(text);
  if (bytes < limits.apiTokenBytesMin || bytes > limits.apiTokenBytesMax || !/^[\x21-\x7e]+$/.test(text)) {
    throw refuse(`the ${what} ${path} must hold one token of ${limits.apiTokenBytesMin} to ${limits.apiTokenBytesMax} visible ASCII characters (e.g. openssl rand -hex 32)`);
  }
  return text;
}
