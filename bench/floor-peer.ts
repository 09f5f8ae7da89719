/**
 * The floor (issue 15): one process of a 3-process cluster that does only the message pattern
 * of an acquire and a release, and no algorithm. Acquire: HTTP in -> one message to each
 * other process over a WebSocket (msgpack) -> one reply from each -> HTTP out. Release: HTTP
 * in -> one message to each other process -> HTTP out (a peer answers a release at once too). It speaks the part of the
 * local HTTP API the benchmark uses (`/readyz`, `POST /v1/locks/{name}/acquire` and
 * `/release`), with the same libraries as the peers (node:http, ws, msgpackr), so the CPU a
 * peer spends beyond it is the algorithm's and the runtime's.
 *
 * node dist/bench/floor-peer.js --index I --http PORT --ws PORT0,PORT1,PORT2
 */
import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Packr } from 'msgpackr';
import { WebSocket, WebSocketServer } from 'ws';

interface Message {
  readonly t: 'req' | 'rel' | 'ack';
  readonly id: number;
  readonly lock?: string;
}

function arg(name: string): string {
  const i = process.argv.indexOf(`--${name}`);
  const v = i < 0 ? undefined : process.argv[i + 1];
  if (v === undefined) throw new Error(`floor-peer: --${name} is required`);
  return v;
}

const index = Number(arg('index'));
const httpPort = Number(arg('http'));
const wsPorts = arg('ws').split(',').map(Number);
const packr = new Packr();
const others = wsPorts.map((port, i) => ({ port, i })).filter((p) => p.i !== index);
const out = new Map<number, WebSocket>();
/** Calls waiting for their replies: id -> [replies left, answer]. */
const waiting = new Map<number, { left: number; done: () => void }>();
let nextId = 1;
let nextToken = 1;

// Inbound: answer every message with an ack on the same socket.
const wss = new WebSocketServer({ host: '127.0.0.1', port: wsPorts[index] });
wss.on('connection', (sock) => {
  sock.on('message', (data: Buffer) => {
    const m = packr.unpack(data) as Message;
    if (m.t === 'req') sock.send(packr.pack({ t: 'ack', id: m.id }));
  });
});

function dial(port: number, i: number): void {
  const sock = new WebSocket(`ws://127.0.0.1:${port}`);
  sock.on('open', () => out.set(i, sock));
  sock.on('message', (data: Buffer) => {
    const m = packr.unpack(data) as Message;
    const w = waiting.get(m.id);
    if (w === undefined) return;
    if (--w.left === 0) {
      waiting.delete(m.id);
      w.done();
    }
  });
  sock.on('error', () => undefined);
  sock.on('close', () => {
    out.delete(i);
    setTimeout(() => dial(port, i), 50);
  });
}
for (const p of others) dial(p.port, p.i);

/** Sends `t` to every other process; `done` once all have answered a request, at once for a release. */
function round(t: 'req' | 'rel', lock: string, done: () => void): void {
  const id = nextId++;
  if (t === 'req') waiting.set(id, { left: others.length, done });
  const frame = packr.pack({ t, id, lock });
  for (const p of others) out.get(p.i)?.send(frame);
  if (t === 'rel') done();
}

function json(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

const server = createServer({ keepAliveTimeout: 30_000 }, (req: IncomingMessage, res: ServerResponse) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const path = req.url ?? '/';
    if (path === '/readyz') return json(res, out.size === others.length ? 200 : 503, { ready: out.size === others.length });
    const m = /^\/v1\/locks\/([^/]+)\/(acquire|release)$/.exec(path);
    if (m === null || req.method !== 'POST') return json(res, 404, { error: 'ERR_NOT_FOUND' });
    const lock = decodeURIComponent(m[1] ?? '');
    JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}');
    if (m[2] === 'acquire') {
      round('req', lock, () => json(res, 200, { lock, id: `f${nextToken}`, token: String(nextToken++ * 1024 + index) }));
    } else {
      round('rel', lock, () => json(res, 200, { released: true }));
    }
  });
});
server.listen(httpPort, '127.0.0.1');
// Exit normally on SIGTERM (ProcessGroup.stop), so `--cpu-prof` writes its profile.
process.once('SIGTERM', () => process.exit(0));
