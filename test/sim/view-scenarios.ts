/**
 * Scripted changes of the view on the production runtime in the simulated world
 * (docs/reconfiguration.md): each step chosen by hand, the invariants checked after every event
 * as in the seed runs.
 */
import { clockRateMargin } from '../../src/config.js';
import type { AgreedView, ViewChange } from '../../src/core/view.js';
import type { LockError } from '../../src/errors.js';
import type { Parts } from './run.js';
import { runUntil } from './run.js';
import { quietWorld } from './scenarios.js';

/** What one change came to: the view, or the error's code and sentence; null while it runs. */
export type ChangeOutcome = { readonly epoch: number; readonly members: string } | { readonly code: string; readonly message: string } | null;

/** Starts `change` at peer `at` now; the returned function reads its outcome. */
export function change(parts: Parts, at: number, c: ViewChange, timeoutMs = 10_000): () => ChangeOutcome {
  let outcome: ChangeOutcome = null;
  const p = parts.cluster.current(at);
  if (p === undefined) throw new Error(`p${at} is not running`);
  p.proc.run(() => p.runtime.startChange(c, { timeoutMs }, (r: AgreedView | LockError) => {
    outcome = 'code' in r ? { code: r.code, message: r.message } : { epoch: r.epoch, members: membersText(r) };
  }));
  return () => outcome;
}

/** `p0:voter,p1:voter,...` */
export function membersText(v: AgreedView): string {
  return v.members.map((m) => `${m.id}:${m.state}`).join(',');
}

/** Each peer's view as its runtime holds it. */
export function views(parts: Parts, peers: number): string[] {
  return Array.from({ length: peers }, (_, i) => {
    const v = parts.cluster.current(i)?.runtime.view;
    return v === undefined ? 'down' : `${v.epoch} ${membersText(v)}`;
  });
}

/** Three peers; p0 removes p2, then retires it once it left. */
export function removeThenRetire(): { removed: ChangeOutcome; retired: ChangeOutcome; views: string[]; violations: readonly string[]; transcript: readonly string[] } {
  const parts = quietWorld(3);
  runUntil(parts, 3000);
  const removed = change(parts, 0, { op: 'remove', id: 'p2' });
  runUntil(parts, 6000);
  const retired = change(parts, 1, { op: 'retire', id: 'p2' });
  runUntil(parts, 9000);
  return { removed: removed(), retired: retired(), views: views(parts, 3), violations: parts.checker.violations, transcript: parts.transcript.lines() };
}

/**
 * A cluster founded by p0..p(founders-1) of `hosts` hosts; the others are spare hosts, started
 * only when they join (`joinHost`).
 */
export function foundedBy(founders: number, hosts: number): Parts {
  // The cluster knows its founders: its checker holds every data dir to one view per epoch.
  const parts = quietWorld(hosts, undefined, false, founders);
  const config = { ...parts.cluster.config, peers: parts.cluster.config.peers.slice(0, founders) };
  for (let i = 0; i < founders; i++) parts.cluster.restart(i, { config });
  return parts;
}

/** Starts spare host `peer` with the ticket a member gives it after its add, as `lamport-peer --join` does. */
export function joinHost(parts: Parts, from: number, peer: number): void {
  const member = parts.cluster.current(from);
  if (member === undefined) throw new Error(`p${from} is not running`);
  parts.cluster.join(peer, member.runtime.joinTicket());
}

/** p0 adds p3 at 3 s, p3 joins with its ticket at 4 s; at 7 s, the outcome of the add. */
function addedAndJoined(parts: Parts): () => ChangeOutcome {
  runUntil(parts, 3000);
  const added = change(parts, 0, { op: 'add', id: 'p3', ws: 'ws://p3:1', http: '127.0.0.1:1003' });
  runUntil(parts, 4000);
  joinHost(parts, 0, 3);
  runUntil(parts, 7000);
  return added;
}

/** Three founders add p3, which joins as a learner, is promoted, and is granted a lock. */
export function addJoinPromote(): { added: ChangeOutcome; promoted: ChangeOutcome; p3Granted: boolean; views: string[]; violations: readonly string[]; transcript: readonly string[] } {
  const parts = foundedBy(3, 4);
  const added = addedAndJoined(parts);
  const promoted = change(parts, 1, { op: 'promote', id: 'p3' });
  runUntil(parts, 10_000);
  let p3Granted = false;
  const p3 = parts.cluster.current(3);
  p3?.proc.run(() => void p3.runtime.request('x', {
    mode: 'exclusive', limit: 1, permits: 1, owner: 'test', meta: null, timeoutMs: 5000, ttlMs: 5000, hold: 'ttl', expectedMs: null,
  }, { granted: () => (p3Granted = true), failed: () => undefined, ended: () => undefined }));
  runUntil(parts, 13_000);
  return { added: added(), promoted: promoted(), p3Granted, views: views(parts, 4), violations: parts.checker.violations, transcript: parts.transcript.lines() };
}

/**
 * p3 joins as a learner; p2 crashes; once the others evicted it, p0 promotes p3 while p0's client
 * holds a lock. p0's lease, carried by p1's echoes of three voters, needs p3's echoes too as one of
 * four: they were kept while p3 was a learner, so the promotion costs p0 no lease (before they were
 * kept, p0's lease lapsed when it applied the promotion, ending every hold of its clients).
 */
export function promotedWhileVoterDown(): { added: ChangeOutcome; promoted: ChangeOutcome; held: boolean; told: readonly string[]; violations: readonly string[]; transcript: readonly string[] } {
  const parts = foundedBy(3, 4);
  const added = addedAndJoined(parts);
  parts.cluster.crash(2);
  const p0 = parts.cluster.current(0);
  if (p0 === undefined) throw new Error('p0 is not running');
  const hold = parts.clients.acquire(p0, 'x', { mode: 'exclusive', limit: 1, permits: 1, owner: 'c0', meta: null, timeoutMs: 30_000, ttlMs: 60_000, hold: 'ttl', expectedMs: null }, false, true);
  // p2's eviction (evict_ms 3 s) opens the view lock's gate to p0's promotion.
  runUntil(parts, 12_000);
  const promoted = change(parts, 0, { op: 'promote', id: 'p3' });
  runUntil(parts, 16_000);
  return { added: added(), promoted: promoted(), held: hold.state === 'held', told: hold.told, violations: parts.checker.violations, transcript: parts.transcript.lines() };
}

/**
 * p2 down and evicted, p3 added; p0 is asked to promote p3 the moment p3 joined it, before any
 * echo of p3 reached p0 (CI saw it on real processes: `member replace` promotes as soon as the
 * learner shows connected). The promotion waits for p3's echo, so p0's lease never lapses.
 */
export function promotedAsItJoins(): { promoted: ChangeOutcome; held: boolean; told: readonly string[]; violations: readonly string[]; transcript: readonly string[] } {
  const parts = foundedBy(3, 4);
  runUntil(parts, 3000);
  parts.cluster.crash(2);
  runUntil(parts, 8000); // p2 evicted (evict_ms 3 s).
  const added = change(parts, 0, { op: 'add', id: 'p3', ws: 'ws://p3:1', http: '127.0.0.1:1003' });
  runUntil(parts, 9000);
  if (added() === null) throw new Error('p3 was not added');
  const p0 = parts.cluster.current(0);
  if (p0 === undefined) throw new Error('p0 is not running');
  const hold = parts.clients.acquire(p0, 'x', { mode: 'exclusive', limit: 1, permits: 1, owner: 'c0', meta: null, timeoutMs: 30_000, ttlMs: 60_000, hold: 'ttl', expectedMs: null }, false, true);
  runUntil(parts, 9500);
  joinHost(parts, 0, 3);
  let t = 9500;
  while (p0.runtime.inspect.protocol.machine.incarnation(3) === undefined && t < 12_000) runUntil(parts, (t += 1));
  const promoted = change(parts, 0, { op: 'promote', id: 'p3' });
  runUntil(parts, 14_000);
  return { promoted: promoted(), held: hold.state === 'held', told: hold.told, violations: parts.checker.violations, transcript: parts.transcript.lines() };
}

/**
 * Four peers; p0 removes p2, which is cut off from everyone as its removal lands on its disk:
 * its LEAVE never arrives, the others evict it, and its process rejoins as a new incarnation,
 * removed from the start (it acts on no membership of its own), which the others let back in as
 * the leaving member. Then p3 crashes and restarts: p2 holds p3's new incarnation until it hears
 * that the others evicted the old one, and p3 counts p2 in its ack set. With the EVICT told to
 * the voters only, p2 never hears it: p3 never syncs, and p0's client waits for p3 for good.
 * `p0Granted`: p0's client, asking once p3 restarted, was granted.
 */
export function removedHoldsSuccessor(): { removed: ChangeOutcome; p0Granted: boolean; p3Synced: boolean; violations: readonly string[]; transcript: readonly string[] } {
  const parts = quietWorld(4);
  runUntil(parts, 3000);
  const disk = parts.cluster.hostOf(2).disk;
  disk.onViewSaved = (record) => {
    if ((record.chain[record.chain.length - 1]?.epoch ?? 0) < 1) return;
    disk.onViewSaved = null;
    for (const q of [0, 1, 3]) {
      parts.wire.cut(2, q, parts.time.nowMs + 5000);
      parts.wire.cut(q, 2, parts.time.nowMs + 5000);
    }
  };
  const removed = change(parts, 0, { op: 'remove', id: 'p2' });
  runUntil(parts, 10_000); // p2 evicted, and back as a new incarnation.
  parts.cluster.crash(3);
  parts.cluster.restart(3);
  runUntil(parts, 11_000);
  const p0 = parts.cluster.current(0);
  if (p0 === undefined) throw new Error('p0 is not running');
  const hold = parts.clients.acquire(p0, 'x', { mode: 'exclusive', limit: 1, permits: 1, owner: 'c0', meta: null, timeoutMs: 30_000, ttlMs: 60_000, hold: 'ttl', expectedMs: null }, false, true);
  runUntil(parts, 25_000);
  const p3Synced = parts.cluster.current(3)?.runtime.inspect.protocol.machine.synced ?? false;
  return { removed: removed(), p0Granted: hold.state === 'held', p3Synced, violations: parts.checker.violations, transcript: parts.transcript.lines() };
}

/** Cuts `peer` off from `others`, both directions, until `untilMs`. */
function cutOff(parts: Parts, peer: number, others: readonly number[], untilMs: number): void {
  for (const q of others) {
    parts.wire.cut(peer, q, untilMs);
    parts.wire.cut(q, peer, untilMs);
  }
}

/**
 * Rule P2's promise (the execution sketched at `accept-without-promise` in test/sim/sim.test.ts):
 * p0 asks to add p3; its request is held 40 ms on the way to p2 while p1, which has it, asks to
 * add p4 (a higher ballot). p2 head-acks p1 first (a promise), then p0, whose ballot is below it:
 * p2 promises p0 nothing, and must accept nothing of it. p0 is granted with p1's promise; its
 * ACCEPT to p1 is held, and it is cut off from everyone as a view lands on its disk, or 100 ms on.
 * Once the others evicted it, p1 is granted on p2's first head ack and proposes its own add. Had
 * p2 taken p0's ACCEPT, p0 would have chosen its view with p2 (and written it), and p1 another one
 * with p2 for the same epoch.
 */
export function racedBallotsOvertaken(): { first: ChangeOutcome; second: ChangeOutcome; views: string[]; violations: readonly string[]; transcript: readonly string[] } {
  const parts = foundedBy(3, 5);
  runUntil(parts, 3000);
  parts.wire.cut(0, 2, 3040);
  const disk = parts.cluster.hostOf(0).disk;
  disk.onViewSaved = (record) => {
    if (record.chain.length > 1) {
      cutOff(parts, 0, [1, 2], 20_000);
      disk.onViewSaved = null;
    } else if (record.acceptor.accepted?.ballot.peer === 0) parts.wire.cut(0, 1, 20_000);
  };
  const first = change(parts, 0, { op: 'add', id: 'p3', ws: 'ws://p3:1', http: '127.0.0.1:1003' });
  runUntil(parts, 3010);
  const second = change(parts, 1, { op: 'add', id: 'p4', ws: 'ws://p4:1', http: '127.0.0.1:1004' });
  runUntil(parts, 3100);
  cutOff(parts, 0, [1, 2], 20_000);
  runUntil(parts, 12_000);
  return { first: first(), second: second(), views: views(parts, 3), violations: parts.checker.violations, transcript: parts.transcript.lines() };
}

/** What every scripted run reports: the checker's violations and the transcript. */
export interface ScenarioRun {
  readonly violations: readonly string[];
  readonly transcript: readonly string[];
}

/** What `staleCountAcrossTwoEpochs` came to. */
export interface StaleCount extends ScenarioRun {
  /** The epochs p2's second process, p1 and p0 ran at once p0 was cut off. */
  readonly epochs: { readonly p2: number | null; readonly p1: number | null; readonly p0: number | null };
  /** Whether p2's second process evicted p0, and whether p0's client still holds x at the end. */
  readonly p2EvictedP0: boolean;
  readonly p0Held: boolean;
}

/** `founders` founders; p0 adds the spare hosts p<founders> (at 3 s) and p<founders+1> (at 5.5 s), each joining a second later as a learner; run to 8 s. */
function twoLearnersAdded(founders: number): Parts {
  const parts = foundedBy(founders, founders + 2);
  for (const [peer, at] of [[founders, 3000], [founders + 1, 5500]] as const) {
    runUntil(parts, at);
    change(parts, 0, { op: 'add', id: `p${peer}`, ws: `ws://p${peer}:1`, http: `127.0.0.1:${1000 + peer}` });
    runUntil(parts, at + 1000);
    joinHost(parts, 0, peer);
  }
  runUntil(parts, 8000);
  return parts;
}

const longHold = { mode: 'exclusive', limit: 1, permits: 1, meta: null, timeoutMs: 30_000, ttlMs: 60_000, hold: 'ttl', expectedMs: null } as const;

/**
 * docs/findings.md F81 on the production runtime: an eviction counted over the voters of a view
 * two epochs behind. Founders p0 (B), p1 (Z), p2 (S); p3 (D) and p4 (E) are added as learners
 * (epoch 2) and p0's client holds x. p1 promotes p3 (epoch 3); p2 crashes right after its head
 * ack, its data dir at epoch 2. The learner p4 alone decides p2's eviction (held streams keep p0,
 * p1 and p3 from counting one another's confirmations) and its EVICT to p0 and p1 stays held; p3
 * had it, and promotes p4 (epoch 4), p0 and p1 accepting through p3's streams. p2 restarts at
 * epoch 2: p0 and p1 still count its old process, so the new one waits there and gets no VIEW,
 * only heartbeats. p0 is cut off from p1 and p2, its lease kept by p3 and p4 (three of the five
 * voters of epoch 4). p2 suspects p0, and p1, silent from p0 too, confirms: two of the three
 * voters of epoch 2. Without rule P4 p2 evicts p0 while p0's lease holds (p1 would apply the
 * eviction and could grant x); with it, p1 confirms nothing across epochs, and nobody evicts p0.
 */
export function staleCountAcrossTwoEpochs(): StaleCount {
  const parts = twoLearnersAdded(3);
  const { net } = parts;
  const p0 = current(parts, 0);
  const held = parts.clients.acquire(p0, 'x', { ...longHold, owner: 'b' }, false, true);
  runUntil(parts, 9000);
  // p1 promotes p3; p2 crashes once p1 proposes, so after its head ack and before the view. A
  // short timeout lets go of the view lock, which p1 would keep until p2 passed the view back.
  const p1 = current(parts, 1);
  change(parts, 1, { op: 'promote', id: 'p3' }, 1500);
  let t = 9000;
  while (p1.runtime.inspect.protocol.machine.proposal === null && t < 9500) runUntil(parts, (t += 1));
  parts.cluster.crash(2);
  const t0 = t;
  // Nobody but the learner p4 counts p2's eviction: p3's streams to p0 and p1 (its suspicions and
  // confirmations) and p1's to p0 are held; p3's confirmation to p4 comes last, once p4's EVICT
  // to p0 and p1 is held in its streams too.
  runUntil(parts, t0 + 2900);
  net.stall(3, 1, t0 + 3400);
  net.stall(3, 0, t0 + 3400);
  net.stall(3, 4, t0 + 3300);
  net.stall(1, 0, t0 + 60_000);
  runUntil(parts, t0 + 3290);
  net.stall(4, 1, t0 + 60_000);
  net.stall(4, 0, t0 + 60_000);
  runUntil(parts, t0 + 3500);
  change(parts, 3, { op: 'promote', id: 'p4' });
  runUntil(parts, t0 + 5000);
  // p2 restarts from its data dir; p3 and p4, which know of its old process's eviction, are out of its reach.
  for (const [a, b] of [[2, 3], [3, 2], [2, 4], [4, 2]] as const) net.stall(a, b, t0 + 60_000);
  parts.cluster.restart(2);
  runUntil(parts, t0 + 6000);
  // p0 is cut off from p1 and p2: its streams to them, and p2's to it, are held.
  for (const [a, b] of [[0, 2], [2, 0], [0, 1]] as const) net.stall(a, b, t0 + 60_000);
  const epochOf = (peer: number): number | null => parts.cluster.current(peer)?.runtime.view?.epoch ?? null;
  const epochs = { p2: epochOf(2), p1: epochOf(1), p0: epochOf(0) };
  runUntil(parts, t0 + 11_000);
  const p2EvictedP0 = current(parts, 2).runtime.inspect.protocol.isEvicted(0, p0.runtime.inspect.incarnation);
  return { epochs, p2EvictedP0, p0Held: held.state === 'held', violations: parts.checker.violations, transcript: parts.transcript.lines() };
}

function current(parts: Parts, peer: number): NonNullable<ReturnType<Parts['cluster']['current']>> {
  const p = parts.cluster.current(peer);
  if (p === undefined) throw new Error(`p${peer} is not running`);
  return p;
}

/**
 * Rule P6's LEAVE to a held successor waits until the removed member's echoes vouch for nothing:
 * p0 removes p2; the moment p2 applies its removal, p3 crashes and restarts, and its new
 * incarnation waits at p2 for its predecessor's eviction (the others decide it only evict_ms
 * after the crash). p2 tells it its LEAVE, which counts as its letting p3 in
 * (PeerView.joinedByQuorum), only once lease_ms times the clock-rate margin passed since its
 * removal: an echo it gave just before may still vouch for the predecessor's lease.
 * `toldAfterMs`: how long after p2 applied its removal it told p3 (null: never).
 */
export function removedTellsSuccessorLate(): { removed: ChangeOutcome; toldAfterMs: number | null; vouchMs: number; violations: readonly string[]; transcript: readonly string[] } {
  const parts = quietWorld(4);
  runUntil(parts, 3000);
  const removed = change(parts, 0, { op: 'remove', id: 'p2' });
  let removedAtMs: number | null = null;
  for (let t = 3000; t < 8000 && removedAtMs === null; t++) {
    runUntil(parts, t);
    if (parts.cluster.current(2)?.runtime.inspect.protocol.machine.removed === true) removedAtMs = parts.time.nowMs;
  }
  if (removedAtMs === null) throw new Error('p2 never applied its removal');
  parts.cluster.crash(3);
  parts.cluster.restart(3);
  runUntil(parts, removedAtMs + 6000);
  const told = parts.transcript.lines().find((l) => / p2 #\d+ session: this peer left the cluster: telling a new incarnation/.test(l));
  return {
    removed: removed(), toldAfterMs: told === undefined ? null : Number.parseFloat(told) - removedAtMs,
    vouchMs: clockRateMargin * parts.cluster.config.leaseMs, violations: parts.checker.violations, transcript: parts.transcript.lines(),
  };
}

/** What `gateSkippedPastLaggard` came to. */
export interface LaggardGate extends ScenarioRun {
  /** The promotions' outcomes: p4's (of p5, whose VIEW never reaches p0) and p3's (of p6). */
  readonly first: ChangeOutcome;
  readonly second: ChangeOutcome;
  /** Each peer's epoch once p3's change ended or chose its view. */
  readonly epochs: readonly (number | null)[];
  /** Whether any peer evicted p0, and whether p0's client still holds x at the end. */
  readonly p0Evicted: boolean;
  readonly p0Held: boolean;
}

/**
 * Rule P3 (i), the view lock's gate, where the holder's release is no barrier: a change that
 * times out lets go of the view lock though a member never passed its view back (finding F84).
 * Voters p0..p4 and the learners p5, p6 (epoch 2); p0's client holds x. p4 asks to promote p5,
 * and p3, 10 ms later, to promote p6: p0 has both requests and acks them. From the moment p4
 * writes the chosen view (epoch 3), nothing the others send reaches p0 (their connections to it
 * stall; p0's own, its heartbeats and the echoes it gets back, carry on). p4's change times out
 * (2 s) and lets go of the lock, its release reaching p3 last, so p3's request heads every queue
 * but p0's with the others' head acks in. With the gate, p3 waits for p0's head ack at epoch 3,
 * which never comes, and its change times out. Without it, p3 promotes p6 (epoch 4, seven
 * voters) on the others' head acks; p0's connections to p3..p6 then stall too, and p3..p6, four
 * of the seven voters of epoch 4, evict p0, whose lease at epoch 2 rests on p1's and p2's echoes
 * (three of its five voters): two majorities in use that do not meet (A2 needs adjacent views).
 */
export function gateSkippedPastLaggard(): LaggardGate {
  const parts = twoLearnersAdded(5);
  const { net } = parts;
  const held = parts.clients.acquire(current(parts, 0), 'x', { ...longHold, owner: 'p0c' }, false, true);
  runUntil(parts, 9000);
  // Written before its VIEW leaves p4 (the disk's hook runs in the writer's task).
  const disk = parts.cluster.hostOf(4).disk;
  disk.onViewSaved = (record) => {
    if ((record.chain[record.chain.length - 1]?.epoch ?? 0) < 3) return;
    disk.onViewSaved = null;
    for (let q = 1; q < 7; q++) net.stall(q, 0, parts.time.nowMs + 60_000);
  };
  // p2's head ack reaches p4 40 ms late: p3's request (stamped after p4's) and p0's ack of it
  // pass before the view is chosen.
  parts.wire.cut(2, 4, 9040);
  const first = change(parts, 4, { op: 'promote', id: 'p5' }, 2000);
  runUntil(parts, 9010);
  const second = change(parts, 3, { op: 'promote', id: 'p6' }, 6000);
  // p4's change times out at 11 s; its release reaches p3 after the others' head acks of p3's
  // request, each with its promise (were it first, p3 would propose short of promises and ask
  // again, at a stamp p0 never acks).
  runUntil(parts, 10_900);
  parts.wire.cut(4, 3, 11_050);
  let t = 10_900;
  const p3 = current(parts, 3);
  while ((p3.runtime.view?.epoch ?? 0) < 4 && second() === null && t < 17_000) runUntil(parts, (t += 10));
  for (let q = 3; q < 7; q++) net.stall(0, q, t + 60_000);
  const epochs = Array.from({ length: 7 }, (_, i) => parts.cluster.current(i)?.runtime.view?.epoch ?? null);
  runUntil(parts, t + 5000);
  const p0 = current(parts, 0);
  const p0Evicted = [1, 2, 3, 4, 5, 6].some((q) => current(parts, q).runtime.inspect.protocol.isEvicted(0, p0.runtime.inspect.incarnation));
  return { first: first(), second: second(), epochs, p0Evicted, p0Held: held.state === 'held', violations: parts.checker.violations, transcript: parts.transcript.lines() };
}

/** What `behindWhileHolderRestarts` came to. */
export interface BehindPeer extends ScenarioRun {
  /** Each peer's view once the stall ended and p0 restarted (p1 behind), and at the end. */
  readonly viewsBehind: string[];
  readonly views: string[];
  /** Whether clients of p1 and p0, asking 10 s after the removal, were granted. */
  readonly p1Granted: boolean;
  readonly p0Granted: boolean;
  /** p0's retirement of p2, asked then. */
  readonly retired: ChangeOutcome;
}

/**
 * A peer that missed a view while every member that could pass it on restarted or left (finding
 * F85). p0 removes p2; from the moment p0 writes the chosen view, nothing p0 or p2 sends reaches
 * p1 for 1.5 s. p2 applies its removal (a removed member passes no view on) and p0 crashes and
 * restarts at epoch 1, its VIEW to p1 lost with its process. p1, at epoch 0, holds p0's new
 * incarnation until a majority of its voters (p0, p1, p2) evicts the old one, and p2, removed,
 * confirms nothing, while p0's new incarnation, at epoch 1, confirms nothing p1 asks at epoch 0
 * (P4). The state transfer p0's new incarnation sends p1 starts with its VIEW: taken at once,
 * though its other packets wait, p1 moves to epoch 1, where p0's old process is evicted by the
 * two of them, and the cluster grants and changes again. Kept with the packets, p1 stays at
 * epoch 0 for good, and nothing is granted on either peer.
 */
export function behindWhileHolderRestarts(): BehindPeer {
  const parts = quietWorld(3);
  const { net } = parts;
  runUntil(parts, 3000);
  const disk = parts.cluster.hostOf(0).disk;
  disk.onViewSaved = (record) => {
    if ((record.chain[record.chain.length - 1]?.epoch ?? 0) < 1) return;
    disk.onViewSaved = null;
    for (const q of [0, 2]) net.stall(q, 1, parts.time.nowMs + 1500);
  };
  change(parts, 0, { op: 'remove', id: 'p2' }, 1000);
  runUntil(parts, 3200);
  parts.cluster.crash(0);
  parts.cluster.restart(0);
  runUntil(parts, 5000);
  const viewsBehind = views(parts, 3);
  runUntil(parts, 13_000);
  const ask = { ...longHold, timeoutMs: 5000 };
  const h1 = parts.clients.acquire(current(parts, 1), 'y', { ...ask, owner: 'c1' }, false, true);
  const h0 = parts.clients.acquire(current(parts, 0), 'z', { ...ask, owner: 'c0' }, false, true);
  const retired = change(parts, 0, { op: 'retire', id: 'p2' }, 5000);
  runUntil(parts, 19_000);
  return {
    viewsBehind, views: views(parts, 3), p1Granted: h1.state === 'held', p0Granted: h0.state === 'held', retired: retired(),
    violations: parts.checker.violations, transcript: parts.transcript.lines(),
  };
}
