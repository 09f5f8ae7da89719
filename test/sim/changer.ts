/**
 * Changes of the members drawn among a seed's faults (`--changes`; docs/reconfiguration.md,
 * "What the simulator must draw and catch"). The cluster is founded by some of the seed's hosts;
 * the others are spares. During the safety phase a changer asks a random member, one change at a
 * time, to add a spare (then starts it with the join ticket after a random delay, or never),
 * promote a learner, remove a voter (alive or dead) or a learner, or retire a leaving member;
 * sometimes two members are asked at once (two changes raced). A removed member's host is
 * crashed, or left to stop taking part; one that restarts finds its removal on its disk and
 * refuses to start (ERR_REMOVED), or catches up and learns it.
 *
 * Every change runs through the production runtime (`PeerRuntime.startChange`); the changer
 * only picks what to ask and where, and reads the agreed view from the hosts' data dirs. On a
 * stream of their own, faults strike some changes at the moments their rules guard
 * (proposer-faults.ts: the proposer cut off or crashed as its own acceptance lands, its ACCEPTs
 * reaching only some members, cut off as it commits, another member cut off during the gate;
 * another member asked at once, or while the proposer is out).
 *
 * Not drawn with --changes: 256-byte frames (4 KiB instead: a view's frame is not split), lost data dirs (a voter whose view.json is lost comes back at epoch
 * 0; its acceptor id is not checked yet, F70/F76 are not built) and the episodes, which script
 * their steps for a fixed set of peers (misconfiguration, zombie, late confirmations, twins,
 * bound, restart and waiting-successor episodes).
 */
import { clockRateMargin } from '../../src/config.js';
import type { AgreedView, ViewChange } from '../../src/core/view.js';
import type { LockError } from '../../src/errors.js';
import type { Cluster } from './cluster.js';
import type { ScheduleWorld } from './events.js';
import type { SimTime } from './host.js';
import type { Prng } from '../support/prng.js';
import type { ProposerFaultSource } from './proposer-faults.js';
import { ProposerFaults } from './proposer-faults.js';
import type { Scenario } from './scenario.js';
import type { Transcript } from './transcript.js';

/**
 * The seed's scenario with 1 or 2 spare hosts beside its `peers` founders (clock rates picked
 * among the founders', so the margin holds), no episode, no lost data dir, and a safety phase
 * long enough for a few changes.
 */
export function withChanges(s: Scenario, rng: Prng): Scenario {
  const spares = rng.int(1, 2);
  const extra = <T>(list: readonly T[], draw: () => T): T[] => [...list, ...Array.from({ length: spares }, draw)];
  const evictGlobalMs = s.evictMs / Math.min(...s.clockRates);
  return {
    ...s,
    peers: s.peers + spares,
    founders: s.peers,
    clockRates: extra(s.clockRates, () => rng.pick(s.clockRates)),
    clockOffsetsMs: extra(s.clockOffsetsMs, () => rng.int(0, 1_000_000)),
    skewMs: extra(s.skewMs, () => rng.int(-50, 50)),
    safetyMs: Math.max(s.safetyMs, Math.round(rng.int(8, 14) * evictGlobalMs)),
    zombieEpisode: false, lateConfirmEpisode: false, twinEpisode: false, isolatedTwinEpisode: false,
    misconfigEpisode: null, waitingSuccessorEpisode: false, boundEpisode: null, twinPairEpisode: null, restartEpisode: null,
    lostDiskChance: 0,
    // A view's frames (the view lock's promise, ACCEPT, VIEW: a whole view each, up to two) do not
    // split: 256-byte frames cannot carry a view of these members. 4 KiB still splits a state transfer.
    frameBytes: s.frameBytes === null ? null : 4096,
  };
}

/** What a changer is built from. */
export interface ChangerOptions {
  readonly scenario: Scenario;
  readonly rng: Prng;
  readonly cluster: Cluster;
  readonly schedule: ScheduleWorld;
  readonly time: SimTime;
  readonly transcript: Transcript;
  /** Faults at the moments a change's rules guard (proposer-faults.ts), on a stream of their own. */
  readonly proposerFaults?: ProposerFaultSource;
}

/** The peer index of a member id (`p3` -> 3). */
const peerOf = (id: string): number => Number(id.slice(1));

/** Draws changes of the members, one at a time (two when raced), until the liveness phase. */
export class Changer {
  readonly #o: ChangerOptions;
  #active = true;
  /** Changes asked and not answered (nor past their deadline). */
  #open = 0;
  #asked = 0;
  /** Spares asked to be added (each at most once: an id removed refuses to start again). */
  readonly #added = new Set<number>();
  /** Changes made, for the run's summary. */
  made = 0;
  readonly #faults: ProposerFaults | null;

  constructor(o: ChangerOptions) {
    this.#o = o;
    const f = o.proposerFaults;
    this.#faults = f === undefined ? null : new ProposerFaults({ ...f, scenario: o.scenario, cluster: o.cluster, schedule: o.schedule, time: o.time, transcript: o.transcript,
      askAnother: (except, rng) => {
        if (this.#active) this.#draw(rng, except);
      } });
  }

  /** Schedules the first change once the cluster has formed. */
  start(): void {
    const s = this.#o.scenario;
    this.#o.schedule(Math.ceil(s.leaseMs + 4 * s.heartbeatMs) + this.#o.rng.int(0, 4 * s.heartbeatMs), () => this.#tick());
  }

  /** Whether no change is open and every member applied the newest view: another may be asked (test/sim/upgrader.ts's raise). */
  quiet(): boolean {
    const view = this.#o.cluster.latestView();
    return this.#open === 0 && view !== undefined && this.#behind(view).length === 0;
  }

  /** The liveness phase: no new change (one under way runs to its end). */
  stop(): void {
    this.#active = false;
    this.#faults?.stop();
  }

  #tick(): void {
    if (!this.#active) return;
    const { rng, scenario: s, schedule, time } = this.#o;
    if (this.#open === 0) {
      this.#draw();
      // Two changes raced: a second one asked of another member at once.
      if (rng.chance(0.2)) this.#draw();
    }
    schedule(time.nowMs + rng.int(1, 3 * s.heartbeatMs), () => this.#tick());
  }

  /** Draws one change among those the newest view allows, and asks a running member (not in `except`) for it. */
  #draw(rng = this.#o.rng, except: readonly number[] = []): void {
    const { cluster } = this.#o;
    const view = cluster.latestView();
    if (view === undefined) return;
    const behind = this.#behind(view);
    // P4's catch-up is not built: a member two epochs behind never applies the newest view
    // (docs/reconfiguration.md, "What is built"). So the next change waits until every member
    // applied the newest one, but for the removal of a member one behind (a dead voter).
    const options = behind.length === 0 ? this.#options(view, rng) : this.#options(view, rng).filter((c) => c.op === 'remove' && behind.includes(c.id));
    if (options.length === 0) return;
    const change = rng.pick(options);
    const voters = view.members.filter((m) => m.state === 'voter' && cluster.current(peerOf(m.id)) !== undefined && !except.includes(peerOf(m.id)));
    const at = voters.length === 0 ? undefined : rng.pick(voters);
    if (at === undefined) return;
    this.#ask(peerOf(at.id), change, rng);
  }

  /** Members of `view` not leaving whose data dir has not applied it (learners never started aside). */
  #behind(view: AgreedView): string[] {
    const { cluster } = this.#o;
    return view.members.filter((m) => {
      if (m.state === 'leaving') return false;
      const chain = cluster.hostOf(peerOf(m.id)).disk.viewRecord?.chain;
      const epoch = chain?.[chain.length - 1]?.epoch;
      return epoch !== undefined && epoch < view.epoch;
    }).map((m) => m.id);
  }

  /** The changes drawn from: each kind the view allows, once. */
  #options(view: AgreedView, rng: Prng): ViewChange[] {
    const { cluster } = this.#o;
    const out: ViewChange[] = [];
    const spare = Array.from({ length: cluster.size }, (_, p) => p).find((p) => p >= cluster.founders && !this.#added.has(p));
    if (spare !== undefined) out.push({ op: 'add', id: `p${spare}`, ws: `ws://p${spare}:1`, http: `127.0.0.1:${1000 + spare}` });
    const of = (state: string): string[] => view.members.filter((m) => m.state === state).map((m) => m.id);
    const learners = of('learner');
    const voters = of('voter');
    const leaving = of('leaving');
    if (learners.length > 0) out.push({ op: 'promote', id: rng.pick(learners) }, { op: 'remove', id: rng.pick(learners) });
    // Keep two voters (three once the cluster had three): a pair still evicts, one voter alone does not need to.
    const behind = this.#behind(view);
    const removable = voters.some((id) => behind.includes(id)) ? voters.filter((id) => behind.includes(id)) : voters;
    if (voters.length > Math.min(3, cluster.founders)) out.push({ op: 'remove', id: rng.pick(removable) });
    if (leaving.length > 0) out.push({ op: 'retire', id: rng.pick(leaving) });
    return out;
  }

  /** Asks member `at` for `change`; its answer (or its deadline) ends it. */
  #ask(at: number, change: ViewChange, rng = this.#o.rng): void {
    const { cluster, scenario: s, schedule, time, transcript } = this.#o;
    const p = cluster.current(at);
    if (p === undefined) return;
    const n = ++this.#asked;
    const timeoutMs = rng.int(2, 6) * s.evictMs;
    const what = `${change.op}${'id' in change ? ` ${change.id}` : ''}`;
    if (change.op === 'add') this.#added.add(peerOf(change.id));
    this.#open++;
    let open = true;
    const disarm = this.#faults?.arm(at, this.#open > 1);
    const close = (): void => {
      if (open) this.#open--;
      open = false;
      disarm?.();
    };
    transcript.add(time.nowMs, at, `CHANGE #${n} asked: ${what} (timeout ${timeoutMs} ms)`);
    // Its process may die meanwhile: the changer goes on after the deadline, answered or not.
    schedule(time.nowMs + Math.ceil(timeoutMs / Math.min(...s.clockRates) + 4 * s.heartbeatMs / clockRateMargin), close);
    p.proc.run(() => p.runtime.startChange(change, { timeoutMs }, (r: AgreedView | LockError) => {
      const done = 'code' in r ? `${r.code} ${r.message.slice(0, 120)}` : `epoch ${r.epoch} ${r.members.map((m) => `${m.id}:${m.state}`).join(',')}`;
      transcript.add(time.nowMs, at, `CHANGE #${n} ${what}: ${done}`);
      // The answer comes in the process's task: what follows happens as world events.
      schedule(time.nowMs, () => {
        close();
        if (!('code' in r)) this.#after(change);
      });
    }));
  }

  /** What the operator does after a change made: starts an added host, stops a removed one. */
  #after(change: ViewChange): void {
    const { cluster, rng, scenario: s, schedule, time } = this.#o;
    this.made++;
    // In the liveness phase a change under way still ends, but the operator starts and stops nothing.
    if (!this.#active) return;
    const evictGlobalMs = Math.ceil(s.evictMs / Math.min(...s.clockRates));
    const peer = 'id' in change ? peerOf(change.id) : -1;
    if (change.op === 'add') {
      // Sometimes never started (a host that never comes up), sometimes crashed later.
      if (rng.chance(0.15)) return;
      schedule(time.nowMs + rng.int(0, 2 * evictGlobalMs), () => this.#join(peer));
      if (rng.chance(0.2)) schedule(time.nowMs + rng.int(1, 4 * evictGlobalMs), () => cluster.crash(peer));
      return;
    }
    // A removed member's host is crashed, or left running to stop taking part on its own.
    if (change.op === 'remove' && rng.chance(0.6)) schedule(time.nowMs + rng.int(0, 2 * evictGlobalMs), () => cluster.crash(peer));
  }

  /** Starts spare `peer` with a ticket from a running member whose view has it as a learner. */
  #join(peer: number): void {
    const { cluster } = this.#o;
    if (!this.#active || cluster.hostOf(peer).disk.viewRecord !== null) return;
    const id = `p${peer}`;
    for (const m of cluster.latestView()?.members ?? []) {
      const q = cluster.current(peerOf(m.id));
      if (q === undefined || !q.runtime.view.members.some((x) => x.id === id && x.state === 'learner')) continue;
      cluster.join(peer, q.runtime.joinTicket());
      return;
    }
  }
}
