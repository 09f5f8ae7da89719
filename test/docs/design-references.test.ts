/**
 * Every code reference in docs/design.md, docs/architecture.md and docs/style.md points into
 * the repo: a link's target exists, a linked name occurs in the file it links to, a link to a
 * section of a document names one of its headings, a path in backticks exists, and
 * `limits.x` names a limit. Code comments cite these documents by section, and
 * architecture.md walks through the code by file and function name, so a rename that leaves
 * them pointing at nothing must fail here rather than mislead a newcomer.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { limits } from '../../src/limits.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const checkedDocs = ['docs/design.md', 'docs/findings.md', 'docs/architecture.md', 'docs/style.md'];
const repoPath = /^(src|bin|test|bench|examples|deploy|docs)\/[\w./-]*$/;

/** The identifiers a linked code span names: `Machine.#onPacket` -> Machine, onPacket. */
function namesOf(span: string): string[] {
  return span
    .replace(/\(.*\)$/, '')
    .split('.')
    .map((part) => part.replace(/^#/, ''))
    .filter((part) => /^[A-Za-z_$][\w$]*$/.test(part));
}

function mentions(source: string, name: string): boolean {
  return new RegExp(`(^|[^\\w$])#?${name.replace(/\$/g, '\\$')}([^\\w$]|$)`).test(source);
}

/** The anchors GitHub gives the headings of a markdown document (duplicates aside). */
function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (line.startsWith('```')) fenced = !fenced;
    const heading = fenced ? null : /^#{1,6}\s+(.+)$/.exec(line)?.[1];
    if (heading == null) continue;
    anchors.add(heading.trim().toLowerCase().replace(/[^\w\- ]/g, '').replace(/ /g, '-'));
  }
  return anchors;
}

/** Problems with the references of one document at `docPath` (repo-relative). */
function referenceProblems(docPath: string, text: string): string[] {
  const problems: string[] = [];
  const docDir = dirname(join(root, docPath));
  for (const m of text.matchAll(/\[([^\]]+)\]\(([^)\s]+)\)/g)) {
    const [, label = '', target = ''] = m;
    if (/^[a-z]+:/.test(target)) continue;
    const file = target.startsWith('#') ? join(root, docPath) : resolve(docDir, target.replace(/#.*$/, ''));
    if (!existsSync(file)) {
      problems.push(`${docPath}: link to ${target}, which does not exist`);
      continue;
    }
    const anchor = /#(.+)$/.exec(target)?.[1];
    if (anchor !== undefined && file.endsWith('.md') && !anchorsOf(readFileSync(file, 'utf8')).has(anchor)) {
      problems.push(`${docPath}: link to ${target}, which has no such heading`);
    }
    const span = /^`([^`]+)`$/.exec(label)?.[1];
    if (span === undefined || span.includes('/') || !file.endsWith('.ts')) continue;
    const source = readFileSync(file, 'utf8');
    for (const name of namesOf(span)) {
      if (!mentions(source, name)) problems.push(`${docPath}: \`${span}\` links to ${target}, which has no ${name}`);
    }
  }
  for (const m of text.matchAll(/`([^`\s]+)`/g)) {
    const span = m[1] ?? '';
    if (repoPath.test(span) && !existsSync(join(root, span))) problems.push(`${docPath}: \`${span}\` does not exist`);
    const limit = /^limits\.(\w+)$/.exec(span)?.[1];
    if (limit !== undefined && !Object.hasOwn(limits, limit)) problems.push(`${docPath}: \`${span}\` is not a limit in src/limits.ts`);
  }
  return problems;
}

/** The finding ids (`finding F12`) a document cites that docs/findings.md does not define (`**F12.`). */
function unknownFindings(text: string, findings: string): string[] {
  const defined = new Set([...findings.matchAll(/^\*\*(F\d+)\./gm)].map((m) => m[1]));
  return [...text.matchAll(/\bfindings? (F\d+)\b/g)].map((m) => m[1] ?? '').filter((id) => !defined.has(id));
}

describe('design documents', () => {
  it('cites only findings that docs/findings.md defines', () => {
    const findings = readFileSync(join(root, 'docs/findings.md'), 'utf8');
    expect(unknownFindings(readFileSync(join(root, 'docs/design.md'), 'utf8'), findings)).toEqual([]);
    expect(unknownFindings('finding F1 and finding F999', findings)).toEqual(['F999']);
  });


  it.each(checkedDocs)('%s refers only to files and names that exist', (docPath) => {
    const text = readFileSync(join(root, docPath), 'utf8');
    expect(referenceProblems(docPath, text)).toEqual([]);
  });

  it('finds a missing file, a missing name, a missing heading, a missing path and an unknown limit (the check can fail)', () => {
    const planted = [
      '[`x`](../src/core/no-such-file.ts)',
      '[`Machine.noSuchMethod`](../src/core/machine.ts)',
      '[section 2](design.md#2-no-such-heading)',
      '`src/core/gone.ts`',
      '`limits.noSuchLimit`',
      '[`Machine.step`](../src/core/machine.ts) and `src/core/machine.ts` and `limits.frameBytesMax` are fine',
      '[section 2](design.md#2-layers) and [section 6](design.md#6-local-http-api-bound-to-127001-by-default) are fine',
    ].join('\n');
    expect(referenceProblems('docs/design.md', planted)).toEqual([
      'docs/design.md: link to ../src/core/no-such-file.ts, which does not exist',
      'docs/design.md: `Machine.noSuchMethod` links to ../src/core/machine.ts, which has no noSuchMethod',
      'docs/design.md: link to design.md#2-no-such-heading, which has no such heading',
      'docs/design.md: `src/core/gone.ts` does not exist',
      'docs/design.md: `limits.noSuchLimit` is not a limit in src/limits.ts',
    ]);
  });
});
