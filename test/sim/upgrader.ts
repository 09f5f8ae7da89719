/**
 * A rolling upgrade across a protocol level, drawn with `--changes` beside the changes of the
 * members (docs/reconfiguration.md, rule P9; docs/operations.md, "Upgrades"). Every host starts
 * on this release's binary (levels 9 to 10); in some seeds the spare hosts are on the next
 * release's already when they join. During the safety phase the operator, at random moments:
 *
 * - upgrades a host: the next release's binary (9 to 11, level 11 differing from 10 in nothing
 *   but its number, as in test/integration/fixtures/next-release-peer.ts), started after a
 *   crash (the simulator's restarts are kill -9);
 * - downgrades one back to this release's: before the raise, a restart like any other; after it
 *   (or once the host's data dir accepted a view at 11), lamport-peer refuses the start (exit 2,
 *   cluster.ts `refusedStarts`) and the host stays down until the operator puts the next release
 *   back on it;
 * - asks a running voter to raise the level to 11 (`PeerRuntime.startChange`), refused while a
 *   member's binary has not advertised it; sometimes a downgrade races the raise.
 *
 * In the liveness phase every host gets a binary that speaks the level the cluster runs at and
 * any its data dir accepted (the operator reads the refusals); a host cut off for running an
 * older one is restarted.
 * Drawn from a generator of its own, so the seeds' other draws, the changer's included, stay.
 */
import type { AgreedView } from '../../src/core/view.js';
import type { LockError } from '../../src/errors.js';
import { recordLevel } from '../../src/runtime/view-store.js';
import type { ProtocolLevels } from '../../src/transport/codec.js';
import { protocolLevels, speaks } from '../../src/transport/codec.js';
import type { Changer } from './changer.js';
import type { Cluster } from './cluster.js';
import type { ScheduleWorld } from './events.js';
import type { SimTime } from './host.js';
import type { Prng } from '../support/prng.js';
import type { Scenario } from './scenario.js';
import type { Transcript } from './transcript.js';
import type { Wire } from './network.js';

/** This release's binary. */
export const releaseLevels: ProtocolLevels = protocolLevels;
/** The next release's: one level more (test/integration/fixtures/next-release-peer.ts). */
export const nextLevels: ProtocolLevels = { oldest: protocolLevels.oldest, newest: protocolLevels.newest + 1 };

/** What an upgrader is built from. */
export interface UpgraderOptions {
  readonly scenario: Scenario;
  readonly rng: Prng;
  readonly cluster: Cluster;
  readonly changer: Changer;
  readonly schedule: ScheduleWorld;
  readonly time: SimTime;
  readonly transcript: Transcript;
  readonly wire: Wire;
}

/** The operator of a rolling upgrade: binaries swapped host by host, and the raise. */
export class Upgrader {
  readonly #o: UpgraderOptions;
  #active = true;
  #asked = 0;
  /** Raises made (the view at the new level chosen and answered). */
  raised = 0;

  constructor(o: UpgraderOptions) {
    this.#o = o;
    const { cluster, rng } = o;
    // Some seeds add hosts that run the next release already.
    if (rng.chance(0.3)) for (let p = cluster.founders; p < cluster.size; p++) if (rng.chance(0.6)) cluster.installBinary(p, nextLevels);
  }

  get #evictGlobalMs(): number {
    const s = this.#o.scenario;
    return Math.ceil(s.evictMs / Math.min(...s.clockRates));
  }

  /** Schedules the first step once the cluster has formed. */
  start(): void {
    const s = this.#o.scenario;
    this.#o.schedule(Math.ceil(s.leaseMs + 4 * s.heartbeatMs) + this.#o.rng.int(0, this.#evictGlobalMs), () => this.#tick());
  }

  /** The level the cluster runs at as far as any data dir got (10 until a raise). */
  #level(): number {
    return this.#o.cluster.latestView()?.level ?? releaseLevels.newest;
  }

  #tick(): void {
    if (!this.#active) return;
    const { rng, schedule, time } = this.#o;
    const raised = this.#level() >= nextLevels.newest;
    const x = rng.float() * 8;
    if (x < 5) this.#swap(nextLevels);
    else if (x < 6) this.#swap(releaseLevels);
    else if (!raised) this.#raise();
    schedule(time.nowMs + rng.int(1, Math.ceil(this.#evictGlobalMs / 2)), () => this.#tick());
  }

  /**
   * Puts `levels` on a host that runs the other binary, not removed, and restarts it on it
   * (`raced`: as a raise runs, without waiting for the others' quiet, and back up fast).
   */
  #swap(levels: ProtocolLevels, raced = false, proposer = -1): number | null {
    const { cluster, rng, transcript, time } = this.#o;
    const hosts = Array.from({ length: cluster.size }, (_, p) => p)
      .filter((p) => cluster.binaryOf(p) !== levels && !cluster.removed(p) && cluster.processes(p).length <= 1 && (!raced || (cluster.isUp(p) && p !== proposer)));
    if (hosts.length === 0) return null;
    const peer = rng.pick(hosts);
    // One host at a time, as an operator goes: while no change of the members runs, every other
    // member is synced, and no restarted peer still echoes no heartbeat (its old process's
    // confirmations may bind). The race is the operator's mistake, made at once.
    if (!raced && cluster.isUp(peer) && (!this.#quiet() || !this.#o.changer.quiet() || !cluster.othersSynced(peer))) return null;
    cluster.installBinary(peer, levels);
    const name = levels === nextLevels ? 'UPGRADE' : 'DOWNGRADE';
    transcript.add(time.nowMs, peer, `${name}${raced ? ' (racing a raise)' : ''}: the binary of levels ${levels.oldest} to ${levels.newest}${cluster.isUp(peer) ? ', restarted' : ''}`);
    if (cluster.isUp(peer)) this.#restart(peer, raced ? rng.int(1, Math.max(2, 2 * this.#o.scenario.delayMaxMs)) : rng.int(1, this.#o.scenario.downMaxMs));
    return peer;
  }

  /** Whether no running process holds its echoes after its restart (`echoes_held_for_ms` is 0 everywhere). */
  #quiet(): boolean {
    const { cluster } = this.#o;
    for (let p = 0; p < cluster.size; p++) {
      const q = cluster.current(p);
      if (q !== undefined && q.runtime.inspect.protocol.quietLeftMs(q.runtime.inspect.nowMs()) > 0) return false;
    }
    return true;
  }

  /** Crashes `peer` and starts it again a little later; a start refused gets the next release back (the operator read exit 2). */
  #restart(peer: number, downMs: number): void {
    const { cluster, rng, schedule, time } = this.#o;
    cluster.crash(peer);
    schedule(time.nowMs + downMs, () => {
      if (!this.#active) return;
      cluster.restart(peer);
      if (cluster.isUp(peer) || cluster.removed(peer)) return;
      schedule(time.nowMs + rng.int(1, this.#evictGlobalMs), () => {
        if (!this.#active || cluster.isUp(peer)) return;
        cluster.installBinary(peer, nextLevels);
        cluster.restart(peer);
      });
    });
  }

  /** Asks a running voter to raise the level; sometimes a downgrade races it. */
  #raise(): void {
    const { cluster, changer, rng, scenario: s, time, transcript } = this.#o;
    if (!changer.quiet()) return;
    const voters = cluster.voterPeers().filter((p) => cluster.current(p) !== undefined);
    if (voters.length === 0) return;
    const at = rng.pick(voters);
    const p = cluster.current(at);
    if (p === undefined) return;
    const n = ++this.#asked;
    const level = nextLevels.newest;
    const timeoutMs = rng.int(2, 6) * s.evictMs;
    transcript.add(time.nowMs, at, `RAISE #${n} asked: level ${level} (timeout ${timeoutMs} ms)`);
    p.proc.run(() => p.runtime.startChange({ op: 'level', level }, { timeoutMs }, (r: AgreedView | LockError) => {
      if (!('code' in r)) this.raised++;
      transcript.add(time.nowMs, at, `RAISE #${n}: ${'code' in r ? `${r.code} ${r.message.slice(0, 160)}` : `epoch ${r.epoch} level ${r.level}`}`);
    }));
    // A downgrade racing it: at a random moment, or as soon as its view is proposed (on its way to the others).
    if (rng.chance(0.3)) this.#o.schedule(time.nowMs + rng.int(0, 4 * s.delayMaxMs), () => {
      if (this.#active) this.#swap(releaseLevels, true, at);
    });
    else if (rng.chance(0.5)) this.#atProposal(at, level, time.nowMs + timeoutMs);
  }

  /**
   * Downgrades another member as soon as `at`'s core has proposed a view at `level` (watched
   * every millisecond until `untilMs`); sometimes a third member is cut from `at` meanwhile, so
   * that it learns the view late, after the downgraded host came back.
   */
  #atProposal(at: number, level: number, untilMs: number): void {
    const { cluster, rng, schedule, time, transcript, wire, scenario: s } = this.#o;
    const watch = (): void => {
      const p = cluster.current(at);
      if (!this.#active || p === undefined || time.nowMs > untilMs) return;
      const proposal = p.runtime.inspect.protocol.machine.proposal;
      if (proposal === null || proposal.view.level < level) return schedule(time.nowMs + 1, watch);
      const x = this.#swap(releaseLevels, true, at);
      const others = proposal.view.members.map((m) => Number(m.id.slice(1))).filter((q) => q !== at && q !== x && cluster.isUp(q));
      if (others.length === 0 || !rng.chance(0.5)) return;
      const late = rng.pick(others);
      const untilCutMs = time.nowMs + rng.int(1, Math.ceil(s.leaseMs));
      wire.cut(at, late, untilCutMs);
      wire.cut(late, at, untilCutMs);
      transcript.add(time.nowMs, late, `CUT p${at}<->p${late} until ${untilCutMs}ms (the raise's view reaches p${late} late)`);
    };
    schedule(time.nowMs + 1, watch);
  }

  /**
   * The liveness phase: nothing more is swapped. Every host gets a binary that speaks the level
   * the cluster runs at and any its data dir accepted; one still running an older one (cut off)
   * is stopped: the heal starts it again.
   */
  stop(): void {
    this.#active = false;
    const { cluster } = this.#o;
    const level = this.#level();
    for (let peer = 0; peer < cluster.size; peer++) {
      // The level the cluster runs at, or one its data dir accepted: its start would be refused.
      const record = cluster.hostOf(peer).disk.viewRecord;
      if (speaks(cluster.binaryOf(peer), Math.max(level, record === null ? 0 : recordLevel(record)))) continue;
      cluster.installBinary(peer, nextLevels);
      while (cluster.isUp(peer)) cluster.crash(peer);
    }
  }
}
