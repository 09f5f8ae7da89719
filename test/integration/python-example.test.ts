/**
 * examples/python/lamport_lock_example.py, the README's Python example, against a real
 * 3-peer cluster with the machine's python3 and its standard library alone: an acquire, a
 * connection-bound hold whose end the peer reports on the connection, and a watch.
 * Skipped with a note when python3 is missing.
 */
import { execFile, spawnSync } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { holders, useTestCluster } from './helpers.js';

const run = promisify(execFile);
const python = process.env['PYTHON'] ?? 'python3';
const hasPython = spawnSync(python, ['--version']).status === 0;
if (!hasPython) process.stdout.write(`\n[python-example.test] SKIPPED: no ${python} on PATH (set PYTHON to use another).\n\n`);

describe.skipIf(!hasPython)('the Python example (standard library only)', () => {
  const cluster = useTestCluster();

  it('acquires and releases, holds on a connection until the peer says it ended, and watches', async () => {
    // -I: isolated mode, no user site-packages: the standard library alone.
    const { stdout } = await run(python, ['-I', 'examples/python/lamport_lock_example.py', cluster().url('a')], { timeout: 30_000 });
    expect(stdout).toMatch(/^acquired python-example token=\d+$/m);
    expect(stdout).toMatch(/^released python-example: \{'released': True\}$/m);
    expect(stdout).toMatch(/^holding python-example-conn on the connection, token=\d+$/m);
    expect(stdout).toMatch(/^hold ended: released$/m);
    const watched = stdout.split('\n').filter((l) => l.startsWith('watch '));
    expect(watched).toEqual(['watch queued: python-example by python-example', 'watch granted: python-example by python-example', 'watch released: python-example by python-example']);
    expect(stdout.trimEnd().endsWith('done')).toBe(true);
    for (const lock of ['python-example', 'python-example-conn']) expect(await holders(cluster().url('b'), lock)).toEqual([]);
  });
});
