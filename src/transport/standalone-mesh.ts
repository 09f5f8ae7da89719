/**
 * A mesh run alone, on real sockets (`ws`) and the process's clocks, with a listener and a
 * network of its own: what tools and tests that run one mesh use. A peer runtime builds its
 * meshes on the world it is given and shares one listener across them (docs/architecture.md).
 */
import { clusterShapeOf } from '../cluster-shape.js';
import { nodeEnv } from '../env.js';
import { protocolLevels } from './codec.js';
import type { MeshEvents, MeshOptions } from './mesh-options.js';
import { Mesh } from './mesh.js';
import { WsNetwork, readTlsMaterial } from './ws-network.js';

/** What `startStandaloneMesh` takes: the mesh's options less the world, plus where to listen. */
export type StandaloneMeshOptions<P> = Omit<MeshOptions<P>, 'env' | 'network' | 'listener' | 'ownsListener' | 'shape'> & {
  /** Default: the cluster name, the peers in index order and heartbeat_ms (a mesh alone has no lease or eviction). */
  readonly shape?: MeshOptions<P>['shape'] | undefined;
  readonly listen: { readonly host: string; readonly port: number };
  readonly tls?: { readonly cert: string; readonly key: string; readonly ca?: string } | undefined;
  /** The clock each heartbeat carries (none by default): a mesh alone has no protocol to say when one may. */
  readonly heartbeatClock?: (() => number | undefined) | undefined;
};

/** What a mesh alone reports: its heartbeats are sent and echoed for it (no lease, no eviction, nothing to withhold). */
export type StandaloneMeshEvents<P> = Omit<MeshEvents<P>, 'onHeartbeatDue'>;

/** Binds the listener, starts the mesh; closing the mesh closes the listener too. */
export async function startStandaloneMesh<P>(opts: StandaloneMeshOptions<P>, events: StandaloneMeshEvents<P>): Promise<Mesh<P>> {
  const { listen, tls, shape, heartbeatClock, ...rest } = opts;
  const peers = [opts.self, ...opts.peers].sort((x, y) => x.index - y.index);
  const own = shape ?? clusterShapeOf({ cluster: opts.cluster, peers, heartbeatMs: opts.heartbeatMs, leaseMs: 0, evictMs: 0 }, opts.levels?.newest ?? protocolLevels.newest);
  const network = new WsNetwork({ tls: tls === undefined ? null : readTlsMaterial(tls), logger: opts.logger });
  const listener = await network.listen(listen.host, listen.port);
  let started: Mesh<P> | null = null;
  const mesh = new Mesh<P>({ ...rest, shape: own, env: nodeEnv, network, listener, ownsListener: true }, {
    onPeerJoined: (peer, inc, clock, restarted) => events.onPeerJoined(peer, inc, clock, restarted),
    onPayload: (from, inc, payload) => events.onPayload(from, inc, payload),
    onHeartbeat: (from, inc, clock, sentAtMs) => {
      started?.echo(from, inc, sentAtMs);
      events.onHeartbeat(from, inc, clock, sentAtMs);
    },
    onHeartbeatDue: (peer) => started?.heartbeat(peer, heartbeatClock?.()),
    onEcho: (peer, sentAtMs, rttMs) => events.onEcho(peer, sentAtMs, rttMs),
    onConnection: (peer, connected) => events.onConnection(peer, connected),
    onRefused: (peer, reason, known, knownEvicted) => events.onRefused?.(peer, reason, known, knownEvicted),
  });
  started = mesh;
  mesh.start();
  return mesh;
}
