/**
 * The peer protocol's rules as transcripts (test/core/testdata/protocol/*.txt, format in
 * protocol-script.ts): each file drives one PeerProtocol through a rule's corner cases and
 * holds the outputs it must answer. `UPDATE_TRANSCRIPTS=1` rewrites them for review.
 */
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ProtocolScript, formatScript, parseScript } from './protocol-script.js';

const dir = join(import.meta.dirname, 'testdata', 'protocol');
const files = readdirSync(dir).filter((f) => f.endsWith('.txt')).sort();

describe('peer protocol transcripts (test/core/testdata/protocol)', () => {
  it('has a transcript for each rule', () => {
    expect(files.length).toBeGreaterThanOrEqual(8);
  });

  for (const file of files) {
    it(file, () => {
      const path = join(dir, file);
      const text = readFileSync(path, 'utf8');
      const blocks = parseScript(text);
      expect(blocks.length).toBeGreaterThan(1);
      const script = new ProtocolScript();
      const actual = blocks.map((b) => script.run(b.line));
      if (process.env['UPDATE_TRANSCRIPTS'] === '1') {
        writeFileSync(path, formatScript(text, actual));
        return;
      }
      blocks.forEach((b, i) => {
        expect(actual[i], `${file}:${b.lineNo}: ${b.line}`).toEqual(b.expected);
      });
    });
  }
});
