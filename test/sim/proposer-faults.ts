/**
 * Faults that strike a change of the members at the moments its rules guard (issue 40: "crashes
 * mid-change, the proposer's death, partitions ... two changes raced"), drawn by the changer
 * (changer.ts) on a stream of their own, so a seed in which none strikes draws what it drew
 * before. The moments are read off the proposer's data dir: a member writes its own acceptance
 * (Paxos phase 2, rule P2) before its ACCEPT leaves, and a view it commits before its VIEW
 * leaves, so a cut made as the write lands holds those frames back. Half the seeds draw none
 * (their changes run as the changer alone draws them); in the others, the kinds:
 * - the proposer is cut off from everyone as its own acceptance lands (its ACCEPTs wait), or
 *   crashes then (they are lost);
 * - its ACCEPTs reach only some members (the others' directions cut), and once a new view lands
 *   on its disk (its own commit, or one it applies) it is cut off from everyone (its VIEW waits);
 * - it is cut off as a new view lands on its disk;
 * - another member is cut off while the change gathers its head acks (rule P3 i's gate).
 * A change is sometimes raced by another member's, asked at once (beside the changer's own races).
 * On a stream of its own (`race`), a change is sometimes overtaken: its request is held on its way
 * to some voters while another member, which has it, asks for a change of its own (rule P2's
 * promise: the execution of view-scenarios.ts's racedBallotsOvertaken).
 * After a proposer's fault, another member is often asked for a change of its own: the next
 * holder of the view lock finishes the change, or makes another for the same epoch.
 */
import type { ViewRecord } from '../../src/runtime/view-store.js';
import type { Prng } from '../support/prng.js';
import type { Cluster } from './cluster.js';
import type { ScheduleWorld } from './events.js';
import type { SimTime } from './host.js';
import type { Wire } from './network.js';
import type { Scenario } from './scenario.js';
import type { Transcript } from './transcript.js';

/** The stream and the wire the faults are drawn on and made with. */
export interface ProposerFaultSource {
  readonly rng: Prng;
  readonly wire: Wire;
  /** False in the seeds that draw none (half of them, on a stream of its own). */
  readonly on: boolean;
  /** The stream the overtaken requests are drawn on (so the other faults draw what they drew before). */
  readonly race?: Prng;
  /** Whether no random fault is under way now, and holds them off until a time (test/sim/fault-plan.ts). */
  readonly faults?: { calm(): boolean; holdOff(untilMs: number): void };
}

/** What the faults are built from: the changer's world, and how to ask another member for a change. */
export interface ProposerFaultOptions extends ProposerFaultSource {
  readonly scenario: Scenario;
  readonly cluster: Cluster;
  readonly schedule: ScheduleWorld;
  readonly time: SimTime;
  readonly transcript: Transcript;
  /** Asks a running voter not in `except` for a change, drawn from `rng`. */
  readonly askAnother: (except: readonly number[], rng: Prng) => void;
}

type Kind = 'cut-at-accept' | 'crash-at-accept' | 'some-at-accept' | 'cut-at-commit' | 'member-cut';
const kinds: readonly Kind[] = ['cut-at-accept', 'crash-at-accept', 'some-at-accept', 'cut-at-commit', 'member-cut'];

/** The newest epoch of a record's chain, and the ballot of its acceptance (`ts.peer`), if any. */
function marks(record: ViewRecord | null): { epoch: number; accepted: string | null } {
  const accepted = record?.acceptor.accepted ?? null;
  return { epoch: record?.chain[record.chain.length - 1]?.epoch ?? 0, accepted: accepted === null ? null : `${accepted.ballot.ts}.${accepted.ballot.peer}` };
}

/** Draws, for each change asked, whether a fault strikes it and where. */
export class ProposerFaults {
  readonly #o: ProposerFaultOptions;
  /** Half the seeds draw none: their changes run as the changer alone draws them. */
  #active: boolean;

  constructor(o: ProposerFaultOptions) {
    this.#o = o;
    this.#active = o.on;
  }

  /** The liveness phase: a fault armed strikes no more (the phase heals every cut at its start). */
  stop(): void {
    this.#active = false;
  }

  /** Member `at` was just asked for a change (`raced`: beside another): maybe arms a fault on it; returns what disarms it. */
  arm(at: number, raced: boolean): () => void {
    const { askAnother, cluster, rng } = this.#o;
    if (!this.#active) return () => undefined;
    const overtaken = raced ? null : this.#overtaken(at);
    if (overtaken !== null) return overtaken;
    // Two changes raced on the view lock: their requests may reach a third member out of order.
    if (!raced && rng.chance(0.15)) askAnother([at], rng);
    if (!rng.chance(0.3)) return () => undefined;
    const kind = rng.pick(kinds);
    if (kind === 'member-cut') {
      this.#memberCut(at);
      return () => undefined;
    }
    const disk = cluster.hostOf(at).disk;
    if (disk.onViewSaved !== null) return () => undefined;
    const before = marks(disk.viewRecord);
    let struck = false;
    disk.onViewSaved = (record) => {
      if (!this.#active) return;
      const now = marks(record);
      const self = record.chain[record.chain.length - 1]?.members.find((m) => m.id === `p${at}`)?.ordinal;
      const ownAcceptance = now.accepted !== before.accepted && now.accepted !== null && now.accepted.endsWith(`.${self}`);
      const committed = now.epoch > before.epoch;
      if (!struck && ownAcceptance && kind !== 'cut-at-commit') {
        struck = true;
        this.#strike(at, kind);
        if (kind !== 'some-at-accept') disk.onViewSaved = null;
      } else if (committed && (kind === 'cut-at-commit' || (kind === 'some-at-accept' && struck))) {
        disk.onViewSaved = null;
        if (!struck) this.#followUp(at);
        this.#cutOff(at, 'as a new view lands on its disk');
      }
    };
    return () => {
      if (disk.onViewSaved !== null && !struck) disk.onViewSaved = null;
    };
  }

  /** The fault at the proposer's own acceptance, in its task: before its ACCEPTs leave. */
  #strike(at: number, kind: Kind): void {
    const { cluster, rng, schedule, time, transcript, wire } = this.#o;
    this.#followUp(at);
    if (kind === 'crash-at-accept') {
      transcript.add(time.nowMs, at, 'PROPOSER FAULT: crashes as its own acceptance lands');
      schedule(time.nowMs, () => {
        if (this.#active) cluster.crash(at);
      });
    } else if (kind === 'cut-at-accept') {
      this.#cutOff(at, 'as its own acceptance lands');
    } else {
      const others = this.#others(at);
      const until = time.nowMs + this.#span(1, 3);
      const cut = others.filter(() => rng.chance(0.5));
      for (const q of cut) wire.cut(at, q, until);
      transcript.add(time.nowMs, at, `PROPOSER FAULT: its ACCEPTs to ${cut.map((q) => `p${q}`).join(',') || 'nobody'} wait until ${until}ms`);
    }
  }

  /**
   * Rule P2's promise: `at`'s request on the view lock is held on its way to a majority less one
   * of the voters (an odd count of them), and to the leaving members, while another voter, which
   * has it, is asked for a change of its own, a higher ballot: those voters promise that one first
   * and refuse `at`'s promise.
   * From then on its frames, its ACCEPTs among them, reach those voters alone; once a view lands
   * on its disk, it is cut off long enough to be evicted. Null when not drawn, or not possible.
   */
  #overtaken(at: number): (() => void) | null {
    const { askAnother, cluster, faults, race, scenario: s, schedule, time, transcript, wire } = this.#o;
    if (race === undefined || faults === undefined || !race.chance(0.25)) return null;
    const voters = cluster.latestView()?.members.filter((m) => m.state === 'voter').map((m) => Number(m.id.slice(1))) ?? [];
    const running = voters.filter((q) => q !== at && this.#settled(q));
    const majority = Math.floor(voters.length / 2) + 1;
    const disk = cluster.hostOf(at).disk;
    // Every voter up and synced at the newest view, and no fault under way: the race plays out as drawn, random faults held off meanwhile.
    if (voters.length % 2 === 0 || running.length !== voters.length - 1 || !this.#settled(at) || disk.onViewSaved !== null || !faults.calm()) return null;
    faults.holdOff(time.nowMs + this.#span(6, 6));
    // And to every leaving member (in every ack set until it left): its first head ack, for the later request, opens that one's gate too.
    const leaving = cluster.latestView()?.members.filter((m) => m.state === 'leaving').map((m) => Number(m.id.slice(1))) ?? [];
    const held = [...race.shuffle(running).slice(0, majority - 1), ...leaving];
    const askAt = time.nowMs + s.delayMaxMs + 1;
    const holdUntil = askAt + 2 * s.delayMaxMs + race.int(2, 20);
    for (const q of held) wire.cut(at, q, holdUntil);
    transcript.add(time.nowMs, at, `PROPOSER FAULT: its request held on its way to ${held.map((q) => `p${q}`).join(',')} until ${holdUntil}ms, another member asked at ${askAt}ms`);
    let open = true;
    schedule(askAt, () => {
      if (!this.#active || !open) return;
      askAnother([at, ...held], race);
      // From now on its frames (its ACCEPTs among them) reach those voters alone: the others
      // suspect it first, and one of them evicts it as soon as those voters find it silent too.
      const until = time.nowMs + this.#span(2, 4);
      const others = this.#others(at).filter((q) => !held.includes(q));
      for (const q of others) wire.cut(at, q, until);
      transcript.add(time.nowMs, at, `PROPOSER FAULT: its frames to ${others.map((q) => `p${q}`).join(',')} wait until ${until}ms`);
    });
    const before = marks(disk.viewRecord);
    const hook = (record: ViewRecord): void => {
      if (!this.#active || marks(record).epoch === before.epoch) return;
      disk.onViewSaved = null;
      this.#cutOff(at, 'as a new view lands on its disk', 2, 4);
    };
    disk.onViewSaved = hook;
    return () => {
      open = false;
      if (disk.onViewSaved === hook) disk.onViewSaved = null;
    };
  }

  /** Whether `peer` runs one process, not frozen, synced at the newest view. */
  #settled(peer: number): boolean {
    const { cluster } = this.#o;
    const p = cluster.current(peer);
    const m = p?.runtime.inspect.protocol.machine;
    return m !== undefined && cluster.processes(peer).length === 1 && !cluster.isFrozen(peer) && m.synced && m.clusterView?.epoch === cluster.latestView()?.epoch;
  }

  /** Cuts `at` off from every other host, both directions, for `lo` to `hi` evict_ms. */
  #cutOff(at: number, when: string, lo = 1, hi = 3): void {
    const { time, transcript, wire } = this.#o;
    const until = time.nowMs + this.#span(lo, hi);
    for (const q of this.#others(at)) {
      wire.cut(at, q, until);
      wire.cut(q, at, until);
    }
    transcript.add(time.nowMs, at, `PROPOSER FAULT: cut off ${when}, until ${until}ms`);
  }

  /** Another running member cut off from everyone while `at`'s change gathers its head acks. */
  #memberCut(at: number): void {
    const { rng, schedule, time } = this.#o;
    const others = this.#others(at).filter((q) => this.#o.cluster.current(q) !== undefined);
    if (others.length === 0) return;
    const q = rng.pick(others);
    schedule(time.nowMs + rng.int(0, Math.ceil(this.#o.scenario.heartbeatMs)), () => {
      if (this.#active) this.#cutOff(q, `while p${at}'s change gathers head acks`);
    });
  }

  /** Often, another member is asked for a change while the proposer is out. */
  #followUp(at: number): void {
    const { askAnother, rng, schedule, time } = this.#o;
    if (!rng.chance(0.7)) return;
    const r = rng;
    schedule(time.nowMs + this.#span(0, 2), () => askAnother([at], r));
  }

  #others(at: number): number[] {
    return Array.from({ length: this.#o.cluster.size }, (_, q) => q).filter((q) => q !== at);
  }

  /** A random span of `lo` to `hi` evict_ms of the slowest clock, in virtual ms. */
  #span(lo: number, hi: number): number {
    const s = this.#o.scenario;
    const evictGlobalMs = s.evictMs / Math.min(...s.clockRates);
    return this.#o.rng.int(Math.ceil(lo * evictGlobalMs), Math.ceil(hi * evictGlobalMs));
  }
}
