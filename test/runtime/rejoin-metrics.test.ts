/**
 * Counters across a rejoin: three in-process peers on real sockets with short timings; c is
 * cut off until a and b evict it, then healed, refused as evicted, and rejoins as a new
 * incarnation with a new mesh whose link counters start at 0. Its Prometheus counters
 * must keep counting from where they were (docs/operations.md: counters never go back).
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { ClusterConfig } from '../../src/config.js';
import { formatIncarnation } from '../../src/core/types.js';
import { nodeEnv } from '../../src/env.js';
import { silentLogger } from '../../src/log.js';
import { MemoryClockStore } from '../../src/runtime/clock-store.js';
import type { AcquireOptions } from '../../src/runtime/holds.js';
import { PeerRuntime } from '../../src/runtime/peer.js';
import type { Listener, Network, RawSocket, SocketHandlers } from '../../src/transport/network.js';
import { WsNetwork } from '../../src/transport/ws-network.js';
import { waitFor } from '../support/wait.js';

/** A socket of a cut-off host: it never opens, and says so on the next turn. */
function deadSocket(): RawSocket {
  return {
    isOpen: false,
    handle: (h: SocketHandlers) => void setImmediate(() => {
      h.onError({ message: 'partitioned by the test' });
      h.onClose();
    }),
    send: () => undefined,
    close: () => undefined,
    terminate: () => undefined,
  };
}

/** A host's network that the test can cut off from everyone, both ways, and heal. */
class CuttableNetwork implements Network {
  readonly #inner: Network;
  readonly #sockets = new Set<RawSocket>();
  #cut = false;

  constructor(inner: Network) {
    this.#inner = inner;
  }

  async listen(host: string, port: number): Promise<Listener> {
    const inner = await this.#inner.listen(host, port);
    return {
      port: inner.port,
      accept: (fn) => inner.accept(fn === null ? null : (sock, remote) => {
        if (this.#cut) return sock.terminate();
        this.#sockets.add(sock);
        fn(sock, remote);
      }),
      close: () => inner.close(),
    };
  }

  dial(url: string): RawSocket {
    if (this.#cut) return deadSocket();
    const sock = this.#inner.dial(url);
    this.#sockets.add(sock);
    return sock;
  }

  /** Cuts every socket and refuses new ones until `heal`. */
  cut(): void {
    this.#cut = true;
    for (const s of this.#sockets) s.terminate();
    this.#sockets.clear();
  }

  heal(): void {
    this.#cut = false;
  }
}

interface Started {
  readonly runtime: PeerRuntime;
  readonly listener: Listener;
}

const ids = ['a', 'b', 'c'] as const;
const opts: AcquireOptions = { timeoutMs: 5000, ttlMs: 60_000, mode: 'exclusive', limit: 1, permits: 1, owner: 't', meta: null, hold: 'ttl', expectedMs: null };
let started: Started[] = [];

afterEach(async () => {
  for (const s of started) await s.runtime.stop();
  for (const s of started) await s.listener.close();
  started = [];
});

/** Three peers on 127.0.0.1; c's network can be cut. */
async function startThree(cNetwork: CuttableNetwork): Promise<Started[]> {
  const logger = silentLogger();
  const networks = ids.map((id) => (id === 'c' ? cNetwork : new WsNetwork({ tls: null, logger })));
  const listeners = await Promise.all(networks.map((n) => n.listen('127.0.0.1', 0)));
  const config: ClusterConfig = {
    cluster: 'rejoin', secret: 'test-secret',
    peers: ids.map((id, i) => ({ id, ws: `ws://127.0.0.1:${listeners[i]?.port}`, http: '127.0.0.1:0' })),
    heartbeatMs: 100, leaseMs: 500, evictMs: 1000, tls: undefined,
  };
  return ids.map((id, i) => {
    const network = networks[i] as Network;
    const listener = listeners[i] as Listener;
    const runtime = new PeerRuntime({ config, id, logger, processMetrics: false, world: { env: nodeEnv, network, listener, clockStore: new MemoryClockStore() } });
    runtime.start();
    return { runtime, listener };
  });
}

/** The value of an unlabelled counter, as a scrape would report it. */
async function counter(runtime: PeerRuntime, name: string): Promise<number> {
  const metric = runtime.metrics.registry.getSingleMetric(name);
  if (metric === undefined) throw new Error(`no metric ${name}`);
  return (await metric.get()).values[0]?.value ?? 0;
}

async function grantAndRelease(runtime: PeerRuntime, lock: string): Promise<void> {
  const g = await runtime.acquire(lock, opts);
  runtime.release(lock, g.id);
}

const linkCounters = ['lamport_peer_frames_sent_total', 'lamport_peer_bytes_sent_total', 'lamport_peer_frames_received_total'] as const;
const sessionStat = { lamport_peer_frames_sent_total: 'framesSent', lamport_peer_bytes_sent_total: 'bytesSent', lamport_peer_frames_received_total: 'framesReceived' } as const;

describe('metrics across a rejoin', () => {
  it('keeps the mirrored link counters counting when the mesh of a new incarnation starts from 0', async () => {
    const cNetwork = new CuttableNetwork(new WsNetwork({ tls: null, logger: silentLogger() }));
    started = await startThree(cNetwork);
    const [a, b, c] = started.map((s) => s.runtime) as [PeerRuntime, PeerRuntime, PeerRuntime];
    await waitFor('every peer ready', () => [a, b, c].every((r) => r.ready()));
    await grantAndRelease(c, 'before');
    const before = Object.fromEntries(await Promise.all(linkCounters.map(async (n) => [n, await counter(c, n)] as const)));
    const first = formatIncarnation(c.inspect.incarnation);

    cNetwork.cut();
    const evictedByBoth = (): boolean => [a, b].every((r) => r.inspect.cluster().peers.some((p) => p.id === 'c' && 'evicted' in p && p.evicted));
    await waitFor('a and b evicted c', evictedByBoth);
    cNetwork.heal();
    await waitFor('c rejoined as a new incarnation', () => formatIncarnation(c.inspect.incarnation) !== first);
    await waitFor('c ready again', () => c.ready(), 10_000);
    await grantAndRelease(c, 'after');

    const fresh = c.inspect.linkStats('incarnation');
    for (const name of linkCounters) {
      const now = await counter(c, name);
      expect(fresh[sessionStat[name]], `${name}: the new mesh counted something`).toBeGreaterThan(0);
      expect(now, `${name}: what was counted before the rejoin plus what the new mesh counted`).toBeGreaterThanOrEqual((before[name] ?? 0) + fresh[sessionStat[name]]);
    }
  }, 30_000);
});
