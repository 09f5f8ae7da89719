/**
 * `npm run mutate -- [--seeds N] [--seed S] [--net fifo|link|both] [--multi P] [--meta P]
 * [--files GLOBS] [--max-mutants M] [--jobs J]` (`--help` lists them): a mutation check beside the planted bugs of test/sim/mutants.ts
 * (issue 39), which test/sim/planted.ts patches into a copy of dist/ the same way. It makes
 * small textual mutations of the BUILT core and runtime (dist/src/core and dist/src/runtime by
 * default): a comparison's boundary (< and <=, > and >=), an equality negated (=== and !==),
 * an integer literal off by one, one side of an && or || dropped, true and false swapped. Each mutant is written, alone, into a copy of dist/ in a temporary
 * directory, and a child process runs the fixed budget of seeds against that copy (N seeds
 * from S on the FIFO network, N from S + 100000 on the link network, and N with all-or-nothing
 * requests when --multi is given, N with holders announcing meta when --meta is), stopping at the first violation; before the seeds, the
 * protocol's transcripts (test/core/testdata/protocol), which take a second and pin each
 * rule's corner cases, stopping at the first that differs. It prints one line per
 * mutant, `caught` or `SURVIVED`, with the file and line of the built JS and of the
 * TypeScript source, then a summary line; the exit code is 0 only when nothing survived.
 * Calls that only log or assert are not mutated.
 */
import { spawn } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { tmpdir } from 'node:os';
import { join, matchesGlob, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import ts from 'typescript';

/** One mutation of one built file. */
export interface Mutant {
  readonly file: string;
  readonly line: number;
  readonly start: number;
  readonly end: number;
  readonly from: string;
  readonly to: string;
}

const swaps: Readonly<Partial<Record<ts.SyntaxKind, string>>> = {
  [ts.SyntaxKind.LessThanToken]: '<=',
  [ts.SyntaxKind.LessThanEqualsToken]: '<',
  [ts.SyntaxKind.GreaterThanToken]: '>=',
  [ts.SyntaxKind.GreaterThanEqualsToken]: '>',
  [ts.SyntaxKind.EqualsEqualsEqualsToken]: '!==',
  [ts.SyntaxKind.ExclamationEqualsEqualsToken]: '===',
};

/**
 * A call that only logs, or asserts: its arguments are not worth mutating. An assertion's
 * condition guards against a bug elsewhere (a caller that breaks its contract), which the seeds
 * never make on purpose, so its slips survive by construction and only bury the survivors that
 * matter.
 */
function isLogCall(node: ts.Node, sf: ts.SourceFile): boolean {
  return ts.isCallExpression(node) && /(^|\.|#)log(\[|\.|$)|\.(trace|debug|info|warn|error|fatal)$|^assert$/.test(node.expression.getText(sf));
}

/** Every mutation of `text` (a built JS file), in source order. */
export function mutantsOf(file: string, text: string): Mutant[] {
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.JS);
  const out: Mutant[] = [];
  const add = (node: ts.Node, start: number, end: number, to: string): void => {
    const from = text.slice(start, end);
    if (from !== to) out.push({ file, line: sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1, start, end, from, to });
  };
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) || ts.isExportDeclaration(node) || isLogCall(node, sf)) return;
    const own = node.getText(sf);
    if (ts.isBinaryExpression(node)) {
      const op = node.operatorToken;
      const swap = swaps[op.kind];
      if (swap !== undefined) add(op, op.getStart(sf), op.getEnd(), swap);
      if (op.kind === ts.SyntaxKind.AmpersandAmpersandToken || op.kind === ts.SyntaxKind.BarBarToken) {
        // Dropping a side keeps the other: `a && b` becomes `a` or `b`.
        add(node, node.getStart(sf), node.getEnd(), node.left.getText(sf));
        add(node, node.getStart(sf), node.getEnd(), node.right.getText(sf));
      }
    }
    if (ts.isNumericLiteral(node) && /^\d+$/.test(own)) {
      const n = Number(own);
      add(node, node.getStart(sf), node.getEnd(), String(n + 1));
      if (n > 0) add(node, node.getStart(sf), node.getEnd(), String(n - 1));
    }
    if (node.kind === ts.SyntaxKind.TrueKeyword) add(node, node.getStart(sf), node.getEnd(), 'false');
    if (node.kind === ts.SyntaxKind.FalseKeyword) add(node, node.getStart(sf), node.getEnd(), 'true');
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return out;
}

/** `count` of `all`, spread evenly over them (all of them when there are no more). */
export function spread<T>(all: readonly T[], count: number): T[] {
  if (all.length <= count) return [...all];
  return Array.from({ length: count }, (_, i) => all[Math.floor((i * all.length) / count)] as T);
}

interface Options {
  readonly seeds: number;
  readonly seed: number;
  readonly nets: readonly ('fifo' | 'link')[];
  readonly multi: number | null;
  readonly meta: number | null;
  readonly files: readonly string[];
  readonly maxMutants: number;
  readonly jobs: number;
}

const usage = `usage: npm run mutate -- [options]   (node dist/test/sim/mutate.js [options])

Mutates the built core and runtime one small change at a time, in a copy of dist/, and runs
the protocol's transcripts, then a budget of simulator seeds, against each mutant.

options:
  --files GLOB,GLOB   built files to mutate, relative to dist/ (default src/core/*.js,src/runtime/*.js)
  --max-mutants M     at most M mutants, spread evenly over all of them (default 40)
  --seeds N           seeds per network for each mutant (default 100)
  --seed S            first seed (default 1; the link network runs from S + 100000)
  --net fifo|link|both  the networks to run (default both)
  --multi P           also N seeds with a share P in (0, 1] of all-or-nothing requests (from S + 400000)
  --meta P            also N seeds with a share P in (0, 1] of holders announcing meta (from S + 200000)
  --jobs J            mutants run at once, each in its own child process and copy of dist/ (default 1)
  --help              this text

Prints caught or SURVIVED per mutant; exit code 0 when none survived, 1 when some did, 2 on bad options.`;

/** Bad options: the sentence, and the exit code 2 (main prints the usage beneath). */
class UsageError extends Error {}

function options(argv: string[]): Options | 'help' {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        seeds: { type: 'string', default: '100' }, seed: { type: 'string', default: '1' }, net: { type: 'string', default: 'both' },
        multi: { type: 'string' }, meta: { type: 'string' }, files: { type: 'string', default: 'src/core/*.js,src/runtime/*.js' },
        'max-mutants': { type: 'string', default: '40' }, jobs: { type: 'string', default: '1' }, help: { type: 'boolean', default: false },
      },
    }));
  } catch (err) {
    // parseArgs names the option in its message (unknown option, missing value, stray argument).
    throw new UsageError(err instanceof Error ? err.message : String(err));
  }
  if (values.help) return 'help';
  const int = (name: string, v: string, min: number): number => {
    const n = Number(v);
    if (!/^\d+$/.test(v) || !Number.isSafeInteger(n) || n < min) throw new UsageError(`--${name} takes an integer >= ${min}, not ${JSON.stringify(v)}`);
    return n;
  };
  const share = (name: string, v: string | undefined): number | null => {
    if (v === undefined) return null;
    const n = Number(v);
    if (v.trim() === '' || !(n > 0 && n <= 1)) throw new UsageError(`--${name} takes a share in (0, 1], not ${JSON.stringify(v)}`);
    return n;
  };
  const net = values.net;
  if (net !== 'fifo' && net !== 'link' && net !== 'both') throw new UsageError(`--net takes fifo, link or both, not ${JSON.stringify(net)}`);
  const files = values.files.split(',').filter((f) => f !== '');
  if (files.length === 0) throw new UsageError('--files takes one or more globs, comma-separated');
  return {
    seeds: int('seeds', values.seeds, 1), seed: int('seed', values.seed, 0), nets: net === 'both' ? ['fifo', 'link'] : [net],
    multi: share('multi', values.multi), meta: share('meta', values.meta),
    files, maxMutants: int('max-mutants', values['max-mutants'], 1), jobs: int('jobs', values.jobs, 1),
  };
}

/** The worker: runs the budget against the dist/ it was loaded from; prints CAUGHT or SURVIVED. */
/** The protocol's transcripts (test/core/testdata/protocol), run against the mutated build: the first that differs, or null. */
async function transcriptDiffers(dir: string): Promise<string | null> {
  if (!existsSync(dir)) return null;
  const { ProtocolScript, parseScript } = await import('../core/protocol-script.js');
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.txt')).sort()) {
    const script = new ProtocolScript();
    for (const b of parseScript(readFileSync(join(dir, file), 'utf8'))) {
      let actual: string[];
      try {
        actual = script.run(b.line);
      } catch (err) {
        return `transcript ${file}:${b.lineNo} threw: ${err instanceof Error ? err.message.slice(0, 100) : String(err)}`;
      }
      if (actual.join('\n') !== b.expected.join('\n')) return `transcript ${file}:${b.lineNo} (${b.line.slice(0, 60)})`;
    }
  }
  return null;
}

async function worker(o: Options): Promise<void> {
  // The transcripts first: they take a second, and pin each rule's corner cases.
  const differs = await transcriptDiffers(join(fileURLToPath(new URL('.', import.meta.url)), '..', '..', '..', 'testdata', 'protocol'));
  if (differs !== null) {
    console.log(`CAUGHT ${differs}`);
    return;
  }
  const { runSeed } = await import('./run.js');
  type Run = { net: 'fifo' | 'link'; first: number; multi?: number; meta?: number };
  const runs: Run[] = o.nets.map((net) => ({ net, first: net === 'fifo' ? o.seed : o.seed + 100_000 }));
  if (o.multi !== null) runs.push({ net: 'fifo', first: o.seed + 400_000, multi: o.multi });
  if (o.meta !== null) runs.push({ net: 'fifo', first: o.seed + 200_000, meta: o.meta });
  for (const { net, first, multi, meta } of runs) {
    for (let seed = first; seed < first + o.seeds; seed++) {
      const r = runSeed({ seed, net, ...(multi === undefined ? {} : { multiChance: multi }), ...(meta === undefined ? {} : { proclaimChance: meta }) });
      const v = r.violations[0];
      if (v !== undefined) {
        const flags = `${multi === undefined ? '' : ` --multi ${multi}`}${meta === undefined ? '' : ` --meta ${meta}`}`;
        console.log(`CAUGHT seed ${seed} --net ${net}${flags}: ${v.split('\n')[0]?.slice(0, 160) ?? ''}`);
        return;
      }
    }
  }
  console.log('SURVIVED');
}

/** A copy of dist/ a child can load and one mutant at a time can change. */
function makeCopy(dist: string, root: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'lamport-mutate-'));
  cpSync(join(dist, 'src'), join(dir, 'dist', 'src'), { recursive: true });
  cpSync(join(dist, 'test'), join(dir, 'dist', 'test'), { recursive: true });
  cpSync(join(root, 'package.json'), join(dir, 'package.json'));
  symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'));
  const transcripts = join(root, 'test', 'core', 'testdata', 'protocol');
  if (existsSync(transcripts)) cpSync(transcripts, join(dir, 'testdata', 'protocol'), { recursive: true });
  return dir;
}

function runChild(copy: string, argv: readonly string[], timeoutMs: number): Promise<{ verdict: 'caught' | 'SURVIVED'; detail: string }> {
  return new Promise((resolve) => {
    const script = join(copy, 'dist', 'test', 'sim', 'mutate.js');
    const child = spawn(process.execPath, [script, '--worker', ...argv], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (out += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      const caught = /^CAUGHT (.*)$/m.exec(out);
      if (caught !== null) resolve({ verdict: 'caught', detail: caught[1] ?? '' });
      else if (/^SURVIVED$/m.test(out)) resolve({ verdict: 'SURVIVED', detail: '' });
      else if (code === null) resolve({ verdict: 'caught', detail: `timed out after ${timeoutMs} ms (a hang)` });
      else resolve({ verdict: 'caught', detail: `the child failed (exit ${code}): ${out.trim().split('\n').slice(-1)[0]?.slice(0, 160) ?? ''}` });
    });
  });
}

/** The TypeScript line a built JS line came from (its source map), for the report. */
function sourceLine(jsPath: string, line: number, text: string, start: number): string {
  const mapPath = `${jsPath}.map`;
  if (!existsSync(mapPath)) return '';
  const map = new SourceMap(JSON.parse(readFileSync(mapPath, 'utf8')) as ConstructorParameters<typeof SourceMap>[0]);
  const col = start - text.lastIndexOf('\n', start - 1) - 1;
  const e = map.findEntry(line - 1, col) as { originalSource?: string; originalLine?: number };
  return e.originalSource === undefined || e.originalLine === undefined ? '' : ` (${e.originalSource.replace(/^(\.\.\/)+/, '')}:${e.originalLine + 1})`;
}

async function parent(o: Options, argv: string[]): Promise<number> {
  const here = fileURLToPath(new URL('.', import.meta.url));
  const dist = join(here, '..', '..');
  const root = join(dist, '..');
  const all: Mutant[] = [];
  const texts = new Map<string, string>();
  for (const entry of ts.sys.readDirectory(join(dist, 'src'), ['.js'], undefined, undefined)) {
    const rel = relative(dist, entry);
    if (!o.files.some((g) => matchesGlob(rel, g))) continue;
    const text = readFileSync(entry, 'utf8');
    texts.set(rel, text);
    all.push(...mutantsOf(rel, text));
  }
  const chosen = spread(all, o.maxMutants);
  const copies = Array.from({ length: Math.min(o.jobs, Math.max(1, chosen.length)) }, () => makeCopy(dist, root));
  try {
    const t0 = Date.now();
    const base = await runChild(copies[0] ?? '', argv, 3_600_000);
    if (base.verdict !== 'SURVIVED') {
      console.log(`mutate: the unmutated build fails the budget (${base.detail}): fix that first`);
      return 2;
    }
    const timeoutMs = 3 * (Date.now() - t0) + 20_000;
    console.log(`mutate: ${chosen.length} of ${all.length} mutants in ${texts.size} file(s); budget ${o.seeds} seeds x ${o.nets.join('+')}${o.multi === null ? '' : ` + multi ${o.multi}`}${o.meta === null ? '' : ` + meta ${o.meta}`}; unmutated build clean in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    const survivors: string[] = [];
    let next = 0;
    const slot = async (copy: string): Promise<void> => {
      for (let i = next++; i < chosen.length; i = next++) {
        const m = chosen[i] as Mutant;
        const text = texts.get(m.file) ?? '';
        const target = join(copy, 'dist', m.file);
        writeFileSync(target, text.slice(0, m.start) + m.to + text.slice(m.end));
        const r = await runChild(copy, argv, timeoutMs);
        writeFileSync(target, text);
        const where = `${m.file}:${m.line}${sourceLine(join(dist, m.file), m.line, text, m.start)}`;
        const line = `${r.verdict.padEnd(8)} ${where}  \`${m.from.replace(/\s+/g, ' ').slice(0, 60)}\` -> \`${m.to.replace(/\s+/g, ' ').slice(0, 60)}\`${r.detail === '' ? '' : `  [${r.detail}]`}`;
        console.log(line);
        if (r.verdict === 'SURVIVED') survivors.push(line);
      }
    };
    await Promise.all(copies.map(slot));
    console.log(`mutate: ${chosen.length} mutants, ${chosen.length - survivors.length} caught, ${survivors.length} survived`);
    return survivors.length === 0 ? 0 : 1;
  } finally {
    for (const c of copies) rmSync(c, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const isWorker = argv[0] === '--worker';
  const rest = isWorker ? argv.slice(1) : argv;
  let o: Options | 'help';
  try {
    o = options(rest);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    console.error(`mutate: ${err.message}\n\n${usage}`);
    process.exitCode = 2;
    return;
  }
  if (o === 'help') console.log(usage);
  else if (isWorker) await worker(o);
  else process.exitCode = await parent(o, rest);
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) await main();
