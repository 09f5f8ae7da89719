/**
 * GET /metrics: the peer's Prometheus registry in text format (prom-client).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Registry } from 'prom-client';

/** A route handler serving `registry` in the Prometheus text format. */
export function metricsRoute(registry: Registry): (req: IncomingMessage, res: ServerResponse) => Promise<void> {
  return async (_req, res) => {
    const text = await registry.metrics();
    res.writeHead(200, { 'content-type': registry.contentType });
    res.end(text);
  };
}
