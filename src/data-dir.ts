/**
 * The check of `--data-dir` at start: the peer must be able to create the directory, write a
 * file in it, fsync it and the directory, and remove it, as the clock store does on every
 * write. A directory that cannot (a file, /sys, /proc/1/...) is a config error (exit 2): the
 * peer would otherwise start and grant nothing (every write fails) or retry without end.
 */
import { closeSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { ErrorCode, LockError } from './errors.js';

/**
 * mkdir -p, one level at a time. Not `mkdirSync(dir, { recursive: true })`: under /proc it
 * loops without end (mkdir answers ENOENT for a parent that exists), the 90% CPU of a peer
 * started with --data-dir /proc/1/nope.
 */
function makeDirs(dir: string): void {
  try {
    mkdirSync(dir);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') {
      if (!statSync(dir).isDirectory()) throw new Error(`${dir} exists and is not a directory`, { cause: err });
      return;
    }
    const parent = dirname(dir);
    if (code !== 'ENOENT' || parent === dir) throw err;
    makeDirs(parent);
    mkdirSync(dir);
  }
}

/**
 * Replaces `path` in `dir` with `text` atomically and durably: write a temp file, fsync it,
 * rename it over `path`, fsync the directory (the rename is durable only once the directory
 * entry is). A crash leaves the old file or the new one, never a torn one.
 */
export function replaceFileSync(dir: string, path: string, text: string): void {
  mkdirSync(dir, { recursive: true });
  const tmp = `${path}.tmp`;
  const fd = openSync(tmp, 'w', 0o600);
  try {
    writeSync(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, path);
  const dirFd = openSync(dir, 'r');
  try {
    fsyncSync(dirFd);
  } finally {
    closeSync(dirFd);
  }
}

/**
 * The JSON value of `path` in a data dir: null when the file does not exist, `undefined` as the
 * value when it is not JSON (the caller's guard refuses it with what to do), ERR_CONFIG_INVALID
 * when it cannot be read.
 */
export function readDataFile(path: string): { readonly value: unknown } | null {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw new LockError(ErrorCode.ConfigInvalid, `cannot read ${path}: ${(err as Error).message}`);
  }
  try {
    return { value: JSON.parse(text) as unknown };
  } catch {
    return { value: undefined };
  }
}

/** Throws ERR_CONFIG_INVALID with the reason when `dir` cannot hold the peer's state. */
export function checkDataDir(dir: string): void {
  const probe = join(dir, `.probe-${process.pid}`);
  let step = 'create it';
  try {
    makeDirs(resolve(dir));
    step = 'write a file in it';
    const fd = openSync(probe, 'w', 0o600);
    try {
      writeSync(fd, '{}\n');
      step = 'fsync a file in it';
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    step = 'remove a file in it';
    unlinkSync(probe);
    step = 'fsync it';
    const dirFd = openSync(dir, 'r');
    try {
      fsyncSync(dirFd);
    } finally {
      closeSync(dirFd);
    }
  } catch (err) {
    throw new LockError(ErrorCode.ConfigInvalid, `--data-dir ${JSON.stringify(dir)} cannot hold the peer's state: cannot ${step} (${(err as Error).message}); give a writable directory on a local disk`);
  }
}
