// ESLint flat config. The one rule that matters most: src/core/ and the pure link stay pure,
// so the deterministic simulator can run the real protocol code (docs/style.md convention 1).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const pureImports = {
  patterns: [
    { group: ['node:*', 'ws', 'pino', 'msgpackr', 'prom-client', 'yargs'], message: 'src/core is pure: no I/O modules.' },
  ],
};
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
  {
    files: ['src/core/**/*.ts', 'src/transport/link.ts'],
    rules: {
      'no-restricted-imports': ['error', pureImports],
      'no-restricted-globals': ['error', ...pureGlobals],
      'no-restricted-properties': ['error', { object: 'Math', property: 'random', message: 'src/core is pure: randomness is injected.' }],
    },
  },
  {
    files: ['**/*.js', '**/*.cjs'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly' } },
  },
);
