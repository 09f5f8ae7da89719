/**
 * One whole peer process: the runtime, its HTTP API and its routes, started and stopped
 * together. The binary and the integration tests both start peers through this.
 */
import type { ClusterConfig } from '../config.js';
import { parseHostPort } from '../config.js';
import { ErrorCode, LockError } from '../errors.js';
import { HttpApi } from '../http/api.js';
import { registerDashboard } from '../http/dashboard.js';
import { metricsRoute } from '../http/metrics.js';
import type { Logger } from '../log.js';
import { PeerRuntime } from './peer.js';

/** What a peer server needs. */
export interface PeerServerOptions {
  readonly config: ClusterConfig;
  readonly id: string;
  /** `host:port` to serve HTTP on; defaults to the peer's `http` entry in the config. */
  readonly http?: string | undefined;
  readonly dataDir?: string | undefined;
  readonly logger: Logger;
}

/** A started peer: runtime + HTTP API. */
export interface PeerServer {
  readonly runtime: PeerRuntime;
  readonly httpUrl: string;
  stop(): Promise<void>;
}

/** Starts one peer: mesh, runtime, HTTP API. */
export async function startPeerServer(opts: PeerServerOptions): Promise<PeerServer> {
  const self = opts.config.peers.find((p) => p.id === opts.id);
  if (self === undefined) throw new LockError(ErrorCode.ConfigInvalid, `peer id ${JSON.stringify(opts.id)} is not in the config (known: ${opts.config.peers.map((p) => p.id).join(', ')})`);
  const httpAddr = parseHostPort(opts.http ?? self.http);
  if (httpAddr === undefined) throw new LockError(ErrorCode.ConfigInvalid, `--http must look like host:port`);
  const runtime = new PeerRuntime({ config: opts.config, id: opts.id, dataDir: opts.dataDir, logger: opts.logger });
  const api = new HttpApi(runtime, opts.logger);
  api.route('/metrics', metricsRoute(runtime.metrics.registry));
  const dashboard = registerDashboard(api, runtime);
  await runtime.start();
  const bound = await api.listen(httpAddr.host, httpAddr.port);
  const host = bound.family === 'IPv6' ? `[${bound.address}]` : bound.address;
  opts.logger.info({ http: `${host}:${bound.port}`, ws: self.ws }, 'serving');
  let stopping: Promise<void> | null = null;
  return {
    runtime,
    httpUrl: `http://${host}:${bound.port}`,
    stop: () => {
      stopping ??= (async () => {
        const closed = api.close();
        await runtime.stop();
        dashboard.close();
        api.closeAll();
        await closed;
      })();
      return stopping;
    },
  };
}
