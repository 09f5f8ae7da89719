/**
 * What one peer-link frame costs when the caches are cold (issue 15, eighteenth session). A
 * peer at low load wakes for each frame after other processes ran on its core, so its code
 * and data are out of the CPU caches; a micro-benchmark that decodes the same frame in a loop
 * measures the warm cost only. This times `decodeFrame` and `encodeFrame` of a typical data
 * frame (a REQUEST and a RELEASE of another peer, 169 bytes) both ways: in a tight loop, and
 * one call at a time after writing through a buffer larger than the caches.
 *
 * npm run build && node dist/bench/cold-path.js [--samples 300] [--thrash-mb 64]
 */
import yargs from 'yargs';
import { hideBin } from 'yargs/helpers';
import { isPacket } from '../src/core/messages.js';
import type { Packet } from '../src/core/messages.js';
import { decodeFrame, encodeFrame } from '../src/transport/codec.js';
import type { Frame } from '../src/transport/codec.js';
import { percentile } from './stats.js';

const frame: Frame<Packet> = {
  t: 'data', seq: 12_345, ack: 12_000,
  payloads: [{
    c: 1_763_990_000_123,
    m: [
      { t: 'rel', lock: 'x-41', ts: 1_763_990_000_100 },
      { t: 'req', lock: 'x-42', ts: 1_763_990_000_122, mode: 'exclusive', limit: 1, permits: 1, owner: '', meta: null, at: 1_763_990_000_000 },
    ],
  }],
};

function microseconds(fn: () => void, n: number): number {
  for (let i = 0; i < n; i++) fn();
  const t = process.hrtime.bigint();
  for (let i = 0; i < n; i++) fn();
  return Number(process.hrtime.bigint() - t) / n / 1000;
}

/** p50 of single calls, each after writing through `thrash` (evicting the caches). */
function coldMicroseconds(fn: () => void, samples: number, thrash: Float64Array): number {
  const took: number[] = [];
  for (let s = 0; s < samples; s++) {
    for (let i = 0; i < thrash.length; i += 8) thrash[i] = (thrash[i] ?? 0) + 1; // one write per 64-byte line
    const t = process.hrtime.bigint();
    fn();
    took.push(Number(process.hrtime.bigint() - t) / 1000);
  }
  return percentile(took, 50);
}

const args = yargs(hideBin(process.argv))
  .scriptName('node dist/bench/cold-path.js')
  .option('samples', { type: 'number', default: 300, describe: 'cold calls timed per function' })
  .option('thrash-mb', { type: 'number', default: 64, describe: 'buffer written through before each cold call, MB (larger than the last-level cache)' })
  .strict()
  .help()
  .parseSync();
const bytes = encodeFrame(frame);
const thrash = new Float64Array(Math.max(1, Math.floor((args['thrash-mb'] * 1024 * 1024) / 8)));
const samples = Math.max(1, Math.floor(args.samples));
const decode = (): void => void decodeFrame(bytes, isPacket);
const encode = (): void => void encodeFrame(frame);
const rows = [
  ['decodeFrame', microseconds(decode, 200_000), coldMicroseconds(decode, samples, thrash)],
  ['encodeFrame', microseconds(encode, 200_000), coldMicroseconds(encode, samples, thrash)],
] as const;
process.stdout.write(`a ${bytes.length}-byte data frame (a REQUEST and a RELEASE), µs per call\n\n| function | warm (tight loop) | cold (p50 of ${samples}, after ${args['thrash-mb']} MB written) | cold / warm |\n|---|---|---|---|\n`);
for (const [name, warm, cold] of rows) process.stdout.write(`| ${name} | ${warm.toFixed(2)} | ${cold.toFixed(2)} | ${(cold / warm).toFixed(1)}× |\n`);
