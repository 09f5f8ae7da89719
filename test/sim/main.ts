/**
 * The simulator's CLI: `npm run sim -- --seeds N [--seed S] [--peers P] [--mutant NAME]
 * [--net link] [--verbose]`. Runs seeds S..S+N-1, prints how to reproduce the first failure
 * with the tail of its transcript, and ends with exactly `sim: <S> seeds, <G> grants, <V>
 * violations`; the exit code is 0 only when V is 0.
 *
 * `--jobs J` runs the seeds in J child processes (test/sim/parallel.ts), for long runs.
 * `--multi P` makes a share P (0 to 1) of the clients' requests name two or three locks at
 * once, all-or-nothing; off by default, so that recorded seeds keep meaning what they meant.
 * `--meta P` makes a share P of the holders announce new meta (META) once or twice while they
 * hold, held to META's promise (test/sim/meta-check.ts); off by default for the same reason.
 * `--changes` founds the cluster with the seed's peers beside 1 or 2 spare hosts and draws
 * changes of the members among the faults (test/sim/changer.ts), and a rolling upgrade across
 * a protocol level (test/sim/upgrader.ts); off by default too.
 *
 * `npm run sim -- --mutants [--seeds N] [--net fifo|link]` runs every planted bug instead
 * (N seeds at most each, default 2000, each on both networks unless --net names one) and
 * prints the table: mutant, first failing seed, seeds run; a mutant that a scripted
 * scenario catches (test/sim/scenarios.ts) is run there instead. The exit code is 0 only
 * when every mutant was caught. A mutant runs in a patched copy of this build
 * (test/sim/planted.ts).
 */
import { clockRateMargin, timingDefaults } from '../../src/config.js';
import { seedFrom } from '../support/seed.js';
import type { MutantName } from './mutants.js';
import { changesOf, isMutantName, multiChanceOf, mutantNames, proclaimChanceOf } from './mutants.js';
import type { RunOptions, RunResult } from './run.js';
import { runParallel } from './parallel.js';
import type { Sim } from './planted.js';
import { dropPlanted, simFor } from './planted.js';

/** Each planted bug must be caught within this many seeds (issue 12). */
const mutantSeedsMax = 2000;

interface CliOptions {
  readonly seeds: number;
  readonly seed: number;
  readonly peers: number | undefined;
  readonly mutant: MutantName | undefined;
  readonly verbose: boolean;
  readonly net: 'fifo' | 'link';
  readonly mutants: boolean;
  /** Whether --net was given (the mutation table then runs that network only). */
  readonly netGiven: boolean;
  /** Child processes to run the seeds in (test/sim/parallel.ts); 1 runs them here. */
  readonly jobs: number;
  /** The chance a request names several locks at once (`--multi P`); unset: the mutant's, else none. */
  readonly multi: number | undefined;
  /** The chance a holder announces new meta (`--meta P`); unset: the mutant's, else none. */
  readonly meta: number | undefined;
  /** `--timing defaults` or `--timing H/L/E`: those timings instead of the drawn ones. */
  readonly timing: RunOptions['timing'];
  /** `--changes`: changes of the members drawn among the faults; unset: the mutant's, else none. */
  readonly changes: boolean;
}

const usage = `usage: npm run sim -- --seeds N [--seed S] [--peers P] [--mutant ${mutantNames.join('|')}] [--net fifo|link] [--multi P] [--meta P] [--changes] [--timing defaults|H/L/E] [--verbose] [--jobs J]\n       npm run sim -- --mutants [--seeds N] [--seed S]`;

function intArg(name: string, value: string | undefined, min: number, max: number): number {
  const n = Number(value);
  if (value === undefined || !Number.isSafeInteger(n) || n < min || n > max) throw new Error(`--${name} takes an integer in ${min}..${max}\n${usage}`);
  return n;
}

/** `defaults` (the config's: docs/design.md section 5) or `H/L/E` in ms, checked as a config is. */
function timingArg(value: string): NonNullable<RunOptions['timing']> {
  if (value === 'defaults') return { ...timingDefaults };
  const m = /^(\d+)\/(\d+)\/(\d+)$/.exec(value);
  const [heartbeatMs, leaseMs, evictMs] = m === null ? [NaN, NaN, NaN] : [Number(m[1]), Number(m[2]), Number(m[3])];
  if (!(heartbeatMs >= 1 && leaseMs >= 2 * heartbeatMs && evictMs >= Math.ceil(leaseMs * clockRateMargin + heartbeatMs))) {
    throw new Error(`--timing takes defaults or heartbeat/lease/evict ms with lease >= 2 heartbeats and evict >= lease * ${clockRateMargin} + heartbeat\n${usage}`);
  }
  return { heartbeatMs, leaseMs, evictMs };
}

function parseArgs(argv: readonly string[]): CliOptions {
  let seeds = 100;
  // SEED is read as sim.test.ts reads it (test/support/seed.ts): unset or empty means 1.
  let seed = seedFrom('SEED', process.env, 1);
  let peers: number | undefined;
  let mutant: MutantName | undefined;
  let verbose = false;
  let net: 'fifo' | 'link' = 'fifo';
  let mutants = false;
  let seedsGiven = false;
  let netGiven = false;
  let jobs = 1;
  let multi: number | undefined;
  let meta: number | undefined;
  let timing: RunOptions['timing'];
  let changes = false;
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const value = argv[i + 1];
    if (flag === '--mutants') {
      mutants = true;
      continue;
    }
    if (flag === '--changes') {
      changes = true;
      continue;
    }
    if (flag === '--seeds') seedsGiven = true;
    if (flag === '--verbose') verbose = true;
    else if (flag === '--seeds') seeds = intArg('seeds', value, 1, 1e9);
    else if (flag === '--seed') seed = intArg('seed', value, 0, 2 ** 52);
    else if (flag === '--peers') peers = intArg('peers', value, 1, 64);
    else if (flag === '--jobs') jobs = intArg('jobs', value, 1, 256);
    else if (flag === '--mutant' && value !== undefined && isMutantName(value)) mutant = value;
    else if (flag === '--multi' && value !== undefined && /^(0(\.\d+)?|1)$/.test(value)) multi = Number(value);
    else if (flag === '--meta' && value !== undefined && /^(0(\.\d+)?|1)$/.test(value)) meta = Number(value);
    else if (flag === '--timing' && value !== undefined) timing = timingArg(value);
    else if (flag === '--net' && (value === 'fifo' || value === 'link')) {
      net = value;
      netGiven = true;
    }
    else throw new Error(`unknown or invalid argument ${flag ?? ''}\n${usage}`);
    if (flag !== '--verbose') i++;
  }
  if (mutants && !seedsGiven) seeds = mutantSeedsMax;
  if (jobs > 1 && (mutants || verbose)) throw new Error(`--jobs runs plain seed ranges only\n${usage}`);
  return { seeds, seed, peers, mutant, verbose, net, mutants, netGiven, jobs, multi, meta, timing, changes };
}

function runOptions(cli: CliOptions, seed: number, transcript: boolean, mutant = cli.mutant): RunOptions {
  const multi = cli.multi ?? multiChanceOf(mutant);
  const meta = cli.meta ?? proclaimChanceOf(mutant);
  const changes = cli.changes || changesOf(mutant);
  return {
    seed,
    transcript,
    net: cli.net,
    ...(cli.peers === undefined ? {} : { peers: cli.peers }),
    ...(multi === undefined ? {} : { multiChance: multi }),
    ...(meta === undefined ? {} : { proclaimChance: meta }),
    ...(cli.timing === undefined ? {} : { timing: cli.timing }),
    ...(changes ? { changes } : {}),
  };
}

function reproduce(cli: CliOptions, seed: number): string {
  const peers = cli.peers === undefined ? '' : ` --peers ${cli.peers}`;
  const mutant = cli.mutant === undefined ? '' : ` --mutant ${cli.mutant}`;
  const net = cli.net === 'fifo' ? '' : ` --net ${cli.net}`;
  const multi = cli.multi === undefined ? '' : ` --multi ${cli.multi}`;
  const meta = cli.meta === undefined ? '' : ` --meta ${cli.meta}`;
  const changes = cli.changes ? ' --changes' : '';
  return `reproduce with: npm run sim -- --seed ${seed} --seeds 1${peers}${mutant}${net}${multi}${meta}${changes}`;
}

/** Prints a failure: the violation, the command that replays it, and the transcript's tail. */
function reportFailure(cli: CliOptions, sim: Sim, result: RunResult): void {
  const s = result.scenario;
  console.log(`seed ${result.seed} FAILED (${s.peers} peers, ${s.locks.length} locks, clocks ${s.clockStyle}, ${result.events} events, ${result.virtualMs}ms):`);
  for (const v of result.violations) console.log(`  ${v}`);
  // Determinism at work: the same seed, run again with the transcript on, fails the same way.
  const replay = sim.run.runSeed(runOptions(cli, result.seed, true));
  console.log(`transcript (last 40 lines of ${replay.transcript.lines().length}):`);
  for (const line of replay.transcript.tail(40)) console.log(`  ${line}`);
  console.log(reproduce(cli, result.seed));
}

/** The mutation table: every mutant, the first seed that catches it, and the seeds it took. */
async function mutationTable(cli: CliOptions): Promise<number> {
  const startedMs = performance.now();
  let missed = 0;
  console.log(`${'mutant'.padEnd(30)} ${'first failing seed'.padEnd(20)} seeds run (- for a scripted scenario)`);
  const only = process.env['MUTANTS'];
  const names = only === undefined ? mutantNames : mutantNames.filter((m) => only.split(',').includes(m));
  // --net picks one network; by default each seed runs on both.
  const nets: ReadonlyArray<'fifo' | 'link'> = cli.netGiven ? [cli.net] : ['fifo', 'link'];
  const plain = await simFor();
  for (const mutant of names) {
    const planted = await simFor(mutant);
    // A mutant the seeds reach too rarely is run in the scripted scenario that catches it
    // (test/sim/scenarios.ts): caught when its rule holds without the mutant and not with it.
    const scenario = plain.scenarios.scenarioFor[mutant];
    if (scenario !== undefined) {
      const held = planted.scenarios.scenarioFor[mutant]?.held() ?? true;
      dropPlanted();
      if (held || !scenario.held()) missed++;
      console.log(`${mutant.padEnd(30)} ${(held ? 'NOT CAUGHT' : `scenario ${scenario.name}`).padEnd(20)} -`);
      continue;
    }
    let caught: { result: RunResult; net: 'fifo' | 'link' } | undefined;
    let ran = 0;
    for (let seed = cli.seed; seed < cli.seed + cli.seeds && caught === undefined; seed++) {
      ran++;
      // Each seed on both networks: the link network's connection breaks shift every timing.
      for (const net of nets) {
        const options = { ...runOptions(cli, seed, false, mutant), net };
        const result = planted.run.runSeed(options);
        // A catch counts only where the seed passes without the planted bug.
        if (result.violations.length > 0 && plain.run.runSeed(options).violations.length === 0) {
          caught = { result, net };
          break;
        }
      }
    }
    dropPlanted();
    if (caught === undefined) missed++;
    const first = caught === undefined ? 'NOT CAUGHT' : `${caught.result.seed}${caught.net === 'link' ? ' --net link' : ''}`;
    console.log(`${mutant.padEnd(30)} ${first.padEnd(20)} ${ran}`);
    if (caught !== undefined && cli.verbose) console.log(`  ${caught.result.violations[0] ?? ''}`);
  }
  const seconds = (performance.now() - startedMs) / 1000;
  console.log(`mutants: ${names.length - missed} of ${names.length} caught within ${cli.seeds} seeds each (${seconds.toFixed(0)}s)`);
  return missed === 0 ? 0 : 1;
}

/** What a child of `--jobs` is given besides its seed range. */
function passThrough(cli: CliOptions): string[] {
  return [
    ...(cli.peers === undefined ? [] : ['--peers', String(cli.peers)]),
    ...(cli.mutant === undefined ? [] : ['--mutant', cli.mutant]),
    ...(cli.net === 'fifo' ? [] : ['--net', cli.net]),
    ...(cli.multi === undefined ? [] : ['--multi', String(cli.multi)]),
    ...(cli.meta === undefined ? [] : ['--meta', String(cli.meta)]),
    ...(cli.timing === undefined ? [] : ['--timing', `${cli.timing.heartbeatMs}/${cli.timing.leaseMs}/${cli.timing.evictMs}`]),
    ...(cli.changes ? ['--changes'] : []),
  ];
}

async function main(): Promise<number> {
  const cli = parseArgs(process.argv.slice(2));
  if (cli.mutants) return await mutationTable(cli);
  if (cli.jobs > 1) return runParallel(cli.seed, cli.seeds, cli.jobs, passThrough(cli));
  const sim = await simFor(cli.mutant);
  const startedMs = performance.now();
  let grants = 0;
  let changesMade = 0;
  let raises = 0;
  let refusedStarts = 0;
  const failed: number[] = [];
  const excused: number[] = [];
  for (let seed = cli.seed; seed < cli.seed + cli.seeds; seed++) {
    const result = sim.run.runSeed(runOptions(cli, seed, cli.verbose && cli.seeds === 1));
    grants += result.grants;
    changesMade += result.changesMade;
    if (result.excused.length > 0) excused.push(seed);
    raises += result.raises;
    refusedStarts += result.refusedStarts;
    if (cli.verbose) {
      if (cli.seeds === 1) for (const line of result.transcript.lines()) console.log(line);
      console.log(`seed ${seed}: ${result.scenario.peers} peers, ${result.events} events, ${result.virtualMs}ms, ${result.grants} grants, ${result.violations.length} violations${cli.changes ? `, ${result.changesMade} changes` : ''}`);
    }
    if (result.violations.length === 0) continue;
    if (failed.length === 0) reportFailure(cli, sim, result);
    failed.push(seed);
  }
  const seconds = (performance.now() - startedMs) / 1000;
  if (cli.mutant !== undefined) console.log(`mutant ${cli.mutant}: ${failed.length === 0 ? 'NOT caught' : `first failing seed ${failed[0]}`}`);
  if (failed.length > 1) console.log(`failing seeds: ${failed.slice(0, 20).join(', ')}${failed.length > 20 ? ', ...' : ''}`);
  if (cli.changes) console.log(`changes of the members made: ${changesMade}; level raises made: ${raises}; starts refused for their level: ${refusedStarts}`);
  if (excused.length > 0) console.log(`seeds where a peer waits, by design, for a peer down for good that its incarnation never met (README, "What is not promised"; the transcript says which): ${excused.slice(0, 20).join(', ')}${excused.length > 20 ? ', ...' : ''}`);
  console.log(`${cli.seeds} seeds in ${seconds.toFixed(2)}s (${(cli.seeds / seconds).toFixed(0)} seeds/s)`);
  console.log(`sim: ${cli.seeds} seeds, ${grants} grants, ${failed.length} violations`);
  return failed.length === 0 ? 0 : 1;
}

try {
  process.exitCode = await main();
} catch (err) {
  console.error(err instanceof Error ? err.message : String(err));
  process.exitCode = 2;
}
