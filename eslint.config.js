// ESLint flat config. The one rule that matters most: src/core/ and the pure link stay pure,
// so the deterministic simulator can run the real protocol code (docs/style.md convention 1).
// The part boundaries of docs/architecture.md section 1 are kept here too: what each part
// may not import, as a regex on the import path (relative imports start with ../).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const pureImports = [
  { group: ['node:*', 'ws', 'pino', 'msgpackr', 'prom-client', 'yargs'], message: 'src/core is pure: no I/O modules.' },
];

/** A pattern forbidding imports of the sibling parts `parts` to the files of part `from`. */
function partBoundary(from, parts, why) {
  return { regex: `^(\\.\\./)+(src/)?(${parts.join('|')})(/|$)`, message: `src/${from} imports nothing of src/${parts.join(', src/')}: ${why} (docs/architecture.md section 1).` };
}
const coreBoundary = partBoundary('core', ['runtime', 'transport', 'http', 'client', 'tools'], 'the protocol core depends on no other part');
const transportBoundary = partBoundary('transport', ['runtime', 'http', 'client', 'tools'], 'the links know payloads only as an opaque type with a guard');
const runtimeBoundary = partBoundary('runtime', ['http', 'client', 'tools'], 'the HTTP API sits on the runtime, not under it; src/server.ts joins them');
const clientBoundary = partBoundary('client', ['runtime', 'core', 'transport', 'http', 'tools'], 'the client speaks to its peer over HTTP only');
const pureGlobals = [
  { name: 'Date', message: 'src/core is pure: time is an argument.' },
  { name: 'setTimeout', message: 'src/core is pure: the runtime owns timers.' },
  { name: 'setInterval', message: 'src/core is pure: the runtime owns timers.' },
  { name: 'setImmediate', message: 'src/core is pure: the runtime owns timers.' },
  { name: 'clearTimeout', message: 'src/core is pure: the runtime owns timers.' },
  { name: 'clearInterval', message: 'src/core is pure: the runtime owns timers.' },
  { name: 'performance', message: 'src/core is pure: time is an argument.' },
  { name: 'process', message: 'src/core is pure: no process access.' },
];

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'bench/results/**', 'coverage/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/consistent-type-exports': 'off',
      'no-constant-condition': ['error', { checkLoops: false }],
    },
  },
  // One config per file set, each with the whole list: a later config's options for a rule
  // replace an earlier one's, they do not add to them.
  {
    files: ['src/transport/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [transportBoundary] }] },
  },
  {
    files: ['src/runtime/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [runtimeBoundary] }] },
  },
  {
    files: ['src/client/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [clientBoundary] }] },
  },
  {
    files: ['src/core/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [...pureImports, coreBoundary] }] },
  },
  {
    files: ['src/transport/link.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [...pureImports, transportBoundary] }] },
  },
  {
    files: ['src/core/**/*.ts', 'src/transport/link.ts'],
    rules: {
      'no-restricted-globals': ['error', ...pureGlobals],
      'no-restricted-properties': ['error', { object: 'Math', property: 'random', message: 'src/core is pure: randomness is injected.' }],
    },
  },
  // The house limits of docs/style.md: functions of at most 70 lines, lines of at most 200
  // characters (strings, template literals, regexes and URLs aside: a sentence of an error
  // message is not cut in two), files of at most 400 lines of code (blank and comment lines
  // not counted).
  {
    files: ['src/**/*.ts', 'bin/**/*.ts'],
    rules: {
      'max-lines-per-function': ['error', { max: 70, skipBlankLines: true, skipComments: true }],
      'max-len': ['error', { code: 200, ignoreStrings: true, ignoreTemplateLiterals: true, ignoreRegExpLiterals: true, ignoreUrls: true }],
    },
  },
  {
    files: ['src/**/*.ts'],
    rules: { 'max-lines': ['error', { max: 400, skipBlankLines: true, skipComments: true }] },
  },
  {
    files: ['**/*.js', '**/*.cjs'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly' } },
  },
);
