/**
 * A GC-heavy client beside the benchmark's load (issue 15, `npm run bench -- --gc-client`):
 * a child process that loops acquire, churn of short- and long-lived garbage (tens of MB, so
 * the collector runs often and its major pauses are long), release, on the peers of the
 * cluster under test. It competes with the peers for the CPU, as a real application on
 * the same host does; the benchmark then counts the peers' lease losses and evictions.
 * On SIGTERM it prints one JSON line (`GcClientReport`) and exits.
 *
 * node dist/bench/gc-client.js PORT[,PORT...]
 */
import { request } from 'node:http';
import { PerformanceObserver } from 'node:perf_hooks';

/** What the client did, printed as its last line. */
export interface GcClientReport {
  readonly grants: number;
  readonly failures: number;
  readonly firstFailure: string | null;
  readonly gcPauses: number;
  readonly gcPauseMaxMs: number;
  readonly gcPauseTotalMs: number;
}

function post(port: number, path: string, body: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
  const text = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method: 'POST', path, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        try {
          resolve({ status: res.statusCode ?? 0, json: JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown> });
        } catch (err) {
          reject(err instanceof Error ? err : new Error(String(err)));
        }
      });
    });
    req.on('error', reject);
    req.end(text);
  });
}

/** Garbage kept for a while (old generation) and made and dropped at once (young generation). */
const retained: unknown[][] = [];

function churn(round: number): void {
  const young: unknown[] = [];
  for (let i = 0; i < 20_000; i++) young.push({ i, s: `x${i}`, a: [i, i + 1] });
  retained[round % 40] = Array.from({ length: 10_000 }, (_, i) => ({ round, i, text: `retained ${round} ${i}` }));
  if (young.length === 0) throw new Error('unreachable');
}

async function main(): Promise<void> {
  const ports = (process.argv[2] ?? '').split(',').map(Number).filter((p) => Number.isInteger(p) && p > 0);
  if (ports.length === 0) throw new Error('usage: gc-client PORT[,PORT...]');
  let grants = 0;
  let failures = 0;
  let firstFailure: string | null = null;
  let gcPauses = 0;
  let gcPauseMaxMs = 0;
  let gcPauseTotalMs = 0;
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      gcPauses++;
      gcPauseTotalMs += e.duration;
      gcPauseMaxMs = Math.max(gcPauseMaxMs, e.duration);
    }
  }).observe({ entryTypes: ['gc'] });
  let stopping = false;
  process.once('SIGTERM', () => {
    stopping = true;
  });
  for (let round = 0; !stopping; round++) {
    const port = ports[round % ports.length] ?? 0;
    try {
      const got = await post(port, `/v1/locks/gc-client-${round % 8}/acquire`, { timeout_ms: 5000, ttl_ms: 10_000, owner: 'gc-client' });
      if (got.status !== 200) throw new Error(`acquire answered ${got.status} ${JSON.stringify(got.json)}`);
      grants++;
      churn(round);
      const rel = await post(port, `/v1/locks/gc-client-${round % 8}/release`, { id: got.json['id'] });
      if (rel.status !== 200) throw new Error(`release answered ${rel.status} ${JSON.stringify(rel.json)}`);
    } catch (err) {
      failures++;
      firstFailure ??= err instanceof Error ? err.message : String(err);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  const report: GcClientReport = { grants, failures, firstFailure, gcPauses, gcPauseMaxMs: Math.round(gcPauseMaxMs), gcPauseTotalMs: Math.round(gcPauseTotalMs) };
  process.stdout.write(`${JSON.stringify(report)}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`gc-client: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
