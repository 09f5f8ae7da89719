/**
 * `lamport-lock member add | promote | remove | retire | replace` and `level raise` (issue 40;
 * docs/operations.md, "Changing the members") through the built binary against real peers:
 * admin only, a change that does not apply to the view refused with its sentence, bad
 * arguments refused before or by the peer, each with its exit code; `replace` stops at the
 * first change that fails and says what was made and what is left.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { exitCodes } from '../../src/client/cli-support.js';
import { call, runBin, useTestCluster } from './helpers.js';
import type { BinRun } from './helpers.js';

const lockBin = resolve('dist/bin/lamport-lock.js');
const dir = mkdtempSync(join(tmpdir(), 'lamport-member-cli-'));
const tokenFile = join(dir, 'admin-token');
writeFileSync(tokenFile, 'admin-token-for-the-member-cli-test-0123\n', { mode: 0o600 });
const cluster = useTestCluster({ peerArgs: ['--admin-token-file', tokenFile] });

/** `lamport-lock --peer <a> ARGS... --admin-token-file <file>`, run to its end. */
function admin(...args: string[]): Promise<BinRun> {
  return runBin(lockBin, ['--peer', cluster().url('a'), ...args, '--admin-token-file', tokenFile]).done;
}

describe('lamport-lock member changes', () => {
  it('refuses each change without the admin token: exit 1, ERR_ADMIN_REQUIRED', async () => {
    const a = cluster().url('a');
    for (const args of [['member', 'add', 'd', '--ws', 'ws://127.0.0.1:1', '--http', '127.0.0.1:2'], ['member', 'promote', 'd'], ['member', 'remove', 'c'], ['member', 'retire', 'c'], ['level', 'raise', '10']]) {
      const r = await runBin(lockBin, ['--peer', a, ...args]).done;
      expect(r.code, args.join(' ')).toBe(exitCodes.error);
      expect(r.stderr, args.join(' ')).toMatch(/^lamport-lock: ERR_ADMIN_REQUIRED: member (add|promote|remove|retire) is an administrative operation|^lamport-lock: ERR_ADMIN_REQUIRED: level raise/);
    }
  });

  it.each([
    [['member', 'add', 'a', '--ws', 'ws://127.0.0.1:1', '--http', '127.0.0.1:2'], 'a is a member already (the view at epoch 0)'],
    [['member', 'promote', 'x'], 'x is not a member (the view at epoch 0)'],
    [['member', 'promote', 'b'], 'b is a voter (the view at epoch 0)'],
    [['member', 'remove', 'x'], 'x is not a member (the view at epoch 0)'],
    [['member', 'retire', 'c'], 'c is not leaving (the view at epoch 0)'],
  ])('%j: exit 1, ERR_CHANGE_REFUSED with the sentence', async (args, sentence) => {
    const r = await admin(...args);
    expect(r.code, r.stderr).toBe(exitCodes.error);
    expect(r.stderr).toBe(`lamport-lock: ERR_CHANGE_REFUSED: ${sentence}\n`);
    expect(r.stdout).toBe('');
  });

  it('refuses a level the cluster runs at already (exit 1), and a LEVEL that is not a number (exit 64)', async () => {
    const level = Number((await call(cluster().url('a'), '/v1/members')).body['level']);
    const same = await admin('level', 'raise', String(level), '--json');
    expect(same.code).toBe(exitCodes.error);
    expect(same.stderr).toBe(`lamport-lock: ERR_CHANGE_REFUSED: the cluster runs at level ${level} already (the view at epoch 0)\n`);
    const word = await admin('level', 'raise', 'ten');
    expect(word.code).toBe(exitCodes.usage);
    expect(word.stderr).toContain('LEVEL "ten" must be a whole number');
  });

  it('refuses bad arguments with exit 64: a ws that is no ws:// URL, a bad id, a zero timeout, a missing --http', async () => {
    const ws = await admin('member', 'add', 'd', '--ws', 'http://127.0.0.1:1', '--http', '127.0.0.1:2');
    expect(ws.code).toBe(exitCodes.usage);
    expect(ws.stderr).toMatch(/^lamport-lock: ERR_BAD_REQUEST: ws must be where the new member's peer links listen/);
    const id = await admin('member', 'remove', 'no such id');
    expect(id.code).toBe(exitCodes.usage);
    expect(id.stderr).toContain('ERR_BAD_REQUEST: the member id in the path must be a peer id');
    const timeout = await admin('member', 'promote', 'd', '--timeout', '0');
    expect(timeout.code).toBe(exitCodes.usage);
    expect(timeout.stderr).toContain('timeout_ms must be an integer from 1');
    const http = await admin('member', 'add', 'd', '--ws', 'ws://127.0.0.1:1');
    expect(http.code).toBe(exitCodes.usage);
    expect(http.stderr).toContain('Missing required argument: http');
    const none = await admin('member', 'frobnicate');
    expect(none.code).toBe(exitCodes.usage);
  });

  it('replace stops at the first change that fails, says nothing was made and lists the four commands left; --json too', async () => {
    const r = await admin('member', 'replace', 'c', 'a', '--ws', 'ws://127.0.0.1:1', '--http', '127.0.0.1:2');
    expect(r.code).toBe(exitCodes.error);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe([
      'lamport-lock: stopped at "member add a --ws ws://127.0.0.1:1 --http 127.0.0.1:2": ERR_CHANGE_REFUSED: a is a member already (the view at epoch 0)',
      'nothing was changed',
      'left, in this order (each its own change; run them once the cause is mended):',
      '  lamport-lock member add a --ws ws://127.0.0.1:1 --http 127.0.0.1:2',
      '  lamport-lock member promote a',
      '  lamport-lock member remove c',
      '  lamport-lock member retire c',
      '',
    ].join('\n'));
    const json = await admin('member', 'replace', 'c', 'a', '--ws', 'ws://127.0.0.1:1', '--http', '127.0.0.1:2', '--json');
    expect(json.code).toBe(exitCodes.error);
    expect(JSON.parse(json.stdout)).toEqual({
      error: 'ERR_CHANGE_REFUSED', message: 'a is a member already (the view at epoch 0)', done: [],
      left: ['member add a --ws ws://127.0.0.1:1 --http 127.0.0.1:2', 'member promote a', 'member remove c', 'member retire c'],
    });
    expect((await call(cluster().url('a'), '/v1/members')).body['epoch']).toBe(0);
  });

  it('says in replace --help that each step is its own change', async () => {
    const r = await runBin(lockBin, ['member', 'replace', '--help']).done;
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('add NEW, promote NEW, remove OLD, retire OLD. Each is its own change of the view');
  });
});
