/**
 * Link throughput: messages per second one way through two meshes on loopback, and the
 * one-way latency (p50/p99), beside raw `ws` carrying the same msgpack payload one per
 * frame and 64 per frame. Both ends live in this process, so latency is measured on one
 * monotonic clock: payloads are delivered in order, so the k-th delivery matches the k-th
 * send. Build with `npx tsc -p .`, run `node dist/bench/link-throughput.js [messages]`.
 */
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { Packr } from 'msgpackr';
import { pino } from 'pino';
import WebSocket, { WebSocketServer } from 'ws';
import type { Packet } from '../src/core/messages.js';
import { isPacket } from '../src/core/messages.js';
import { limits } from '../src/limits.js';
import type { MeshPeer } from '../src/transport/mesh.js';
import type { Mesh } from '../src/transport/mesh.js';
import { startStandaloneMesh } from '../src/transport/standalone-mesh.js';

const payload: Packet = { c: 1_735_000_000_123, m: [{ t: 'rel', lock: 'orders/42', ts: 1_735_000_000_120 }] };
const perTurn = 1000;

interface Result {
  readonly name: string;
  readonly messagesPerS: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly meanMs: number;
}

/** A one-way channel under test: `send` queues one payload, `onDeliver` fires per payload. */
interface Channel {
  send(p: Packet): void;
  onDeliver: () => void;
  close(): Promise<void>;
}

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

function mean(values: Float64Array): number {
  let sum = 0;
  for (const v of values) sum += v;
  return sum / values.length;
}

function percentile(sorted: Float64Array, q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
}

/** Floods `count` payloads, `perTurn` per event-loop turn, and times every delivery. */
async function flood(name: string, ch: Channel, count: number): Promise<Result> {
  const sentAt = new Float64Array(count);
  const latency = new Float64Array(count);
  let delivered = 0;
  const done = new Promise<void>((resolve) => {
    ch.onDeliver = () => {
      latency[delivered] = performance.now() - (sentAt[delivered] ?? 0);
      if (++delivered === count) resolve();
    };
  });
  const start = performance.now();
  for (let k = 0; k < count; ) {
    const end = Math.min(count, k + perTurn);
    for (; k < end; k++) {
      sentAt[k] = performance.now();
      ch.send(payload);
    }
    await turn();
  }
  await done;
  const seconds = (performance.now() - start) / 1000;
  latency.sort();
  return { name, messagesPerS: count / seconds, p50Ms: percentile(latency, 0.5), p99Ms: percentile(latency, 0.99), meanMs: mean(latency) };
}

/** One message at a time, each sent from a fresh event-loop turn: the latency of an idle link. */
async function pingPong(name: string, ch: Channel, count: number): Promise<Result> {
  const latency = new Float64Array(count);
  const start = performance.now();
  for (let k = 0; k < count; k++) {
    await turn();
    const t0 = performance.now();
    await new Promise<void>((resolve) => {
      ch.onDeliver = resolve;
      ch.send(payload);
    });
    latency[k] = performance.now() - t0;
  }
  const seconds = (performance.now() - start) / 1000;
  latency.sort();
  return { name, messagesPerS: count / seconds, p50Ms: percentile(latency, 0.5), p99Ms: percentile(latency, 0.99), meanMs: mean(latency) };
}

async function meshChannel(): Promise<Channel> {
  const logger = pino({ level: 'silent' });
  const ports = [0, 0];
  const meshes: Mesh<Packet>[] = [];
  const joined: Promise<void>[] = [];
  const ch: Channel = { send: (p) => meshes[0]?.send(1, p), onDeliver: () => undefined, close: async () => void (await Promise.all(meshes.map((m) => m.close()))) };
  // Listen first (port 0), then tell each mesh the other's port: start mesh 1, then mesh 0.
  const peer = (index: number): MeshPeer => ({ id: `b${index}`, index, ws: `ws://127.0.0.1:${ports[index]}` });
  for (const index of [1, 0]) {
    let joinedResolve = (): void => undefined;
    joined.push(new Promise<void>((resolve) => (joinedResolve = resolve)));
    const mesh = await startStandaloneMesh<Packet>(
      {
        cluster: 'bench', secret: 'bench', self: peer(index), peers: [peer(1 - index)], listen: { host: '127.0.0.1', port: 0 },
        incarnation: { startMs: Date.now(), nonce: index }, heartbeatMs: 1000, isPayload: isPacket, clock: () => 1, logger,
      },
      {
        onPeerJoined: () => joinedResolve(), onPayload: () => ch.onDeliver(), onHeartbeat: () => undefined,
        onEcho: () => undefined, onConnection: () => undefined,
      },
    );
    ports[index] = mesh.port();
    meshes[index] = mesh;
  }
  await Promise.all(joined);
  // Mesh 1 started before mesh 0's port was known: it reaches mesh 0 when mesh 0 dials it.
  return ch;
}

async function rawChannel(batch: number): Promise<Channel> {
  const packr = new Packr({ useRecords: false, mapsAsObjects: true });
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, maxPayload: limits.frameBytesMax, perMessageDeflate: false });
  await new Promise<void>((resolve) => wss.once('listening', resolve));
  const ch: Channel = { send: () => undefined, onDeliver: () => undefined, close: async () => undefined };
  wss.on('connection', (ws) =>
    ws.on('message', (data: Buffer) => {
      const decoded: unknown = packr.unpack(data);
      const list = batch === 1 ? [decoded] : (decoded as unknown[]);
      for (const p of list) if (isPacket(p)) ch.onDeliver();
    }),
  );
  const client = new WebSocket(`ws://127.0.0.1:${(wss.address() as AddressInfo).port}`, { perMessageDeflate: false, maxPayload: limits.frameBytesMax });
  await new Promise<void>((resolve) => client.once('open', () => resolve()));
  let queue: Packet[] = [];
  let scheduled = false;
  const flush = (): void => {
    scheduled = false;
    for (let k = 0; k < queue.length; k += batch) client.send(packr.pack(batch === 1 ? queue[k] : queue.slice(k, k + batch)));
    queue = [];
  };
  ch.send = (p) => {
    if (batch === 1) return client.send(packr.pack(p));
    queue.push(p);
    if (scheduled) return;
    scheduled = true;
    setImmediate(flush);
  };
  ch.close = async () => {
    client.terminate();
    await new Promise<void>((resolve) => wss.close(() => resolve()));
  };
  return ch;
}

async function main(): Promise<void> {
  const count = Number(process.argv[2] ?? 200_000);
  const results: Result[] = [];
  const cases: [string, () => Promise<Channel>][] = [
    ['mesh (batched per turn, acked)', meshChannel],
    ['raw ws, 1 per frame', () => rawChannel(1)],
    ['raw ws, 64 per frame', () => rawChannel(64)],
  ];
  for (const [name, make] of cases) {
    const ch = await make();
    await flood(name, ch, Math.min(20_000, count)); // warm-up
    results.push(await flood(`${name}: flood`, ch, count));
    results.push(await pingPong(`${name}: one at a time`, ch, 2000));
    await ch.close();
  }
  console.log(`one way, ${count} messages of ${new Packr({ useRecords: false }).pack(payload).length} bytes, ${perTurn} sent per event-loop turn, node ${process.version}`);
  console.log(`${'case'.padEnd(46)} ${'msg/s'.padStart(10)} ${'p50 ms'.padStart(8)} ${'p99 ms'.padStart(8)} ${'mean ms'.padStart(8)}`);
  for (const r of results) {
    console.log(`${r.name.padEnd(46)} ${Math.round(r.messagesPerS).toString().padStart(10)} ${r.p50Ms.toFixed(3).padStart(8)} ${r.p99Ms.toFixed(3).padStart(8)} ${r.meanMs.toFixed(3).padStart(8)}`);
  }
}

await main();
