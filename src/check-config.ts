/**
 * `lamport-peer --check-config FILE [--peer URL]` (docs/operations.md, "Every host's config must
 * match"): validates a config file, prints its cluster fingerprint and what it covers, and,
 * given a running peer, whether the file matches the cluster that peer is in, and what
 * differs. Like `consul validate`: run it on every host and compare the fingerprints.
 */
import type { ClusterShape } from './cluster-shape.js';
import { clusterShapeOf, describeShape, fingerprintOf, isClusterShape, shapeDifferences } from './cluster-shape.js';
import { loadConfig } from './config.js';
import { LockError, ErrorCode } from './errors.js';
import type { ProtocolLevels } from './transport/codec.js';
import { levelsText, protocolLevels, speaks } from './transport/codec.js';

/** What the check prints, and its exit code: 0 valid (and matching), 1 differs from the running peer, 2 invalid. */
export interface ConfigCheck {
  readonly text: string;
  readonly exitCode: 0 | 1 | 2;
}

/** Exit codes of `--check-config`. */
export const checkConfigExitCodes = { ok: 0, differs: 1, invalid: 2 } as const;

/** The shape a peer's GET /v1/cluster answers with, in the runtime's names; undefined if it says none. */
export function shapeFromClusterJson(cluster: Record<string, unknown>): ClusterShape | undefined {
  const s = cluster['shape'];
  if (typeof s !== 'object' || s === null) return undefined;
  const r = s as Record<string, unknown>;
  const margin = r['clock_rate_margin'];
  const shape = {
    cluster: r['cluster'], peers: r['peers'], heartbeatMs: r['heartbeat_ms'], leaseMs: r['lease_ms'], evictMs: r['evict_ms'],
    marginMilli: typeof margin === 'number' ? Math.round(margin * 1000) : undefined, protocol: r['protocol'],
  };
  return isClusterShape(shape) ? shape : undefined;
}

/**
 * The protocol level to check the file at: the running peer's, when this binary speaks it (a
 * peer runs at the level its data dir records); else the newest this binary speaks, at which
 * a peer with a new data dir runs.
 */
function levelToCheck(levels: ProtocolLevels, cluster: Record<string, unknown> | undefined): number {
  const theirs = cluster === undefined ? undefined : shapeFromClusterJson(cluster)?.protocol;
  return theirs !== undefined && speaks(levels, theirs) ? theirs : levels.newest;
}

/**
 * Checks the file at `path`; with `cluster` (a running peer's GET /v1/cluster, already
 * fetched), compares. Never throws for a bad file: the problems are the text.
 */
export function checkConfigFile(path: string, env: Readonly<Record<string, string | undefined>>, cluster?: Record<string, unknown>, levels = protocolLevels): ConfigCheck {
  let shape: ClusterShape;
  try {
    shape = clusterShapeOf(loadConfig(path, env), levelToCheck(levels, cluster));
  } catch (err) {
    if (!(err instanceof LockError) || err.code !== ErrorCode.ConfigInvalid) throw err;
    const problems = Array.isArray(err.details['problems']) ? err.details['problems'].map(String) : [err.message];
    return { text: `${path}: invalid config\n${problems.map((p) => `  - ${p}\n`).join('')}`, exitCode: checkConfigExitCodes.invalid };
  }
  const fp = fingerprintOf(shape);
  const head = `${path}: valid\nfingerprint ${fp}, of what every peer must hold equal:\n${describeShape(shape).map((l) => `  ${l}\n`).join('')}` +
    'not in it: the ws and http addresses (each host may reach the others at addresses of its own), tls, the secret (the handshake proves it)\n' +
    `protocol levels this binary speaks: ${levelsText(levels)} (a peer runs at the level its data dir records; with a new data dir, at ${levels.newest})\n`;
  if (cluster === undefined) return { text: head, exitCode: checkConfigExitCodes.ok };
  const peer = String(cluster['id']);
  if (cluster['fingerprint'] === fp) return { text: `${head}matches the cluster peer ${peer} is in\n`, exitCode: checkConfigExitCodes.ok };
  const theirs = shapeFromClusterJson(cluster);
  const differences = theirs === undefined ? [`peer ${peer} reports fingerprint ${String(cluster['fingerprint'])}`] : shapeDifferences(shape, theirs, `peer ${peer}`);
  const lines = differences.map((d) => `  - ${d.replace(/this peer/g, 'this file')}\n`).join('');
  return { text: `${head}DIFFERS from the cluster peer ${peer} is in (fingerprint ${String(cluster['fingerprint'])}):\n${lines}`, exitCode: checkConfigExitCodes.differs };
}
