/**
 * The mutation runner's command line (test/sim/mutate.ts), on the built CLI as `npm run
 * mutate` starts it: `--help` lists its options, and bad options get a sentence, the usage
 * and exit code 2, never a stack trace. Its runs themselves are long and not run here.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const cli = fileURLToPath(new URL('../../dist/test/sim/mutate.js', import.meta.url));

function mutate(...args: string[]): { code: number | null; out: string; err: string } {
  const r = spawnSync(process.execPath, [cli, ...args], { encoding: 'utf8', timeout: 30_000 });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

describe('npm run mutate', () => {
  it('--help prints every option and exits 0', () => {
    const r = mutate('--help');
    expect(r.code).toBe(0);
    for (const flag of ['--files', '--max-mutants', '--seeds', '--seed', '--net', '--multi', '--meta', '--jobs']) expect(r.out).toContain(`  ${flag} `);
    expect(r.err).toBe('');
  });

  it('an unknown option gets a sentence naming it, the usage and exit code 2, not a stack trace', () => {
    const r = mutate('--bogus');
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/^mutate: Unknown option '--bogus'/);
    expect(r.err).toContain('--max-mutants M');
    expect(r.err).not.toMatch(/^\s+at /m);
  });

  it.each([
    [['--seeds', 'x'], /^mutate: --seeds takes an integer >= 1, not "x"/],
    [['--seeds'], /^mutate: Option '--seeds <value>' argument missing/],
    [['--net', 'udp'], /^mutate: --net takes fifo, link or both, not "udp"/],
    [['--meta', '2'], /^mutate: --meta takes a share in \(0, 1\], not "2"/],
    [['--files', ','], /^mutate: --files takes one or more globs/],
    [['stray'], /^mutate: Unexpected argument 'stray'/],
  ])('bad input %j gets a sentence and exit code 2', (args, sentence) => {
    const r = mutate(...args);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(sentence);
    expect(r.err).not.toMatch(/^\s+at /m);
  });
});
