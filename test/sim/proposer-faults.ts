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
}

/** What the faults are built from: the changer's world, and how to ask another member for a change. */
export interface ProposerFaultOptions extends ProposerFaultSource {
  readonly scenario: Scenario;
  readonly cluster: Cluster;
  readonly schedule: ScheduleWorld;
  readonly time: SimTime;
  readonly transcript: Transcript;
  /** Asks a running voter other than `except` for a change, drawn from `rng`. */
  readonly askAnother: (except: number, rng: Prng) => void;
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
    // Two changes raced on the view lock: their requests may reach a third member out of order.
    if (!raced && rng.chance(0.15)) askAnother(at, rng);
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

  /** Cuts `at` off from every other host, both directions, for one to three evict_ms. */
  #cutOff(at: number, when: string): void {
    const { time, transcript, wire } = this.#o;
    const until = time.nowMs + this.#span(1, 3);
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
    schedule(time.nowMs + this.#span(0, 2), () => askAnother(at, r));
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
