/**
 * Summarises the V8 CPU profiles `npm run bench:floor -- --profile DIR` writes (issue 15: keep
 * the profiles' method in bench/ so anyone can redo it): for every system under DIR
 * (lamport-lock, floor), the share of non-idle CPU time by function (self), by file, by
 * where it is spent (this project's code, Node's internals, libraries, the write system
 * calls, the garbage collector), and the functions' inclusive time without the writes and the
 * collector (what a cut on the path could save).
 *
 * node dist/bench/profile-summary.js DIR [--top 40]
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

interface CallFrame {
  readonly functionName: string;
  readonly url: string;
  readonly lineNumber: number;
}

interface ProfileNode {
  readonly id: number;
  readonly callFrame: CallFrame;
  readonly children?: readonly number[];
}

interface CpuProfile {
  readonly nodes: readonly ProfileNode[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

/** Time of one system's profiles, in microseconds, by key. */
interface Totals {
  total: number;
  readonly self: Map<string, number>;
  readonly byFile: Map<string, number>;
  readonly byPlace: Map<string, number>;
  readonly inclusiveNoIo: Map<string, number>;
}

/** Leaves that are the kernel's write or the collector, not JavaScript on the path. */
const notJs = new Set(['writev', 'writeBuffer', 'writeUtf8String', 'writeLatin1String', '(garbage collector)']);

function fileOf(url: string): string {
  const m = /(node_modules\/[^/]+\/.*|dist\/.*)$/.exec(url);
  return m?.[1] ?? url.replace(/^file:\/\//, '');
}

function keyOf(cf: CallFrame): string {
  return `${cf.functionName || '(anonymous)'} ${fileOf(cf.url)}:${cf.lineNumber + 1}`;
}

function placeOf(cf: CallFrame): string {
  if (notJs.has(cf.functionName)) return cf.functionName === '(garbage collector)' ? 'garbage collector' : 'write system calls';
  if (cf.url.includes('/node_modules/')) return 'libraries (node_modules)';
  if (cf.url.startsWith('node:')) return 'Node internals (node:*)';
  if (cf.url.includes('/dist/')) return 'this project (dist/)';
  return `other: ${cf.functionName}`;
}

function add(map: Map<string, number>, key: string, us: number): void {
  map.set(key, (map.get(key) ?? 0) + us);
}

function addProfile(t: Totals, p: CpuProfile): void {
  const nodes = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const spent = new Map<number, number>();
  p.samples.forEach((id, i) => spent.set(id, (spent.get(id) ?? 0) + (p.timeDeltas[i] ?? 0)));
  for (const [id, us] of spent) {
    const leaf = nodes.get(id)?.callFrame;
    if (leaf === undefined || leaf.functionName === '(idle)') continue;
    t.total += us;
    add(t.self, keyOf(leaf), us);
    add(t.byFile, fileOf(leaf.url) || leaf.functionName, us);
    add(t.byPlace, placeOf(leaf), us);
    if (notJs.has(leaf.functionName)) continue;
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const cf = nodes.get(cur)?.callFrame;
      if (cf === undefined) break;
      const key = keyOf(cf);
      if (seen.has(key)) continue;
      seen.add(key);
      add(t.inclusiveNoIo, key, us);
    }
  }
}

function table(title: string, map: Map<string, number>, total: number, top: number): string[] {
  const rows = [...map].sort((a, b) => b[1] - a[1]).slice(0, top);
  return [`${title}:`, ...rows.map(([k, us]) => `${((100 * us) / total).toFixed(2).padStart(7)} %  ${k}`), ''];
}

function summarise(dir: string, top: number): string[] {
  const files = readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'));
  if (files.length === 0) return [`${dir}: no .cpuprofile files`, ''];
  const t: Totals = { total: 0, self: new Map(), byFile: new Map(), byPlace: new Map(), inclusiveNoIo: new Map() };
  for (const f of files) addProfile(t, JSON.parse(readFileSync(join(dir, f), 'utf8')) as CpuProfile);
  return [
    `== ${dir}: ${files.length} profiles, ${(t.total / 1e6).toFixed(1)} s of non-idle CPU; shares of it ==`,
    '',
    ...table('where', t.byPlace, t.total, 10),
    ...table('self time by function', t.self, t.total, top),
    ...table('self time by file', t.byFile, t.total, top),
    ...table('inclusive time without the writes and the collector', t.inclusiveNoIo, t.total, top),
  ];
}

function main(): void {
  const dir = process.argv[2];
  const topAt = process.argv.indexOf('--top');
  const top = topAt < 0 ? 40 : Number(process.argv[topAt + 1]);
  if (dir === undefined || dir.startsWith('--') || !Number.isInteger(top) || top < 1) {
    process.stderr.write('usage: node dist/bench/profile-summary.js DIR [--top N]   (DIR from npm run bench:floor -- --profile DIR)\n');
    process.exit(2);
  }
  const systems = readdirSync(dir).filter((d) => statSync(join(dir, d)).isDirectory());
  const dirs = systems.length > 0 ? systems.map((d) => join(dir, d)) : [dir];
  process.stdout.write(`${dirs.flatMap((d) => summarise(d, top)).join('\n')}\n`);
}

main();
