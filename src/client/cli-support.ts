import type { ErrorCode } from '../errors.js';
import { withScheme } from './wire.js';

/**
 * Pieces of the lamport-lock CLI that are worth testing on their own: exit codes,
 * duration parsing, `run`'s lock names and command, the grants as printed, the status
 * table, its degraded lines and the watch lines.
 */

/** Exit codes of `lamport-lock` (README "CLI"); CMD's own code passes through. */
export const exitCodes = {
  /** A failure of lamport-lock itself (bad answer, I/O). */
  error: 1,
  /** Bad flags or arguments (EX_USAGE). */
  usage: 64,
  /** The local peer is unreachable or the request was undecidable: peers unreachable (EX_UNAVAILABLE). */
  unavailable: 69,
  /**
   * Worth retrying (EX_TEMPFAIL): the lock was not acquired within --timeout, or the peer refused
   * for a reason that passes (lease lost, evicted, not ready, stopping, too busy, disk).
   */
  notAcquired: 75,
  /** The hold was lost while CMD ran; CMD was sent SIGTERM (then SIGKILL after --grace). */
  lockLost: 76,
  /** release / refresh of a hold that is not live. */
  notHeld: 77,
  /** CMD could not be started (as in `env` and `nohup`). */
  cannotRun: 127,
} as const;

/** A bad flag or argument: the CLI prints its sentence and exits 64, never a stack trace. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** The peer's refusals that pass: a script may try again (exit 75, like a --timeout). */
const retryable: ReadonlySet<string> = new Set<ErrorCode>(['ERR_TIMEOUT', 'ERR_LEASE_LOST', 'ERR_EVICTED', 'ERR_NOT_READY', 'ERR_SHUTTING_DOWN', 'ERR_LIMIT_EXCEEDED', 'ERR_STORAGE', 'ERR_WATCH_BEHIND', 'ERR_LINK_BUFFER_FULL']);
/** The peer's refusals of what was typed: a name or value out of its limits (exit 64). */
const refusedInput: ReadonlySet<string> = new Set<ErrorCode>(['ERR_BAD_REQUEST', 'ERR_BODY_TOO_LARGE']);

/** The exit code of a peer's (or the client's) coded refusal. */
export function exitCodeOf(code: string): number {
  if (retryable.has(code)) return exitCodes.notAcquired;
  if (refusedInput.has(code)) return exitCodes.usage;
  if (code === 'ERR_UNREACHABLE') return exitCodes.unavailable;
  if (code === 'ERR_NOT_HELD') return exitCodes.notHeld;
  return exitCodes.error;
}

const units: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/**
 * Parses `500ms`, `30s`, `2m`, `1h`; a bare number is seconds, as `flock -w 5` and `sleep 5`
 * read it (so `--timeout 0.5` is 500 ms).
 */
export function parseDuration(text: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text.trim());
  if (m === null) throw new UsageError(`invalid duration ${JSON.stringify(text)}: use e.g. 500ms, 30s, 2m, 1h (a bare number is seconds)`);
  const value = Number(m[1]) * (units[m[2] ?? 's'] ?? 1);
  return Math.round(value);
}

/** A whole number of at least `min` for `flag` (--limit, --permits), or a sentence. */
export function parseCount(text: unknown, flag: string, min = 1): number {
  const t = String(text).trim();
  if (!/^\d+$/.test(t) || Number(t) < min || !Number.isSafeInteger(Number(t))) throw new UsageError(`${flag} ${JSON.stringify(String(text))} must be a whole number of at least ${min}`);
  return Number(t);
}

/**
 * Refuses lock names split by flags (`acquire x --timeout 5 seconds` would take `x` and
 * `seconds`): the words of a command that are not flags or their values must come together,
 * before or after the flags. `args` is the command line without node and script;
 * `valued` the flags that take a value, without dashes (short ones included).
 */
export function checkNamesTogether(args: readonly string[], valued: ReadonlySet<string>): void {
  const end = args.indexOf('--');
  const words: Array<{ word: string; at: number }> = [];
  for (let i = 0; i < (end < 0 ? args.length : end); i += 1) {
    const a = args[i] ?? '';
    if (a.startsWith('-') && a.length > 1) {
      if (!a.includes('=') && valued.has(a.replace(/^--?/, ''))) i += 1;
      continue;
    }
    words.push({ word: a, at: i });
  }
  // words[0] is the command itself; its names follow.
  const names = words.slice(1);
  for (let k = 1; k < names.length; k += 1) {
    const [prev, cur] = [names[k - 1], names[k]];
    if (prev !== undefined && cur !== undefined && cur.at !== prev.at + 1) {
      throw new UsageError(`${JSON.stringify(cur.word)} comes after a flag, apart from ${JSON.stringify(prev.word)}: give every NAME together (a duration is one word: --timeout 5s)`);
    }
  }
}

/** The lock names of a command: refuses an empty one, which names no lock. */
export function checkNames(names: readonly string[]): void {
  if (names.some((n) => n === '')) throw new UsageError('a lock name must not be empty');
}

/**
 * The URL of the local peer from --peer or LAMPORT_PEER. `host:port` without a scheme is
 * what people type (it is how the config writes `http`), so it means http://host:port;
 * anything else that is not a URL gets a sentence instead of "Invalid URL".
 */
export function parsePeerUrl(text: string, what: string): string {
  const url = withScheme(text);
  try {
    new URL(url);
  } catch {
    throw new UsageError(`${what} ${JSON.stringify(text)} is not a URL of the local peer (a port is 1 to 65535): use e.g. http://127.0.0.1:7001 or 127.0.0.1:7001`);
  }
  return url;
}

/** A grant as `acquire` prints it: the HTTP API's own field names (docs/design.md section 6). */
export function formatGrant(h: { lock: string; id: string; token: bigint; mode: string; peer: string; grantedAt: number; expiresAt: number | null }): Record<string, unknown> {
  return { lock: h.lock, id: h.id, token: h.token.toString(), mode: h.mode, peer: h.peer, granted_at: h.grantedAt, expires_at: h.expiresAt };
}

/** A multi-lock grant as `acquire NAME NAME...` prints it: the HTTP API's own field names (POST /v1/acquire). */
export function formatMultiGrant(h: {
  id: string;
  locks: ReadonlyArray<{ lock: string; mode: string; token: bigint }>;
  token: bigint;
  peer: string;
  grantedAt: number;
  expiresAt: number | null;
}): Record<string, unknown> {
  const first = h.locks[0];
  return {
    id: h.id, locks: h.locks.map((l) => ({ lock: l.lock, mode: l.mode, token: l.token.toString() })),
    lock: first?.lock ?? null, token: h.token.toString(), mode: first?.mode ?? null, peer: h.peer, granted_at: h.grantedAt, expires_at: h.expiresAt,
  };
}

/** What `run` holds and what it runs. */
export interface RunTarget {
  readonly names: readonly string[];
  readonly cmd: readonly string[];
}

/**
 * The lock names and the command of `run NAME... -- CMD [ARGS...]`. With `--`, every word
 * before it is a lock name (all taken together) and the command is what follows; without
 * it, the first word is the one lock name and the rest is the command (the older
 * `run NAME CMD [ARGS...]`, kept working: so several names need `--`).
 */
export function runTarget(words: readonly string[], afterDashes: readonly string[] | null): RunTarget {
  const usage = 'lamport-lock run NAME [NAME...] -- CMD [ARGS...]';
  if (afterDashes === null) {
    const [name, ...cmd] = words;
    if (name === undefined || cmd.length === 0) throw new UsageError(`run needs a command to run while holding the lock, after --: ${usage}`);
    return { names: [name], cmd };
  }
  if (words.length === 0) throw new UsageError(`run needs at least one lock name before --: ${usage}`);
  if (afterDashes.length === 0) {
    throw new UsageError(`run needs a command to run while holding the ${words.length === 1 ? 'lock' : 'locks'}, after --: ${usage}`);
  }
  const seen = new Set<string>();
  for (const name of words) {
    if (seen.has(name)) throw new UsageError(`run: lock name ${JSON.stringify(name)} is given twice; each lock is named once`);
    seen.add(name);
  }
  return { names: words, cmd: afterDashes };
}

interface Row {
  readonly peer?: unknown;
  readonly owner?: unknown;
  readonly token?: unknown;
  readonly mode?: unknown;
  readonly since?: unknown;
  readonly waits_for_acks?: unknown;
}

/** A holder of another peer that its peer cannot have granted yet, as far as this peer heard: the acks it waits for. */
function pendingAcks(r: Row): string[] {
  return Array.isArray(r.waits_for_acks) ? r.waits_for_acks.map(String) : [];
}

function rowsOf(lock: Record<string, unknown>, key: 'holders' | 'waiters'): Row[] {
  const v = lock[key];
  return Array.isArray(v) ? (v as Row[]) : [];
}

function seconds(ms: number): string {
  const s = Math.max(0, ms / 1000);
  return s < 60 ? `${s.toFixed(1)}s` : `${Math.floor(s / 60)}m${Math.floor(s % 60)}s`;
}

function age(since: unknown, now: number): string {
  return typeof since === 'number' ? seconds(now - since) : '-';
}

function evictionText(due: unknown): string {
  if (typeof due !== 'number') return 'this peer will not evict it (two peers, or never met): waiting until it returns';
  return due > 0 ? `eviction due in ${seconds(due)}` : 'eviction due now, waiting for a majority to confirm';
}

/**
 * The protocol line of `lamport-lock status`: the agreed view's epoch (`member list` shows the
 * view), the level the peer runs at, the levels its binary
 * speaks, and the newest level each other peer's binary advertised (docs/operations.md,
 * "Protocol levels"); nothing when the peer does not say.
 */
function formatLevels(cluster: Record<string, unknown>): string {
  const levels = cluster['protocol_levels'];
  if (typeof cluster['protocol_level'] !== 'number' || typeof levels !== 'object' || levels === null) return '';
  const range = levels as Record<string, unknown>;
  const peers = Array.isArray(cluster['peers']) ? cluster['peers'].filter((p): p is Record<string, unknown> => typeof p === 'object' && p !== null && p['self'] !== true) : [];
  const advertised = peers.map((p) => `${String(p['id'])} ${typeof p['newest_level'] === 'number' ? p['newest_level'] : 'not known yet'}`).join(', ');
  const epoch = typeof cluster['epoch'] === 'number' ? `view epoch ${cluster['epoch']}, ` : '';
  return `${epoch}protocol level ${cluster['protocol_level']} (this binary speaks ${String(range['oldest'])} to ${String(range['newest'])})` +
    `${advertised === '' ? '' : `; newest level each peer's binary speaks: ${advertised}`}\n`;
}

/**
 * The first lines of `lamport-lock status`, from GET /v1/cluster: the peer, its cluster and its
 * config fingerprint (compare hosts at a glance), then one REFUSED line per link refused
 * either way of late, with what differs (docs/design.md section 4, "One agreed cluster").
 */
export function formatClusterHeader(cluster: Record<string, unknown>): string {
  if (typeof cluster['fingerprint'] !== 'string') return '';
  const head = `peer ${String(cluster['id'])} of cluster ${String(cluster['cluster'])}, config fingerprint ${cluster['fingerprint']}\n${formatLevels(cluster)}`;
  const links = Array.isArray(cluster['refused_links']) ? cluster['refused_links'].filter((r): r is Record<string, unknown> => typeof r === 'object' && r !== null) : [];
  return head + links.map((r) => {
    const who = r['direction'] === 'by_peer' ? `peer ${String(r['peer'])} refuses this peer` : `this peer refuses peer ${String(r['peer'])}`;
    const differences = Array.isArray(r['differences']) && r['differences'].length > 0 ? r['differences'].map(String).join('; ') : String(r['message'] ?? '');
    return `REFUSED: ${who} (${String(r['reason'])}): ${differences}\n`;
  }).join('');
}

/**
 * What `lamport-lock status` says of the peer above its table, from GET /v1/cluster: a line
 * when it is superseded (`superseded`: a newer process runs with its id), and one line per
 * peer that every grant waits for (`degraded`, docs/design.md section 6); nothing when there
 * is none or the peer does not say.
 */
export function formatDegraded(cluster: Record<string, unknown>): string {
  const superseded = typeof cluster['superseded'] === 'string' ? `SUPERSEDED: ${cluster['superseded']}\n` : '';
  return superseded + formatWaitedFor(cluster['degraded']);
}

function formatWaitedFor(d: unknown): string {
  if (typeof d !== 'object' || d === null) return '';
  const waiting = (d as Record<string, unknown>)['waiting_for'];
  if (!Array.isArray(waiting)) return '';
  const minority = minorityText((d as Record<string, unknown>)['minority']);
  const peers = waiting.filter((w): w is Record<string, unknown> => typeof w === 'object' && w !== null);
  return minority + peers.map((w) => {
    const link = w['connected'] === true ? 'link up' : 'link down';
    const silent = typeof w['silent_ms'] === 'number' ? `, silent ${seconds(w['silent_ms'])}` : '';
    const eviction = minority === '' ? evictionText(w['eviction_due_in_ms']) : 'this peer cannot evict it from the minority';
    return `DEGRADED: every grant waits for peer ${String(w['peer'])} (${link}${silent}); ${eviction}\n`;
  }).join('');
}

/** GET /v1/cluster `degraded.minority`: this peer's side of a partition that left it without a majority. */
function minorityText(m: unknown): string {
  if (typeof m !== 'object' || m === null) return '';
  const { hears, peers, majority } = m as Record<string, unknown>;
  return `MINORITY: this peer has no lease: it is in the minority (hears ${String(hears)} of ${String(peers)} peers, itself included; a majority is ${String(majority)}). `
    + 'It grants nothing and evicts nobody; the peers on the majority side evict this one.\n';
}

/** A readable table of holders and waiters, for `lamport-lock status`. */
export function formatStatus(body: Record<string, unknown>, now = Date.now()): string {
  const locks = Array.isArray(body['locks']) ? (body['locks'] as Array<Record<string, unknown>>) : [body];
  if (locks.length === 0 || (locks.length === 1 && rowsOf(locks[0] ?? {}, 'holders').length === 0 && rowsOf(locks[0] ?? {}, 'waiters').length === 0)) {
    return 'no locks held or waited for\n';
  }
  // AGE: since the request was made (its `since`, the same on every peer), waiting included.
  // STATE admitted: another peer's request that the mode rule admits here, whose peer has
  // not heard every ack yet (as far as this peer knows): not granted there yet.
  const lines = [['LOCK', 'STATE', 'PEER', 'OWNER', 'MODE', 'TOKEN', 'AGE']];
  const notes: string[] = [];
  for (const lock of locks) {
    for (const [state, key] of [['held', 'holders'], ['waiting', 'waiters']] as const) {
      for (const r of rowsOf(lock, key)) {
        const acks = pendingAcks(r);
        if (acks.length > 0) notes.push(`admitted: ${String(lock['name'])} token ${String(r.token ?? '')} is admitted here, not granted by peer ${String(r.peer ?? '')} until it hears from ${acks.join(', ')}`);
        lines.push([String(lock['name']), acks.length > 0 ? 'admitted' : state, String(r.peer ?? ''), String(r.owner ?? ''), String(r.mode ?? ''), String(r.token ?? ''), age(r.since, now)]);
      }
    }
  }
  const widths = lines[0]?.map((_, i) => Math.max(...lines.map((l) => (l[i] ?? '').length))) ?? [];
  return lines.map((l) => l.map((c, i) => c.padEnd(widths[i] ?? 0)).join('  ').trimEnd()).join('\n') + '\n' + notes.map((n) => `${n}\n`).join('');
}

/**
 * One line per change of `lamport-lock status --watch`: when (ISO), what, the lock, and the
 * request (owner, peer, token), with the end reason of this peer's own holds.
 */
export function formatWatchChange(type: string, data: Record<string, unknown>): string {
  const r = typeof data['request'] === 'object' && data['request'] !== null ? (data['request'] as Record<string, unknown>) : {};
  const at = typeof data['at'] === 'number' ? new Date(data['at']).toISOString() : '-';
  const reason = typeof data['reason'] === 'string' ? ` reason=${data['reason']}` : '';
  return `${at} ${type.padEnd(8)} ${String(data['lock'])} owner=${String(r['owner'] ?? '')} peer=${String(r['peer'] ?? '')} token=${String(r['token'] ?? '')}${reason}\n`;
}
