/**
 * The cluster secret (issue 37, point 5): every peer link is authenticated with an HMAC
 * over it, and a recorded handshake lets anyone search for it offline, so it must be long
 * (`limits.secretCharsMin`, e.g. `openssl rand -hex 32`). It comes, first found first, from
 * `LAMPORT_SECRET`, a file named by `LAMPORT_SECRET_FILE`, a file named by the config's
 * `secret_file`, or the config's `secret`. A secret file follows the token files' rules
 * (src/token-file.ts: mode 0600, owned by this user or root); a config file that holds the
 * secret and that others may read gets a warning at start.
 */
import { readFileSync, statSync } from 'node:fs';
import { isRecord } from './core/types.js';
import { isLockError } from './errors.js';
import { limits } from './limits.js';
import { readTokenFile } from './token-file.js';

/** The secret a config and environment name, or undefined after pushing what is wrong to `problems`. */
export function resolveSecret(raw: Readonly<Record<string, unknown>>, env: Readonly<Record<string, string | undefined>>, problems: string[]): string | undefined {
  if (raw['secret'] !== undefined && raw['secret_file'] !== undefined) problems.push('secret and secret_file are both set: keep one');
  const file = env['LAMPORT_SECRET_FILE'] ?? raw['secret_file'];
  let secret: unknown = env['LAMPORT_SECRET'];
  if (secret === undefined && file !== undefined) {
    if (typeof file !== 'string' || file.length === 0) {
      problems.push('secret_file (or LAMPORT_SECRET_FILE) must be a path');
      return undefined;
    }
    try {
      secret = readTokenFile(file, 'secret file', { private: true });
    } catch (err) {
      if (!isLockError(err)) throw err;
      problems.push(err.message);
      return undefined;
    }
  }
  secret ??= raw['secret'];
  if (typeof secret !== 'string' || secret.length < limits.secretCharsMin) {
    problems.push(`the cluster secret (secret, secret_file, LAMPORT_SECRET or LAMPORT_SECRET_FILE) must be at least ${limits.secretCharsMin} characters (e.g. openssl rand -hex 32): a short one falls to an offline search over one recorded handshake`);
    return undefined;
  }
  return secret;
}

/**
 * A warning when the config file at `path` holds the secret in use (`secret`, not overridden
 * from the environment) and group or others may read it; null otherwise.
 */
export function readableSecretWarning(path: string, env: Readonly<Record<string, string | undefined>>): string | null {
  if (env['LAMPORT_SECRET'] !== undefined || env['LAMPORT_SECRET_FILE'] !== undefined) return null;
  let mode: number;
  let raw: unknown;
  try {
    mode = statSync(path).mode;
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch {
    return null;
  }
  if (!isRecord(raw) || raw['secret'] === undefined || (mode & 0o044) === 0) return null;
  return `the config file ${path} holds the cluster secret and has mode 0${(mode & 0o777).toString(8)}: other users can read it and join the cluster; chmod 600 ${path}, or move the secret to a secret_file (mode 0600)`;
}
