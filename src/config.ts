/**
 * The cluster configuration file (docs/design.md section 8). An invalid file is refused at start
 * with every problem listed, not only the first, so an operator fixes it in one pass.
 */
import { readFileSync } from 'node:fs';
import { isRecord } from './core/types.js';
import { LockError, ErrorCode } from './errors.js';
import { limits } from './limits.js';
import { resolveSecret } from './secret.js';

/** One configured peer. */
export interface PeerConfig {
  readonly id: string;
  /** Where the peer's WebSocket listener is reached, `ws://host:port` or `wss://...`. */
  readonly ws: string;
  /** Where its local HTTP API listens, `host:port`. */
  readonly http: string;
}

/** Optional TLS for the peer links: wss with a certificate, mutual when a CA is given. */
export interface TlsConfig {
  readonly cert: string;
  readonly key: string;
  readonly ca?: string;
}

/** A validated cluster configuration. */
export interface ClusterConfig {
  readonly cluster: string;
  readonly secret: string;
  readonly peers: readonly PeerConfig[];
  readonly heartbeatMs: number;
  readonly leaseMs: number;
  readonly evictMs: number;
  readonly tls: TlsConfig | undefined;
}

/**
 * Defaults of docs/design.md section 5 (issue 15): a crashed peer stalls the others for about
 * `evict_ms`, under 2 s; `evict_ms` sits at its floor, `lease_ms` * 1.5 + `heartbeat_ms`.
 */
export const timingDefaults = { heartbeatMs: 200, leaseMs: 1000, evictMs: 1700 } as const;

/**
 * How much faster one host's monotonic clock may run than another's, as a factor. Eviction
 * is safe when `evict_ms > lease_ms * clockRateMargin` plus a heartbeat (docs/design.md section 5).
 */
export const clockRateMargin = 1.5;

const idPattern = new RegExp(`^[A-Za-z0-9_.-]{1,${limits.peerIdCharsMax}}$`);

/** A peer id: 1 to limits.peerIdCharsMax characters of [A-Za-z0-9_.-] (the config's peers and a member added to the view alike). */
export function isPeerId(id: unknown): id is string {
  return typeof id === 'string' && idPattern.test(id);
}
const knownKeys = new Set(['cluster', 'secret', 'secret_file', 'peers', 'heartbeat_ms', 'lease_ms', 'evict_ms', 'tls']);

/** `ws://host:port` or `wss://host:port` that the URL parser accepts (a port of 99999 it does not). */
export function isWsUrl(ws: string): boolean {
  const m = /^wss?:\/\/[^/\s]+:(\d{1,5})\/?$/.exec(ws);
  const port = Number(m?.[1] ?? 0);
  if (m === null || port < 1 || port > 65535) return false;
  try {
    new URL(ws);
    return true;
  } catch {
    return false;
  }
}

function checkPeer(p: unknown, i: number, problems: string[]): PeerConfig | undefined {
  if (!isRecord(p)) {
    problems.push(`peers[${i}] must be an object with id, ws and http`);
    return undefined;
  }
  const { id, ws, http } = p;
  const before = problems.length;
  if (!isPeerId(id)) problems.push(`peers[${i}].id must be 1-${limits.peerIdCharsMax} characters of [A-Za-z0-9_.-]`);
  if (typeof ws !== 'string' || !isWsUrl(ws)) problems.push(`peers[${i}].ws must look like ws://host:port, with a port from 1 to 65535`);
  if (typeof http !== 'string' || parseHostPort(http) === undefined) problems.push(`peers[${i}].http must look like host:port`);
  return problems.length === before ? { id: id as string, ws: ws as string, http: http as string } : undefined;
}

function checkPeers(raw: unknown, problems: string[]): PeerConfig[] {
  if (!Array.isArray(raw) || raw.length === 0) {
    problems.push('peers must be a non-empty array');
    return [];
  }
  if (raw.length > limits.peersMax) problems.push(`peers has ${raw.length} entries; at most ${limits.peersMax} are allowed`);
  const peers = raw.map((p, i) => checkPeer(p, i, problems)).filter((p): p is PeerConfig => p !== undefined);
  // Duplicates are checked on the raw entries, so a peer with another problem still counts.
  const seen = new Set<string>();
  for (const p of raw) {
    if (!isRecord(p)) continue;
    for (const what of ['id', 'ws', 'http'] as const) {
      const key = p[what];
      if (typeof key !== 'string') continue;
      if (seen.has(`${what}:${key}`)) problems.push(`peers: ${what} ${JSON.stringify(key)} appears more than once`);
      seen.add(`${what}:${key}`);
    }
  }
  return peers;
}

function checkTiming(raw: Record<string, unknown>, key: string, fallback: number, problems: string[]): number {
  const v = raw[key];
  if (v === undefined) return fallback;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < limits.timingMsMin || v > limits.timingMsMax) {
    problems.push(`${key} must be an integer number of milliseconds between ${limits.timingMsMin} and ${limits.timingMsMax}`);
    return fallback;
  }
  return v;
}

function checkTls(raw: unknown, problems: string[]): TlsConfig | undefined {
  if (raw === undefined) return undefined;
  if (!isRecord(raw) || typeof raw['cert'] !== 'string' || typeof raw['key'] !== 'string' || (raw['ca'] !== undefined && typeof raw['ca'] !== 'string')) {
    problems.push('tls must be an object with cert and key file paths, and optionally ca');
    return undefined;
  }
  const ca = raw['ca'];
  return typeof ca === 'string' ? { cert: raw['cert'], key: raw['key'], ca } : { cert: raw['cert'], key: raw['key'] };
}

function checkTimingRelations(c: { heartbeatMs: number; leaseMs: number; evictMs: number }, problems: string[]): void {
  if (c.leaseMs < 2 * c.heartbeatMs) problems.push(`lease_ms (${c.leaseMs}) must be at least twice heartbeat_ms (${c.heartbeatMs}), or the lease flaps`);
  const floor = Math.ceil(c.leaseMs * clockRateMargin + c.heartbeatMs);
  if (c.evictMs < floor) {
    problems.push(`evict_ms (${c.evictMs}) must be at least lease_ms * ${clockRateMargin} + heartbeat_ms = ${floor}, so a silent peer's lease lapses before it is evicted`);
  }
}

/** Validates a parsed configuration; throws ERR_CONFIG_INVALID listing every problem. */
export function parseConfig(raw: unknown, env: Readonly<Record<string, string | undefined>> = {}): ClusterConfig {
  const problems: string[] = [];
  if (!isRecord(raw)) throw new LockError(ErrorCode.ConfigInvalid, 'config must be a JSON object', { problems: ['config must be a JSON object'] });
  for (const key of Object.keys(raw)) if (!knownKeys.has(key)) problems.push(`unknown key ${JSON.stringify(key)}`);
  const cluster = raw['cluster'];
  if (typeof cluster !== 'string' || cluster.length === 0 || cluster.length > limits.clusterNameCharsMax) problems.push(`cluster must be a name of 1-${limits.clusterNameCharsMax} characters`);
  const secret = resolveSecret(raw, env, problems);
  const peers = checkPeers(raw['peers'], problems);
  const timing = {
    heartbeatMs: checkTiming(raw, 'heartbeat_ms', timingDefaults.heartbeatMs, problems),
    leaseMs: checkTiming(raw, 'lease_ms', timingDefaults.leaseMs, problems),
    evictMs: checkTiming(raw, 'evict_ms', timingDefaults.evictMs, problems),
  };
  checkTimingRelations(timing, problems);
  const tls = checkTls(raw['tls'], problems);
  if (problems.length > 0) {
    throw new LockError(ErrorCode.ConfigInvalid, `invalid config: ${problems.join('; ')}`, { problems });
  }
  return { cluster: cluster as string, secret: secret as string, peers, ...timing, tls };
}

/** Reads and validates a configuration file. */
export function loadConfig(path: string, env: Readonly<Record<string, string | undefined>> = {}): ClusterConfig {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    const why = `cannot read config file ${path}: ${(err as Error).message}`;
    throw new LockError(ErrorCode.ConfigInvalid, why, { problems: [why] });
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    const why = `config file ${path} is not valid JSON: ${(err as Error).message}`;
    throw new LockError(ErrorCode.ConfigInvalid, why, { problems: [why] });
  }
  return parseConfig(raw, env);
}

/** Splits `host:port` (IPv6 in brackets); undefined when malformed. */
export function parseHostPort(s: string): { host: string; port: number } | undefined {
  const m = /^(\[[0-9a-fA-F:.]+\]|[^:\s[\]]+):(\d{1,5})$/.exec(s);
  if (m === null) return undefined;
  const port = Number(m[2]);
  if (port > 65535) return undefined;
  const host = (m[1] ?? '').replace(/^\[|\]$/g, '');
  return { host, port };
}

/** The host and port a `ws://host:port` URL names. */
export function wsListenAddress(url: string): { host: string; port: number } {
  const u = new URL(url);
  return { host: u.hostname.replace(/^\[|\]$/g, ''), port: Number(u.port) };
}
