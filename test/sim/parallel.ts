/**
 * `npm run sim -- --seeds N --jobs J`: the same seeds, run by J child processes in chunks, for
 * the long runs (100,000 seeds) a multi-core machine can finish in an hour or two. Each chunk
 * is an ordinary `--seeds` run of this CLI; the parent prints one line per chunk as it ends,
 * the first failure's report, and the same summary line as a single-process run:
 * `sim: <S> seeds, <G> grants, <V> violations`, where V counts failing seeds.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** One chunk's outcome, parsed from its child's output. */
interface ChunkResult {
  readonly first: number;
  readonly count: number;
  readonly grants: number;
  readonly failed: readonly number[];
  readonly output: string;
}

const mainScript = fileURLToPath(new URL('./main.js', import.meta.url));

function runChunk(first: number, count: number, passThrough: readonly string[]): Promise<ChunkResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [mainScript, '--seeds', String(count), '--seed', String(first), ...passThrough], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (output += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (output += d));
    child.on('error', reject);
    child.on('close', () => {
      const summary = /^sim: (\d+) seeds, (\d+) grants, (\d+) violations$/m.exec(output);
      if (summary === null) {
        reject(new Error(`seeds ${first}..${first + count - 1}: the child printed no summary:\n${output.slice(-2000)}`));
        return;
      }
      const firstFailed = /^seed (\d+) FAILED/m.exec(output);
      const listed = /^failing seeds: (.*)$/m.exec(output);
      const failed = listed !== null
        ? (listed[1] ?? '').split(', ').filter((s) => /^\d+$/.test(s)).map(Number)
        : firstFailed !== null ? [Number(firstFailed[1])] : [];
      resolve({ first, count, grants: Number(summary[2]), failed, output });
    });
  });
}

/** Runs seeds `seed`..`seed + seeds - 1` in `jobs` processes; returns the exit code. */
export async function runParallel(seed: number, seeds: number, jobs: number, passThrough: readonly string[]): Promise<number> {
  const startedMs = performance.now();
  const chunk = Math.max(1, Math.min(1000, Math.ceil(seeds / jobs)));
  const starts: number[] = [];
  for (let s = seed; s < seed + seeds; s += chunk) starts.push(s);
  const results: ChunkResult[] = [];
  let next = 0;
  let reported = false;
  const worker = async (): Promise<void> => {
    for (;;) {
      const first = starts[next++];
      if (first === undefined) return;
      const r = await runChunk(first, Math.min(chunk, seed + seeds - first), passThrough);
      results.push(r);
      const done = results.reduce((n, x) => n + x.count, 0);
      console.log(`seeds ${r.first}..${r.first + r.count - 1}: ${r.grants} grants, ${r.failed.length} failing (${done} of ${seeds} done, ${((performance.now() - startedMs) / 1000).toFixed(0)}s)`);
      if (r.failed.length > 0 && !reported) {
        reported = true;
        console.log(r.output.trimEnd());
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(jobs, starts.length) }, worker));
  const failed = results.flatMap((r) => r.failed).sort((a, b) => a - b);
  const grants = results.reduce((n, r) => n + r.grants, 0);
  const seconds = (performance.now() - startedMs) / 1000;
  if (failed.length > 0) console.log(`failing seeds: ${failed.join(', ')}`);
  console.log(`${seeds} seeds in ${seconds.toFixed(0)}s with ${jobs} jobs (${(seeds / seconds).toFixed(1)} seeds/s)`);
  console.log(`sim: ${seeds} seeds, ${grants} grants, ${failed.length} violations`);
  return failed.length === 0 ? 0 : 1;
}
