/**
 * `latest.svg`: four bar panels, latency and throughput of lamport-lock against etcd and
 * Redis, each bar the median with a min–max whisker. Hand-written SVG, no dependency.
 */
import { fmt } from './format.js';
import type { BenchResults } from './results.js';
import type { Spread } from './stats.js';
import type { SystemFigures } from './suite.js';
import { systemNames } from './systems/types.js';
import type { SystemName } from './systems/types.js';

interface Panel {
  readonly title: string;
  readonly pick: (f: SystemFigures) => Spread;
}

const panels: readonly Panel[] = [
  { title: '(a) acquire+release p50, ms (lower is better)', pick: (f) => f.a.cycleP50Ms },
  { title: '(b) hot-lock wait p50, ms (lower is better)', pick: (f) => f.b.waitP50Ms },
  { title: '(b) real handoffs/s, 8 clients (higher is better)', pick: (f) => f.b.realHandoffsPerS },
  { title: '(c) acquire+release/s, 1000 names (higher is better)', pick: (f) => f.c.opsPerS },
];

const colors: Readonly<Record<SystemName, string>> = { 'lamport-lock': '#2b6cb0', etcd: '#d69e2e', redis: '#c53030' };
const panelWidth = 300;
const panelHeight = 260;
const plotTop = 40;
const plotBottom = 220;

function escapeXml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

function panelSvg(panel: Panel, results: BenchResults, index: number): string {
  const present = systemNames.filter((n) => results.systems[n] !== undefined);
  const spreads = present.map((n) => {
    const figures = results.systems[n];
    return figures === undefined ? null : panel.pick(figures);
  });
  const top = Math.max(1e-9, ...spreads.map((s) => (s === null || !Number.isFinite(s.max) ? 0 : s.max)));
  const scale = (v: number): number => ((plotBottom - plotTop) * v) / top;
  const x0 = index * panelWidth;
  const barWidth = 60;
  const parts = [`<text x="${x0 + panelWidth / 2}" y="20" text-anchor="middle" font-size="11">${escapeXml(panel.title)}</text>`];
  parts.push(`<line x1="${x0 + 20}" y1="${plotBottom}" x2="${x0 + panelWidth - 20}" y2="${plotBottom}" stroke="#444"/>`);
  present.forEach((name, i) => {
    const s = spreads[i];
    const bx = x0 + 30 + i * (barWidth + 25);
    parts.push(`<text x="${bx + barWidth / 2}" y="${plotBottom + 16}" text-anchor="middle" font-size="11">${name}</text>`);
    if (s === null || s === undefined || !Number.isFinite(s.median)) return;
    const h = scale(s.median);
    parts.push(`<rect x="${bx}" y="${plotBottom - h}" width="${barWidth}" height="${h}" fill="${colors[name]}"/>`);
    const cx = bx + barWidth / 2;
    parts.push(`<line x1="${cx}" y1="${plotBottom - scale(s.min)}" x2="${cx}" y2="${plotBottom - scale(s.max)}" stroke="#000"/>`);
    parts.push(`<text x="${cx}" y="${plotBottom - scale(s.max) - 5}" text-anchor="middle" font-size="11">${fmt(s.median)}</text>`);
  });
  return parts.join('\n  ');
}

/** The chart as an SVG document. */
export function svgChart(results: BenchResults): string {
  const width = panelWidth * panels.length;
  const height = panelHeight + 20;
  const caption = `lamport-lock (3 peers) vs etcd (3 members) vs Redis (1 server), ${results.meta.mode} run ${results.meta.startedAt}; median of ${results.meta.sizes.runs} runs, whisker = min–max`;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif">`,
    `  <rect width="100%" height="100%" fill="#fff"/>`,
    ...panels.map((p, i) => `  ${panelSvg(p, results, i)}`),
    `  <text x="10" y="${height - 8}" font-size="11" fill="#555">${escapeXml(caption)}</text>`,
    '</svg>',
    '',
  ].join('\n');
}
