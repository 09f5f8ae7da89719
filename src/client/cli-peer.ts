/**
 * The CLI's dealings with a local peer that comes and goes: waiting for it to answer
 * (--dial-timeout, etcdctl's habit) and following a stream across its restarts
 * (`status --watch`, `leader --watch`), and `member list`'s table of GET /v1/members and
 * GET /v1/cluster.
 */
import { LockError } from '../errors.js';
import type { LockClient, Members } from './lock-client.js';

/** The client's own "cannot connect" (no answer at all), as opposed to a peer's 503 ERR_UNREACHABLE. */
function noAnswer(err: unknown): boolean {
  return err instanceof LockError && err.code === 'ERR_UNREACHABLE' && err.details['status'] === undefined;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * Waits up to `timeoutMs` for the peer to answer anything (GET /v1/cluster): a peer that is
 * starting refuses connections for a moment. Returns at the first answer, whatever it is;
 * rejects with the last ERR_UNREACHABLE once the time is up.
 */
export async function dial(client: LockClient, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await client.cluster();
      return;
    } catch (err) {
      if (!noAnswer(err)) return;
      if (Date.now() >= deadline) throw err;
      await sleep(Math.min(100, Math.max(1, deadline - Date.now())));
    }
  }
}

/** Stream ends that a new stream mends: the peer went away or restarted, or this reader fell behind. */
function mendable(err: unknown): boolean {
  return err instanceof LockError && ['ERR_UNREACHABLE', 'ERR_SHUTTING_DOWN', 'ERR_WATCH_BEHIND'].includes(err.code);
}

/**
 * Follows `open()`'s stream until interrupted: when it ends for a reason a new stream mends
 * (the peer restarted or stopped, this reader fell behind), says so on stderr, opens a new
 * one every `retryMs` until the peer answers, and says that it resumed; the new stream starts
 * with the current state, so nothing is left stale. Other refusals reject.
 */
export async function follow<E>(open: () => AsyncIterable<E>, onEvent: (e: E) => void, where: string, retryMs = 250): Promise<never> {
  let broken: string | null = null;
  for (;;) {
    try {
      for await (const e of open()) {
        if (broken !== null) {
          process.stderr.write(`lamport-lock: reconnected to the peer at ${where}; resuming from its current state\n`);
          broken = null;
        }
        onEvent(e);
      }
      throw new LockError('ERR_UNREACHABLE', `the peer at ${where} ended the stream`);
    } catch (err) {
      if (!mendable(err)) throw err;
      if (broken === null) {
        broken = (err as LockError).message;
        process.stderr.write(`lamport-lock: ${(err as LockError).code}: ${broken}; reconnecting\n`);
      }
      await sleep(retryMs);
    }
  }
}

function cell(v: unknown): string {
  if (v === null || v === undefined) return '-';
  return typeof v === 'object' ? JSON.stringify(v) : String(v);
}

/** Lines of cells, each column padded to its widest cell. */
export function table(lines: readonly (readonly string[])[]): string {
  const widths = lines[0]?.map((_, i) => Math.max(...lines.map((l) => (l[i] ?? '').length))) ?? [];
  return lines.map((l) => l.map((c, i) => c.padEnd(widths[i] ?? 0)).join('  ').trimEnd()).join('\n') + '\n';
}

/** The asked peer's links by peer id, from GET /v1/cluster's `peers`. */
function linksOf(cluster: Record<string, unknown>): Map<string, Record<string, unknown>> {
  const peers = Array.isArray(cluster['peers']) ? cluster['peers'].filter((p): p is Record<string, unknown> => typeof p === 'object' && p !== null) : [];
  return new Map(peers.map((p) => [String(p['id']), p]));
}

/**
 * `lamport-lock member list` (and its older name `members`): the asked peer's lease and sync
 * (GET /v1/cluster), the agreed view's epoch and level, then one line per member by ordinal:
 * its state, addresses, and its link as the asked peer sees it (`self` for that peer; when it
 * was last heard and the round trip, from GET /v1/cluster).
 */
export function formatMemberList(m: Members, cluster: Record<string, unknown>): string {
  const lease = typeof cluster['lease'] === 'object' && cluster['lease'] !== null ? (cluster['lease'] as Record<string, unknown>) : {};
  const held = typeof cluster['echoes_held_for_ms'] === 'number' && cluster['echoes_held_for_ms'] > 0
    ? `, echoing no heartbeat for ${cluster['echoes_held_for_ms']} ms more (restart no other peer before then)` : '';
  const peer = `peer ${cell(cluster['id'])} of cluster ${cell(cluster['cluster'])}: lease ${lease['valid'] === true ? 'valid' : 'NOT valid'}, ${cluster['synced'] === true ? 'synced' : 'NOT synced'}${held}\n`;
  const head = `view epoch ${m.epoch}, protocol level ${m.level}, next ordinal ${m.nextOrdinal}\n`;
  const yesNo = (v: boolean | null): string => (v === null ? '-' : v ? 'yes' : 'no');
  const links = linksOf(cluster);
  const lines = [['ID', 'ORDINAL', 'STATE', 'WS', 'HTTP', 'CONNECTED', 'EVICTED', 'NEWEST_LEVEL', 'LAST_HEARD', 'RTT']];
  for (const p of m.members) {
    const link = links.get(p.id) ?? {};
    const heard = typeof link['last_heard_ms_ago'] === 'number' ? `${link['last_heard_ms_ago']}ms ago` : '-';
    const rtt = typeof link['rtt_ms'] === 'number' ? `${link['rtt_ms']}ms` : '-';
    lines.push([p.id, String(p.ordinal), p.state, p.ws, p.http, p.self ? 'self' : yesNo(p.connected), yesNo(p.evicted), cell(p.newestLevel), heard, rtt]);
  }
  return peer + head + table(lines);
}

/** `member list --json`: the typed view in the API's own names (GET /v1/members). */
export function memberListJson(m: Members): Record<string, unknown> {
  return {
    epoch: m.epoch, level: m.level, next_ordinal: m.nextOrdinal,
    members: m.members.map((p) => ({
      id: p.id, ordinal: p.ordinal, state: p.state, ws: p.ws, http: p.http, self: p.self,
      connected: p.connected, incarnation: p.incarnation, evicted: p.evicted, newest_level: p.newestLevel,
    })),
  };
}
