/**
 * `lamport-lock member replace`'s steps (src/client/cli-member.ts): the four changes in the
 * order of docs/reconfiguration.md P1, run one after another, stopping at the first that fails
 * with what was made and what is left. The CLI's refusals on real peers are in
 * test/integration/member-cli.test.ts; a valid change is refused by every peer today, so a
 * replace stopped halfway is shown here, with steps that stand in for the client's calls.
 */
import { describe, expect, it } from 'vitest';
import { formatStopped, formatView, replaceSteps, runSteps, StepsStopped } from '../../src/client/cli-member.js';
import type { ChangeStep } from '../../src/client/cli-member.js';
import type { LockClient, View } from '../../src/client/lock-client.js';
import { formatMemberList } from '../../src/client/cli-peer.js';
import { LockError } from '../../src/errors.js';

const view = (epoch: number): View => ({ epoch, level: 9, nextOrdinal: 4, members: [{ id: 'd', ordinal: 3, state: 'voter', ws: 'ws://h:1', http: 'h:2' }] });

describe('member replace', () => {
  it('is add NEW, promote NEW, remove OLD, retire OLD, each calling its own method of the client', async () => {
    const calls: string[] = [];
    const record = (what: string) => (...args: unknown[]): Promise<View> => {
      calls.push(`${what} ${JSON.stringify(args)}`);
      return Promise.resolve(view(calls.length));
    };
    const joined = { members: [{ id: 'd', connected: true, evicted: false }] };
    const client = {
      addMember: (...args: unknown[]) => record('add')(...args).then((v) => ({ ...v, join: 'TICKET' })),
      promoteMember: record('promote'), removeMember: record('remove'), retireMember: record('retire'),
      members: () => Promise.resolve(joined),
    } as unknown as LockClient;
    const tickets: string[] = [];
    const steps = replaceSteps('c', 'd', 'ws://h:1', 'h:2', (t) => tickets.push(t));
    expect(steps.map((s) => s.command)).toEqual(['member add d --ws ws://h:1 --http h:2', 'member promote d', 'member remove c', 'member retire c']);
    const made: number[] = [];
    const last = await runSteps(client, steps, { timeoutMs: 5000 }, (_s, i, v) => made.push(i * 10 + v.epoch));
    expect(calls).toEqual([
      'add [{"id":"d","ws":"ws://h:1","http":"h:2"},{"timeoutMs":5000}]', 'promote ["d",{"timeoutMs":5000}]', 'remove ["c",{"timeoutMs":5000}]', 'retire ["c",{"timeoutMs":5000}]',
    ]);
    expect(made).toEqual([1, 12, 23, 34]);
    expect(last?.epoch).toBe(4);
    // The ticket went to the operator after the add; the promotion waited for d to show connected.
    expect(tickets).toEqual(['TICKET']);
  });

  it('promotes NEW only once it shows connected: ERR_TIMEOUT when it never joins', async () => {
    const client = { members: () => Promise.resolve({ members: [{ id: 'd', connected: false }] }), promoteMember: () => Promise.reject(new Error('promoted')) } as unknown as LockClient;
    const promote = replaceSteps('c', 'd', 'ws://h:1', 'h:2')[1];
    const err = await promote?.run(client, { timeoutMs: 30 }).then(() => null, (e: unknown) => e);
    expect(err).toMatchObject({ code: 'ERR_TIMEOUT', message: 'd did not join within 30 ms: start it with the ticket printed above' });
  });

  it('stops at the first change that fails: the ones before it made, it and the rest left, none of them run', async () => {
    const ran: string[] = [];
    const step = (command: string, outcome: 'ok' | LockError): ChangeStep => ({
      command,
      run: () => {
        ran.push(command);
        return outcome === 'ok' ? Promise.resolve(view(ran.length)) : Promise.reject(outcome);
      },
    });
    const refused = new LockError('ERR_CHANGE_REFUSED', 'c is not a member (the view at epoch 2)');
    const steps = [step('member add d', 'ok'), step('member promote d', 'ok'), step('member remove c', refused), step('member retire c', 'ok')];
    const made: string[] = [];
    const stopped = await runSteps({} as LockClient, steps, {}, (s) => made.push(s.command)).then(() => null, (e: unknown) => e);
    expect(stopped).toBeInstanceOf(StepsStopped);
    const s = stopped as StepsStopped;
    expect([made, ran, s.done, s.left, s.cause]).toEqual([
      ['member add d', 'member promote d'], ['member add d', 'member promote d', 'member remove c'],
      ['member add d', 'member promote d'], ['member remove c', 'member retire c'], refused,
    ]);
    expect(formatStopped(s)).toBe([
      'stopped at "member remove c": ERR_CHANGE_REFUSED: c is not a member (the view at epoch 2)',
      'made: "member add d", "member promote d"',
      'left, in this order (each its own change; run them once the cause is mended):',
      '  lamport-lock member remove c',
      '  lamport-lock member retire c',
      '',
    ].join('\n'));
  });

  it('lets an error that is not the peer\'s refusal through as it is', async () => {
    const broken = new TypeError('a bug');
    const steps: ChangeStep[] = [{ command: 'member add d', run: () => Promise.reject(broken) }];
    await expect(runSteps({} as LockClient, steps, {}, () => undefined)).rejects.toBe(broken);
  });

  it('prints a view made as its epoch and level, then one line per member', () => {
    expect(formatView(view(3))).toBe('view epoch 3, protocol level 9, next ordinal 4\nID  ORDINAL  STATE  WS        HTTP\nd   3        voter  ws://h:1  h:2\n');
  });
});

describe('member list', () => {
  const members = { epoch: 2, level: 10, nextOrdinal: 4, members: [{ id: 'a', ordinal: 0, state: 'voter' as const, ws: 'ws://h:1', http: 'h:2', self: true, connected: null, incarnation: null, evicted: null, newestLevel: 11 }] };
  const cluster = (echoesHeldForMs: number): Record<string, unknown> => ({ id: 'a', cluster: 't', synced: true, lease: { valid: true }, echoes_held_for_ms: echoesHeldForMs, peers: [] });

  it('says in its first line while a restarted peer echoes no heartbeat, the pace of a rolling restart', () => {
    expect(formatMemberList(members, cluster(1234)).split('\n')[0]).toBe('peer a of cluster t: lease valid, synced, echoing no heartbeat for 1234 ms more (restart no other peer before then)');
    expect(formatMemberList(members, cluster(0)).split('\n')[0]).toBe('peer a of cluster t: lease valid, synced');
  });
});
