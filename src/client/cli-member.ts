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

/** The four changes of `member replace OLD NEW`: add NEW, promote NEW, remove OLD, retire OLD (docs/reconfiguration.md, P1). */
export function replaceSteps(old: string, neu: string, ws: string, http: string): ChangeStep[] {
  return [
    { command: `member add ${neu} --ws ${ws} --http ${http}`, run: (c, o) => c.addMember({ id: neu, ws, http }, o) },
    { command: `member promote ${neu}`, run: (c, o) => c.promoteMember(neu, o) },
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
