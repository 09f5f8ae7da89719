/**
 * The simulated cluster: one host per configured peer, and on it the production peer
 * runtime (src/runtime/peer.ts: session, local holds, lease and eviction glue, mesh, clock
 * store) started with the host's virtual clocks, timers, sockets and disk. Nothing of the
 * runtime is copied here: the cluster only starts, kills, stops, suspends and restarts
 * processes, breaks their disks and steps their clocks, and measures what the checker
 * needs from outside (each incarnation's lease against the host's true time base).
 */
import type { ClusterConfig } from '../../src/config.js';
import { limits } from '../../src/limits.js';
import { PeerRuntime } from '../../src/runtime/peer.js';
import type { Bound, ClockStore } from '../../src/runtime/clock-store.js';
import type { JoinTicket, ViewRecord, ViewStore } from '../../src/runtime/view-store.js';
import type { AgreedView } from '../../src/core/view.js';
import { canonicalView } from '../../src/core/view.js';
import { ErrorCode, LockError } from '../../src/errors.js';
import { checkLevelOf, newViewRecord, startRecord, ticketShapeLevel } from '../../src/runtime/view-store.js';
import { levelToRun } from '../../src/cluster-memory.js';
import type { ProtocolLevels } from '../../src/transport/codec.js';
import { protocolLevels } from '../../src/transport/codec.js';
import type { ProtocolReader } from '../../src/core/protocol.js';
import type { Logger } from '../../src/log.js';
import type { Incarnation } from '../../src/core/types.js';
import { compareIncarnation, formatIncarnation } from '../../src/core/types.js';
import type { Checker, Hold } from './checker.js';
import { HostClock, SimProcess } from './host.js';
import type { ScheduleTask, SimTime } from './host.js';
import type { Prng } from '../support/prng.js';
import type { Scenario } from './scenario.js';
import type { SimNetworks } from './sockets.js';
import type { Transcript } from './transcript.js';
import { transcriptLogger } from './transcript.js';


/** The data dir of a host: the clock high-water mark, which may be lost or fail to write. */
export class SimDisk implements ClockStore {
  hwm = 0;
  /** The agreed view's record (runtime/view-store.ts), as the host's data dir keeps it across its processes. */
  viewRecord: ViewRecord | null = null;
  /**
   * The protocol level of the shape the data dir last ran with (what lamport-peer keeps in
   * `cluster-shape.json`, src/cluster-memory.ts): null until a process started on it.
   */
  shapeLevel: number | null = null;
  /** Acceptor ids made on this disk so far: a disk lost and made again gets a new one. */
  #acceptorIds = 0;
  newAcceptorId(): string {
    return (++this.#acceptorIds).toString(16).padStart(16, '0');
  }

  /** The record's store, for PeerWorld.viewStore: a write fails while the disk does. */
  readonly views: ViewStore = {
    load: (seeded) => {
      this.viewRecord ??= newViewRecord(this.newAcceptorId(), seeded);
      return this.viewRecord;
    },
    // Written as the data dir's file is (JSON): what does not survive that does not survive here.
    save: (record) => {
      if (this.failing) throw new Error('EROFS: read-only file system');
      this.viewRecord = JSON.parse(JSON.stringify(record)) as ViewRecord;
      this.onViewSaved?.(this.viewRecord);
    },
  };
  /** Told of each record written, in the writing process's task, before what depends on it leaves (the changer's proposer faults). */
  onViewSaved: ((record: ViewRecord) => void) | null = null;
  /** The bounds the last process left (ClockStore.loadBound). */
  readonly bounds: Record<Bound, number> = { promise: 0, echo: 0 };
  /** While true, every write throws (disk full, read-only file system). */
  failing = false;

  load(): number {
    return this.hwm;
  }

  write(hwm: number): void {
    if (this.failing) throw new Error('EROFS: read-only file system');
    this.hwm = hwm;
  }

  loadBound(kind: Bound): number {
    return this.bounds[kind];
  }

  writeBound(kind: Bound, untilWallMs: number): void {
    if (this.failing) throw new Error('EROFS: read-only file system');
    this.bounds[kind] = untilWallMs;
  }

  /**
   * Background writes take this long when a scripted scenario or a seed's bound episode
   * (bound-episodes.ts) sets it (`schedule` runs a world event); otherwise they are done at
   * once, so a write under way spans no event of the rest of a seed.
   */
  slowWrites: { readonly latencyMs: number; readonly schedule: (ms: number, fn: () => void) => void } | null = null;

  writeBoundLater(kind: Bound, untilWallMs: number, done: (err: Error | null) => void): void {
    const land = (): void => {
      try {
        this.writeBound(kind, untilWallMs);
      } catch (err) {
        done(err as Error);
        return;
      }
      done(null);
    };
    if (this.slowWrites === null) land();
    else this.slowWrites.schedule(this.slowWrites.latencyMs, land);
  }

  /** The latest bound the data dir holds (0 when none). */
  boundsUntilWallMs(): number {
    return Math.max(this.bounds.promise, this.bounds.echo);
  }

  /** The data dir is gone: nothing of it survives. */
  lose(): void {
    this.hwm = 0;
    this.bounds.promise = 0;
    this.bounds.echo = 0;
    this.viewRecord = null;
    this.shapeLevel = null;
  }
}

/** What the checker measures of one process's current incarnation. */
interface LeaseTrack {
  session: ProtocolReader | null;
  /** base - mono when that session started: its lease clock is the base less this. */
  offsetMs: number;
  /** Virtual ms since which the lease has held without a gap (Infinity: none now). */
  sinceMs: number;
  /** Once that session is superseded: when the checker first saw it so, its lease end and its membership's decisions then. */
  zombie: { readonly sinceMs: number; readonly leaseUntilMs: number; readonly decided: ReturnType<ProtocolReader['membershipDecided']> } | null;
  /** Whether that session was synced after one of its tasks. */
  synced: boolean;
}

/** One running (or frozen) process and its runtime. */
export interface SimPeerProcess {
  readonly proc: SimProcess;
  readonly runtime: PeerRuntime;
  /** Its log (into the transcript): the runtime's, and its HTTP API's. */
  readonly logger: Logger;
  readonly lease: LeaseTrack;
  /** The protocol levels its binary speaks (PeerOptions.levels): its host's binary when it started. */
  readonly levels: ProtocolLevels;
}

/** One host: its clocks, its disk, and the processes of its peer id (two when duplicated). */
interface SimHost {
  readonly peer: number;
  readonly clock: HostClock;
  readonly disk: SimDisk;
  /** The protocol levels of the binary its next process runs (this release's by default; a rolling upgrade swaps it). */
  levels: ProtocolLevels;
  /** Newest last; the address of the peer id leads to the newest. */
  procs: SimPeerProcess[];
}

/** What a cluster is built from. */
export interface ClusterOptions {
  readonly scenario: Scenario;
  readonly rng: Prng;
  readonly net: SimNetworks;
  readonly schedule: ScheduleTask;
  readonly checker: Checker;
  readonly transcript: Transcript;
  readonly time: SimTime;
  /**
   * Hosts 0..founders-1 found the cluster (their config file lists them alone); the others are
   * spare hosts, started only once a member added them and gave them its join ticket (`join`).
   * Every host founds it by default.
   */
  readonly founders?: number;
}

/** The peers of one run. */
export class Cluster {
  readonly #o: ClusterOptions;
  readonly #config: ClusterConfig;
  /** The founders' config (`#config` when every host founds the cluster). */
  readonly #foundersConfig: ClusterConfig;
  readonly #founders: number;
  readonly #hosts: SimHost[];
  #nextProcId = 1;
  readonly #duplicated = new Set<number>();
  /** When each peer last went from two processes to one. */
  readonly #duplicateEndedMs = new Map<number, number>();

  /**
   * True while a peer other than `peer` runs two processes, or ran them within `sinceMs`: a
   * dead twin's echoes vouch for leases up to lease_ms after it died, so a second duplicated
   * id right after it makes two duplicated ids at once (seed 701753 --net link), which the
   * README does not promise.
   */
  otherDuplicated(peer: number, sinceMs: number): boolean {
    for (const h of this.#hosts) {
      if (h.peer === peer) continue;
      if (h.procs.length > 1 || (this.#duplicateEndedMs.get(h.peer) ?? Number.NEGATIVE_INFINITY) >= sinceMs) return true;
    }
    return false;
  }
  /** Told after every new process starts (the workload's clients attach to it). */
  onStarted: (p: SimPeerProcess) => void = () => undefined;
  /** Told when a process dies (its clients' connections reset). */
  onCrashed: (procId: number) => void = () => undefined;

  constructor(o: ClusterOptions) {
    this.#o = o;
    const s = o.scenario;
    this.#config = {
      cluster: 'sim', secret: 'sim-secret',
      peers: Array.from({ length: s.peers }, (_, i) => ({ id: `p${i}`, ws: `ws://p${i}:1`, http: '127.0.0.1:0' })),
      heartbeatMs: s.heartbeatMs, leaseMs: s.leaseMs, evictMs: s.evictMs, tls: undefined,
    };
    this.#founders = Math.min(o.founders ?? s.peers, s.peers);
    this.#foundersConfig = this.#founders === s.peers ? this.#config : { ...this.#config, peers: this.#config.peers.slice(0, this.#founders) };
    this.#hosts = Array.from({ length: s.peers }, (_, peer) => {
      // Even peers' hosts tell a boot clock (Linux), odd ones do not: both ways of counting a suspend run.
      const clock = new HostClock({ rate: s.clockRates[peer] ?? 1, offsetMs: s.clockOffsetsMs[peer] ?? 0, skewMs: s.skewMs[peer] ?? 0, boot: peer % 2 === 0 });
      const disk = new SimDisk();
      if (s.clockStyle === 'tiny') disk.hwm = o.rng.int(0, 2);
      return { peer, clock, disk, levels: protocolLevels, procs: [] };
    });
    o.checker.validity = (h, nowMs) => this.#holdValid(h, nowMs);
  }

  /** The config every host holds (a misconfiguration episode restarts one with another). */
  get config(): ClusterConfig {
    return this.#config;
  }

  /** Number of configured peers. */
  get size(): number {
    return this.#hosts.length;
  }

  /** Starts every peer (every founder: spare hosts start when they join). */
  start(): void {
    for (const h of this.#hosts) this.restart(h.peer);
  }

  /** Hosts 0..founders-1 founded the cluster; the others are spares (ClusterOptions.founders). */
  get founders(): number {
    return this.#founders;
  }

  /**
   * The agreed view as far as any host got: the newest view on any host's data dir (only a
   * chosen view is applied, docs/reconfiguration.md P2, so this is the cluster's newest view
   * some member applied). With every host a founder and no change drawn, epoch 0's.
   */
  latestView(): AgreedView | undefined {
    let latest: AgreedView | undefined;
    for (const h of this.#hosts) {
      const chain = h.disk.viewRecord?.chain;
      const v = chain?.[chain.length - 1];
      if (v !== undefined && (latest === undefined || v.epoch > latest.epoch)) latest = v;
    }
    return latest;
  }

  /** The ids of the voters of the newest view (`latestView`); every host's when none is on disk yet. */
  voterPeers(): number[] {
    const v = this.latestView();
    if (v === undefined) return this.#hosts.map((h) => h.peer);
    return v.members.filter((m) => m.state === 'voter').map((m) => Number(m.id.slice(1)));
  }

  /**
   * Whether, with `dead` kept down and every member the newest view removes stopped (the heal
   * does both), each host left running still holds a view a majority of whose voters run. A
   * view chosen at a proposer that removed itself and was cut off as it landed there, then
   * stopped, is the newest, yet the others still hold the one before, which counts the
   * removed voter: a second peer down there is a lost majority (simulator seed 247
   * --changes, once a LEAVE told to a held successor moved its schedule).
   */
  keepsMajoritiesWithout(dead: number): boolean {
    const runs = (q: number): boolean => q !== dead && !this.removed(q);
    for (const h of this.#hosts) {
      const chain = h.disk.viewRecord?.chain;
      const v = chain?.[chain.length - 1];
      if (v === undefined || !runs(h.peer)) continue;
      const voters = v.members.filter((m) => m.state === 'voter').map((m) => Number(m.id.slice(1)));
      if (voters.filter(runs).length < Math.floor(voters.length / 2) + 1) return false;
    }
    return true;
  }

  /** Whether `peer` was a member and the newest view removes it (leaving, or gone). */
  removed(peer: number): boolean {
    if (this.#host(peer).disk.viewRecord === null) return false;
    const m = this.latestView()?.members.find((x) => x.id === `p${peer}`);
    return m === undefined || m.state === 'leaving';
  }

  /** Whether the core of `peer`'s current process is two or more epochs behind the newest view (`latestView`). */
  behind(peer: number): boolean {
    const epoch = this.current(peer)?.runtime.inspect.protocol.machine.clusterView?.epoch;
    return epoch !== undefined && epoch < (this.latestView()?.epoch ?? 0) - 1;
  }

  /** Whether `peer` is a voter of the newest view (`latestView`). */
  isVoter(peer: number): boolean {
    return this.voterPeers().includes(peer);
  }

  /**
   * A spare host starts as \`lamport-peer --join TICKET\` does: its data dir's record made from
   * the ticket a member gave it after the add, then the peer started on it.
   */
  join(peer: number, ticket: JoinTicket): void {
    const disk = this.#host(peer).disk;
    const level = this.#levelToRun(peer, ticket);
    if (level === null) return;
    disk.viewRecord = startRecord(disk.viewRecord, `p${peer}`, [], level, () => disk.newAcceptorId(), ticket);
    this.restart(peer);
  }

  /** Starts refused by lamport-peer's checks of the protocol level (exit 2), for the run's summary. */
  refusedStarts = 0;

  /** The protocol levels of the binary `peer`'s next process runs. */
  binaryOf(peer: number): ProtocolLevels {
    return this.#host(peer).levels;
  }

  /** Another binary for `peer`'s next process (a rolling upgrade); the running one runs on. */
  installBinary(peer: number, levels: ProtocolLevels): void {
    this.#host(peer).levels = levels;
  }

  /**
   * The level `peer`'s next process runs at, as lamport-peer's start decides it (server.ts:
   * cluster-memory.ts `runningLevel`, view-store.ts `checkRecordLevel`), or null when the start
   * is refused (ERR_CONFIG_INVALID, exit 2): the host stays down.
   */
  #levelToRun(peer: number, join?: JoinTicket): number | null {
    const h = this.#host(peer);
    try {
      const level = levelToRun(h.disk.shapeLevel === null ? null : { protocol: h.disk.shapeLevel }, h.levels, join === undefined ? undefined : ticketShapeLevel(join));
      checkLevelOf(h.disk.viewRecord, h.levels, join);
      return level;
    } catch (err) {
      if (!(err instanceof LockError) || err.code !== ErrorCode.ConfigInvalid) throw err;
      this.refusedStarts++;
      this.#o.transcript.add(this.#o.time.nowMs, peer, `START refused: ${err.code} (${err.message.slice(0, 120)})`);
      return null;
    }
  }

  /** The process clients of `peer` reach (the newest live one, once started), if any. */
  current(peer: number): SimPeerProcess | undefined {
    const procs = this.#host(peer).procs;
    const p = procs[procs.length - 1];
    return p?.runtime.started === true ? p : undefined;
  }

  /** Every live process of `peer` (two while a duplicate runs). */
  processes(peer: number): readonly SimPeerProcess[] {
    return this.#host(peer).procs;
  }

  /** True when every member of the newest view but `peer` runs one process, synced with its view. */
  othersSynced(peer: number): boolean {
    const members = this.#founders === this.#hosts.length ? null : new Set(this.latestView()?.members.map((m) => m.id) ?? []);
    return this.#hosts.every((h) => h.peer === peer || (members !== null && !members.has(`p${h.peer}`)) || (h.procs.length === 1 && this.current(h.peer)?.runtime.inspect.protocol.machine.synced === true));
  }

  /**
   * True when a second process with this peer's id ever ran, unless an episode stopped it with
   * `stopDuplicate` (the heal stops every process of a duplicated id and starts one).
   */
  wasDuplicated(peer: number): boolean {
    return this.#duplicated.has(peer);
  }

  /**
   * The operator stops the newer of two processes of `peer` (kill -9) and keeps the other: it
   * must come back on its own (README, "What is not promised": two processes with one id keep
   * each other out until one is stopped), so the heal leaves it running from now on.
   */
  stopDuplicate(peer: number): void {
    if (this.#host(peer).procs.length !== 2) return;
    this.crash(peer, 'newest');
    this.#duplicated.delete(peer);
  }

  /** True when a process of the peer runs (maybe frozen). */
  isUp(peer: number): boolean {
    return this.#host(peer).procs.length > 0;
  }

  /** The host of a peer, for faults on its clocks and disk. */
  hostOf(peer: number): { readonly clock: HostClock; readonly disk: SimDisk } {
    return this.#host(peer);
  }

  /**
   * True when some other running peer (one that `by` accepts) has met the current incarnation
   * of `peer`: only then can it be evicted if it dies now (nobody suspects an incarnation
   * nobody has heard).
   */
  isKnown(peer: number, by: (knower: number) => boolean = () => true): boolean {
    const p = this.current(peer);
    if (p === undefined) return false;
    const inc = p.runtime.inspect.incarnation;
    return this.#hosts.some((h) => h.peer !== peer && by(h.peer) && h.procs.some((q) => q.runtime.started && q.runtime.inspect.links().some((l) => l.peer === peer && l.incarnation?.startMs === inc.startMs && l.incarnation.nonce === inc.nonce)));
  }

  /**
   * The peers `peer` can never sync with, by design, or null when it can: unsynced, it waits
   * (lastTs 0) only for the dead peer or removed members down (`removedDown`), none of which its
   * current incarnation ever met, so it keeps waiting for them even after the others evicted
   * them (README, "What is not promised"). Its requests never leave; nobody waits for them.
   */
  cannotSync(peer: number, dead: number | null, removed: readonly number[] = []): number[] | null {
    const p = this.current(peer);
    const gone = dead === null ? removed : [dead, ...removed];
    if (gone.length === 0 || p === undefined) return null;
    const m = p.runtime.inspect.protocol.machine;
    if (m.synced) return null;
    const links = p.runtime.inspect.links();
    const met = (q: number): boolean => links.some((l) => l.peer === q && l.incarnation !== null);
    const waited = m.view().filter((q) => m.lastTs(q) === 0);
    return waited.length > 0 && waited.every((q) => gone.includes(q) && !met(q)) ? waited : null;
  }

  /**
   * Members the newest view removes (leaving) whose host is down: like the dead peer, a peer
   * that never met one waits for it until it is retired (it is in the ack set until its LEAVE
   * or its eviction, which a peer that never met it does not apply: docs/reconfiguration.md P6).
   */
  removedDown(): number[] {
    return this.#hosts.filter((h) => h.procs.length === 0 && this.removed(h.peer)).map((h) => h.peer);
  }

  /**
   * True when `p` waits, by design, for a predecessor that can never be evicted: a peer whose
   * new incarnation waits for its predecessor's eviction, while the dead peer's absence
   * leaves too few others (that peer never counts for its own eviction) to make a majority.
   * README, "What is not promised": a restart while another peer is down for good waits.
   */
  waitsForUnevictable(p: SimPeerProcess, dead: number | null): boolean {
    if (dead === null) return false;
    // The voters of the newest view count the majority (every peer, without changes).
    const voters = this.#founders === this.#hosts.length ? this.size : this.voterPeers().length;
    const majority = Math.floor(voters / 2) + 1;
    const others = voters - 2; // neither the dead peer nor the waiting one's own id
    if (others >= majority) return false;
    // Every peer's requests need every peer's ack: one peer stuck waiting stalls them all.
    return p.proc.alive && this.#hosts.some((h) => h.procs.some((q) => q.runtime.started && q.runtime.inspect.waitingForPredecessor().length > 0));
  }

  /** Why a request is not granted yet, as its peer's core explains it (liveness reports). */
  explain(p: SimPeerProcess, ref: number): string {
    const m = p.runtime.inspect.protocol.machine;
    const e = m.explain(ref);
    const lease = m.leaseValid ? 'lease' : 'no lease';
    const view = m.view().map((q) => `p${q}`).join(',');
    if (e === undefined) return `unknown to the core; ${lease}; view ${view}`;
    return `${e.state} at ${e.position}, missing [${e.missingPeers.map((q) => `p${q}`).join(',')}]; ${lease}; synced ${m.synced}; view ${view}`;
  }

  /**
   * Starts a new process for `peer` (after a crash, or beside a live one: a duplicate). Its
   * runtime loads the clock floor from the host's disk and begins a new incarnation.
   * `disk`: a duplicate on a data dir of its own (a second host, as test/fault/twin-peer.ts
   * starts on real processes), not the host's.
   */
  restart(peer: number, opts: { duplicate?: boolean; config?: ClusterConfig; disk?: SimDisk } = {}): void {
    const h = this.#host(peer);
    const disk = opts.duplicate === true ? opts.disk ?? h.disk : h.disk;
    if (h.procs.length > 0 && opts.duplicate !== true) return;
    // A spare host runs only once it joined (`join`): started on its own, it would found a cluster of its own.
    if (peer >= this.#founders && disk.viewRecord === null) return;
    const { time, rng, schedule, net, transcript } = this.#o;
    // What lamport-peer does with the data dir before the runtime starts (server.ts).
    const config = opts.config ?? (peer < this.#founders ? this.#foundersConfig : this.#config);
    const level = this.#levelToRun(peer);
    if (level === null) return;
    disk.viewRecord = startRecord(disk.viewRecord, `p${peer}`, config.peers, level, () => disk.newAcceptorId());
    const proc = new SimProcess({ id: this.#nextProcId, peer, host: h.clock, time, rng: rng.fork(), schedule });
    const { network, listener } = net.networkOf(proc);
    const logger = transcriptLogger(transcript, time, peer, proc.id);
    let runtime: PeerRuntime;
    try {
      runtime = new PeerRuntime({
        config, id: `p${peer}`, logger, protocolLevel: level, levels: h.levels, world: { env: proc.env, network, listener, clockStore: disk, viewStore: disk.views }, processMetrics: false,
        ...(this.#o.scenario.linkBufferBytes === null ? {} : { linkUnackedBytesMax: this.#o.scenario.linkBufferBytes }),
        ...(this.#o.scenario.frameBytes === null ? {} : { frameBytesMax: this.#o.scenario.frameBytes }),
      });
    } catch (err) {
      // A host whose data dir records its removal refuses to start (docs/reconfiguration.md P8).
      if (!(err instanceof LockError) || err.code !== ErrorCode.Removed) throw err;
      proc.kill();
      net.crashed(proc);
      transcript.add(time.nowMs, peer, `START refused: ${err.code} (${err.message.slice(0, 80)})`);
      return;
    }
    this.#nextProcId++;
    if (opts.duplicate === true) this.#duplicated.add(peer);
    disk.shapeLevel = level;
    const p: SimPeerProcess = { proc, runtime, logger, levels: h.levels, lease: { session: null, offsetMs: 0, sinceMs: Number.POSITIVE_INFINITY, zombie: null, synced: false } };
    h.procs.push(p);
    const other = opts.config === undefined ? '' : ` with another config (peers ${opts.config.peers.map((q) => q.id).join(',')}; heartbeat/lease/evict ${opts.config.heartbeatMs}/${opts.config.leaseMs}/${opts.config.evictMs})`;
    transcript.add(time.nowMs, peer, `START process ${proc.id}${opts.duplicate === true ? ' (a duplicate beside a live one)' : ''}${other} floor hwm=${disk.hwm}`);
    proc.run(() => runtime.start());
    this.afterTask(p);
    this.onStarted(p);
  }

  /** kill -9 of one process (the newest by default): it and its sockets are gone. */
  crash(peer: number, which: 'newest' | 'oldest' = 'newest'): void {
    const h = this.#host(peer);
    const p = which === 'newest' ? h.procs[h.procs.length - 1] : h.procs[0];
    if (p === undefined) return;
    if (h.procs.length > 1) this.#duplicateEndedMs.set(peer, this.#o.time.nowMs);
    h.procs = h.procs.filter((q) => q !== p);
    p.proc.kill();
    this.#o.net.crashed(p.proc);
    this.onCrashed(p.proc.id);
    this.#o.transcript.add(this.#o.time.nowMs, peer, `CRASH process ${p.proc.id}`);
  }

  /** SIGSTOP of every process of `peer`; `resume` sends SIGCONT. */
  pause(peer: number): void {
    for (const p of this.#host(peer).procs) p.proc.pause();
    this.#o.transcript.add(this.#o.time.nowMs, peer, 'PAUSE');
  }

  resume(peer: number): void {
    this.#o.transcript.add(this.#o.time.nowMs, peer, 'RESUME');
    for (const p of this.#host(peer).procs) p.proc.thaw();
  }

  /** The host sleeps: its monotonic clock stops, its wall clock runs on. */
  suspend(peer: number): void {
    const h = this.#host(peer);
    h.clock.suspend(this.#o.time.nowMs);
    this.#o.transcript.add(this.#o.time.nowMs, peer, 'SUSPEND host');
  }

  wake(peer: number): void {
    const h = this.#host(peer);
    h.clock.wake(this.#o.time.nowMs);
    this.#o.transcript.add(this.#o.time.nowMs, peer, 'WAKE host');
    for (const p of h.procs) p.proc.thaw();
  }

  /** True while any process of the peer is frozen (stopped, or its host asleep). */
  isFrozen(peer: number): boolean {
    return this.#host(peer).procs.some((p) => p.proc.frozen);
  }

  /** Before every task of a process: a lease that lapsed since its last task lapsed, seen or not. */
  beforeTask(p: SimPeerProcess): void {
    const track = p.lease;
    if (track.session === null || !Number.isFinite(track.sinceMs)) return;
    const trueNow = p.proc.host.baseMs(this.#o.time.nowMs) - track.offsetMs;
    if (track.session.leaseValidUntilMs() <= trueNow) track.sinceMs = Number.POSITIVE_INFINITY;
  }

  /**
   * After every task of a process: track its lease for the checker, and check the
   * self-fencing rule: a running peer whose lease lapsed (by its host's true time) holds
   * nothing once its event is done.
   */
  afterTask(p: SimPeerProcess): void {
    if (!p.proc.alive || p.proc.frozen || !p.runtime.started) return;
    const session = p.runtime.inspect.protocol;
    const now = this.#o.time.nowMs;
    const track = p.lease;
    const trueNow = (): number => p.proc.host.baseMs(now) - track.offsetMs;
    if (track.session !== session) {
      if (track.session !== null && track.synced) this.#checkStayingOut(p, track.session, session);
      track.session = session;
      track.synced = false;
      track.offsetMs = p.proc.host.baseMs(now) - p.proc.host.monoMs(now);
      track.sinceMs = Number.POSITIVE_INFINITY;
      track.zombie = null;
      this.#bornEvicted(p.proc.peer, session.incarnation);
    }
    if (session.machine.synced) track.synced = true;
    if (this.#founders < this.#hosts.length) this.#checkView(p);
    this.#checkZombie(p, session);
    this.#checkEvictions(p);
    this.#checkSuccessors(p, session);
    const valid = session.leaseValidUntilMs() > trueNow();
    if (!valid) track.sinceMs = Number.POSITIVE_INFINITY;
    else if (!Number.isFinite(track.sinceMs)) track.sinceMs = now;
    // A suspend is counted to within the wall clock's millisecond and limits.suspendDetectMs
    // (runtime/lease-clock.ts): the runtime may see its lease lapse that much later.
    if (valid || session.leaseValidUntilMs() > trueNow() - limits.suspendDetectMs - 1) return;
    const holds = p.runtime.inspect.coreStats().granted;
    if (holds > 0) {
      const u = session.leaseValidUntilMs();
      this.#o.checker.selfFence(now, `p${p.proc.peer} (process ${p.proc.id}) has no lease (until ${u.toFixed(1)}, true now ${trueNow().toFixed(1)}, its lease clock ${p.runtime.inspect.nowMs().toFixed(1)}) but ${holds} hold(s) still granted after its event`);
    }
  }

  /** Each epoch's view as the first data dir to apply it wrote it (canonicalView), and each ordinal's member id. */
  readonly #epochs = new Map<number, string>();
  readonly #ordinals = new Map<number, string>();
  readonly #viewsSeen = new WeakSet<AgreedView>();

  /**
   * With changes of the members: one view per epoch on every data dir (Paxos's safety,
   * docs/reconfiguration.md A1), and an ordinal never given to two members (A4). Checked on
   * the newest view of the process's data dir after each of its tasks.
   */
  #checkView(p: SimPeerProcess): void {
    const chain = this.#host(p.proc.peer).disk.viewRecord?.chain;
    const v = chain?.[chain.length - 1];
    if (v === undefined || this.#viewsSeen.has(v)) return;
    this.#viewsSeen.add(v);
    const text = canonicalView(v);
    const known = this.#epochs.get(v.epoch);
    const now = this.#o.time.nowMs;
    if (known !== undefined && known !== text) this.#o.checker.view(now, `p${p.proc.peer} (process ${p.proc.id}) applied ${text} at epoch ${v.epoch}, another data dir ${known}`);
    if (known === undefined) this.#epochs.set(v.epoch, text);
    for (const m of v.members) {
      const id = this.#ordinals.get(m.ordinal);
      if (id !== undefined && id !== m.id) this.#o.checker.view(now, `ordinal ${m.ordinal} given to ${m.id} at epoch ${v.epoch}, and to ${id} before`);
      this.#ordinals.set(m.ordinal, m.id);
    }
  }

  /** Told after each task of a superseded process after the first (the clients check its waiters). */
  onZombieTask: (p: SimPeerProcess) => void = () => undefined;

  /**
   * A superseded incarnation (a zombie, docs/design.md section 5) acts no more: its lease is
   * not renewed (its end never moves later), it starts no suspicion, counts no confirmation,
   * decides no eviction (it still applies the others' notices), confirms no suspicion and
   * echoes no heartbeat, and its waiters are
   * answered at once. Judged from the end of the first task that found it superseded.
   */
  #checkZombie(p: SimPeerProcess, session: ProtocolReader): void {
    if (session.supersededError === null) return;
    const now = this.#o.time.nowMs;
    const z = p.lease.zombie;
    const decided = session.membershipDecided();
    if (z === null) {
      p.lease.zombie = { sinceMs: now, leaseUntilMs: session.leaseValidUntilMs(), decided };
      return;
    }
    const who = `p${p.proc.peer} (process ${p.proc.id}), superseded since ${z.sinceMs}ms,`;
    const until = session.leaseValidUntilMs();
    if (until > z.leaseUntilMs) this.#o.checker.zombie(now, `${who} renewed its lease from ${z.leaseUntilMs.toFixed(1)} to ${until.toFixed(1)}`);
    for (const k of ['suspicions', 'confirmations', 'evictions', 'confirmed', 'echoes'] as const) {
      if (decided[k] > z.decided[k]) this.#o.checker.zombie(now, `${who} went on deciding: ${k} ${z.decided[k]} -> ${decided[k]}`);
    }
    if (now > z.sinceMs) this.onZombieTask(p);
  }

  /**
   * A process whose incarnation synced and was refused as evicted stays out while a newer
   * process of its id lives (docs/design.md section 5, "Zombies"): it rejoins only once a
   * refusal says the newest one it was told of is evicted. So when it
   * starts a new incarnation, no other process of its id may run a newer, synced, not
   * superseded incarnation that every other running peer counts in its core and none evicted.
   */
  #checkStayingOut(p: SimPeerProcess, old: ProtocolReader, now: ProtocolReader): void {
    const { peer } = p.proc;
    for (const y of this.#host(peer).procs) {
      if (y === p || !y.proc.alive || !y.runtime.started || !y.lease.synced) continue;
      const ys = y.runtime.inspect.protocol;
      if (ys.supersededError !== null || compareIncarnation(ys.incarnation, old.incarnation) <= 0) continue;
      const others = this.#hosts.filter((h) => h.peer !== peer).flatMap((h) => {
        const q = this.current(h.peer);
        return q !== undefined && q.proc.alive && q.runtime.started ? [q] : [];
      });
      const counted = (q: SimPeerProcess): boolean => {
        const s = q.runtime.inspect.protocol;
        const inc = s.machine.incarnation(peer);
        return inc !== undefined && compareIncarnation(inc, ys.incarnation) === 0 && !s.isEvicted(peer, ys.incarnation);
      };
      if (others.length > 0 && others.every(counted)) {
        this.#o.checker.zombie(this.#o.time.nowMs, `p${peer} (process ${p.proc.id}) rejoined as ${formatIncarnation(now.incarnation)} above process ${y.proc.id}'s ${formatIncarnation(ys.incarnation)}, which lives and which every other peer counts`);
      }
    }
  }

  /** Incarnations whose first eviction anywhere was checked (peer:incarnation). */
  readonly #evictionsSeen = new Set<string>();

  /**
   * An incarnation that starts below one a running peer has already evicted (its wall clock
   * stepped back) is evicted there from birth: no eviction of it is ever applied, that peer
   * never counted its requests and refuses it, and it rejoins above once refused. The
   * eviction rule does not judge it (simulator seed 1008794: such an incarnation leased
   * through a peer that restarted fresh while the evictor was suspended).
   */
  #bornEvicted(peer: number, inc: Incarnation): void {
    for (const h of this.#hosts) {
      if (h.peer === peer) continue;
      for (const r of h.procs) {
        if (!r.proc.alive || !r.runtime.started || !r.runtime.inspect.protocol.isEvicted(peer, inc)) continue;
        this.#evictionsSeen.add(`${peer}:${inc.startMs}.${inc.nonce}`);
        return;
      }
    }
  }

  /**
   * The eviction rule (docs/design.md section 5): when the first peer applies the eviction of
   * an incarnation, that incarnation's lease has lapsed (on its host's true time base), so
   * nothing it granted is still held when the others drop its requests. Later appliers (a
   * notice passed on at a join) may find it leased again through peers that had not heard of
   * the eviction; that lease grants nothing, since its evictors no longer ack it.
   */
  #checkEvictions(p: SimPeerProcess): void {
    const session = p.runtime.inspect.protocol;
    for (const host of this.#hosts) {
      if (host.peer === p.proc.peer || this.#learnerIn(session, host.peer)) continue;
      for (const q of host.procs) {
        if (!q.proc.alive || !q.runtime.started || q.lease.session === null || q.lease.session !== q.runtime.inspect.protocol) continue;
        const inc = q.lease.session.incarnation;
        if (!session.isEvicted(host.peer, inc)) continue;
        const key = `${host.peer}:${inc.startMs}.${inc.nonce}`;
        if (this.#evictionsSeen.has(key)) continue;
        this.#evictionsSeen.add(key);
        const trueNow = q.proc.host.baseMs(this.#o.time.nowMs) - q.lease.offsetMs;
        const until = q.lease.session.leaseValidUntilMs();
        // Within limits.suspendDetectMs, as for self-fencing: a suspend is counted that late.
        if (until > trueNow + limits.suspendDetectMs + 1) {
          this.#o.checker.evictedWithLease(this.#o.time.nowMs, `p${p.proc.peer} (process ${p.proc.id}) evicted p${host.peer} (process ${q.proc.id}) while its lease held for ${(until - trueNow).toFixed(1)} ms more`);
        }
      }
    }
  }

  /**
   * Whether `peer` is a learner in the view of `session`'s core: a learner requests nothing
   * (docs/reconfiguration.md P5), so it holds nothing its lease would protect, and the
   * eviction and successor rules do not judge it there.
   */
  #learnerIn(session: ProtocolReader, peer: number): boolean {
    return session.machine.clusterView?.members.some((m) => m.id === `p${peer}` && m.state === 'learner') === true;
  }

  /** Per session, the incarnation of each peer its core counted at the last check. */
  readonly #admitted = new WeakMap<object, (Incarnation | undefined)[]>();

  /**
   * The successor rule (docs/design.md section 5, "Successors"): a core that counted
   * incarnation X of a peer and now counts a newer one Y dropped X's requests, so X's lease
   * has lapsed by then if X's process still runs (a twin, a frozen one). Checked on the rule
   * itself, not only on its outcome: a premature join may free no lock that is held just
   * then, yet it is the double holder's first half. A core that never counted X (a peer that
   * restarted meanwhile) drops nothing and is not checked.
   */
  #checkSuccessors(p: SimPeerProcess, session: ProtocolReader): void {
    const machine = session.machine;
    let seen = this.#admitted.get(session);
    if (seen === undefined) this.#admitted.set(session, (seen = []));
    for (const host of this.#hosts) {
      if (host.peer === p.proc.peer || this.#learnerIn(session, host.peer)) continue;
      const now = machine.incarnation(host.peer);
      const before = seen[host.peer];
      seen[host.peer] = now;
      if (before === undefined || now === undefined || compareIncarnation(now, before) <= 0) continue;
      // Evicted here: the eviction check judged its first applier (later ones may find it
      // leased again through peers that had not heard of it, which grants nothing).
      if (session.isEvicted(host.peer, before)) continue;
      for (const q of host.procs) {
        if (!q.proc.alive || q.lease.session === null || q.lease.session !== q.runtime.inspect.protocol) continue;
        if (compareIncarnation(q.lease.session.incarnation, before) !== 0) continue;
        const trueNow = q.proc.host.baseMs(this.#o.time.nowMs) - q.lease.offsetMs;
        const until = q.lease.session.leaseValidUntilMs();
        if (until > trueNow + limits.suspendDetectMs + 1) {
          this.#o.checker.evictedWithLease(this.#o.time.nowMs, `p${p.proc.peer} (process ${p.proc.id}) let a newer incarnation of p${host.peer} replace process ${q.proc.id} while its lease held for ${(until - trueNow).toFixed(1)} ms more`);
        }
      }
    }
  }

  /**
   * A hold is valid while its process lives and its lease has held without a gap since the
   * grant, measured on the host's true time base (what a suspend-aware clock reads).
   */
  #holdValid(h: Hold, nowMs: number): boolean {
    const host = this.#hosts[h.peer];
    const p = host?.procs.find((q) => q.proc.id === h.life);
    if (p === undefined || p.lease.session === null) return false;
    if (p.lease.sinceMs > h.grantedMs) return false;
    return p.lease.session.leaseValidUntilMs() > p.proc.host.baseMs(nowMs) - p.lease.offsetMs + 1e-6;
  }

  #host(peer: number): SimHost {
    const h = this.#hosts[peer];
    if (h === undefined) throw new Error(`no peer ${peer}`);
    return h;
  }
}
