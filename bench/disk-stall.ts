/**
 * `npm run bench:disk`: the peers' event-loop stalls while another process writes to their disk
 * (issue 15). Three peers with a data dir each (bench/systems/lamport.ts), one client looping
 * acquire+release, and `dd oflag=direct` writing 1 GB files into the same temp dir over and
 * over for the whole run. Every peer reports each stall of 50 ms or more (bench/loop-stalls.ts);
 * the run prints, per peer, the stalls of >= 50 and >= 150 ms and the longest, then the lease
 * losses and evictions the peers logged and the median of the client's p50s.
 *
 * A peer that fsyncs on its event loop stalls for as long as the disk takes (up to 647 ms per
 * fsync on the project machine before the bounds moved off the loop, docs/design.md section 4,
 * "Clock floor"). To compare builds, run it with `--peer-bin` of each.
 *
 * npm run bench:disk -- [--seconds 30] [--peer-bin dist/bin/lamport-peer.js]
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import yargs from 'yargs';
import { hideBin } from 'yargs/helpers';
import { ProcessGroup } from './procs.js';
import { runUncontended } from './scenarios.js';
import { evictionCount, leaseLossCount, startLamport } from './systems/lamport.js';

const here = fileURLToPath(new URL('.', import.meta.url));

function progress(text: string): void {
  process.stderr.write(`[bench:disk] ${text}\n`);
}

/** Runs `dd` until `stop()` says so; resolves once the last one exited. */
function ddLoop(dir: string): { stop: () => Promise<void> } {
  let stopping = false;
  const once = (): Promise<void> => new Promise((done, fail) => {
    const dd = spawn('dd', ['if=/dev/zero', `of=${join(dir, 'dd.out')}`, 'bs=1M', 'count=1000', 'oflag=direct'], { stdio: 'ignore' });
    dd.once('error', fail);
    dd.once('exit', () => done());
  });
  const loop = (async () => {
    while (!stopping) await once();
  })();
  return { stop: async () => { stopping = true; await loop; } };
}

function stallsOf(logPath: string): number[] {
  const out: number[] = [];
  for (const line of readFileSync(logPath, 'utf8').split('\n')) {
    if (!line.startsWith('{"loopStallMs"')) continue;
    out.push((JSON.parse(line) as { loopStallMs: number }).loopStallMs);
  }
  return out;
}

async function main(): Promise<void> {
  const argv = await yargs(hideBin(process.argv))
    .scriptName('npm run bench:disk --')
    .option('seconds', { type: 'number', default: 30, describe: 'how long dd writes beside the peers, s' })
    .option('peer-bin', { type: 'string', default: join(here, '..', 'bin', 'lamport-peer.js'), describe: 'the peer daemon to start' })
    .strict()
    .parse();
  const group = new ProcessGroup();
  process.once('SIGINT', () => void group.stopAll().finally(() => process.exit(130)));
  const peerBin = resolve(argv['peer-bin']);
  const cluster = await startLamport(group, { peerBin, peerCount: 3, nodeArgs: ['--import', join(here, 'loop-stalls.js')] });
  progress(`3 peers of ${peerBin} up; dd writes beside them for ${argv.seconds} s`);
  const dd = ddLoop(group.dir);
  const p50s: number[] = [];
  try {
    const end = Date.now() + argv.seconds * 1000;
    for (let i = 0; Date.now() < end; i++) p50s.push((await runUncontended(cluster, { iterations: 500, warmup: 10, tag: `disk${i}` })).cycleP50Ms);
  } finally {
    await dd.stop();
  }
  const losses = leaseLossCount(cluster.peers);
  const evictions = evictionCount(cluster.peers);
  await cluster.stop();
  for (const peer of cluster.peers) {
    const stalls = stallsOf(peer.proc.logPath);
    console.log(`peer ${peer.id}: ${stalls.length} event-loop stalls >= 50 ms, ${stalls.filter((s) => s >= 150).length} >= 150 ms, longest ${Math.max(0, ...stalls)} ms`);
  }
  p50s.sort((a, b) => a - b);
  console.log(`${losses} lease losses, ${evictions} evictions; acquire+release p50 ${(p50s[Math.floor(p50s.length / 2)] ?? Number.NaN).toFixed(2)} ms (median of ${p50s.length} runs of 500)`);
  await group.stopAll();
}

await main();
