import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { Mesh } from '../../src/transport/mesh.js';
import { startStandaloneMesh } from '../../src/transport/standalone-mesh.js';
import { waitFor } from '../support/wait.js';
import type { TestPayload } from './helpers.js';
import { Recorder, isTestPayload } from './helpers.js';
import { TcpProxy } from './tcp-proxy.js';

/** A self-signed certificate for 127.0.0.1, used as its own CA: null without openssl. */
function selfSigned(): { cert: string; key: string } | null {
  const dir = mkdtempSync(join(tmpdir(), 'mesh-tls-'));
  const cert = join(dir, 'cert.pem');
  const key = join(dir, 'key.pem');
  const args = ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'];
  const run = spawnSync('openssl', args, { stdio: 'ignore' });
  return run.status === 0 ? { cert, key } : null;
}

const pem = selfSigned();

describe.skipIf(pem === null)('mesh over wss', () => {
  it('connects two peers with mutual TLS and delivers', async () => {
    if (pem === null) return;
    const tls = { cert: pem.cert, key: pem.key, ca: pem.cert };
    const proxies = [await TcpProxy.start(), await TcpProxy.start()];
    const peers = proxies.map((p, index) => ({ id: `p${index}`, index, ws: `wss://127.0.0.1:${p.port}` }));
    const recs = [new Recorder(), new Recorder()];
    const meshes: Mesh<TestPayload>[] = [];
    const make = (i: number): Promise<Mesh<TestPayload>> =>
        startStandaloneMesh<TestPayload>(
          {
            cluster: 'test', secret: 'sesame', self: peers[i]!, peers: [peers[1 - i]!], listen: { host: '127.0.0.1', port: 0 },
            incarnation: { startMs: 10 + i, nonce: 1 }, heartbeatMs: 100, isPayload: isTestPayload, clock: () => 1,
            logger: pino({ level: 'silent' }), tls,
          },
          recs[i]!,
        );
    try {
      for (const i of [0, 1]) {
        const mesh = await make(i);
        meshes.push(mesh);
        proxies[i]!.target = mesh.port();
      }
      await waitFor('connected over TLS', () => recs[0]!.connected.has(1) && recs[1]!.connected.has(0));
      meshes[0]!.send(1, { n: 5 });
      await waitFor('delivered over TLS', () => recs[1]!.count(0) === 1);
      expect(recs[1]!.payloads.get(0)).toEqual([5]);
    } finally {
      await Promise.all(meshes.map((m) => m.close()));
      await Promise.all(proxies.map((p) => p.close()));
    }
  });
});
