/**
 * `npm run bench:floor`: part (g) of `npm run bench` alone (issue 15). A 3-peer lamport-lock
 * cluster and the 3-process floor (bench/floor-peer.ts), each warmed to steady state, then in
 * pairs of short windows; prints the CPU, the ratios against the floor, then every pair's
 * absolute figures (bench/floor.ts).
 *
 * npm run build && node dist/bench/cpu-floor.js [--pairs 12] [--seconds 3] [--connections 32] [--control]
 *   [--window 2] [--warmup-min 6] [--warmup-max 30] [--settle 5] [--latency 1.5] [--profile DIR] [--json FILE] [--server-nice 0]
 */
import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import yargs from 'yargs';
import { hideBin } from 'yargs/helpers';
import { measureAgainstFloor } from './floor.js';
import type { FloorOptions } from './floor.js';
import { floorSection } from './floor-report.js';
import { checkNice, fullFloor } from './options.js';
import { ProcessGroup } from './procs.js';

function progress(text: string): void {
  process.stderr.write(`[bench:floor] ${text}\n`);
}

function parse(argv: readonly string[]): { opts: FloorOptions; json: string | undefined; serverNice: number } {
  const z = fullFloor;
  const args = yargs(hideBin([...argv]))
    .scriptName('npm run bench:floor --')
    .option('pairs', { type: 'number', default: z.pairs, describe: 'measured pairs, each loading lamport-lock and the floor in turn' })
    .option('seconds', { type: 'number', default: z.measureMs / 1000, describe: 'measured window of each system in a pair, s' })
    .option('connections', { type: 'number', default: z.connections, describe: 'concurrent acquire+release loops on distinct names' })
    .option('window', { type: 'number', default: z.windowMs / 1000, describe: 'warm-up window, s' })
    .option('warmup-min', { type: 'number', default: z.warmupMinMs / 1000, describe: 'shortest warm-up, s' })
    .option('warmup-max', { type: 'number', default: z.warmupMaxMs / 1000, describe: 'no warm-up window starts past this, s (reported when reached)' })
    .option('settle', { type: 'number', default: z.settledWithin * 100, describe: 'settled: two consecutive windows\' CPU per op within this %' })
    .option('latency', { type: 'number', default: z.latencyMs / 1000, describe: 'one connection\'s p50 sampled for this long, per system and pair, s' })
    .option('profile', { type: 'string', describe: 'the peers and the floor\'s processes write V8 CPU profiles into DIR/lamport-lock and DIR/floor when they stop (open them in Chrome\'s DevTools, or summarise them with bench/profile-summary.ts)' })
    .option('control', { type: 'boolean', default: false, describe: 'a control run: a second lamport-lock cluster of the same build in the floor\'s place, measured the same way (its ratios show how far the host and the method move a ratio by themselves)' })
    .option('json', { type: 'string', describe: 'also write the figures as JSON to FILE' })
    .option('server-nice', { type: 'number', default: 0, describe: 'nice value of the peers and the floor\'s processes (default 0: the priority of the load generator)' })
    .strict()
    .help()
    .parseSync();
  const peerBin = fileURLToPath(new URL('../bin/lamport-peer.js', import.meta.url));
  const opts: FloorOptions = {
    pairs: Math.max(1, Math.floor(args.pairs)),
    connections: Math.max(1, Math.floor(args.connections)),
    windowMs: args.window * 1000,
    warmupMinMs: args['warmup-min'] * 1000,
    warmupMaxMs: args['warmup-max'] * 1000,
    settledWithin: args.settle / 100,
    measureMs: args.seconds * 1000,
    latencyMs: args.latency * 1000,
    peerBin,
    progress,
    control: args.control,
    ...(args.profile === undefined ? {} : { profileDir: resolve(args.profile) }),
  };
  return { opts, json: args.json, serverNice: checkNice(args['server-nice']) };
}

async function main(): Promise<void> {
  const { opts, json, serverNice } = parse(process.argv);
  const group = new ProcessGroup({ serverNice });
  process.once('SIGINT', () => void group.stopAll().finally(() => process.exit(130)));
  process.once('exit', () => group.killAllNow());
  try {
    const figures = await measureAgainstFloor(group, opts);
    const refusal = group.niceRefusal();
    const priority = refusal === null ? `the peers and the floor's processes ran at nice ${serverNice}` : `the peers and the floor's processes were to run at nice ${serverNice}: ${refusal}`;
    process.stdout.write(`${floorSection(figures).join('\n')}\n\n- ${priority}\n`);
    if (json !== undefined) writeFileSync(json, JSON.stringify(figures, (_key, v: unknown) => (typeof v === 'number' && !Number.isFinite(v) ? null : v), 2));
  } catch (err) {
    group.keepLogs();
    progress(`failed (logs kept in ${group.dir})`);
    throw err;
  } finally {
    await group.stopAll();
  }
}

await main();
