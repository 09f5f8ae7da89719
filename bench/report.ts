/**
 * The Markdown report: the side-by-side table with ratios to etcd and Redis, the scaling
 * and link-cost table, memory, and the targets of issue 6 with a verdict each.
 */
import type { LinkCost } from './link-cost.js';
import type { MemoryFigures, RssSample } from './memory.js';
import type { BenchResults, ScalingPoint } from './results.js';
import type { Spread } from './stats.js';
import type { SystemFigures } from './suite.js';
import { systemNames } from './systems/types.js';
import type { SystemName } from './systems/types.js';

/** One row of the main table: how to read a figure from a system's figures. */
interface Row {
  readonly scenario: string;
  readonly label: string;
  readonly better: 'lower' | 'higher' | 'none';
  readonly pick: (f: SystemFigures) => Spread;
}

const rows: readonly Row[] = [
  { scenario: 'a', label: 'acquire p50 (ms)', better: 'lower', pick: (f) => f.a.acquireP50Ms },
  { scenario: 'a', label: 'acquire p99 (ms)', better: 'lower', pick: (f) => f.a.acquireP99Ms },
  { scenario: 'a', label: 'acquire+release p50 (ms)', better: 'lower', pick: (f) => f.a.cycleP50Ms },
  { scenario: 'a', label: 'acquire+release p99 (ms)', better: 'lower', pick: (f) => f.a.cycleP99Ms },
  { scenario: 'b', label: 'grants/s, 8 clients, 1 lock', better: 'higher', pick: (f) => f.b.handoffsPerS },
  { scenario: 'b', label: 'real handoffs/s (to another client)', better: 'higher', pick: (f) => f.b.realHandoffsPerS },
  { scenario: 'b', label: 'wait p50 (ms)', better: 'lower', pick: (f) => f.b.waitP50Ms },
  { scenario: 'b', label: 'wait p99 (ms)', better: 'lower', pick: (f) => f.b.waitP99Ms },
  { scenario: 'b', label: 'failed polls per real handoff', better: 'none', pick: (f) => f.b.failedPollsPerHandoff },
  { scenario: 'b', label: 'token order violations (FIFO check)', better: 'none', pick: (f) => f.b.tokenOrderViolations },
  { scenario: 'b', label: 'overlapping grants seen', better: 'none', pick: (f) => f.b.overlaps },
  { scenario: 'c', label: 'acquire+release/s, 64 workers, 1000 names', better: 'higher', pick: (f) => f.c.opsPerS },
  { scenario: 'c', label: 'acquire+release p50 (ms)', better: 'lower', pick: (f) => f.c.cycleP50Ms },
  { scenario: 'c', label: 'acquire+release p99 (ms)', better: 'lower', pick: (f) => f.c.cycleP99Ms },
];

/** A number with about three significant digits; '–' when it does not apply. */
export function fmt(value: number | null | undefined): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return '–';
  const abs = Math.abs(value);
  if (abs >= 1000) return Math.round(value).toLocaleString('en-US');
  if (abs >= 100) return value.toFixed(0);
  if (abs >= 10) return value.toFixed(1);
  if (abs >= 1 || value === 0) return value.toFixed(2).replace(/\.00$/, '');
  return value.toFixed(3);
}

/** `median (min–max)`, or just the median when every run agreed. */
export function cell(s: Spread | null | undefined): string {
  if (s === null || s === undefined || !Number.isFinite(s.median)) return '–';
  if (fmt(s.min) === fmt(s.max)) return fmt(s.median);
  return `${fmt(s.median)} (${fmt(s.min)}–${fmt(s.max)})`;
}

/** How many times better lamport-lock is than an anchor on this figure. */
function ratio(row: Row, ours: Spread | undefined, theirs: Spread | undefined): string {
  if (row.better === 'none' || ours === undefined || theirs === undefined) return '';
  const factor = row.better === 'lower' ? theirs.median / ours.median : ours.median / theirs.median;
  if (!Number.isFinite(factor) || factor <= 0) return '';
  return factor >= 1 ? `${fmt(factor)}× better` : `${fmt(1 / factor)}× worse`;
}

function mainTable(results: BenchResults): string[] {
  const present = systemNames.filter((n) => results.systems[n] !== undefined);
  const anchors = present.filter((n): n is Exclude<SystemName, 'lamport-lock'> => n !== 'lamport-lock');
  const hasOurs = results.systems['lamport-lock'] !== undefined;
  const head = ['', 'figure', ...present.map(systemTitle), ...(hasOurs ? anchors.map((a) => `lamport-lock vs ${a}`) : [])];
  const lines = [`| ${head.join(' | ')} |`, `|${head.map(() => '---').join('|')}|`];
  for (const row of rows) {
    const ours = results.systems['lamport-lock'];
    const values = present.map((n) => cell(pickOf(results, n, row)));
    const ratios = hasOurs ? anchors.map((a) => ratio(row, ours && row.pick(ours), pickOf(results, a, row))) : [];
    lines.push(`| (${row.scenario}) | ${row.label} | ${[...values, ...ratios].join(' | ')} |`);
  }
  return lines;
}

function pickOf(results: BenchResults, name: SystemName, row: Row): Spread | undefined {
  const figures = results.systems[name];
  return figures === undefined ? undefined : row.pick(figures);
}

function systemTitle(name: SystemName): string {
  if (name === 'lamport-lock') return 'lamport-lock (3 peers)';
  if (name === 'etcd') return 'etcd (3 members)';
  return 'redis (1 server)';
}

function linkCells(cost: LinkCost): string[] {
  return [cell(cost.messages), cell(cost.frames), cell(cost.bytes)];
}

function scalingTable(points: readonly ScalingPoint[]): string[] {
  if (points.length === 0) return ['(no lamport-lock cluster was measured)'];
  const lines = [
    '| peers | (a) acquire p50 ms | (a) acquire+release p50 ms | (a) acquire+release p99 ms | (c) acquire+release/s | ' +
      '(e) idle msgs/s | frames/s | bytes/s | (e) low load msgs/grant | frames/grant | bytes/grant | (e) high load msgs/grant | frames/grant | bytes/grant | 3(N-1) | 2(N-1) |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const p of points) {
    const cells = [
      String(p.peers), cell(p.a.acquireP50Ms), cell(p.a.cycleP50Ms), cell(p.a.cycleP99Ms), cell(p.c.opsPerS),
      fmt(p.linksIdlePerS.messages), fmt(p.linksIdlePerS.frames), fmt(p.linksIdlePerS.bytes),
      ...linkCells(p.linksLow), ...linkCells(p.linksHigh), String(3 * (p.peers - 1)), String(2 * (p.peers - 1)),
    ];
    lines.push(`| ${cells.join(' | ')} |`);
  }
  return lines;
}

function mb(bytes: number | null | undefined): string {
  return bytes === null || bytes === undefined ? '–' : (bytes / (1024 * 1024)).toFixed(1);
}

function rssRow(label: string, sample: RssSample): string {
  const values = Object.values(sample);
  return `| ${label} | ${Object.entries(sample).map(([id, v]) => `${id} ${mb(v)}`).join(', ')} | ${mb(maxOf(values))} |`;
}

/** Largest non-null value, or null. */
export function maxOf(values: readonly (number | null)[]): number | null {
  const known = values.filter((v): v is number => v !== null);
  return known.length === 0 ? null : Math.max(...known);
}

function memoryTable(m: MemoryFigures | null): string[] {
  if (m === null) return ['(not measured)'];
  const seen = m.waitersSeen === null ? 'not observable' : String(m.waitersSeen);
  return [
    '| state | RSS per peer (MB) | max (MB) |',
    '|---|---|---|',
    rssRow('fresh 3-peer cluster', m.baseline),
    rssRow(`after ${m.idleNames.toLocaleString('en-US')} distinct names acquired+released once (${fmt(m.idleNamesDurationMs / 1000)} s)`, m.afterIdleNames),
    rssRow(`${m.waitersOpened.toLocaleString('en-US')} requests waiting behind ${m.heldLocks} held locks (peer a sees ${seen}; ${m.waitersFailed} failed)`, m.whileWaiting),
    rssRow('after cancelling every waiter', m.afterCancel),
    '',
    ...waiterCostLines(m),
    ...m.notes.map((n) => `- ${n}`),
  ];
}

/** Growth per waiting request, and a labelled linear extrapolation when fewer than 100000 could be opened. */
function waiterCostLines(m: MemoryFigures): string[] {
  if (m.waitersOpened === 0) return [];
  const growth = Object.keys(m.whileWaiting).map((id) => {
    const before = m.afterIdleNames[id];
    const during = m.whileWaiting[id];
    return before === null || before === undefined || during === null || during === undefined ? null : during - before;
  });
  const maxGrowth = maxOf(growth);
  if (maxGrowth === null) return [];
  const perWaiter = maxGrowth / m.waitersOpened;
  const lines = [`- growth while waiting: ${mb(maxGrowth)} MB on the most loaded peer, ${fmt(perWaiter / 1024)} KB per waiting request (cluster-wide count)`];
  if (m.waitersOpened < 100_000) {
    const during = maxOf(Object.values(m.whileWaiting)) ?? 0;
    lines.push(`- linear EXTRAPOLATION (not a measurement) to 100,000 waiting requests: about ${mb(during + perWaiter * (100_000 - m.waitersOpened))} MB per peer`);
  }
  return lines;
}

/** The whole Markdown report. */
export function markdownReport(results: BenchResults, targetLines: readonly string[]): string {
  const m = results.meta;
  const lines = [
    `# lamport-lock benchmark (${m.mode}, ${m.startedAt})`,
    '',
    `Host: ${m.host.cpus} × ${m.host.cpuModel}, Node ${m.host.node}. Each figure is the median of ${m.sizes.runs} runs, (min–max) after it. ` +
      `Ratios compare medians; "better" means lower latency or higher throughput.`,
    '',
    ...mainTable(results),
    '',
    '## (d) scaling and (e) link cost per grant',
    '',
    'Link cost is the delta of `lamport_peer_{messages,frames,bytes}_sent_total` summed over the peers, divided by the grants of the run, heartbeats included. ' +
      'Idle = the cluster with no client, per second (2 s window before the runs). Low load = (a), one client; high load = (c), 64 workers.',
    '',
    ...scalingTable(results.scaling),
    '',
    '## (f) memory',
    '',
    ...memoryTable(results.memory),
    '',
    '## Targets of issue 6',
    '',
    ...targetLines,
    '',
    '## Clients and versions',
    '',
    ...Object.entries(m.clients).map(([name, note]) => `- ${name}: ${note}`),
    ...Object.entries(m.versions).map(([name, v]) => `- ${name} version: ${v}`),
    '',
    '## Notes',
    '',
    ...(results.notes.length === 0 ? ['- none'] : results.notes.map((n) => `- ${n}`)),
    '',
  ];
  return lines.join('\n');
}
