/**
 * The CLI's changes of the members (`lamport-lock member add | promote | remove | retire |
 * replace`, `lamport-lock level raise`; docs/operations.md, "Changing the members"): what each
 * prints, and `replace` as its four changes run in order, each its own change of the view
 * (etcd and Consul have no one-step replace either), stopping at the first that fails.
 */
import { LockError } from '../errors.js';
import { table } from './cli-peer.js';
import type { ChangeRequest, LockClient, View } from './lock-client.js';

/** The view a change made, in the API's names (its answer as it is). */
export function viewJson(v: View): Record<string, unknown> {
  return {
    epoch: v.epoch, level: v.level, next_ordinal: v.nextOrdinal,
    members: v.members.map((m) => ({ id: m.id, ordinal: m.ordinal, state: m.state, ws: m.ws, http: m.http })),
    ...(v.join === undefined ? {} : { join: v.join }),
  };
}

/** The view a change made: its epoch and level, one line per member by ordinal. */
export function formatView(v: View): string {
  const lines = [['ID', 'ORDINAL', 'STATE', 'WS', 'HTTP'], ...v.members.map((m) => [m.id, String(m.ordinal), m.state, m.ws, m.http])];
  return `view epoch ${v.epoch}, protocol level ${v.level}, next ordinal ${v.nextOrdinal}\n${table(lines)}`;
}

/** One change of the members, as the operator would type it, and how the client makes it. */
export interface ChangeStep {
  /** `member add d --ws ws://h:7100 --http 127.0.0.1:7001`, without `lamport-lock`. */
  readonly command: string;
  readonly run: (client: LockClient, opts: ChangeRequest) => Promise<View>;
}

/** What the operator runs on the host an add added, with the ticket the add answered. */
export function joinText(id: string, ticket: string): string {
  return `start ${id} on its host, with its own config file and an empty data dir:\n  lamport-peer --config CONFIG --id ${id} --data-dir DIR --join ${ticket}\nthen, once \`lamport-lock member list\` shows it connected and not evicted: lamport-lock member promote ${id}\n`;
}

/**
 * Waits until `id` joined this peer (`member list`: connected, not evicted), polling every
 * `everyMs`, at most `timeoutMs`; ERR_TIMEOUT after it.
 */
export async function waitJoined(client: LockClient, id: string, timeoutMs: number, everyMs = 250): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const m = (await client.members()).members.find((x) => x.id === id);
    // Joined: its link is up and this peer's core let it in (not "evicted", which also means not met yet).
    if (m?.connected === true && m.evicted === false) return;
    if (Date.now() >= deadline) throw new LockError('ERR_TIMEOUT', `${id} did not join within ${timeoutMs} ms: start it with the ticket printed above`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

/**
 * The four changes of `member replace OLD NEW`: add NEW, promote NEW, remove OLD, retire OLD
 * (docs/reconfiguration.md, P1). After the add, `joined` is told the ticket and NEW is waited
 * for: a learner promoted before it runs would be a voter every request waits for.
 */
export function replaceSteps(old: string, neu: string, ws: string, http: string, joined: (ticket: string) => void = () => undefined): ChangeStep[] {
  const waitMs = (o: ChangeRequest): number => o.timeoutMs ?? 30_000;
  return [
    {
      command: `member add ${neu} --ws ${ws} --http ${http}`,
      run: async (c, o) => {
        const view = await c.addMember({ id: neu, ws, http }, o);
        if (view.join !== undefined) joined(view.join);
        return view;
      },
    },
    {
      command: `member promote ${neu}`,
      run: async (c, o) => {
        await waitJoined(c, neu, waitMs(o));
        return c.promoteMember(neu, o);
      },
    },
    { command: `member remove ${old}`, run: (c, o) => c.removeMember(old, o) },
    { command: `member retire ${old}`, run: (c, o) => c.retireMember(old, o) },
  ];
}

/** Where a run of steps stopped: the failure, the steps made and the steps left (the failed one first). */
export class StepsStopped extends Error {
  override readonly name = 'StepsStopped';
  override readonly cause: LockError;
  readonly done: readonly string[];
  readonly left: readonly string[];

  constructor(cause: LockError, done: readonly string[], left: readonly string[]) {
    super(`stopped at "${left[0] ?? ''}": ${cause.code}: ${cause.message}`);
    this.cause = cause;
    this.done = done;
    this.left = left;
  }
}

/**
 * Runs `steps` in order, calling `made` after each; at the first failure, rejects with
 * StepsStopped (what was done, what is left); an error that is not a LockError rejects as it is.
 */
export async function runSteps(client: LockClient, steps: readonly ChangeStep[], opts: ChangeRequest, made: (step: ChangeStep, i: number, view: View) => void): Promise<View | null> {
  let last: View | null = null;
  for (const [i, step] of steps.entries()) {
    try {
      last = await step.run(client, opts);
    } catch (err) {
      if (!(err instanceof LockError)) throw err;
      throw new StepsStopped(err, steps.slice(0, i).map((s) => s.command), steps.slice(i).map((s) => s.command));
    }
    made(step, i, last);
  }
  return last;
}

/** What `replace` says when it stopped: the failure, the changes made, the commands that finish it. */
export function formatStopped(s: StepsStopped): string {
  const done = s.done.length === 0 ? 'nothing was changed' : `made: ${s.done.map((c) => `"${c}"`).join(', ')}`;
  return `${s.message}\n${done}\nleft, in this order (each its own change; run them once the cause is mended):\n${s.left.map((c) => `  lamport-lock ${c}\n`).join('')}`;
}
