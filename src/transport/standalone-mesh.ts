/**
 * A mesh run alone, on real sockets (`ws`) and the process's clocks, with a listener and a
 * network of its own: what tools and tests that run one mesh use. A peer runtime builds its
 * meshes on the world it is given and shares one listener across them (docs/architecture.md).
 */
import { clusterShapeOf } from '../cluster-shape.js';
import { nodeEnv } from '../env.js';
import { protocolVersion } from './codec.js';
import type { MeshEvents, MeshOptions } from './mesh-options.js';
import { Mesh } from './mesh.js';
import { WsNetwork, readTlsMaterial } from './ws-network.js';

/** What `startStandaloneMesh` takes: the mesh's options less the world, plus where to listen. */
export type StandaloneMeshOptions<P> = Omit<MeshOptions<P>, 'env' | 'network' | 'listener' | 'ownsListener' | 'shape'> & {
  /** Default: the cluster name, the peers in index order and heartbeat_ms (a mesh alone has no lease or eviction). */
  readonly shape?: MeshOptions<P>['shape'] | undefined;
  readonly listen: { readonly host: string; readonly port: number };
  readonly tls?: { readonly cert: string; readonly key: string; readonly ca?: string } | undefined;
};

/** Binds the listener, starts the mesh; closing the mesh closes the listener too. */
export async function startStandaloneMesh<P>(opts: StandaloneMeshOptions<P>, events: MeshEvents<P>): Promise<Mesh<P>> {
  const { listen, tls, shape, ...rest } = opts;
  const peers = [opts.self, ...opts.peers].sort((x, y) => x.index - y.index);
  const own = shape ?? clusterShapeOf({ cluster: opts.cluster, peers, heartbeatMs: opts.heartbeatMs, leaseMs: 0, evictMs: 0 }, protocolVersion);
  const network = new WsNetwork({ tls: tls === undefined ? null : readTlsMaterial(tls), logger: opts.logger });
  const listener = await network.listen(listen.host, listen.port);
  const mesh = new Mesh<P>({ ...rest, shape: own, env: nodeEnv, network, listener, ownsListener: true }, events);
  mesh.start();
  return mesh;
}
