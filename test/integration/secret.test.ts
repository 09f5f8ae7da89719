/**
 * The cluster secret at start (issue 37, point 5), on the real `lamport-peer`: a short secret
 * (the old example's `change-me`) is refused with exit 2; a secret file with the token files'
 * rules is read; a config file others may read that holds the secret gets a warning.
 */
import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { peerExitCodes } from '../../src/peer-exit-codes.js';
import { freePort } from '../../src/tools/local-cluster.js';
import { waitFor } from '../support/wait.js';

const peerBin = resolve('dist/bin/lamport-peer.js');

/** Starts lamport-peer; its stderr accumulates in `output()`. */
function startPeer(args: string[]): { output: () => string; exited: Promise<number | null>; stop: () => void } {
  const child = spawn(process.execPath, [peerBin, ...args, '--no-log-pretty'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let text = '';
  child.stdout.on('data', (d: Buffer) => (text += d.toString()));
  child.stderr.on('data', (d: Buffer) => (text += d.toString()));
  const exited = new Promise<number | null>((res) => child.on('close', (code) => res(code)));
  return { output: () => text, exited, stop: () => child.kill('SIGTERM') };
}

async function configWith(dir: string, secret: Record<string, string>): Promise<string> {
  const path = join(dir, 'cluster.json');
  writeFileSync(path, JSON.stringify({ cluster: 's', ...secret, peers: [{ id: 'a', ws: `ws://127.0.0.1:${await freePort()}`, http: `127.0.0.1:${await freePort()}` }] }));
  return path;
}

describe('lamport-peer and the cluster secret', () => {
  it('refuses the 9-character change-me with exit 2 and what to do', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'lamport-secret-'));
    const peer = startPeer(['--config', await configWith(dir, { secret: 'change-me' }), '--id', 'a']);
    let code: number | null | undefined;
    void peer.exited.then((c) => (code = c));
    try {
      await waitFor('the peer refuses to start', () => code !== undefined, 10_000);
    } finally {
      peer.stop(); // a peer that started after all (the old 8-character rule) must not outlive the test
    }
    expect(code).toBe(peerExitCodes.invalidConfig);
    expect(peer.output()).toContain('must be at least 32 characters (e.g. openssl rand -hex 32)');
  });

  it('warns at start about a config file others may read that holds the secret; reads a secret_file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'lamport-secret-'));
    const path = await configWith(dir, { secret: 'secret-test-0123456789abcdef-0123456789' });
    chmodSync(path, 0o644);
    const readable = startPeer(['--config', path, '--id', 'a', '--data-dir', join(dir, 'data')]);
    try {
      await waitFor('the peer started', () => /incarnation started/.test(readable.output()), 10_000);
      expect(readable.output()).toMatch(/holds the cluster secret and has mode 0644: other users can read it/);
    } finally {
      readable.stop();
    }
    expect(await readable.exited).toBe(peerExitCodes.stopped);
    const secretFile = join(dir, 'secret');
    writeFileSync(secretFile, 'secret-file-0123456789abcdef-0123456789\n', { mode: 0o600 });
    const fromFile = startPeer(['--config', await configWith(dir, { secret_file: secretFile }), '--id', 'a', '--data-dir', join(dir, 'data')]);
    try {
      await waitFor('the peer started with its secret file', () => /incarnation started/.test(fromFile.output()), 10_000);
      expect(fromFile.output()).not.toContain('holds the cluster secret');
    } finally {
      fromFile.stop();
    }
    expect(await fromFile.exited).toBe(peerExitCodes.stopped);
  }, 30_000);
});
