/**
 * One whole peer process: the runtime, its HTTP API and its routes, started and stopped
 * together. The binary and the integration tests both start peers through this.
 */
import type { ClusterConfig } from '../config.js';
import { ErrorCode, LockError } from '../errors.js';
import { HttpApi } from '../http/api.js';
import { registerDashboard } from '../http/dashboard.js';
import { parseListenTarget } from '../http/listen-target.js';
import type { HttpAccessOptions } from '../http/listener.js';
import { listenHttp, prepareHttp } from '../http/listener.js';
import { metricsRoute } from '../http/metrics.js';
import type { Logger } from '../log.js';
import { PeerRuntime } from './peer.js';

/** What a peer server needs. */
export interface PeerServerOptions {
  readonly config: ClusterConfig;
  readonly id: string;
  /** `host:port` or `unix:/path` to serve HTTP on; defaults to the peer's `http` entry in the config. */
  readonly http?: string | undefined;
  /** Tokens, socket mode and group, allowed Host names of the HTTP API. */
  readonly access?: HttpAccessOptions | undefined;
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
  const target = parseListenTarget(opts.http ?? self.http);
  const access = await prepareHttp(target, opts.access ?? {});
  const runtime = new PeerRuntime({ config: opts.config, id: opts.id, dataDir: opts.dataDir, logger: opts.logger });
  const api = new HttpApi(runtime, opts.logger, access);
  api.route('/metrics', metricsRoute(runtime.metrics.registry));
  const dashboard = registerDashboard(api, runtime);
  await runtime.start();
  const httpUrl = await listenHttp(api, target, opts.access ?? {});
  opts.logger.info({ http: httpUrl, ws: self.ws, token: access.tokenRequired }, 'serving');
  let stopping: Promise<void> | null = null;
  return {
    runtime,
    httpUrl,
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
