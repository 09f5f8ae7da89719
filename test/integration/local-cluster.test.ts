/**
 * The test harness's own guarantees: every port it hands out is distinct (two peers given
 * one port made a test fail on EADDRINUSE), and every generated cluster has a name and a
 * secret of its own (a leftover peer of another cluster must not handshake into this one).
 */
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { LocalCluster, freePort } from '../../src/tools/local-cluster.js';

let clusters: LocalCluster[] = [];

afterEach(async () => {
  await Promise.all(clusters.map((c) => c.stop()));
  clusters = [];
});

describe('LocalCluster', () => {
  it('never hands out the same port twice, even before anything binds it', async () => {
    const ports = await Promise.all(Array.from({ length: 300 }, () => freePort()));
    expect(new Set(ports).size).toBe(ports.length);
  });

  it('gives each cluster its own name and secret', async () => {
    clusters = await Promise.all([1, 2].map(() => LocalCluster.start({ peers: 1 })));
    const configs = clusters.map((c) => JSON.parse(readFileSync(c.configPath, 'utf8')) as { cluster: string; secret: string });
    expect(configs[0]?.cluster).not.toBe(configs[1]?.cluster);
    expect(configs[0]?.secret).not.toBe(configs[1]?.secret);
  });
});
