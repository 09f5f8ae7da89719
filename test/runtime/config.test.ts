/**
 * The configuration file (docs/design.md section 8): every problem listed, defaults, env override.
 */
import { chmodSync, chownSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseConfig, parseHostPort } from '../../src/config.js';
import { LockError } from '../../src/errors.js';
import { readableSecretWarning } from '../../src/secret.js';
import { readTokenFile } from '../../src/token-file.js';

const good = {
  cluster: 'demo',
  secret: 'config-test-secret-0123456789abcdef',
  peers: [
    { id: 'a', ws: 'ws://127.0.0.1:7101', http: '127.0.0.1:7001' },
    { id: 'b', ws: 'ws://127.0.0.1:7102', http: '127.0.0.1:7002' },
  ],
};

function problems(raw: unknown, env: Readonly<Record<string, string>> = {}): string[] {
  try {
    parseConfig(raw, env);
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
    expect(parseConfig(good, { LAMPORT_SECRET: 'from-the-environment-0123456789abcdef' }).secret).toBe('from-the-environment-0123456789abcdef');
  });

  it('lists every problem, not only the first', () => {
    const found = problems({ peers: [{ id: 'a b', ws: 'tcp://x', http: 'nope' }], heartbeat_ms: 5, extra: true });
    expect(found).toEqual(expect.arrayContaining([
      'unknown key "extra"',
      'cluster must be a name of 1-128 characters',
      'the cluster secret (secret, secret_file, LAMPORT_SECRET or LAMPORT_SECRET_FILE) must be at least 32 characters (e.g. openssl rand -hex 32): a short one falls to an offline search over one recorded handshake',
      'peers[0].id must be 1-64 characters of [A-Za-z0-9_.-]',
      'peers[0].ws must look like ws://host:port, with a port from 1 to 65535',
      'peers[0].http must look like host:port',
      'heartbeat_ms must be an integer number of milliseconds between 10 and 3600000',
    ]));
  });

  it('refuses a secret shorter than 32 characters, the old example change-me included (issue 37)', () => {
    for (const secret of ['change-me', 'x'.repeat(31)]) expect(problems({ ...good, secret }).join()).toContain('must be at least 32 characters');
    expect(problems({ ...good, secret: undefined }, { LAMPORT_SECRET: 'short-env-secret' }).join()).toContain('must be at least 32 characters');
  });

  it('reads the secret from a secret_file (or LAMPORT_SECRET_FILE) with the token files\' rules (issue 37)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'secret-'));
    const file = join(dir, 'secret');
    writeFileSync(file, 'file-secret-0123456789abcdef-0123456789\n', { mode: 0o600 });
    const { secret: _omitted, ...noSecret } = good;
    expect(parseConfig({ ...noSecret, secret_file: file }).secret).toBe('file-secret-0123456789abcdef-0123456789');
    expect(parseConfig(noSecret, { LAMPORT_SECRET_FILE: file }).secret).toBe('file-secret-0123456789abcdef-0123456789');
    expect(problems({ ...good, secret_file: file }).join()).toContain('secret and secret_file are both set');
    chmodSync(file, 0o644);
    expect(problems({ ...noSecret, secret_file: file }).join()).toContain('group and others must have no access (chmod 600');
  });

  // Only root can give a file away; as another user the test checks that one's own file passes.
  it('refuses a private token or secret file owned by another user than this one or root (issue 37)', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'secret-')), 'token');
    writeFileSync(file, 'token-0123456789abcdef\n', { mode: 0o600 });
    expect(readTokenFile(file, 'token file', { private: true })).toBe('token-0123456789abcdef');
    if (process.getuid?.() !== 0) return;
    chownSync(file, 4242, 4242);
    expect(() => readTokenFile(file, 'token file', { private: true })).toThrow(/is owned by uid 4242: it must be owned by the user this runs as \(uid 0\) or root/);
  });

  it('warns about a readable config file that holds the secret, not a private one nor one whose secret comes from elsewhere (issue 37)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'secret-'));
    const path = join(dir, 'cluster.json');
    writeFileSync(path, JSON.stringify(good), { mode: 0o644 });
    chmodSync(path, 0o644);
    expect(readableSecretWarning(path, {})).toMatch(/holds the cluster secret and has mode 0644: other users can read it.*chmod 600/);
    expect(readableSecretWarning(path, { LAMPORT_SECRET: 'x' })).toBeNull();
    chmodSync(path, 0o600);
    expect(readableSecretWarning(path, {})).toBeNull();
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
