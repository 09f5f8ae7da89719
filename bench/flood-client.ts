/**
 * A stranger on the peer port (bench/handshake-flood.ts): keeps up to `--keep` WebSocket
 * connections open to each given port, never saying hello, and opens a new one as soon as one
 * is cut, for `--seconds`. Prints `opened N` once a second. Runs in a process of its own, so
 * that its work does not slow the measuring process.
 */
import { parseArgs } from 'node:util';
import WebSocket from 'ws';

const { values, positionals } = parseArgs({ allowPositionals: true, options: { keep: { type: 'string', default: '600' }, seconds: { type: 'string', default: '60' } } });
const keep = Number(values.keep);
const until = Date.now() + Number(values.seconds) * 1000;
let opened = 0;

function open(port: number): void {
  if (Date.now() > until) return;
  opened++;
  const ws = new WebSocket(`ws://127.0.0.1:${port}`);
  let reopened = false;
  const again = (): void => {
    if (reopened) return;
    reopened = true;
    setImmediate(() => open(port));
  };
  ws.on('error', again);
  ws.on('close', again);
}

for (const port of positionals.map(Number)) for (let i = 0; i < keep; i++) open(port);
const tick = setInterval(() => {
  process.stdout.write(`opened ${opened}\n`);
  if (Date.now() > until) {
    clearInterval(tick);
    process.exit(0);
  }
}, 1000);
