/**
 * A unix socket in a directory other users may write (issue 37, point 5), on the real
 * `lamport-peer`: refused at start (exit 2, a sentence), sticky bit or not, since another user
 * could create the path first and answer the peer's clients in its place.
 */
import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { peerExitCodes } from '../../src/peer-exit-codes.js';
import { freePort } from '../../src/tools/local-cluster.js';
import { waitFor } from '../support/wait.js';

const peerBin = resolve('dist/bin/lamport-peer.js');

async function startWithSocketIn(dir: string): Promise<{ code: number | null; output: string }> {
  const config = join(dir, '..', 'cluster.json');
  writeFileSync(config, JSON.stringify({ cluster: 's', secret: 'socket-dir-test-0123456789abcdef', peers: [{ id: 'a', ws: `ws://127.0.0.1:${await freePort()}`, http: `127.0.0.1:${await freePort()}` }] }), { mode: 0o600 });
  const child = spawn(process.execPath, [peerBin, '--config', config, '--id', 'a', '--http', `unix:${join(dir, 'peer.sock')}`, '--no-log-pretty'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stderr.on('data', (d: Buffer) => (output += d.toString()));
  child.stdout.on('data', (d: Buffer) => (output += d.toString()));
  let code: number | null | undefined;
  child.on('close', (c) => (code = c));
  try {
    await waitFor('the peer refuses to start', () => code !== undefined, 10_000);
  } finally {
    child.kill('SIGTERM'); // one that started after all must not outlive the test
  }
  return { code: code ?? null, output };
}

describe('lamport-peer --http unix:/path', () => {
  it('refuses a socket directory other users may write, sticky or not', async () => {
    for (const mode of [0o777, 0o1777, 0o770]) {
      const dir = join(mkdtempSync(join(tmpdir(), 'lamport-sockdir-')), 'run');
      mkdirSync(dir);
      chmodSync(dir, mode);
      const r = await startWithSocketIn(dir);
      expect(r.code, mode.toString(8)).toBe(peerExitCodes.invalidConfig);
      expect(r.output).toContain(`the socket directory ${dir} (mode 0${mode.toString(8)}`);
      expect(r.output).toContain('may be written by other users: one of them could create');
    }
  }, 40_000);
});
