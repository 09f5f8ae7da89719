/**
 * One incarnation of a peer: the I/O loop around its protocol (core/protocol.ts). It reads
 * (the mesh's links, the timers of leases and eviction, local clients' events), steps the
 * protocol, and carries out what it answers, in order: persist, send, tell local clients,
 * refuse incarnations, rejoin, log (docs/architecture.md, "One acquire, top to bottom").
 * When the incarnation must end (the majority evicted it, a link overflowed, or it started
 * older than an incarnation of its id the others know), it asks the runtime to rejoin: the
 * runtime ends its holds and starts a new session with a new incarnation, whose clock starts
 * above everything this one used.
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
import type { MachineEvent } from '../core/machine.js';
import type { EchoPromise } from '../core/membership.js';
import { mergePackets, splitPacket } from '../core/messages.js';
import { PeerProtocol } from '../core/protocol.js';
import { isPayload } from '../core/protocol-io.js';
import type { ProtocolReader } from '../core/protocol.js';
import type { Payload, ProtocolOutput } from '../core/protocol-io.js';
import type { Incarnation } from '../core/types.js';
import type { AgreedView } from '../core/view.js';
import { clockCeiling, formatIncarnation } from '../core/types.js';
import type { Env, Timer } from '../env.js';
import { ErrorCode, isLockError } from '../errors.js';
import { limits } from '../limits.js';
import type { Logger } from '../log.js';
import type { ProtocolLevels } from '../transport/codec.js';
import { Mesh } from '../transport/mesh.js';
import type { LinksReader } from '../transport/mesh.js';
import type { Listener, Network, RawSocket } from '../transport/network.js';
import { LeaseClock } from './lease-clock.js';
import type { SessionHooks, SessionOptions } from './session-options.js';

export type { SessionHooks, SessionOptions, SessionWorld } from './session-options.js';

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

/** One incarnation: its protocol, its mesh of links, its lease clock and its timers. */
export class Session {
  readonly incarnation: Incarnation;
  /** What this peer holds equal with every other (src/cluster-shape.ts); its fingerprint is checked on every link. */
  readonly shape: ClusterShape;
  /** The protocol levels this binary speaks; the one this peer runs at now is `level()`. */
  readonly levels: ProtocolLevels;
  readonly #config: ClusterConfig;
  readonly #log: Logger;
  readonly #hooks: SessionHooks;
  readonly #env: Env;
  /** Leases, eviction and the mesh's watchdogs measure time with this (it counts suspends). */
  readonly #clock: LeaseClock;
  readonly #protocol: PeerProtocol;
  readonly #mesh: Mesh<Payload>;
  readonly #timers: Timer[] = [];
  /** The other peers' incarnations, shared by the protocol and the mesh; it grows with the view. */
  readonly #incarnations: IncarnationBook;
  /** Each member's id by ordinal (gaps: members removed), as the protocol names them. */
  readonly #ids: string[] = [];
  #closed = false;

  constructor(opts: SessionOptions, hooks: SessionHooks) {
    this.#config = opts.config;
    this.#log = opts.logger.child({ component: 'session' });
    this.#hooks = hooks;
    this.#env = opts.world.env;
    this.#clock = new LeaseClock(this.#env);
    this.incarnation = { startMs: Math.max(this.#env.wallMs(), opts.startFloorMs), nonce: this.#env.randomInt(2 ** 31) };
    let protocol: PeerProtocol | null = null;
    // The other peers' incarnations, admitted, evicted and refused (src/core/incarnations.ts):
    // one book, shared by the protocol, which evicts in it, and the mesh, which admits and refuses in it.
    const incarnations = new IncarnationBook(opts.view.nextOrdinal, () => clockCeiling(this.#env.wallMs(), protocol?.machine.clock ?? 0));
    this.#incarnations = incarnations;
    for (const m of opts.view.members) this.#ids[m.ordinal] = m.id;
    const changes = opts.acceptor === undefined ? {} : { view: opts.view, acceptor: opts.acceptor, speaks: opts.levels.newest };
    protocol = new PeerProtocol({
      self: opts.index, peerIds: this.#ids, ...changes, leaseMs: opts.config.leaseMs, evictMs: opts.config.evictMs, clockRateMargin,
      incarnation: this.incarnation, clockFloor: opts.clockFloor, nowMs: this.#now(), incarnations,
      promises: opts.promises, quietForMs: opts.quietForMs, joinsHeldForMs: opts.joinsHeldForMs, queueLog: opts.queueLog,
    });
    this.#protocol = protocol;
    if ((opts.quietForMs ?? 0) > 0) this.#log.warn({ quietForMs: opts.quietForMs }, 'a confirmation the previous process of this peer gave may still bind: echoing no heartbeat until it lapses');
    if ((opts.joinsHeldForMs ?? 0) > 0) this.#log.warn({ joinsHeldForMs: opts.joinsHeldForMs }, 'a heartbeat this peer echoed before may still vouch for a lease: no peer joins until it lapses');
    this.shape = clusterShapeOf({ ...opts.config, peers: opts.founders.map((id) => ({ id })) }, opts.protocolLevel);
    if (opts.lineage !== undefined) this.shape = { ...this.shape, lineage: opts.lineage };
    this.levels = opts.levels;
    this.#mesh = this.#createMesh(opts, incarnations);
  }

  #now(): number {
    return this.#clock.nowMs();
  }

  /**
   * The protocol level this peer runs at now: its agreed view's, which `lamport-lock level
   * raise` moves while the cluster runs (docs/reconfiguration.md P9), never below its shape's.
   */
  level(): number {
    return Math.max(this.shape.protocol, this.#protocol.machine.clusterView?.level ?? 0);
  }

  #createMesh(opts: SessionOptions, incarnations: IncarnationBook): Mesh<Payload> {
    const peers = opts.view.members.map((m) => ({ id: m.id, index: m.ordinal, ws: this.#wsOf(m) }));
    const self = peers.find((p) => p.index === opts.index);
    assert(self !== undefined, 'self is a member of the view');
    // The mesh stamps heartbeats and watches silence on the lease clock, so an echo's send
    // time and the lease it extends are on one clock that counts suspends. Every event that
    // enters this incarnation (a timer, a socket's) re-checks the lease first: a process
    // resumed after a pause or a suspend ends its holds before it does anything else.
    const guard = <A extends unknown[]>(fn: (...args: A) => void) => (...args: A): void => {
      this.#refreshLease();
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
    const p = this.#protocol;
    return new Mesh<Payload>(
      {
        cluster: opts.config.cluster, secret: opts.config.secret, shape: this.shape, levels: opts.levels, level: () => this.level(),
        self, peers: peers.filter((q) => q.index !== opts.index), acceptorId: opts.acceptorId,
        env, network: guardedNetwork(opts.world.network, guard), listener: guardedListener(opts.world.listener, guard), incarnation: this.incarnation,
        heartbeatMs: opts.config.heartbeatMs, isPayload, clock: () => p.machine.clock,
        logger: opts.logger.child({ component: 'mesh' }), linkUnackedBytesMax: opts.linkUnackedBytesMax,
        incarnations, onFailure: (reason) => this.#hooks.onLinkFailure(reason),
        mergePayloads: (a, b) => ('t' in a || 't' in b ? null : mergePackets(a, b)),
        // A core packet too large for a frame (a state transfer, a lease regained with many
        // requests pending) leaves in pieces; a membership message is small and never split.
        splitPayload: (q, parts) => ('t' in q ? null : splitPacket(q, parts)),
        frameBytesMax: opts.frameBytesMax,
      },
      {
        onPeerJoined: (peer, inc, clock, restarted) => this.#input(() => p.peerJoined(peer, inc, clock, restarted, this.#now())),
        onPayload: (from, inc, payload) => this.#input(() => p.payload(from, inc, payload, this.#now())),
        onHeartbeat: (from, inc, clock, sentAtMs) => this.#input(() => p.heartbeat(from, inc, clock, sentAtMs, this.#now())),
        onHeartbeatDue: (peer, allSent) => this.#input(() => p.heartbeatDue(peer, allSent)),
        onEcho: (peer, sentAtMs, rttMs) => {
          this.#hooks.onRtt(this.#protocol.peerId(peer), rttMs);
          this.#input(() => p.echo(peer, sentAtMs, this.#now()));
        },
        onConnection: (peer, connected) => this.#log.info({ remote: this.#protocol.peerId(peer), connected }, connected ? 'link up' : 'link down'),
        onRefused: (peer, reason, known, knownEvicted) => this.#input(() => p.refused(peer, reason, known, knownEvicted, this.#now())),
        onAcceptorId: (peer, aid) => {
          const trusted = this.#hooks.onAcceptorId(peer, aid);
          if (!trusted) {
            this.#log.error({ remote: p.peerId(peer), acceptorId: aid },
              `peer ${p.peerId(peer)} runs on another data dir than the one it voted with before (lost or replaced): its votes on changes of the members count for nothing. Remove it and add it again as a new member (docs/operations.md, "Changing the members")`);
          }
          p.acceptorTrusted(peer, trusted);
        },
      },
    );
  }

  /** Starts the mesh and the timers of leases and eviction. */
  start(): void {
    this.#mesh.start();
    this.#timers.push(this.#env.every(this.#config.heartbeatMs, () => {
      this.#refreshLease();
      this.#input(() => this.#protocol.tick(this.#now()));
    }));
    this.#refreshLease();
    this.#log.info({ incarnation: formatIncarnation(this.incarnation), clock: this.#protocol.machine.clock }, 'incarnation started');
  }

  /** Feeds one local event (a client's acquire, release or meta) to the protocol, after re-checking the lease. */
  step(event: MachineEvent): void {
    this.#input(() => this.#protocol.local(event, this.#now()));
  }

  /** Re-checks the lease now (the runtime does before each client call). */
  checkLease(): void {
    this.#refreshLease();
  }

  #refreshLease(): void {
    this.#input(() => this.#protocol.checkLease(this.#now()));
  }

  /**
   * Inputs that came while the outputs of another were carried out: a local effect's callback
   * may step again (a client that releases inside its grant callback). They run after it, in
   * order, once all of its outputs are out: an input never runs inside another, so its packets,
   * stamped with a later clock, leave after the earlier input's (timestamps from one peer
   * arrive in order), and every callback sees the protocol between inputs.
   */
  readonly #deferred: (() => readonly ProtocolOutput[])[] = [];
  #running = false;

  #input(input: () => readonly ProtocolOutput[]): void {
    if (this.#closed) return;
    if (this.#running) {
      this.#deferred.push(input);
      return;
    }
    this.#running = true;
    try {
      this.#carryOut(input());
      for (let next = this.#deferred.shift(); next !== undefined; next = this.#deferred.shift()) {
        if (!this.#closed) this.#carryOut(next());
      }
    } finally {
      this.#running = false;
      this.#deferred.length = 0;
    }
  }

  /** Carries out one input's outputs, in order (the lease timer first: the lapse may have moved). */
  #carryOut(outputs: readonly ProtocolOutput[]): void {
    this.#armLeaseTimer(this.#now());
    for (const o of outputs) {
      if (this.#closed) return;
      this.#carryOutOne(o);
    }
  }

  #carryOutOne(o: ProtocolOutput): void {
    switch (o.type) {
      case 'send':
        if (o.promise && !this.#hooks.onPromise()) return;
        if ('t' in o.payload) this.#log.debug({ remote: this.#protocol.peerId(o.to), t: o.payload.t, about: this.#protocol.peerId(o.payload.peer), incarnation: formatIncarnation(o.payload.inc) }, 'membership message');
        this.#send(o.to, o.payload, o.lazy);
        return;
      case 'echo':
        // An echo leaves only once the bound on disk covers what it vouches for (runtime/bounds.ts).
        if (this.#hooks.onEchoing()) this.#mesh.echo(o.to, o.inc, o.sentAtMs);
        return;
      case 'heartbeat':
        this.#mesh.heartbeat(o.to, o.clock);
        return;
      case 'sent':
        this.#hooks.onSent(o.messages);
        return;
      case 'local':
        this.#hooks.onEffect(o.effect);
        return;
      case 'clock':
        this.#hooks.onClock(o.clock);
        return;
      case 'changed':
        this.#hooks.onChanged();
        return;
      case 'refuse':
        this.#mesh.refuseIncarnation(o.peer, o.inc);
        return;
      case 'refuse_ahead':
        this.#log.error({
          code: ErrorCode.ClockAhead, remote: this.#protocol.peerId(o.peer), incarnation: formatIncarnation(o.inc), clock: o.clock, wallMs: this.#env.wallMs(), ownClock: this.#protocol.machine.clock,
        },
          `peer ${this.#protocol.peerId(o.peer)} sent clock ${o.clock}, more than ${limits.clockAheadMsMax / 86_400_000} days ahead of this host's wall clock and clock: refusing that incarnation (set that host's wall clock right; if it is right, move its clock.json away and restart it)`);
        this.#mesh.refuseAhead(o.peer, o.inc);
        return;
      case 'rejoin':
        this.#hooks.onRejoin(o.reason, o.startFloorMs);
        return;
      case 'log':
        this.#log[o.level](o.fields, o.msg);
        return;
      case 'view':
        if (!this.#hooks.onView(o.view)) {
          this.#storageFailed();
          return;
        }
        this.#followView(o.view);
        this.#mesh.dropBelow(this.level());
        return;
      case 'acceptor':
        if (!this.#hooks.onAcceptor(o.state)) this.#storageFailed();
        return;
    }
  }

  /**
   * Where this host dials `m`: at the address its own config file gives for that id (a host
   * behind NAT or a proxy is reached at another address from each host), else at the view's.
   */
  #wsOf(m: { readonly id: string; readonly ws: string }): string {
    return this.#config.peers.find((p) => p.id === m.id)?.ws ?? m.ws;
  }

  /** The links follow the view applied: a member added is linked to (docs/reconfiguration.md P5), a member retired no more. */
  #followView(view: AgreedView): void {
    this.#incarnations.grow(view.nextOrdinal);
    const members = new Set(view.members.map((m) => m.ordinal));
    for (const peer of this.#mesh.linked()) if (!members.has(peer)) this.#mesh.removePeer(peer);
    for (const m of view.members) {
      this.#ids[m.ordinal] = m.id;
      this.#mesh.addPeer({ id: m.id, index: m.ordinal, ws: this.#wsOf(m) });
    }
  }

  /**
   * A view or an acceptor state could not be written: what depends on it must not leave
   * (rule P2: on disk before it is sent). The rest of this step is dropped and the incarnation
   * ends; the next starts from the disk, which never held it.
   */
  #storageFailed(): void {
    this.#log.error({ code: ErrorCode.Storage }, 'the agreed view or a promise about it could not be written: ending this incarnation before anything that depends on it leaves');
    this.close();
    this.#env.soon(() => this.#hooks.onRejoin('storage', this.incarnation.startMs + 1));
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
   * or the membership tick, within heartbeat_ms.
   */
  #armLeaseTimer(nowMs: number): void {
    const untilMs = this.#protocol.leaseValidUntilMs();
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
   * Sends on a link. A link whose resend buffer is full cannot take the message, and
   * dropping it would break exactly-once delivery, so this incarnation ends instead.
   */
  #send(to: number, payload: Payload, lazy: boolean): void {
    try {
      this.#mesh.send(to, payload, lazy);
    } catch (err) {
      if (!isLockError(err)) throw err;
      this.#log.error({ remote: this.#protocol.peerId(to), code: err.code }, `${err.message}: ending this incarnation rather than losing a message`);
      this.#env.soon(() => this.#hooks.onRejoin('link_overflow', this.incarnation.startMs + 1));
    }
  }

  /**
   * What views, metrics and the simulator's checker read of this incarnation: its protocol's
   * queries (src/runtime/inspector.ts reads them, through nothing else).
   */
  get protocol(): ProtocolReader {
    return this.#protocol;
  }

  /** What they read of its links: status, counters, refusals, the fingerprint checked on every link. */
  get links(): LinksReader {
    return this.#mesh;
  }

  /** Now on the lease clock (it counts suspends): the clock of the lease and the links' times. */
  nowMs(): number {
    return this.#now();
  }

  /**
   * What the next incarnation of this process inherits: the confirmation promises that still
   * bind (Membership.promises) and what is left of the quiet the process began with
   * (SessionOptions.quietForMs: it binds the process, not the incarnation).
   */
  handover(): { readonly promises: EchoPromise[]; readonly quietForMs: number } {
    const now = this.#now();
    return { promises: this.#protocol.promises(now), quietForMs: this.#protocol.quietLeftMs(now) };
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
