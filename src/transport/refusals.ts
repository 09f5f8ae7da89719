/**
 * Refused links (docs/design.md section 4, "One agreed cluster"): which peers refused this one,
 * or were refused by it after proving the secret, why, and, for a configuration that differs,
 * what differs. GET /v1/cluster, `lamport-lock status`, the dashboard and /readyz read it; the
 * log gets one line per peer, direction and reason per limits.refusalLogEveryMs.
 */
import type { Logger } from 'pino';
import type { ClusterShape } from '../cluster-shape.js';
import { shapeDifferences } from '../cluster-shape.js';
import { ErrorCode, LockError } from '../errors.js';
import { limits } from '../limits.js';
import { LogLimiter } from '../log-limiter.js';

/** Who refused whom: `peer` refused this peer, or this peer refused `peer` (which proved the secret). */
export type RefusalDirection = 'by_peer' | 'by_us';

/** One refused link, as GET /v1/cluster lists it. */
export interface LinkRefusal {
  readonly peer: string;
  readonly direction: RefusalDirection;
  readonly reason: string;
  readonly message: string;
  /** With `wrong_config`, once known: what differs, one sentence each. */
  readonly differences: readonly string[];
  /** Monotonic ms of the last refusal. */
  readonly atMs: number;
  /** Refusals of this peer, direction and reason since this peer's process started them. */
  readonly count: number;
}

/** Reasons that mean the two peers' configurations (secret included) differ: only an operator mends them. */
const mismatchReasons: ReadonlySet<string> = new Set(['wrong_config', 'wrong_cluster', 'bad_mac', 'unknown_peer', 'wrong_version']);

/** The refused links of one mesh. */
export class LinkRefusals {
  readonly #shape: ClusterShape;
  readonly #log: Logger;
  readonly #lines = new LogLimiter(limits.refusalLogEveryMs, limits.refusalLogKeysMax);
  /** By peer, direction and reason; at most limits.refusalLogKeysMax, the oldest dropped first. */
  readonly #byKey = new Map<string, LinkRefusal>();

  constructor(shape: ClusterShape, log: Logger) {
    this.#shape = shape;
    this.#log = log;
  }

  /** `peer` refused this peer; a `wrong_config` refusal carries its shape, compared with ours. */
  byPeer(peer: string, reason: string, message: string, shape: ClusterShape | undefined, nowMs: number): void {
    const differences = shape === undefined ? [] : shapeDifferences(this.#shape, shape, `peer ${peer}`);
    this.#note({ peer, direction: 'by_peer', reason, message, differences }, nowMs);
  }

  /** This peer refused `peer`, which proved the secret (or whose welcome did). */
  byUs(peer: string, reason: string, message: string, nowMs: number): void {
    this.#note({ peer, direction: 'by_us', reason, message, differences: [] }, nowMs);
  }

  /** A handshake with `peer` succeeded: its refusals are over. */
  cleared(peer: string): void {
    for (const [key, r] of this.#byKey) if (r.peer === peer) this.#byKey.delete(key);
  }

  /** The refusals of the last limits.refusalShownMs, most recent first. */
  list(nowMs: number): LinkRefusal[] {
    const out: LinkRefusal[] = [];
    for (const r of this.#byKey.values()) if (nowMs - r.atMs <= limits.refusalShownMs) out.push(r);
    return out.sort((x, y) => y.atMs - x.atMs);
  }

  /**
   * ERR_CONFIG_MISMATCH naming a peer and what differs, while a refusal that only an operator
   * mends (another configuration, secret, version or peer list) is recent; else null.
   */
  mismatch(nowMs: number): LockError | null {
    const recent = this.list(nowMs).filter((r) => mismatchReasons.has(r.reason));
    // The most telling first: one that says what differs.
    const r = recent.find((x) => x.differences.length > 0) ?? recent[0];
    if (r === undefined) return null;
    const what = r.differences.length > 0 ? r.differences.join('; ') : r.message;
    const who = r.direction === 'by_peer' ? `peer ${r.peer} refuses this peer (${r.reason})` : `this peer refuses peer ${r.peer} (${r.reason})`;
    return new LockError(ErrorCode.ConfigMismatch, `${who}: ${what}. Every host's config must match: compare lamport-peer --check-config on each`, { peer: r.peer, reason: r.reason, differences: r.differences });
  }

  #note(r: Omit<LinkRefusal, 'atMs' | 'count'>, nowMs: number): void {
    const key = `${r.peer}\n${r.direction}\n${r.reason}`;
    const before = this.#byKey.get(key);
    // A refusal without the differences keeps those an earlier one of that peer told.
    const differences = r.differences.length > 0 ? r.differences : (before?.differences ?? []);
    this.#byKey.delete(key);
    if (this.#byKey.size >= limits.refusalLogKeysMax) this.#byKey.delete(this.#byKey.keys().next().value as string);
    this.#byKey.set(key, { ...r, differences, atMs: nowMs, count: (before?.count ?? 0) + 1 });
    const passedOver = this.#lines.admit(key, nowMs);
    if (passedOver === null) return;
    const level = mismatchReasons.has(r.reason) ? 'error' : 'warn';
    const line = r.direction === 'by_peer' ? `peer ${r.peer} refused this peer: ${r.message}` : `refused peer ${r.peer}: ${r.message}`;
    this.#log[level]({ code: ErrorCode.HandshakeRefused, reason: r.reason, remote: r.peer, differences, passedOver }, line);
  }
}
