/**
 * Command line of `npm run bench`: full or `--quick` sizes, and a few overrides.
 */
import yargs from 'yargs';
import { hideBin } from 'yargs/helpers';
import type { FloorSizes } from './floor.js';
import type { MemorySizes } from './memory.js';
import type { Sizes } from './suite.js';
import { deployedPeerNice } from './procs.js';
import { systemNames } from './systems/types.js';
import type { SystemName } from './systems/types.js';

/** Everything the benchmark run was asked for. */
export interface BenchOptions {
  readonly mode: 'quick' | 'full';
  readonly sizes: Sizes;
  readonly peerCounts: readonly number[];
  readonly memory: MemorySizes | null;
  /** (g), CPU per operation against the same-run floor; null with --no-floor. */
  readonly floor: FloorSizes | null;
  readonly systems: readonly SystemName[];
  /** Directory for latest.{json,md,svg}; undefined for the default. */
  readonly out: string | undefined;
  readonly write: boolean;
  /** Runs bench/gc-client.ts beside every lamport-lock part (issue 15: false evictions under GC-heavy neighbours). */
  readonly gcClient: boolean;
  /** The peer daemon to start; undefined for the built dist/bin/lamport-peer.js. */
  readonly peerBin: string | undefined;
  /** Nice value of the servers under test in (a)-(e) and (g) (bench/procs.ts). */
  readonly serverNice: number;
  /** Nice value of the peers of (f). */
  readonly memoryNice: number;
}

const fullSizes: Sizes = {
  runs: 5, uncontendedIterations: 1000, uncontendedWarmup: 50, hotWorkers: 8, hotDurationMs: 5000,
  names: 1000, namesWorkers: 64, namesDurationMs: 5000,
};
const quickSizes: Sizes = {
  runs: 3, uncontendedIterations: 200, uncontendedWarmup: 20, hotWorkers: 8, hotDurationMs: 1500,
  names: 1000, namesWorkers: 64, namesDurationMs: 1500,
};
/** (g) in a full run, and `npm run bench:floor` by default. */
export const fullFloor: FloorSizes = {
  pairs: 12, connections: 32, windowMs: 2000, warmupMinMs: 6000, warmupMaxMs: 30_000, settledWithin: 0.05, measureMs: 3000, latencyMs: 1500,
};
const quickFloor: FloorSizes = {
  pairs: 3, connections: 32, windowMs: 2000, warmupMinMs: 4000, warmupMaxMs: 20_000, settledWithin: 0.05, measureMs: 2000, latencyMs: 1000,
};
const fullMemory: MemorySizes = { idleNames: 100_000, waiters: 100_000, heldLocks: 10 };
const quickMemory: MemorySizes = { idleNames: 20_000, waiters: 10_000, heldLocks: 10 };

/** Parses argv into options; exits with usage on bad input. */
export function parseOptions(argv: readonly string[]): BenchOptions {
  const args = yargs(hideBin([...argv]))
    .scriptName('npm run bench --')
    .option('quick', { type: 'boolean', default: false, describe: 'smaller sizes: 3 runs, 1.5 s each, 3 and 5 peers, 3 short floor pairs' })
    .option('runs', { type: 'number', describe: 'runs per figure (median, min, max are over these)' })
    .option('peers', { type: 'string', describe: 'comma-separated cluster sizes for (d), e.g. 3,5,7,9' })
    .option('systems', { type: 'string', default: systemNames.join(','), describe: 'which of lamport-lock,etcd,redis to run' })
    .option('memory', { type: 'boolean', default: true, describe: 'run (f), the memory measurement (--no-memory to skip)' })
    .option('floor', { type: 'boolean', default: true, describe: 'run (g), CPU per operation against the same-run floor (--no-floor to skip)' })
    .option('floor-pairs', { type: 'number', describe: '(g) measured pairs, each loading lamport-lock and the floor in turn (default 12; 3 with --quick)' })
    .option('waiters', { type: 'number', describe: '(f) waiting requests (default 100000; 10000 with --quick)' })
    .option('idle-names', { type: 'number', describe: '(f) distinct idle names (default 100000; 20000 with --quick)' })
    .option('gc-client', { type: 'boolean', default: false, describe: 'run a GC-heavy client (bench/gc-client.ts) beside every lamport-lock part' })
    .option('peer-bin', { type: 'string', describe: 'peer daemon script to run with node (default dist/bin/lamport-peer.js)' })
    .option('server-nice', { type: 'number', default: 0, describe: 'nice value of the servers under test in (a)-(e) and (g) (peers, etcd, redis, the floor); 0: the priority of the load generator, which stands in for clients on other hosts' })
    .option('memory-nice', { type: 'number', default: deployedPeerNice, describe: 'nice value of the peers in (f), above the waiter-clients that stand in for the applications of their host (default: Nice= of deploy/lamport-peer.service)' })
    .option('out', { type: 'string', describe: 'directory for latest.{json,md,svg} (default bench/results)' })
    .option('write', { type: 'boolean', default: true, describe: 'write the result files (--no-write: print only)' })
    .strict()
    .help()
    .parseSync();
  const base = args.quick ? quickSizes : fullSizes;
  const runs = args.runs === undefined ? base.runs : Math.max(1, Math.floor(args.runs));
  const peerCounts = args.peers === undefined ? (args.quick ? [3, 5] : [3, 5, 7, 9]) : parseIntList(args.peers);
  const systems = args.systems.split(',').map((s) => s.trim());
  const unknown = systems.filter((s) => !(systemNames as readonly string[]).includes(s));
  if (unknown.length > 0) throw new Error(`unknown systems: ${unknown.join(', ')} (known: ${systemNames.join(', ')})`);
  return {
    mode: args.quick ? 'quick' : 'full',
    sizes: { ...base, runs },
    peerCounts,
    memory: args.memory ? memorySizes(args.quick ? quickMemory : fullMemory, args.waiters, args['idle-names']) : null,
    floor: args.floor ? floorSizes(args.quick ? quickFloor : fullFloor, args['floor-pairs']) : null,
    systems: systems as SystemName[],
    out: args.out,
    write: args.write,
    gcClient: args['gc-client'],
    peerBin: args['peer-bin'],
    serverNice: checkNice(args['server-nice']),
    memoryNice: checkNice(args['memory-nice']),
  };
}

function memorySizes(base: MemorySizes, waiters: number | undefined, idleNames: number | undefined): MemorySizes {
  return {
    ...base,
    waiters: waiters === undefined ? base.waiters : Math.max(0, Math.floor(waiters)),
    idleNames: idleNames === undefined ? base.idleNames : Math.max(0, Math.floor(idleNames)),
  };
}

function floorSizes(base: FloorSizes, pairs: number | undefined): FloorSizes {
  return pairs === undefined ? base : { ...base, pairs: Math.max(1, Math.floor(pairs)) };
}

/** A nice value setpriority takes: an integer from -20 to 19. */
export function checkNice(value: number): number {
  if (!Number.isInteger(value) || value < -20 || value > 19) throw new Error(`a nice value is an integer from -20 to 19, got ${value}`);
  return value;
}

function parseIntList(text: string): number[] {
  const values = text.split(',').map((s) => Number(s.trim()));
  const bad = values.filter((v) => !Number.isInteger(v) || v < 2 || v > 26);
  if (bad.length > 0) throw new Error(`--peers takes integers from 2 to 26, got ${text}`);
  return values;
}
