/**
 * The runnable examples the README points to still do what the README says.
 */
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);

describe('examples', () => {
  it('fencing: the storage rejects the paused client\'s stale token', async () => {
    const { stdout } = await run(process.execPath, [resolve('dist/examples/fencing.js')], { timeout: 60_000 });
    expect(stdout).toMatch(/B writes with \d+: accepted/);
    expect(stdout).toMatch(/A wakes up and writes with \d+: rejected \(stale token\)/);
    expect(stdout).toContain('store holds: "written by B"');
  });
});
