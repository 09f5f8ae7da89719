/**
 * The OpenAPI description (src/http/openapi.ts) against the router and the error table:
 * its paths and methods are exactly the routes a peer serves (started as the binary starts
 * it, dashboard routes aside), and every error code it lists is answered with the status
 * errors.ts gives it. Real answers are checked in test/integration/openapi.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ClusterConfig } from '../../src/config.js';
import { ErrorCode, httpStatusOf } from '../../src/errors.js';
import { dashboardPaths } from '../../src/http/dashboard.js';
import { openApiSpec } from '../../src/http/openapi.js';
import { silentLogger } from '../../src/log.js';
import type { PeerServer } from '../../src/server.js';
import { startPeerServer } from '../../src/server.js';

type Json = Record<string, unknown>;

const config: ClusterConfig = {
  cluster: 'openapi-test', secret: 'test-secret', peers: [{ id: 'a', ws: 'ws://127.0.0.1:0', http: '127.0.0.1:0' }],
  heartbeatMs: 1000, leaseMs: 5000, evictMs: 15000, tls: undefined,
};

/** Codes that never reach an HTTP client: peer links, config, and the client's own. */
const notHttp: ReadonlySet<string> = new Set([
  ErrorCode.ConfigInvalid, ErrorCode.FrameInvalid, ErrorCode.FrameTooLarge, ErrorCode.HandshakeRefused, ErrorCode.LinkGap, ErrorCode.LinkBufferFull, ErrorCode.PeerError,
  // A start refused (the wall clock past the largest clock): the process exits, no client hears it.
  ErrorCode.ClockAhead,
]);

let server: PeerServer;
beforeAll(async () => {
  server = await startPeerServer({ config, id: 'a', logger: silentLogger() });
});
afterAll(async () => {
  await server.stop();
});

const paths = openApiSpec['paths'] as Record<string, Json>;

function operations(): Array<[string, string, Json]> {
  return Object.entries(paths).flatMap(([template, item]) => ['get', 'post', 'delete'].filter((m) => m in item).map((m): [string, string, Json] => [m.toUpperCase(), template, item[m] as Json]));
}

describe('the OpenAPI description', () => {
  it('lists exactly the routes a peer serves, the dashboard\'s aside', () => {
    const dashboard: ReadonlySet<string> = new Set(dashboardPaths);
    const served = server.routes().filter((r) => !dashboard.has(r.path)).map((r) => `${r.method} ${r.path}`).sort();
    expect(operations().map(([m, t]) => `${m} ${t}`).sort()).toEqual(served);
  });

  it('lists every error code an HTTP client can get, each under the status errors.ts answers it with', () => {
    const schemas = (openApiSpec['components'] as Json)['schemas'] as Record<string, Json>;
    const listed = ((schemas['Error']?.['properties'] as Record<string, Json>)['error']?.['enum'] as string[]).filter((c) => c !== 'ERR_INTERNAL');
    expect(listed.sort()).toEqual(Object.values(ErrorCode).filter((c) => !notHttp.has(c)).sort());
    for (const [method, template, op] of operations()) {
      for (const [status, response] of Object.entries(op['responses'] as Record<string, Json>)) {
        if (Number(status) < 400) continue;
        const schema = ((response['content'] as Record<string, Json>)['application/json']?.['schema'] as Json);
        const codes = ((schema['allOf'] as Json[])[1]?.['properties'] as Record<string, Json>)['error']?.['enum'] as string[];
        for (const code of codes) {
          const expected = code === 'ERR_INTERNAL' ? 500 : httpStatusOf[code as ErrorCode];
          expect(`${method} ${template} ${code} ${status}`).toBe(`${method} ${template} ${code} ${expected}`);
        }
      }
    }
  });

  it('gives every operation the refusals of the access policy, and every POST those of its body', () => {
    for (const [method, template, op] of operations()) {
      const statuses = Object.keys(op['responses'] as Json);
      for (const s of ['400', '401', '403', '421']) expect(statuses, `${method} ${template}`).toContain(s);
      if (method === 'POST') for (const s of ['413', '415']) expect(statuses, `${method} ${template}`).toContain(s);
    }
  });
});
