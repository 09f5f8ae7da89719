/**
 * The configuration file (docs/design.md section 8): every problem listed, defaults, env override.
 */
import { describe, expect, it } from 'vitest';
import { parseConfig, parseHostPort } from '../../src/config.js';
import { LockError } from '../../src/errors.js';

const good = {
  cluster: 'demo',
  secret: 'change-me',
  peers: [
    { id: 'a', ws: 'ws://127.0.0.1:7101', http: '127.0.0.1:7001' },
    { id: 'b', ws: 'ws://127.0.0.1:7102', http: '127.0.0.1:7002' },
  ],
};

function problems(raw: unknown): string[] {
  try {
    parseConfig(raw);
  } catch (err) {
    expect(err).toBeInstanceOf(LockError);
    expect((err as LockError).code).toBe('ERR_CONFIG_INVALID');
    return (err as LockError).details['problems'] as string[];
  }
  throw new Error('expected the config to be refused');
}

describe('parseConfig', () => {
  it('accepts the example with the default timings', () => {
    expect(parseConfig(good)).toMatchObject({ cluster: 'demo', heartbeatMs: 200, leaseMs: 1000, evictMs: 1700, tls: undefined });
  });

  it('lets LAMPORT_SECRET override the secret', () => {
    expect(parseConfig(good, { LAMPORT_SECRET: 'from-the-environment' }).secret).toBe('from-the-environment');
  });

  it('lists every problem, not only the first', () => {
    const found = problems({ peers: [{ id: 'a b', ws: 'tcp://x', http: 'nope' }], heartbeat_ms: 5, extra: true });
    expect(found).toEqual(expect.arrayContaining([
      'unknown key "extra"',
      'cluster must be a name of 1-128 characters',
      'secret (or LAMPORT_SECRET) must be a string of at least 8 characters',
      'peers[0].id must be 1-64 characters of [A-Za-z0-9_.-]',
      'peers[0].ws must look like ws://host:port, with a port from 1 to 65535',
      'peers[0].http must look like host:port',
      'heartbeat_ms must be an integer number of milliseconds between 10 and 3600000',
    ]));
  });

  it('refuses evict_ms too close to lease_ms and a lease shorter than two heartbeats', () => {
    expect(problems({ ...good, lease_ms: 1000, evict_ms: 1600 }).join()).toContain('evict_ms (1600) must be at least');
    expect(problems({ ...good, heartbeat_ms: 600, lease_ms: 1000, evict_ms: 5000 }).join()).toContain('lease_ms (1000) must be at least twice heartbeat_ms');
    expect(parseConfig({ ...good, heartbeat_ms: 200, lease_ms: 1000, evict_ms: 3000 }).evictMs).toBe(3000);
  });

  it('refuses a ws port the URL parser would refuse later (99999 once killed the peer with "Invalid URL")', () => {
    for (const port of ['99999', '65536', '0']) {
      const bad = { ...good, peers: [{ ...good.peers[0], ws: `ws://127.0.0.1:${port}` }, good.peers[1]] };
      expect(problems(bad), port).toContain('peers[0].ws must look like ws://host:port, with a port from 1 to 65535');
    }
    const edge = { ...good, peers: [{ ...good.peers[0], ws: 'ws://127.0.0.1:80' }, { ...good.peers[1], ws: 'wss://[::1]:65535' }] };
    expect(parseConfig(edge).peers.map((p) => p.ws)).toEqual(['ws://127.0.0.1:80', 'wss://[::1]:65535']);
  });

  it('refuses duplicate ids and addresses', () => {
    const dup = { ...good, peers: [good.peers[0], { ...good.peers[1], id: 'a', ws: 'ws://127.0.0.1:7101' }] };
    expect(problems(dup)).toEqual(expect.arrayContaining(['peers: id "a" appears more than once', 'peers: ws "ws://127.0.0.1:7101" appears more than once']));
  });
});

describe('parseHostPort', () => {
  it('reads IPv4, names and bracketed IPv6, and refuses the rest', () => {
    expect(parseHostPort('127.0.0.1:7001')).toEqual({ host: '127.0.0.1', port: 7001 });
    expect(parseHostPort('[::1]:80')).toEqual({ host: '::1', port: 80 });
    expect(parseHostPort('peer-a:7001')).toEqual({ host: 'peer-a', port: 7001 });
    expect(parseHostPort('127.0.0.1:70000')).toBeUndefined();
    expect(parseHostPort('127.0.0.1')).toBeUndefined();
  });
});
