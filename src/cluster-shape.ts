/**
 * The cluster's identity (docs/design.md section 4, "One agreed cluster"): everything the
 * safety argument needs every peer to hold equal, and its fingerprint. Every link checks it
 * in the authenticated handshake: a peer whose shape differs is refused, with the
 * differences in words, and never counted in this cluster.
 *
 * In the shape: the cluster name; the peer ids in configuration order (an id's index breaks
 * timestamp ties and is part of every token); heartbeat_ms, lease_ms and evict_ms; the
 * clock-rate margin the eviction bound assumes; the protocol level the peers run at. Not in it: how a host
 * reaches another (the `ws` and `http` addresses: a peer behind NAT, a container or a proxy
 * is reached at different addresses from different hosts), the TLS files, the secret (the
 * handshake's HMAC proves it).
 */
import { createHash } from 'node:crypto';
import type { ClusterConfig } from './config.js';
import { clockRateMargin } from './config.js';
import { isRecord } from './core/types.js';
import { limits } from './limits.js';

/** What every peer of one cluster must hold equal. */
export interface ClusterShape {
  readonly cluster: string;
  /** Peer ids in configuration order. */
  readonly peers: readonly string[];
  readonly heartbeatMs: number;
  readonly leaseMs: number;
  readonly evictMs: number;
  /** The clock-rate margin of the eviction bound (config.ts `clockRateMargin`), in thousandths. */
  readonly marginMilli: number;
  /** The protocol level the peer runs at (transport/codec.ts `protocolLevels`): the one its data dir records. */
  readonly protocol: number;
  /**
   * Set only in a cluster recovered from a lost majority (`lamport-peer --force-new-cluster`,
   * docs/reconfiguration.md P10): random, made by the recovery, so that the lost hosts, and any
   * other recovery, are another cluster on every link.
   */
  readonly lineage?: string;
}

/** Characters of a fingerprint: hex of a SHA-256, cut (96 bits: no accidental collision among configs). */
export const fingerprintChars = 24;

/** The shape of a configuration, as this build reads it. */
export function clusterShapeOf(config: Pick<ClusterConfig, 'cluster' | 'heartbeatMs' | 'leaseMs' | 'evictMs'> & { readonly peers: readonly { readonly id: string }[] }, protocol: number): ClusterShape {
  return {
    cluster: config.cluster,
    peers: config.peers.map((p) => p.id),
    heartbeatMs: config.heartbeatMs,
    leaseMs: config.leaseMs,
    evictMs: config.evictMs,
    marginMilli: Math.round(clockRateMargin * 1000),
    protocol,
  };
}

/** The shape's fields in a fixed order: what is hashed, so that key order never matters. */
function canonical(s: ClusterShape): string {
  const fields = ['lamport-lock cluster shape', s.cluster, s.peers, s.heartbeatMs, s.leaseMs, s.evictMs, s.marginMilli, s.protocol];
  return JSON.stringify(s.lineage === undefined ? fields : [...fields, s.lineage]);
}

/** The fingerprint of a shape: equal shapes, equal fingerprints; any difference, another one. */
export function fingerprintOf(shape: ClusterShape): string {
  return createHash('sha256').update(canonical(shape)).digest('hex').slice(0, fingerprintChars);
}

/** Shape guard for a shape from the network (a refusal carries the refuser's). */
export function isClusterShape(v: unknown): v is ClusterShape {
  if (!isRecord(v)) return false;
  const { cluster, peers } = v;
  const count = (x: unknown): boolean => typeof x === 'number' && Number.isSafeInteger(x) && x >= 0;
  return typeof cluster === 'string' && cluster.length <= limits.clusterNameCharsMax &&
    Array.isArray(peers) && peers.length <= limits.peersMax &&
    peers.every((p) => typeof p === 'string' && p.length <= limits.peerIdCharsMax) &&
    count(v['heartbeatMs']) && count(v['leaseMs']) && count(v['evictMs']) && count(v['marginMilli']) && count(v['protocol']) &&
    (v['lineage'] === undefined || (typeof v['lineage'] === 'string' && /^[0-9a-f]{1,64}$/.test(v['lineage'])));
}

const list = (ids: readonly string[]): string => `[${ids.join(', ')}]`;

/**
 * What differs between this peer's shape and another's, one sentence each, in words an
 * operator can act on ("peer c lists the peers [a, c, b]; this peer lists [a, b, c]").
 * `who` names the other side: `peer c`, or `the config this data dir last ran with`.
 */
export function shapeDifferences(mine: ClusterShape, theirs: ClusterShape, who: string): string[] {
  const out: string[] = [];
  if (mine.cluster !== theirs.cluster) out.push(`${who} is in cluster ${JSON.stringify(theirs.cluster)}; this peer in ${JSON.stringify(mine.cluster)}`);
  if (list(mine.peers) !== list(theirs.peers)) {
    const same = mine.peers.length === theirs.peers.length && [...mine.peers].sort().join('\n') === [...theirs.peers].sort().join('\n');
    out.push(`${who} lists the peers ${list(theirs.peers)}; this peer lists ${list(mine.peers)}${same ? ' (the same peers in another order: the order must match, it breaks ties and is part of every token)' : ''}`);
  }
  const timings = [['heartbeat_ms', 'heartbeatMs'], ['lease_ms', 'leaseMs'], ['evict_ms', 'evictMs']] as const;
  for (const [key, field] of timings) {
    if (mine[field] !== theirs[field]) out.push(`${who}'s ${key} is ${theirs[field]}; here ${mine[field]}`);
  }
  if (mine.marginMilli !== theirs.marginMilli) out.push(`${who} assumes a clock-rate margin of ${theirs.marginMilli / 1000}; this build ${mine.marginMilli / 1000}`);
  if (mine.protocol !== theirs.protocol) out.push(`${who} runs protocol level ${theirs.protocol}; this peer ${mine.protocol}`);
  if (mine.lineage !== theirs.lineage) {
    const of = (l: string | undefined): string => (l === undefined ? 'the cluster as founded' : `the cluster recovered as ${l}`);
    out.push(`${who} belongs to ${of(theirs.lineage)}; this peer to ${of(mine.lineage)} (lamport-peer --force-new-cluster)`);
  }
  return out;
}

/** What the fingerprint covers, in words (lamport-peer --check-config, docs/operations.md). */
export function describeShape(shape: ClusterShape): string[] {
  return [
    `cluster: ${shape.cluster}`,
    `peers, in order: ${list(shape.peers)}`,
    `heartbeat_ms: ${shape.heartbeatMs}, lease_ms: ${shape.leaseMs}, evict_ms: ${shape.evictMs}`,
    `clock-rate margin: ${shape.marginMilli / 1000}`,
    `protocol level: ${shape.protocol}`,
    ...(shape.lineage === undefined ? [] : [`recovered as: ${shape.lineage}`]),
  ];
}
