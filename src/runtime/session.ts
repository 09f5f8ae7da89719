/**
 * One incarnation of a peer in the cluster: the protocol core, the mesh of links, the
 * lease and the eviction logic, and the timers that drive them (docs/design.md sections 4, 5).
 * When the incarnation must end (the majority evicted it, a link overflowed, or it started
 * older than an incarnation of its id the others know), the session asks the runtime to
 * rejoin: the runtime ends its holds and starts a new session with a new incarnation,
 * whose clock starts above everything this one used.
 *
 * Everything outside comes in through `SessionWorld`: the simulator runs this very class
 * with virtual clocks, timers and sockets.
 */
import { assert } from '../assert.js';
import type { ClusterShape } from '../cluster-shape.js';
import { clusterShapeOf } from '../cluster-shape.js';
import type { ClusterConfig } from '../config.js';
import { clockRateMargin } from '../config.js';
import { IncarnationBook } from '../core/incarnations.js';
import { Machine } from '../core/machine.js';
import type { Effect, MachineEvent } from '../core/machine.js';
import { Membership, isMembershipMessage } from '../core/membership.js';
import type { EchoPromise, MembershipEffect, MembershipMessage } from '../core/membership.js';
import type { Packet } from '../core/messages.js';
import type { QueueLog } from '../core/queue-log.js';
import { isPacket, mergePackets, splitPacket } from '../core/messages.js';
import type { Incarnation } from '../core/types.js';
import { clockCeiling, compareIncarnation, formatIncarnation } from '../core/types.js';
import type { Env, Timer } from '../env.js';
import { ErrorCode, LockError, isLockError } from '../errors.js';
import { limits } from '../limits.js';
import type { Logger } from '../log.js';
import { protocolVersion } from '../transport/codec.js';
import { Mesh } from '../transport/mesh.js';
import type { LinkRefusal } from '../transport/refusals.js';
import type { Listener, Network, RawSocket } from '../transport/network.js';
import type { PlantedFaults } from './faults.js';
import { LeaseClock } from './lease-clock.js';
import { LeaseTracker } from './lease.js';

/** What travels between the runtimes of two peers: core packets and membership messages. */
export type Payload = Packet | MembershipMessage;

function isPayload(v: unknown): v is Payload {
  return isPacket(v) || isMembershipMessage(v);
}

/** The highest clock, request timestamp or incarnation start in `payload` (issue 37: none may be too far ahead). */
function highestClockOf(payload: Payload): number {
  if ('t' in payload) return payload.inc.startMs;
  let max = payload.c;
  for (const m of payload.m) if (m.t === 'req' && m.ts > max) max = m.ts;
  return max;
}

/** The core effects the runtime handles itself (sends are the session's business). */
export type LocalEffect = Exclude<Effect, { type: 'send' }>;

/** Why an incarnation ends before its process does. */
export type RejoinReason = 'evicted' | 'link_overflow' | 'stale_incarnation';

/** How a session reports to its runtime. */
export interface SessionHooks {
  onEffect(effect: LocalEffect): void;
  /**
   * This incarnation cannot go on: end holds, start a new one. `startFloorMs`: the new
   * incarnation must start above this (the newer incarnation of our id the others know).
   */
  onRejoin(reason: RejoinReason, startFloorMs: number): void;
  /** Something a viewer may care about changed (queues, membership). */
  onChanged(): void;
  onSent(messages: number): void;
  onRtt(peer: string, rttMs: number): void;
  /** A link's socket failed or was refused, either way (lamport_link_refusals_total). */
  onLinkFailure(reason: string): void;
  /** The clock moved: persist the high-water mark. */
  onClock(clock: number): void;
  /**
   * A confirmation is about to leave: persist the promise it gives, so that a process
   * restarted after a crash keeps it. False when that failed: the confirmation stays here.
   */
  onPromise(): boolean;
  /**
   * A heartbeat echo is about to leave: persist how long it may vouch for the dialer's lease,
   * so that a process restarted after a crash lets no newcomer in before that. False when
   * that failed: the echo is not sent.
   */
  onEchoing(): boolean;
}

/** The world a session runs in: production's or the simulator's. */
export interface SessionWorld {
  readonly env: Env;
  readonly network: Network;
  /** The bound peer listener, shared by the successive sessions of one process. */
  readonly listener: Listener;
}

/** Construction parameters of a session. */
export interface SessionOptions {
  readonly config: ClusterConfig;
  readonly index: number;
  readonly clockFloor: number;
  /**
   * The incarnation starts at or above this, or at the wall clock if later. Its clock starts
   * at or above the incarnation's start, so that the high-water mark on disk, always above
   * the clock, orders the next process's incarnation after this one (docs/design.md
   * section 5, "Incarnations").
   */
  readonly startFloorMs: number;
  readonly logger: Logger;
  readonly world: SessionWorld;
  readonly faults?: PlantedFaults | undefined;
  /** Each link's resend buffer bound (PeerOptions.linkUnackedBytesMax). */
  readonly linkUnackedBytesMax?: number | undefined;
  /** Largest frame the links write (PeerOptions.frameBytesMax). */
  readonly frameBytesMax?: number | undefined;
  /** The previous incarnation's confirmation promises that still bind (after a rejoin). */
  readonly promises?: readonly EchoPromise[] | undefined;
  /**
   * After a restart: echo no heartbeat for this long (ms of this session's clock), since a
   * promise the previous process gave may still bind (its bound on disk, ClockStore.loadPromise).
   */
  readonly quietForMs?: number | undefined;
  /**
   * After a restart or a rejoin: join no peer into the core for this long (ms of this
   * session's clock), since a heartbeat the previous process or incarnation echoed may still
   * vouch for a lease we cannot know of (docs/design.md section 5, "Successors").
   */
  readonly joinsHeldForMs?: number | undefined;
  /** Where the machine tells the changes of its queues (the watches), if anywhere. */
  readonly queueLog?: QueueLog | undefined;
}

/** Wraps what runs a function: the guard runs first. */
type Guard = <A extends unknown[]>(fn: (...args: A) => void) => (...args: A) => void;

function guardedSocket(sock: RawSocket, guard: Guard): RawSocket {
  return {
    get isOpen() {
      return sock.isOpen;
    },
    handle: (h) => sock.handle({
      onOpen: guard(() => h.onOpen()),
      onMessage: guard((d: Uint8Array, b: boolean) => h.onMessage(d, b)),
      onError: guard((e: { code?: string | undefined; message: string }) => h.onError(e)),
      onClose: guard(() => h.onClose()),
    }),
    send: (data) => sock.send(data),
    close: (code, reason) => sock.close(code, reason),
    terminate: () => sock.terminate(),
  };
}

function guardedNetwork(net: Network, guard: Guard): Network {
  return { listen: (host, port) => net.listen(host, port), dial: (url) => guardedSocket(net.dial(url), guard) };
}

function guardedListener(l: Listener, guard: Guard): Listener {
  return {
    port: l.port,
    accept: (fn) => l.accept(fn === null ? null : (sock, remote) => guard(() => fn(guardedSocket(sock, guard), remote))()),
    close: () => l.close(),
  };
}

/** The shape with the fingerprint mutants' holes in it (the simulator's only); production's as it is. */
function plantShapeFaults(shape: ClusterShape, faults: PlantedFaults['runtime']): ClusterShape {
  const ordered = faults?.fingerprintIgnoresOrder === true ? { ...shape, peers: [...shape.peers].sort() } : shape;
  return faults?.fingerprintIgnoresTimings === true ? { ...ordered, heartbeatMs: 0, leaseMs: 0, evictMs: 0 } : ordered;
}

/** One incarnation: core + mesh + lease + membership. */
export class Session {
  readonly incarnation: Incarnation;
  /** What this peer holds equal with every other (src/cluster-shape.ts); its fingerprint is checked on every link. */
  readonly shape: ClusterShape;
  readonly #config: ClusterConfig;
  readonly #log: Logger;
  readonly #hooks: SessionHooks;
  readonly #env: Env;
  readonly #faults: PlantedFaults;
  /** Leases, eviction and the mesh's watchdogs measure time with this (it counts suspends). */
  readonly #clock: LeaseClock;
  readonly #machine: Machine;
  readonly #lease: LeaseTracker;
  readonly #membership: Membership;
  readonly #mesh: Mesh<Payload>;
  /**
   * The other peers' incarnations, admitted, evicted and refused (src/core/incarnations.ts,
   * whose comment lists every stage and who moves it): one book, shared by the membership,
   * which evicts in it, and the mesh, which admits and refuses in it.
   */
  readonly #incarnations: IncarnationBook;
  /**
   * The waiting stage (stage 3 of src/core/incarnations.ts): incarnations the mesh admitted
   * while their predecessor was not evicted wait here, out of the protocol, until the
   * majority evicts it (Membership.predecessorOf), or while joins are held. Their
   * core packets wait here (they send none that matter: they cannot sync before every peer
   * let them join), and nothing of ours that could count as an ack goes to them.
   */
  readonly #pending = new Map<number, { readonly inc: Incarnation; readonly clock: number; readonly restarted: boolean; readonly packets: Packet[] }>();
  readonly #timers: Timer[] = [];
  /**
   * Whether this incarnation ever synced with every peer: one that never did and is refused
   * as stale (its wall clock stepped back since its predecessor started) starts again above
   * the incarnation the refusal names; one that did is an old process a newer one replaced.
   */
  #everSynced = false;
  /**
   * A peer refused this incarnation as older than one of our id it knows, after it had
   * synced: a newer process with our id runs, or ran. This one is a zombie from then on: its
   * lease is not renewed (it lapses within lease_ms, and its holds end then), it echoes
   * nothing and decides no eviction, since the
   * leases it would judge were lent by that newer process's echoes, not its own (simulator
   * seed 152084: a superseded twin evicted, alone in a two-peer cluster, a peer whose lease
   * the newer twin had renewed). Set once, to what its clients are told from then on, new
   * requests and the waiters its fence ended alike (ERR_SUPERSEDED, naming the newer
   * incarnation when a refusal named it); null while it is not a zombie.
   */
  #supersededError: LockError | null = null;

  /** ERR_SUPERSEDED once this incarnation is a zombie (`#supersededError`), else null. */
  get supersededError(): LockError | null {
    return this.#supersededError;
  }
  /** A zombie that was evicted: it does not rejoin (`#onRefused`). */
  #stayingOut = false;
  #closed = false;

  constructor(opts: SessionOptions, hooks: SessionHooks) {
    this.#config = opts.config;
    this.#log = opts.logger.child({ component: 'session' });
    this.#hooks = hooks;
    this.#env = opts.world.env;
    this.#faults = opts.faults ?? {};
    this.#clock = new LeaseClock(this.#env, this.#faults.runtime?.noSuspendDetect !== true, this.#faults.runtime?.ignoreBootClock !== true);
    this.incarnation = { startMs: Math.max(this.#env.wallMs(), opts.startFloorMs), nonce: this.#env.randomInt(2 ** 31) };
    const peerCount = opts.config.peers.length;
    const self = opts.index;
    this.#machine = new Machine({ self, peerCount, clockFloor: Math.max(opts.clockFloor, this.incarnation.startMs), faults: this.#faults.machine, queueLog: opts.queueLog });
    this.#lease = new LeaseTracker({ self, peerCount, leaseMs: opts.config.leaseMs });
    this.#incarnations = new IncarnationBook(peerCount, () => clockCeiling(this.#env.wallMs(), this.#machine.clock));
    this.#membership = new Membership({
      self, peerCount, evictMs: opts.config.evictMs, nowMs: this.#now(), clockRateMargin, faults: this.#faults.membership,
      promises: opts.promises, incarnations: this.#incarnations,
    });
    this.#quietUntilMs = this.#now() + (opts.quietForMs ?? 0);
    if ((opts.quietForMs ?? 0) > 0) this.#log.warn({ quietForMs: opts.quietForMs }, 'a confirmation the previous process of this peer gave may still bind: echoing no heartbeat until it lapses');
    this.#joinsHeldUntilMs = this.#now() + (opts.joinsHeldForMs ?? 0);
    if ((opts.joinsHeldForMs ?? 0) > 0) this.#log.warn({ joinsHeldForMs: opts.joinsHeldForMs }, 'a heartbeat this peer echoed before may still vouch for a lease: no peer joins until it lapses');
    this.shape = plantShapeFaults(clusterShapeOf(opts.config, protocolVersion), this.#faults.runtime);
    this.#mesh = this.#createMesh(opts);
  }

  /** Echoes wait until then (a promise of the previous process may bind, SessionOptions.quietForMs). */
  readonly #quietUntilMs: number;
  /**
   * No peer joins the core before then (SessionOptions.joinsHeldForMs): a heartbeat our
   * previous process echoed may still vouch for a lease of an incarnation we never met, and
   * letting its successor in would count us in the successor's ack quorum (simulator seed
   * 903454 --net link). Joins wait in `#pending` meanwhile.
   */
  readonly #joinsHeldUntilMs: number;

  #now(): number {
    return this.#clock.nowMs();
  }

  #createMesh(opts: SessionOptions): Mesh<Payload> {
    const peers = opts.config.peers.map((p, index) => ({ id: p.id, index, ws: p.ws }));
    const self = peers[opts.index];
    assert(self !== undefined, 'self is configured');
    // The mesh stamps heartbeats and watches silence on the lease clock, so an echo's send
    // time and the lease it extends are on one clock that counts suspends. Every event that
    // enters this incarnation (a timer, a socket's) re-checks the lease first: a process
    // resumed after a pause or a suspend ends its holds before it does anything else.
    const guard = <A extends unknown[]>(fn: (...args: A) => void) => (...args: A): void => {
      if (this.#faults.runtime?.noLeaseCheckBeforeEvent !== true) this.#refreshLease();
      fn(...args);
    };
    const base = this.#env;
    const env: Env = {
      ...base,
      monoMs: () => this.#now(),
      after: (ms, fn) => base.after(ms, guard(fn)),
      every: (ms, fn) => base.every(ms, guard(fn)),
      soon: (fn) => base.soon(guard(fn)),
    };
    const network = guardedNetwork(opts.world.network, guard);
    const listener = guardedListener(opts.world.listener, guard);
    return new Mesh<Payload>(
      {
        cluster: opts.config.cluster, secret: opts.config.secret, shape: this.shape, self, peers: peers.filter((p) => p.index !== opts.index),
        env, network, listener, incarnation: this.incarnation,
        heartbeatMs: opts.config.heartbeatMs, isPayload, clock: () => this.#machine.clock, heartbeatClock: (peer, allSent) => this.#heartbeatClock(peer, allSent),
        mayEcho: (peer, inc) => this.#votes() && this.#now() >= this.#quietUntilMs && this.#membership.mayEcho(peer, inc, this.#now()) && this.#hooks.onEchoing(),
        logger: opts.logger.child({ component: 'mesh' }), faults: this.#faults.mesh, linkUnackedBytesMax: opts.linkUnackedBytesMax,
        incarnations: this.#incarnations, onFailure: (reason) => this.#hooks.onLinkFailure(reason),
        mergePayloads: (a, b) => ('t' in a || 't' in b ? null : mergePackets(a, b)),
        // A core packet too large for a frame (a state transfer, a lease regained with many
        // requests pending) leaves in pieces; a membership message is small and never split.
        splitPayload: (p, parts) => ('t' in p ? null : splitPacket(p, parts, this.#faults.runtime?.piecesAck === true)),
        frameBytesMax: opts.frameBytesMax,
      },
      {
        onPeerJoined: (peer, inc, clock, restarted) => this.#onPeerJoined(peer, inc, clock, restarted),
        onPayload: (from, inc, payload) => this.#onPayload(from, inc, payload),
        onHeartbeat: (from, inc, clock) => {
          if (this.#refusedAhead(from, inc, clock ?? 0)) return;
          this.#membership.heard(from, inc, this.#now());
          if (clock !== undefined && !this.#pending.has(from)) this.step({ type: 'packet', from, inc, packet: { c: clock, m: [] } });
        },
        onEcho: (peer, sentAtMs, rttMs) => this.#onEcho(peer, sentAtMs, rttMs),
        onConnection: (peer, connected) => this.#log.info({ remote: this.peerId(peer), connected }, connected ? 'link up' : 'link down'),
        onRefused: (peer, reason, known, knownEvicted) => this.#onRefused(peer, reason, known, knownEvicted),
      },
    );
  }

  /** Starts the mesh and the timers of leases and eviction. */
  start(): void {
    this.#mesh.start();
    this.#timers.push(this.#env.every(this.#config.heartbeatMs, () => {
      if (this.#faults.runtime?.noLeaseCheckBeforeEvent !== true) this.#refreshLease();
      if (this.#actsOnMembership() || this.#faults.runtime?.zombieSuspects === true) this.#applyMembership(this.#membership.tick(this.#now()));
      this.#releaseHeldJoins();
    }));
    this.#refreshLease();
    this.#log.info({ incarnation: formatIncarnation(this.incarnation), clock: this.#machine.clock }, 'incarnation started');
  }

  /** The id of the peer at `index`. */
  peerId(index: number): string {
    return this.#config.peers[index]?.id ?? `#${index}`;
  }

  #onPeerJoined(peer: number, inc: Incarnation, clock: number, restarted: boolean): void {
    this.#membership.heard(peer, inc, this.#now());
    const predecessor = this.#membership.predecessorOf(peer, inc);
    if (predecessor !== null) {
      this.#log.warn({ remote: this.peerId(peer), incarnation: formatIncarnation(inc), predecessor: formatIncarnation(predecessor) },
        'a new incarnation of this peer waits until the majority evicts its predecessor, which may still hold a lease');
      this.#pending.set(peer, { inc, clock, restarted: false, packets: [] });
      this.step({ type: 'superseded', peer });
      return;
    }
    if (this.#joinsHeld()) {
      this.#log.info({ remote: this.peerId(peer), incarnation: formatIncarnation(inc) }, 'peer waits: no peer joins while a heartbeat this peer echoed before may vouch for a lease');
      this.#pending.set(peer, { inc, clock, restarted, packets: [] });
      return;
    }
    this.#join(peer, inc, clock, restarted);
  }

  /** Whether joins are held still (SessionOptions.joinsHeldForMs). */
  #joinsHeld(): boolean {
    return this.#now() < this.#joinsHeldUntilMs;
  }

  /** Once joins are no longer held: every waiting peer with no live predecessor joins, then its packets. */
  #releaseHeldJoins(): void {
    if (this.#pending.size === 0 || this.#joinsHeld()) return;
    for (const [peer, waiting] of [...this.#pending]) {
      if (this.#membership.predecessorOf(peer, waiting.inc) !== null || this.#pending.get(peer) !== waiting) continue;
      this.#pending.delete(peer);
      this.#join(peer, waiting.inc, waiting.clock, waiting.restarted);
      for (const packet of waiting.packets) this.#onPayload(peer, waiting.inc, packet);
    }
  }

  #join(peer: number, inc: Incarnation, clock: number, restarted: boolean): void {
    this.#log.info({ remote: this.peerId(peer), incarnation: formatIncarnation(inc), clock, restarted }, restarted ? 'peer restarted: dropping its old requests' : 'peer joined');
    if (restarted) this.#lease.forget(peer);
    this.step({ type: 'joined', peer, inc, clock });
    this.#applyMembership(this.#membership.evictions(peer));
  }

  #onPayload(from: number, inc: Incarnation, payload: Payload): void {
    if (this.#refusedAhead(from, inc, highestClockOf(payload))) return;
    this.#membership.heard(from, inc, this.#now());
    if ('t' in payload) {
      // A zombie counts no confirmation (it decides no eviction); notices it still applies.
      if (payload.t === 'confirm' && !this.#actsOnMembership() && this.#faults.runtime?.zombieCountsConfirmations !== true) return;
      // Nor does it confirm a suspicion: the newer process of our id may have echoed the
      // suspect, and one id would vote on both sides of its eviction (simulator seed 300379).
      if (payload.t === 'suspect' && !this.#actsOnMembership() && this.#faults.runtime?.zombieConfirms !== true) return;
      this.#applyMembership(this.#membership.onMessage(from, payload, this.#now()));
      return;
    }
    const pending = this.#pending.get(from);
    if (pending !== undefined) {
      if (pending.packets.length < limits.frameMessagesMax) pending.packets.push(payload);
      else this.#log.warn({ remote: this.peerId(from) }, 'dropping a packet of a waiting incarnation: too many');
      return;
    }
    this.step({ type: 'packet', from, inc, packet: payload });
  }

  /**
   * True when `inc` of `from` is refused for a clock too far ahead of ours (issue 37): now, for
   * `clock` (the highest clock or incarnation start of what it sent), or before. Nothing of it
   * is adopted; its links are cut and it is refused from then on, as a partition would (the
   * majority evicts it if it stays out), and the log says so once per incarnation.
   */
  #refusedAhead(from: number, inc: Incarnation, clock: number): boolean {
    if (this.#incarnations.isAheadRefused(from, inc)) return true;
    if (!this.#incarnations.isAhead(clock)) return false;
    this.#log.error({ code: ErrorCode.ClockAhead, remote: this.peerId(from), incarnation: formatIncarnation(inc), clock, wallMs: this.#env.wallMs(), ownClock: this.#machine.clock },
      `peer ${this.peerId(from)} sent clock ${clock}, more than ${limits.clockAheadMsMax / 86_400_000} days ahead of this host's wall clock and clock: refusing that incarnation (set that host's wall clock right; if it is right, move its clock.json away and restart it)`);
    this.#mesh.refuseAhead(from, inc);
    return true;
  }

  #onEcho(peer: number, sentAtMs: number, rttMs: number): void {
    // A zombie's lease is not renewed: it lapses on its own, and its holds end with it. Not
    // earlier: a lease this peer reported (GET /v1/cluster) must hold as long as it said,
    // or the others could grant a lock its holder was told is safe for that long (the fault
    // run, seed 9104: a twin started, the old process ended its holds at once and the others
    // granted while its last lease sample still held).
    if (this.#actsOnMembership() || this.#faults.runtime?.zombieRenewsLease === true) this.#lease.onEcho(peer, this.#faults.runtime?.leaseFromArrival === true ? this.#now() : sentAtMs);
    this.#hooks.onRtt(this.peerId(peer), rttMs);
    this.#refreshLease();
  }

  #onRefused(peer: number, reason: string, known: Incarnation | undefined, knownEvicted: boolean): void {
    if (this.#closed) return;
    if (known !== undefined && this.#incarnations.isAhead(known.startMs)) {
      // A refuser that names an incarnation of ours too far ahead would make us start above it.
      this.#log.error({ code: ErrorCode.ClockAhead, remote: this.peerId(peer), known: formatIncarnation(known) }, `peer ${this.peerId(peer)} names an incarnation of this peer too far ahead of this host's wall clock: not starting above it (check that host's wall clock)`);
      return;
    }
    const newerLives = known !== undefined && compareIncarnation(known, this.incarnation) > 0 && !knownEvicted;
    if (reason === 'evicted' && newerLives && this.#everSynced && this.#faults.runtime?.zombieRejoins !== true) {
      // A newer process of our id lives (a zombie, told so or not before): we stay out while
      // it does. Rejoining above it would make that one the zombie, and while it did not know
      // yet, our confirmations and its echoes voted for one id on both sides of an eviction
      // (simulator seed 107362). Once a refuser has evicted that one too (it died, or was
      // stopped), the refusal says so and we rejoin. Not an incarnation that never synced: it
      // started below the others' knowledge (a wall clock stepped back, seed 301430), granted
      // nothing, and rejoins above it, as for a stale refusal below.
      if (!this.#stayingOut) this.#log.error({ remote: this.peerId(peer), known: formatIncarnation(known) }, 'this incarnation was evicted and a newer process with this peer id runs: not rejoining while it lives (stop one of them)');
      this.#stayingOut = true;
      this.#becomeZombie(peer, known);
    } else if (reason === 'evicted') {
      this.#log.warn({ remote: this.peerId(peer) }, 'this incarnation was evicted by the majority: rejoining as a new one');
      // The new incarnation starts above the newest one of our id the refuser knows: one
      // that starts below an evicted one is refused again.
      this.#hooks.onRejoin('evicted', Math.max(this.incarnation.startMs, known?.startMs ?? 0) + 1);
    } else if (reason === 'stale_incarnation' && known !== undefined && !this.#everSynced) {
      // We started older than an incarnation of our id that the others know: the wall clock
      // stepped back since it started, or another process runs with our id. Start again above
      // it; a live one is then superseded and evicted before we are admitted.
      this.#log.warn({ remote: this.peerId(peer), known: formatIncarnation(known) }, 'this incarnation started older than one of our id the others know: starting above it');
      this.#hooks.onRejoin('stale_incarnation', known.startMs + 1);
    } else if (reason === 'stale_incarnation' && this.#everSynced) {
      this.#becomeZombie(peer, known);
    } else if (reason === 'predecessor_live') {
      this.#log.info({ remote: this.peerId(peer) }, 'waiting until the previous incarnation of this peer is evicted (up to evict_ms)');
    }
  }

  /** A newer process of our id runs or ran: from now on this incarnation is a zombie (`#supersededError`). */
  #becomeZombie(peer: number, known: Incarnation | undefined): void {
    if (this.#supersededError !== null) return;
    this.#supersededError = new LockError(
      ErrorCode.Superseded,
      `another process runs or ran with this peer id (${known === undefined ? 'a newer incarnation' : `incarnation ${formatIncarnation(known)}`}, newer than this one): this one grants nothing from now on; stop it, and ask the peer that runs`,
      known === undefined ? {} : { newerIncarnation: formatIncarnation(known) },
    );
    this.#log.error({ remote: this.peerId(peer), known: known === undefined ? null : formatIncarnation(known) },
      'a newer incarnation of this peer id is known: this one grants and evicts nothing from now on (another process runs or ran with this id: stop this one)');
    // Its waiters end and it grants nothing more: an old request of it granted now would
    // sort below grants the others made meanwhile (the seed runs, once its lease came to
    // lapse on its own). Its holds end when the lease does. (Until the twentieth session this
    // read `if (this.#actsOnMembership())`, false here in production: only the mutant fenced,
    // and a zombie's waiters waited for their timeout or its lease: scenario zombieAnswers.)
    if (!this.#actsOnMembership() && this.#faults.runtime?.zombieKeepsWaiters !== true) this.step({ type: 'fence' });
    this.#refreshLease();
  }

  #applyMembership(effects: readonly MembershipEffect[]): void {
    for (const e of effects) {
      if (e.type === 'send') {
        // A confirmation is a promise: on disk before it leaves, or it does not leave.
        if (e.msg.t === 'confirm' && !this.#hooks.onPromise()) continue;
        this.#log.debug({ remote: this.peerId(e.to), t: e.msg.t, about: this.peerId(e.msg.peer), incarnation: formatIncarnation(e.msg.inc) }, 'membership message');
        this.#send(e.to, e.msg);
        continue;
      }
      this.#log.warn({ remote: this.peerId(e.peer), incarnation: formatIncarnation(e.inc) }, 'peer evicted by a majority: dropping its requests');
      // Membership recorded the eviction in the book already (stage 5); the links follow now (stage 6).
      this.#mesh.refuseIncarnation(e.peer, e.inc);
      const pending = this.#pending.get(e.peer);
      // The waiting one itself was evicted (it died too): it rejoins as a newer one, if ever.
      // We met it (or an older one it replaced while joins were held), and the core drops it
      // from its view as it would a met one (simulator seeds 2 and 1001579).
      const metHeld = pending !== undefined && compareIncarnation(pending.inc, e.inc) <= 0;
      if (pending !== undefined && compareIncarnation(pending.inc, e.inc) <= 0) this.#pending.delete(e.peer);
      // It joins once the membership tracks no live predecessor of it: the eviction of an
      // incarnation older than that predecessor (a notice passed on) frees nothing (simulator
      // seed 404471 --net link: a notice for p2's first incarnation let its third join while
      // the second, never evicted, was still the one tracked).
      // While joins are held, it waits on (#releaseHeldJoins), and the eviction is a step of
      // its own: no peer has joined the core yet, so no request of ours can go without it.
      const freed = pending !== undefined && compareIncarnation(pending.inc, e.inc) > 0 && !this.#joinsHeld() &&
        (this.#membership.predecessorOf(e.peer, pending.inc) === null || this.#faults.runtime?.joinOnOlderEviction === true);
      if (pending !== undefined && freed) {
        // Its predecessor's lease has lapsed: the waiting incarnation joins, replacing it in
        // one step (the core drops the predecessor's requests as for a restart), then its
        // packets. The eviction first would take the peer out of the view between the two
        // steps, and a request of ours could be granted then with no ack from it (simulator
        // seed 501435 --net link, before a waiting successor's packets were kept back). Since
        // then that grant is harmless: the successor requests nothing until our state transfer
        // has synced it, so nothing of it sorts before that request. The order stays, as
        // the plain one; its mutant was retired as equivalent (docs/design.md section 3).
        this.#pending.delete(e.peer);
        this.#join(e.peer, pending.inc, pending.clock, false);
        this.step({ type: 'evicted', peer: e.peer, inc: e.inc, last: e.last });
        for (const packet of pending.packets) this.#onPayload(e.peer, pending.inc, packet);
        continue;
      }
      this.#lease.forget(e.peer);
      this.step({ type: 'evicted', peer: e.peer, inc: e.inc, last: e.last, metHeld });
      this.#hooks.onChanged();
    }
  }

  /**
   * Rule 3a for heartbeats (docs/design.md section 3): a heartbeat carries our clock, which
   * the peer takes as an ack, only when every earlier data frame for it is on the socket
   * ahead of it (by FIFO the peer then has them all), when that peer's incarnation has
   * joined our core, and when our core may ack at all.
   */
  #heartbeatClock(peer: number, allSent: boolean): number | undefined {
    const ordered = allSent || this.#faults.runtime?.heartbeatClockWhilePending === true;
    return ordered && !this.#pending.has(peer) && this.#machine.ackReady ? this.#machine.clock : undefined;
  }

  /** Re-checks the lease now (the runtime does before each client call). */
  checkLease(): void {
    this.#refreshLease();
  }

  /** Tells the core when the lease changed. */
  #refreshLease(): void {
    if (this.#closed) return;
    const nowMs = this.#now();
    const valid = this.#lease.valid(nowMs);
    this.#armLeaseTimer(nowMs);
    if (valid === this.#leaseToldValid()) return;
    const level = this.#machine.synced ? 'warn' : 'info';
    this.#log[level]({ valid }, valid ? 'lease held: a majority echoes our heartbeats' : 'no lease: a majority has not echoed a heartbeat within lease_ms; local holds end, nothing is granted');
    this.#stepCore({ type: 'lease', valid });
  }

  /** The timer that checks the lease when it would lapse (`#armLeaseTimer`), and the lease-clock instant it is armed for. */
  #leaseTimer: Timer | null = null;
  #leaseTimerAtMs = Number.NEGATIVE_INFINITY;

  /**
   * Keeps a timer armed no later than the instant the lease lapses, so a lapse with no event
   * around it is noticed on time (docs/design.md section 5, "Leases"). One timer, re-armed only
   * when it fires or when the lapse moves earlier (a peer forgotten): as echoes push the lapse
   * later, the armed timer fires early, finds the lease held, and moves to the new lapse, about
   * once per lease_ms. Timers do not count a suspend of the host, the lease clock does: after a
   * resume the lapse is noticed by the first event (the others' heartbeats wait in the sockets)
   * or the membership tick, within heartbeat_ms, where the old 50 ms lease tick took up to 50 ms.
   */
  #armLeaseTimer(nowMs: number): void {
    const untilMs = this.#lease.validUntil();
    if (this.#leaseTimer !== null && this.#leaseTimerAtMs <= untilMs) return;
    // No lease to lapse (it is back with an echo, which re-checks), or one that cannot (a single peer).
    if (!Number.isFinite(untilMs) || untilMs <= nowMs) return;
    this.#env.clear(this.#leaseTimer);
    this.#leaseTimerAtMs = untilMs;
    this.#leaseTimer = this.#env.after(Math.max(1, Math.ceil(untilMs - nowMs)), () => {
      this.#leaseTimer = null;
      this.#refreshLease();
    });
  }

  /**
   * Whether this incarnation still echoes heartbeats: not once it is a zombie. Its echoes
   * would vouch for its id's vote in a lease while the newer process's confirmations vote
   * for that id in an eviction: a peer that only the zombie still reached was evicted with
   * its lease held (simulator seed 109815: a twin met first by a restarted peer).
   */
  #votes(): boolean {
    return this.#actsOnMembership() || this.#faults.runtime?.zombieEchoes === true;
  }

  /** False once this incarnation is known to be superseded (a zombie), unless the act-while-superseded mutant. */
  #actsOnMembership(): boolean {
    return this.#supersededError === null || this.#faults.runtime?.actWhileSuperseded === true;
  }

  /** Feeds one event to the core, after re-checking the lease, and executes its effects. */
  step(event: MachineEvent): void {
    if (this.#closed) return;
    // The lease is re-checked before every event, not only on its timer: a process resumed
    // after a pause must not grant on a stale lease before the timer fires.
    if (this.#faults.runtime?.noLeaseCheckBeforeEvent !== true) this.#refreshLease();
    this.#stepCore(event);
  }

  /**
   * Events that came while a step ran: a local effect's callback may step the core again (a
   * client that releases inside its grant callback). They run after it, in order, once all
   * of its effects are out: a step never runs inside another, so its packets, stamped with
   * a later clock, leave after the earlier step's (timestamps from one peer arrive in
   * order), and every callback sees the core between steps.
   */
  readonly #deferred: MachineEvent[] = [];
  #stepping = false;

  /** The lease validity the core has, or will have once the deferred events ran. */
  #leaseToldValid(): boolean {
    for (let i = this.#deferred.length - 1; i >= 0; i--) {
      const e = this.#deferred[i];
      if (e?.type === 'lease') return e.valid;
    }
    return this.#machine.leaseValid;
  }

  #stepCore(event: MachineEvent): void {
    if (this.#stepping) {
      this.#deferred.push(event);
      return;
    }
    this.#stepping = true;
    try {
      this.#runStep(event);
      for (let next = this.#deferred.shift(); next !== undefined; next = this.#deferred.shift()) {
        if (!this.#closed) this.#runStep(next);
      }
    } finally {
      this.#stepping = false;
      this.#deferred.length = 0;
    }
  }

  #runStep(event: MachineEvent): void {
    const effects = this.#machine.step(event);
    for (const effect of effects) {
      if (effect.type !== 'send') continue;
      this.#send(effect.to, effect.packet, this.#mayWait(effect.packet));
      this.#hooks.onSent(Math.max(1, effect.packet.m.length));
    }
    let local = false;
    for (const effect of effects) {
      if (effect.type === 'send') continue;
      local = true;
      this.#hooks.onEffect(effect);
    }
    this.#hooks.onClock(this.#machine.clock);
    if (!this.#everSynced && this.#machine.synced) this.#everSynced = true;
    // A packet of acks only changes no queue, unless it let a request of ours be granted (the
    // watches compare the queues at each change: docs/design.md section 6, "Watches").
    if (event.type !== 'packet' || event.packet.m.length > 0 || local) this.#hooks.onChanged();
  }

  /**
   * Sends on a link. A link whose resend buffer is full cannot take the message, and
   * dropping it would break exactly-once delivery, so this incarnation ends instead.
   */
  /**
   * A packet that may wait for the next one to its peer (docs/design.md "Batching"): only
   * releases, each of a lock whose queue here is now empty. Nobody waits for that lock as far
   * as we know; a request we do not know of yet reaches us before it can be granted, and our
   * answer to it (not lazy) carries the release along, ahead of it. The peers hear it a few
   * ms later at most, and usually in the frame of our next request, one wake-up instead of two.
   */
  #mayWait(packet: Packet): boolean {
    if (packet.m.length === 0) return false;
    for (const msg of packet.m) {
      if (msg.t !== 'rel' || this.#machine.queueSize(msg.lock) > 0) return false;
    }
    return true;
  }

  #send(to: number, payload: Payload, lazy = false): void {
    // Core packets for a peer whose new incarnation waits were meant for the predecessor,
    // which the mesh can no longer reach; the new one gets the state transfer when it joins.
    if (!('t' in payload) && this.#pending.has(to)) return;
    try {
      this.#mesh.send(to, payload, lazy);
    } catch (err) {
      if (!isLockError(err)) throw err;
      this.#log.error({ remote: this.peerId(to), code: err.code }, `${err.message}: ending this incarnation rather than losing a message`);
      this.#env.soon(() => this.#hooks.onRejoin('link_overflow', this.incarnation.startMs + 1));
    }
  }

  /** The protocol core, for read-only queries (views, explanations). */
  get machine(): Pick<Machine, 'clock' | 'synced' | 'ackReady' | 'leaseValid' | 'view' | 'lastTs' | 'incarnation' | 'queue' | 'queueSize' | 'head' | 'ownRef' | 'lockNames' | 'explain' | 'stats'> {
    return this.#machine;
  }

  /** The lease end on the lease clock (-Infinity when none): for the simulator's checker. */
  leaseValidUntilMs(): number {
    return this.#lease.validUntil();
  }

  /** Now on the lease clock (it counts suspends). */
  leaseNowMs(): number {
    return this.#now();
  }

  /** What is left of the quiet the process began with (SessionOptions.quietForMs), for the next incarnation. */
  quietLeftMs(): number {
    return Math.max(0, this.#quietUntilMs - this.#now());
  }

  /** What is left of the hold on joins this incarnation began with (SessionOptions.joinsHeldForMs). */
  joinsHeldLeftMs(): number {
    return Math.max(0, this.#joinsHeldUntilMs - this.#now());
  }

  /** The confirmation promises that still bind this incarnation, for the next one (Membership.promises). */
  promises(): EchoPromise[] {
    return this.#membership.promises(this.#now());
  }

  /** Whether `inc` of `peer` (or a newer incarnation) is evicted here: for the simulator's checker. */
  isEvicted(peer: number, inc: Incarnation): boolean {
    return this.#membership.isEvicted(peer, inc);
  }

  /** What this incarnation's membership decided on its own (Membership.decided): for the simulator's checker. */
  membershipDecided(): Readonly<Membership['decided']> {
    return { ...this.#membership.decided };
  }

  /** Milliseconds the lease still holds (0 when it does not). */
  leaseValidForMs(): number {
    return Math.max(0, Math.round(Math.min(this.#lease.validUntil() - this.#now(), 1e12)));
  }

  /** Ids of the peers whose heartbeat echoes no longer vouch for our lease. */
  leaseSilentPeers(): string[] {
    return this.#lease.silentPeers(this.#now()).map((p) => this.peerId(p));
  }

  /** Peers whose new incarnation waits here for its predecessor's eviction (or while joins are held). */
  waitingForPredecessor(): string[] {
    return [...this.#pending.keys()].map((p) => this.peerId(p));
  }

  /** How long `peer` has been silent here and when this peer suspects it (Membership.silence). */
  peerSilence(peer: number): ReturnType<Membership['silence']> {
    return this.#membership.silence(peer, this.#now());
  }

  /** Link status lines; their times are on the lease clock (`leaseNowMs`). */
  /** This peer's cluster fingerprint (src/cluster-shape.ts), checked on every link. */
  get fingerprint(): string {
    return this.#mesh.fingerprint;
  }

  /** The links refused either way of late (transport/refusals.ts). */
  linkRefusals(): LinkRefusal[] {
    return this.#mesh.refusals();
  }

  /** ERR_CONFIG_MISMATCH while a peer's configuration recently differed from this one's; else null. */
  configMismatch(): LockError | null {
    return this.#mesh.configMismatch();
  }

  meshStatus(): ReturnType<Mesh<Payload>['status']> {
    return this.#mesh.status();
  }

  /** Link counters. */
  meshStats(): ReturnType<Mesh<Payload>['stats']> {
    return this.#mesh.stats();
  }

  /** Waits (bounded) until every connected peer acknowledged what we sent, e.g. our releases. */
  async drain(boundMs: number): Promise<boolean> {
    const env = this.#env;
    const deadline = env.monoMs() + boundMs;
    const pause = (ms: number): Promise<void> => new Promise((resolve) => env.after(ms, resolve));
    this.#mesh.flushNow();
    await pause(0);
    while (env.monoMs() < deadline) {
      if (this.#mesh.status().every((s) => !s.connected || s.unackedBytes === 0)) return true;
      await pause(5);
    }
    return false;
  }

  /** Stops timers and links; events arriving afterwards are ignored. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const t of this.#timers) this.#env.clear(t);
    this.#env.clear(this.#leaseTimer);
    this.#leaseTimer = null;
    void this.#mesh.close();
  }
}
