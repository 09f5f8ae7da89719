/**
 * One whole peer process: the runtime, its HTTP API and its routes, started and stopped
 * together. The binary and the integration tests both start peers through this.
 */
import { checkClusterMemory, runningLevel } from './cluster-memory.js';
import type { JoinTicket } from './runtime/view-store.js';
import { checkRecordLevel, FileViewStore, foundersOf, prepareViewRecord, ticketShapeLevel } from './runtime/view-store.js';
import { clusterShapeOf } from './cluster-shape.js';
import type { ClusterConfig } from './config.js';
import { checkDataDir } from './data-dir.js';
import { forceNewCluster } from './recovery.js';
import { wsListenAddress } from './config.js';
import { nodeEnv } from './env.js';
import { ErrorCode, LockError } from './errors.js';
import { HttpApi } from './http/api.js';
import { registerDashboard } from './http/dashboard.js';
import { parseListenTarget } from './http/listen-target.js';
import type { HttpAccessOptions } from './http/listener.js';
import { listenHttp, prepareHttp } from './http/listener.js';
import { metricsRoute } from './http/metrics.js';
import { Watches } from './http/watch.js';
import type { Logger } from './log.js';
import type { ProtocolLevels } from './transport/codec.js';
import { protocolLevels } from './transport/codec.js';
import { WsNetwork, readTlsMaterial } from './transport/ws-network.js';
import { FileClockStore, MemoryClockStore } from './runtime/clock-store.js';
import { PeerRuntime } from './runtime/peer.js';
import type { RouteSpec } from './http/routes.js';

/** What a peer server needs. */
export interface PeerServerOptions {
  readonly config: ClusterConfig;
  readonly id: string;
  /** `host:port` or `unix:/path` to serve HTTP on; defaults to the peer's `http` entry in the config. */
  readonly http?: string | undefined;
  /** Tokens, socket mode and group, allowed Host names of the HTTP API. */
  readonly access?: HttpAccessOptions | undefined;
  readonly dataDir?: string | undefined;
  /** Start though the config's cluster shape differs from the one the data dir last ran with (src/cluster-memory.ts). */
  readonly acceptConfigChange?: boolean | undefined;
  /** The protocol levels this binary speaks (default transport/codec.ts `protocolLevels`; tests inject ranges). */
  readonly levels?: ProtocolLevels | undefined;
  /** A host added to a running cluster starts from the ticket `lamport-lock member add` printed (needs a data dir). */
  readonly join?: JoinTicket | undefined;
  /**
   * Start a new cluster from a lost majority with this peer its only voter (src/recovery.ts),
   * its clock above every data dir or clock.json listed.
   */
  readonly forceNewCluster?: { readonly clockFrom: readonly string[] } | undefined;
  readonly logger: Logger;
}

/** A started peer: runtime + HTTP API. */
export interface PeerServer {
  readonly runtime: PeerRuntime;
  readonly httpUrl: string;
  /** Every route its HTTP API serves (the OpenAPI test compares them with the description). */
  routes(): RouteSpec[];
  stop(): Promise<void>;
}

const wildcard = new Set(['0.0.0.0', '::', '']);

/** The HTTP API and the peer links on one port is a config error (exit 2), not a busy port to retry (75). */
function checkPortsApart(http: ReturnType<typeof parseListenTarget>, ws: { host: string; port: number }, wsText: string): void {
  if (http.kind !== 'tcp' || http.port !== ws.port || ws.port === 0) return; // Port 0: each gets its own.
  const host = http.host.replace(/^\[|\]$/g, '');
  if (host === ws.host || wildcard.has(host) || wildcard.has(ws.host)) {
    throw new LockError(ErrorCode.ConfigInvalid, `the HTTP API (${http.host}:${http.port}) and the peer links (${wsText}) cannot share port ${ws.port}: give each its own port`);
  }
}

/** Starts one peer: mesh, runtime, HTTP API. */
export async function startPeerServer(opts: PeerServerOptions): Promise<PeerServer> {
  const self = opts.config.peers.find((p) => p.id === opts.id);
  if (self === undefined) throw new LockError(ErrorCode.ConfigInvalid, `peer id ${JSON.stringify(opts.id)} is not in the config (known: ${opts.config.peers.map((p) => p.id).join(', ')})`);
  const target = parseListenTarget(opts.http ?? self.http);
  if (opts.dataDir !== undefined) checkDataDir(opts.dataDir);
  else if (opts.join !== undefined || opts.forceNewCluster !== undefined) throw new LockError(ErrorCode.ConfigInvalid, `--${opts.join === undefined ? 'force-new-cluster' : 'join'} needs --data-dir: a member keeps the agreed view and its promises on disk`);
  if (opts.join !== undefined && opts.join.cluster !== opts.config.cluster) throw new LockError(ErrorCode.ConfigInvalid, `this join ticket is for cluster ${JSON.stringify(opts.join.cluster)}; the config names ${JSON.stringify(opts.config.cluster)}`);
  // The level the data dir records, never another: raising it is the cluster's (docs/operations.md, "Protocol levels").
  // A recovery starts a new cluster: at the newest level, so that the others can join it (rule P9).
  const levels = opts.levels ?? protocolLevels;
  const joining = opts.join === undefined ? undefined : ticketShapeLevel(opts.join);
  const protocolLevel = runningLevel(opts.dataDir, levels, joining, opts.acceptConfigChange === true || opts.forceNewCluster !== undefined);
  // The agreed view the data dir keeps (docs/reconfiguration.md): the cluster's founders name it on every link.
  const viewStore = opts.dataDir === undefined ? undefined : new FileViewStore(opts.dataDir);
  if (opts.dataDir !== undefined) {
    if (opts.forceNewCluster !== undefined) forceNewCluster(opts.dataDir, opts.id, protocolLevel, opts.forceNewCluster.clockFrom, opts.logger);
    const { founders, lineage } = foundersOf(opts.dataDir, opts.config.peers, opts.join);
    const shape = clusterShapeOf({ ...opts.config, peers: founders.map((id) => ({ id })) }, protocolLevel);
    checkClusterMemory(opts.dataDir, lineage === undefined ? shape : { ...shape, lineage }, opts.acceptConfigChange === true || opts.forceNewCluster !== undefined);
    checkRecordLevel(opts.dataDir, levels, opts.join);
    prepareViewRecord(opts.dataDir, opts.id, opts.config.peers, protocolLevel, () => Buffer.from(nodeEnv.randomBytes(8)).toString('hex'), opts.join);
  }
  checkPortsApart(target, wsListenAddress(self.ws), self.ws);
  const access = await prepareHttp(target, opts.access ?? {});
  const tls = opts.config.tls === undefined ? null : readTlsMaterial(opts.config.tls);
  const network = new WsNetwork({ tls, logger: opts.logger.child({ component: 'mesh' }) });
  const wsAddr = wsListenAddress(self.ws);
  const listener = await network.listen(wsAddr.host, wsAddr.port);
  const clockStore = opts.dataDir === undefined ? new MemoryClockStore() : new FileClockStore(opts.dataDir);
  let runtime: PeerRuntime;
  try {
    runtime = new PeerRuntime({ config: opts.config, id: opts.id, logger: opts.logger, protocolLevel, levels, world: { env: nodeEnv, network, listener, clockStore, viewStore } });
    runtime.start();
  } catch (err) {
    await listener.close();
    throw err;
  }
  const api = new HttpApi(runtime, opts.logger, access);
  api.route('/metrics', metricsRoute(runtime.metrics.registry));
  const dashboard = registerDashboard(api, runtime);
  const watches = new Watches(runtime, opts.logger, nodeEnv);
  api.watchWith((req, res, selector) => watches.open(req, res, selector));
  const httpUrl = await listenHttp(api, target, opts.access ?? {});
  opts.logger.info({ http: httpUrl, ws: self.ws, token: access.tokenRequired }, 'serving');
  let stopping: Promise<void> | null = null;
  return {
    runtime,
    httpUrl,
    routes: () => api.routes(),
    stop: () => {
      stopping ??= (async () => {
        const closed = api.close();
        await runtime.stop();
        await listener.close();
        dashboard.close();
        watches.close();
        api.closeAll();
        await closed;
      })();
      return stopping;
    },
  };
}

/**
 * A runtime alone on real sockets (no HTTP), listening on `wsPort` (0: any free port):
 * for tests that drive the runtime in-process. `stop` also closes its listener.
 */
export async function startRuntime(opts: { config: ClusterConfig; id: string; logger: Logger; wsPort?: number }): Promise<{ runtime: PeerRuntime; stop(): Promise<void> }> {
  const self = opts.config.peers.find((p) => p.id === opts.id);
  if (self === undefined) throw new LockError(ErrorCode.ConfigInvalid, `peer id ${JSON.stringify(opts.id)} is not in the config`);
  const network = new WsNetwork({ tls: null, logger: opts.logger });
  const wsAddr = wsListenAddress(self.ws);
  const listener = await network.listen(wsAddr.host, opts.wsPort ?? wsAddr.port);
  const runtime = new PeerRuntime({ config: opts.config, id: opts.id, logger: opts.logger, world: { env: nodeEnv, network, listener, clockStore: new MemoryClockStore() } });
  runtime.start();
  return {
    runtime,
    stop: async () => {
      await runtime.stop();
      await listener.close();
    },
  };
}
