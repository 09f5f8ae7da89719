/**
 * Writes the OpenAPI description of the local HTTP API (src/http/openapi.ts) to a file:
 * `npm run build` writes dist/openapi.json, which the package ships (package.json `files`,
 * `exports["./openapi.json"]`) for clients in other languages.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { openApiSpec } from '../http/openapi.js';

const out = process.argv[2];
if (out === undefined) {
  process.stderr.write('usage: write-openapi FILE\n');
  process.exit(64);
}
mkdirSync(dirname(out), { recursive: true });
writeFileSync(out, `${JSON.stringify(openApiSpec, null, 2)}\n`);
