/**
 * The Markdown report: the CPU it ran on, (g) against the same-run floor (ratios first), the
 * side-by-side table with ratios to etcd and Redis, the scaling and link-cost table, memory,
 * and the targets of issues 6 and 15 with a verdict each.
 */
import type { LinkCost } from './link-cost.js';
import type { MemoryFigures, RssSample } from './memory.js';
import type { BenchResults, ScalingPoint } from './results.js';
import { floorSection } from './floor-report.js';
import { cell, fmt } from './format.js';
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
    '| peers | (a) acquire p50 ms | (a) acquire+release p50 ms | the floor\'s, same size | (a) acquire+release p99 ms | (c) acquire+release/s | ' +
      '(e) idle msgs/s | frames/s | bytes/s | (e) low load msgs/grant | frames/grant | bytes/grant | (e) high load msgs/grant | frames/grant | bytes/grant | 3(N-1) | 2(N-1) |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const p of points) {
    const cells = [
      String(p.peers), cell(p.a.acquireP50Ms), cell(p.a.cycleP50Ms), cell(p.floorA?.cycleP50Ms), cell(p.a.cycleP99Ms), cell(p.c.opsPerS),
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

/** The head: the CPU first, since every absolute figure below holds on it only. */
function head(results: BenchResults): string[] {
  const m = results.meta;
  return [
    `# lamport-lock benchmark (${m.mode}, ${m.startedAt})`,
    '',
    `CPU: ${m.host.cpu}; ${m.host.platform}, Node ${m.host.node}. Every process, the load generator included, ran on this host: ` +
      'the ratios carry to another host, the absolute figures do not.',
    '',
  ];
}

/** (g) leads the lamport-lock figures: the ratios against the same-run floor, then absolute figures. */
function floorPart(results: BenchResults): string[] {
  return [
    '## (g) lamport-lock against the floor, same run: peer CPU per operation',
    '',
    ...(results.floor === null ? ['(not run: --no-floor, lamport-lock not selected, or the part failed; see the notes)'] : floorSection(results.floor)),
    '',
  ];
}

/** The whole Markdown report. */
export function markdownReport(results: BenchResults, targetLines: readonly string[]): string {
  const m = results.meta;
  const lines = [
    ...head(results),
    ...floorPart(results),
    '## (a), (b), (c) against etcd and Redis',
    '',
    `Each figure is the median of ${m.sizes.runs} runs, (min–max) after it. Ratios compare medians; "better" means lower latency or higher throughput.`,
    '',
    ...mainTable(results),
    '',
    '## (d) scaling and (e) link cost per grant',
    '',
    'Link cost is the delta of `lamport_peer_{messages,frames,bytes}_sent_total` summed over the peers, divided by the grants of the run. Heartbeats and their echoes are not in these counters (each peer sends one to every other peer each heartbeat_ms, 5 a second by default), so an idle cluster shows 0. ' +
      'Idle = the cluster with no client, per second (2 s window before the runs). Low load = (a), one client; high load = (c), 64 workers. ' +
      '"The floor\'s, same size": (a) on the floor of bench/floor-peer.ts with as many processes (the message pattern without the algorithm, no heartbeats), run alone once the cluster stopped: how far the bare pattern scales on this CPU.',
    '',
    ...scalingTable(results.scaling),
    '',
    '## (f) memory',
    '',
    ...memoryTable(results.memory),
    '',
    '## Targets of issues 6 and 15',
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
