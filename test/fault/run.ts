/**
 * The long fault run (issue 5): `npm run jepsen -- --minutes 30 [--seed S]` (build first:
 * `npm run build`); `--faults twin,wipe` narrows the nemesis to those kinds (a bug found by
 * one kind is then reproduced faster). Same harness as test/fault/jepsen.test.ts, for as long as
 * asked; prints nemesis events as they happen and the summary (faults by kind, grants,
 * fenced writes, violations, the seed) as its last lines. Exit 0 when clean, 1 on a
 * violation or a liveness failure, 64 on bad arguments.
 */
import { parseArgs } from 'node:util';
import { seedFrom } from '../support/seed.js';
import { runJepsen, shortTimings } from './jepsen.js';
import type { FaultKind } from './nemesis.js';
import { faultKinds } from './nemesis.js';

function usage(message: string): never {
  process.stderr.write(`run: ${message}\nusage: node dist/test/fault/run.js --minutes N [--seed S] [--clients-per-peer N] [--locks N] [--faults kind,...] [--default-timings]\n`);
  process.exit(64);
}

function positiveNumber(raw: string | undefined, name: string, fallback: number): number {
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0) usage(`--${name} must be a positive number, not ${JSON.stringify(raw)}`);
  return n;
}

/** The fault kinds of `--faults a,b` (every kind when absent). */
function kindsOf(raw: string | undefined): readonly FaultKind[] {
  if (raw === undefined) return faultKinds;
  const kinds = raw.split(',').map((k) => k.trim());
  const unknown = kinds.filter((k) => !(faultKinds as readonly string[]).includes(k));
  if (unknown.length > 0 || kinds.length === 0) usage(`--faults takes kinds out of ${faultKinds.join(', ')}; unknown: ${unknown.join(', ')}`);
  return kinds as FaultKind[];
}

async function main(): Promise<void> {
  let values;
  try {
    ({ values } = parseArgs({
      options: {
        minutes: { type: 'string' }, seed: { type: 'string' }, 'clients-per-peer': { type: 'string' }, locks: { type: 'string' }, faults: { type: 'string' },
        'default-timings': { type: 'boolean' },
      },
    }));
  } catch (err) {
    usage((err as Error).message);
  }
  const minutes = positiveNumber(values.minutes, 'minutes', 5);
  const seed = seedFrom('FAULT_SEED', values.seed === undefined ? process.env : { FAULT_SEED: values.seed });
  const timings = values['default-timings'] === true ? { heartbeatMs: 1000, leaseMs: 5000, evictMs: 15000 } : shortTimings;
  const started = Date.now();
  process.stdout.write(`fault run: ${minutes} min of faults, timings ${JSON.stringify(timings)}; reproduce with FAULT_SEED=${seed}\n`);
  const result = await runJepsen({
    seed, faultMs: minutes * 60_000, timings, faultKinds: kindsOf(values.faults),
    clientsPerPeer: Math.round(positiveNumber(values['clients-per-peer'], 'clients-per-peer', 2)),
    locks: Math.round(positiveNumber(values.locks, 'locks', 3)),
    log: (line) => process.stdout.write(`${new Date().toISOString()} ${line}\n`),
  });
  process.stdout.write(`\n== fault run summary (${((Date.now() - started) / 60_000).toFixed(1)} min wall, logs and history.jsonl in ${result.dir}) ==\n`);
  process.stdout.write(`${result.summary.join('\n')}\n`);
  process.exitCode = result.violations.length === 0 && result.liveness.length === 0 ? 0 : 1;
}

main().catch((err: unknown) => {
  process.stderr.write(`run: ${(err as Error).stack ?? String(err)}\n`);
  process.exitCode = 2;
});
