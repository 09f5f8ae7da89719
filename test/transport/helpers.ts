/**
 * Shared test helpers for the transport: loggers that capture records, a recorder of mesh
 * events, and a mesh factory on 127.0.0.1. Waits, seeds and the PRNG are in test/support/.
 */
import { Writable } from 'node:stream';
import { pino } from 'pino';
import type { Logger } from 'pino';
import type { IncarnationBook } from '../../src/core/incarnations.js';
import type { Incarnation } from '../../src/core/types.js';
import type { ClusterShape } from '../../src/cluster-shape.js';
import type { ProtocolLevels } from '../../src/transport/codec.js';
import { LockError } from '../../src/errors.js';
import type { MeshPeer } from '../../src/transport/mesh.js';
import type { Mesh } from '../../src/transport/mesh.js';
import { startStandaloneMesh } from '../../src/transport/standalone-mesh.js';
import type { StandaloneMeshEvents } from '../../src/transport/standalone-mesh.js';
import { waitFor } from '../support/wait.js';
import { TcpProxy } from './tcp-proxy.js';

/** A test payload: a counter and its origin. */
export interface TestPayload {
  readonly n: number;
}

/** Guard for TestPayload, as the runtime passes `isPacket`. */
export function isTestPayload(v: unknown): v is TestPayload {
  return typeof v === 'object' && v !== null && Number.isSafeInteger((v as Record<string, unknown>)['n']);
}

/** A pino logger that keeps every record (as parsed JSON) in `records`. */
export function captureLogger(level = 'info'): { logger: Logger; records: Record<string, unknown>[] } {
  const records: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line !== '') records.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { logger: pino({ level }, sink), records };
}

/** Everything a mesh reported, for assertions. */
export class Recorder implements StandaloneMeshEvents<TestPayload> {
  readonly joined: { peer: number; inc: Incarnation; clock: number; restarted: boolean }[] = [];
  readonly payloads = new Map<number, number[]>();
  readonly heartbeats: { from: number; clock: number | undefined }[] = [];
  readonly echoes: { peer: number; rttMs: number }[] = [];
  readonly connections: { peer: number; connected: boolean; atMs: number }[] = [];
  readonly refused: { peer: number; reason: string }[] = [];
  readonly connected = new Set<number>();
  /** Called inside onPeerJoined, e.g. to send a state transfer. */
  onJoin: (peer: number, restarted: boolean) => void = () => undefined;
  /** Order violations seen by onPayload (expected next n per peer). */
  readonly violations: string[] = [];
  readonly expectNext = new Map<number, number>();
  checkOrder = false;

  onPeerJoined(peer: number, inc: Incarnation, clock: number, restarted: boolean): void {
    this.joined.push({ peer, inc, clock, restarted });
    this.onJoin(peer, restarted);
  }
  onPayload(from: number, _inc: Incarnation, payload: TestPayload): void {
    let list = this.payloads.get(from);
    if (list === undefined) this.payloads.set(from, (list = []));
    list.push(payload.n);
    if (this.checkOrder) {
      const want = this.expectNext.get(from) ?? 0;
      if (payload.n !== want && this.violations.length < 10) this.violations.push(`from ${from}: got ${payload.n}, expected ${want}`);
      this.expectNext.set(from, payload.n + 1);
    }
  }
  onHeartbeat(from: number, _inc: Incarnation, clock: number | undefined): void {
    if (this.heartbeats.length < 10_000) this.heartbeats.push({ from, clock });
  }
  onEcho(peer: number, _sentAtMs: number, rttMs: number): void {
    if (this.echoes.length < 10_000) this.echoes.push({ peer, rttMs });
  }
  onConnection(peer: number, connected: boolean): void {
    this.connections.push({ peer, connected, atMs: performance.now() });
    if (connected) this.connected.add(peer);
    else this.connected.delete(peer);
  }
  onRefused(peer: number, reason: string): void {
    this.refused.push({ peer, reason });
  }
  count(from: number): number {
    return this.payloads.get(from)?.length ?? 0;
  }
}

/** Options of `makeMesh`. */
export interface MakeMeshOptions {
  readonly self: MeshPeer;
  readonly peers: readonly MeshPeer[];
  readonly incarnation?: Incarnation;
  readonly heartbeatMs?: number;
  readonly secret?: string;
  readonly cluster?: string;
  readonly logger?: Logger;
  readonly port?: number;
  /** The book the mesh admits and refuses in (a session's, shared with its Membership). */
  readonly incarnations?: IncarnationBook;
  /** The protocol levels its binary speaks, and the shape (with the level it runs at); default the build's. */
  readonly levels?: ProtocolLevels;
  readonly shape?: ClusterShape;
}

/** A started mesh on 127.0.0.1 with a Recorder. */
export async function makeMesh(o: MakeMeshOptions): Promise<{ mesh: Mesh<TestPayload>; rec: Recorder }> {
  const rec = new Recorder();
  const mesh = await startStandaloneMesh<TestPayload>(
    {
      cluster: o.cluster ?? 'test',
      secret: o.secret ?? 'sesame',
      self: o.self,
      peers: o.peers,
      listen: { host: '127.0.0.1', port: o.port ?? 0 },
      incarnation: o.incarnation ?? { startMs: 1000 + o.self.index, nonce: 7 },
      heartbeatMs: o.heartbeatMs ?? 100,
      isPayload: isTestPayload,
      clock: () => 42,
      // What the protocol decides (PeerProtocol.heartbeatDue); here every heartbeat carries 42.
      heartbeatClock: () => 42,
      logger: o.logger ?? pino({ level: 'silent' }),
      incarnations: o.incarnations,
      levels: o.levels,
      shape: o.shape,
    },
    rec,
  );
  return { mesh, rec };
}

/** Peer `index` with id `p<index>` listening at `port`. */
export function peerAt(index: number, port: number): MeshPeer {
  return { id: `p${index}`, index, ws: `ws://127.0.0.1:${port}` };
}

/** A cluster of meshes, each reached through its own fault proxy. */
export interface TestCluster {
  readonly meshes: Mesh<TestPayload>[];
  readonly recs: Recorder[];
  readonly proxies: TcpProxy[];
  close(): Promise<void>;
}

/** `n` meshes p0..p(n-1); peer i dials peer j through proxy j. */
export async function startCluster(n: number, o: { heartbeatMs?: number; logger?: Logger } = {}): Promise<TestCluster> {
  const proxies = await Promise.all(Array.from({ length: n }, () => TcpProxy.start()));
  const all = proxies.map((p, i) => peerAt(i, p.port));
  const meshes: Mesh<TestPayload>[] = [];
  const recs: Recorder[] = [];
  for (let i = 0; i < n; i++) {
    const self = all[i];
    if (self === undefined) throw new Error('peer index');
    const made = await makeMesh({ self, peers: all.filter((p) => p.index !== i), heartbeatMs: o.heartbeatMs ?? 100, ...(o.logger ? { logger: o.logger } : {}) });
    meshes.push(made.mesh);
    recs.push(made.rec);
    const proxy = proxies[i];
    if (proxy !== undefined) proxy.target = made.mesh.port();
  }
  return {
    meshes,
    recs,
    proxies,
    async close() {
      await Promise.all(meshes.map((m) => m.close()));
      await Promise.all(proxies.map((p) => p.close()));
    },
  };
}

/** Waits until every mesh of the cluster reports every other peer connected. */
export async function waitAllConnected(c: TestCluster, timeoutMs = 10_000): Promise<void> {
  const n = c.meshes.length;
  await waitFor('all peers connected', () => c.recs.every((r) => r.connected.size === n - 1), timeoutMs);
}

/** The code of the LockError `fn` throws, or 'no error'; anything else is rethrown. */
export function codeOf(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    if (err instanceof LockError) return err.code;
    throw err;
  }
  return 'no error';
}
