/**
 * The session's own gates, on real sessions linked through the simulator's sockets
 * (test/sim/sockets.ts: the bytes the production codec encodes, over a FIFO wire) and driven
 * by one ManualEnv: nothing moves until a test advances virtual time, so every assertion is
 * about an exact moment. Each session runs in a SimProcess, whose timers and socket events
 * die with it, so a crash here is a kill -9, not a polite close.
 *
 * What the sessions send is read off their sockets with the production decoder, so "nothing
 * that acks left" and "no echo left" are checked on the wire, and their effect on the other
 * peer (its lease, its sync) is checked too.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { ClusterConfig } from '../../src/config.js';
import type { Incarnation, RequestSpec } from '../../src/core/types.js';
import { limits } from '../../src/limits.js';
import { silentLogger } from '../../src/log.js';
import { Session } from '../../src/runtime/session.js';
import { firstView } from '../../src/core/view.js';
import type { LocalEffect } from '../../src/core/protocol-io.js';
import type { SessionHooks, SessionOptions } from '../../src/runtime/session.js';
import { decodeFrame, protocolLevels } from '../../src/transport/codec.js';
import type { Frame } from '../../src/transport/codec.js';
import type { Listener, Network, RawSocket } from '../../src/transport/network.js';
import { ManualEnv } from '../support/manual-env.js';
import { Prng } from '../support/prng.js';
import { HostClock, SimProcess } from '../sim/host.js';
import type { SimTime } from '../sim/host.js';
import { Wire } from '../sim/network.js';
import { SimNetworks } from '../sim/sockets.js';

const heartbeatMs = 100;
const leaseMs = 1000;
const evictMs = 3000;

const spec: RequestSpec = { mode: 'exclusive', limit: 1, permits: 1, owner: 'test', meta: null, requestedAtMs: 0 };

/** One frame a session handed to its socket, decoded as the receiver will decode it. */
interface SentFrame {
  readonly atMs: number;
  readonly to: number;
  readonly frame: Frame<unknown>;
}

/** The hooks' answers a test can change, and what the session told them. */
interface Hooks {
  echoing: boolean;
  promising: boolean;
  echoingAsked: number;
  promiseAsked: number;
  /** Peers whose echo came back, in order (SessionHooks.onRtt). */
  readonly echoesFrom: string[];
  readonly rejoins: string[];
  readonly effects: LocalEffect[];
  /** Runs inside onEffect, after the effect is recorded: what a client's callback would do. */
  during?: (effect: LocalEffect) => void;
}

interface Peer {
  readonly session: Session;
  readonly proc: SimProcess;
  readonly hooks: Hooks;
  /** Every frame this peer's session sent, on any of its sockets. */
  readonly sent: SentFrame[];
}

interface World {
  readonly env: ManualEnv;
  readonly net: SimNetworks;
  /** The sessions started so far, first incarnations first. */
  readonly peers: Peer[];
  /** Starts a new process and session for peer `index` (a restart when one ran before). */
  spawn(index: number, opts?: PeerOptions): Peer;
}

type PeerOptions = Partial<Pick<SessionOptions, 'quietForMs' | 'joinsHeldForMs' | 'clockFloor'>>;

/** The peer index a simulated address or remote names: ws://p1:1 or p1 -> 1. */
/** Milliseconds the session's lease still holds (0 when it does not). */
function leaseValidForMs(session: Session): number {
  return Math.max(0, Math.round(session.protocol.leaseValidUntilMs() - session.nowMs()));
}

/** The ids of peers by index, as the inspector names them. */
function ids(session: Session, peers: readonly number[]): string[] {
  return peers.map((p) => session.protocol.peerId(p));
}

function peerIndexOf(address: string): number {
  const m = /p(\d+)/.exec(address);
  if (m === null) throw new Error(`unexpected address ${address}`);
  return Number(m[1]);
}

const anyPayload = (v: unknown): v is unknown => v !== undefined;

/** A socket that records what is sent on it and passes everything through unchanged. */
function recording(sock: RawSocket, to: number, env: ManualEnv, sent: SentFrame[]): RawSocket {
  return {
    get isOpen() {
      return sock.isOpen;
    },
    handle: (h) => sock.handle(h),
    send: (data) => {
      sent.push({ atMs: env.monoMs(), to, frame: decodeFrame(data, anyPayload) });
      sock.send(data);
    },
    close: (code, reason) => sock.close(code, reason),
    terminate: () => sock.terminate(),
  };
}

function recordingWorld(inner: { network: Network; listener: Listener }, env: ManualEnv, sent: SentFrame[]): { network: Network; listener: Listener } {
  const { network, listener } = inner;
  return {
    network: { listen: (host, port) => network.listen(host, port), dial: (url) => recording(network.dial(url), peerIndexOf(url), env, sent) },
    listener: {
      port: listener.port,
      accept: (fn) => listener.accept(fn === null ? null : (sock, remote) => fn(recording(sock, peerIndexOf(remote), env, sent), remote)),
      close: () => listener.close(),
    },
  };
}

function hooksOf(h: Hooks): SessionHooks {
  return {
    onEffect: (effect) => {
      h.effects.push(effect);
      h.during?.(effect);
    },
    onRejoin: (reason) => void h.rejoins.push(reason),
    onChanged: () => undefined,
    onSent: () => undefined,
    onLinkFailure: () => undefined, onRtt: (peer) => void h.echoesFrom.push(peer),
    onClock: () => undefined,
    onView: () => true,
    onAcceptor: () => true,
    onAcceptorId: () => true,
    onPromise: () => {
      h.promiseAsked++;
      return h.promising;
    },
    onEchoing: () => {
      h.echoingAsked++;
      return h.echoing;
    },
  };
}

/**
 * `opts.length` peers at 100 / 1000 / 3000 ms, equal clocks, 1 ms links, all started at
 * virtual time 0. The simulator's processes and kernel run on the ManualEnv's timers.
 */
function startWorld(opts: readonly PeerOptions[], timing: { leaseMs?: number } = {}): World {
  const env = new ManualEnv({ seed: 7 });
  const rng = new Prng(7);
  const time: SimTime = {
    get nowMs() {
      return env.monoMs();
    },
  };
  const later = (atMs: number, fn: () => void): void => void env.after(Math.max(0, atMs - env.monoMs()), fn);
  const wire = new Wire({ peers: opts.length, faults: { reorder: false, delayMs: () => 1 }, breakChance: 0 });
  const net = new SimNetworks({ wire, rng: rng.fork(), time, kernel: later });
  const config: ClusterConfig = {
    cluster: 'session-test', secret: 'test-secret',
    peers: opts.map((_, i) => ({ id: `p${i}`, ws: `ws://p${i}:1`, http: '127.0.0.1:0' })),
    heartbeatMs, leaseMs: timing.leaseMs ?? leaseMs, evictMs, tls: undefined,
  };
  const peers: Peer[] = [];
  const spawn = (index: number, o: PeerOptions = {}): Peer => {
    const proc = new SimProcess({
      id: peers.length + 1, peer: index, host: new HostClock({ rate: 1, offsetMs: 0, skewMs: 0 }), time, rng: rng.fork(),
      schedule: (atMs, p, task) => later(atMs, () => p.run(task)),
    });
    const sent: SentFrame[] = [];
    const hooks: Hooks = { echoing: true, promising: true, echoingAsked: 0, promiseAsked: 0, echoesFrom: [], rejoins: [], effects: [] };
    const { network, listener } = recordingWorld(net.networkOf(proc), env, sent);
    const session = new Session({ config, index, view: firstView(config.peers, protocolLevels.newest), founders: config.peers.map((p) => p.id), protocolLevel: protocolLevels.newest, levels: protocolLevels, clockFloor: 1, startFloorMs: 0, logger: silentLogger(), world: { env: proc.env, network, listener }, ...o }, hooksOf(hooks));
    session.start();
    const peer = { session, proc, hooks, sent };
    peers.push(peer);
    return peer;
  };
  opts.forEach((o, index) => spawn(index, o));
  return { env, net, peers, spawn };
}

let running: World | null = null;

afterEach(() => {
  for (const p of running?.peers ?? []) p.session.close();
  running = null;
});

function world(opts: readonly PeerOptions[], timing: { leaseMs?: number } = {}): World {
  running = startWorld(opts, timing);
  return running;
}

function peerAt(peers: readonly Peer[], index: number): Peer {
  const p = peers[index];
  if (p === undefined) throw new Error(`no peer ${index}`);
  return p;
}

/** Kills `p`'s process (kill -9): its timers and sockets die with it. */
function crash(w: World, p: Peer): void {
  p.proc.kill();
  w.net.crashed(p.proc);
  p.session.close();
}

/** Moves virtual time to `atMs`. */
function advanceTo(env: ManualEnv, atMs: number): void {
  expect(atMs, 'time only moves forward').toBeGreaterThanOrEqual(env.monoMs());
  env.advance(atMs - env.monoMs());
}

function framesTo(p: Peer, to: number, t: Frame<unknown>['t']): SentFrame[] {
  return p.sent.filter((s) => s.to === to && s.frame.t === t);
}

/** Payloads of the data frames `p` sent to `to`. */
function payloadsTo(p: Peer, to: number): unknown[] {
  return p.sent.flatMap((s) => (s.to === to && s.frame.t === 'data' ? [...s.frame.payloads] : []));
}

/** Core packets ({c, m}) carry no `t`; membership messages do. */
function isCorePacket(payload: unknown): boolean {
  return typeof payload === 'object' && payload !== null && !('t' in payload);
}

function membershipOf(payload: unknown, t: string): boolean {
  return typeof payload === 'object' && payload !== null && 't' in payload && payload.t === t;
}

/** Heartbeats `p` sent to `to` that carry its clock, which counts as an ack (rule 3a). */
function clockedHeartbeatsTo(p: Peer, to: number): SentFrame[] {
  return framesTo(p, to, 'hb').filter((s) => s.frame.t === 'hb' && s.frame.clock !== undefined);
}

function linkedTo(p: Peer, to: number): Incarnation | null {
  const line = p.session.links.status().find((s) => s.peer === to);
  return line?.connected === true ? line.incarnation : null;
}

describe('Session: joins held after a restart (SessionOptions.joinsHeldForMs)', () => {
  it('keeps a peer whose handshake completed out of the core, and sends it nothing that acks, until the heartbeat tick after the hold', () => {
    // 450 is not a multiple of heartbeat_ms: the join waits for the tick at 500, which shows
    // it is the membership tick that lets it in, not the hold's end by itself.
    const { env, peers } = world([{ joinsHeldForMs: 450 }, {}]);
    const a = peerAt(peers, 0);
    const b = peerAt(peers, 1);
    expect(a.session.protocol.joinsHeldLeftMs(a.session.nowMs())).toBe(450);
    advanceTo(env, 200);
    expect(a.session.protocol.joinsHeldLeftMs(a.session.nowMs())).toBe(250);

    advanceTo(env, 449);
    expect(a.session.protocol.joinsHeldLeftMs(a.session.nowMs())).toBe(1);
    // The handshakes are done both ways: each mesh knows the other's incarnation, and b's core let a in.
    expect(linkedTo(a, 1)).toEqual(b.session.incarnation);
    expect(linkedTo(b, 0)).toEqual(a.session.incarnation);
    expect(b.session.protocol.machine.incarnation(0)).toEqual(a.session.incarnation);
    // a's core has not met b: b waits in the session.
    expect(a.session.protocol.machine.incarnation(1)).toBeUndefined();
    expect(ids(a.session, a.session.protocol.waiting())).toEqual(['p1']);
    // a heartbeats b (the link is live) but never with its clock, and sends it no core packet.
    expect(framesTo(a, 1, 'hb').length).toBeGreaterThanOrEqual(3);
    expect(clockedHeartbeatsTo(a, 1)).toEqual([]);
    expect(payloadsTo(a, 1).filter(isCorePacket)).toEqual([]);
    // So b, which needs a packet of a's after the handshake, cannot sync, nor can a.
    expect(b.session.protocol.machine.synced).toBe(false);
    expect(a.session.protocol.machine.synced).toBe(false);

    // The hold is over, but joins are released by the membership tick only.
    advanceTo(env, 499);
    expect(a.session.protocol.joinsHeldLeftMs(a.session.nowMs())).toBe(0);
    expect(a.session.protocol.machine.incarnation(1)).toBeUndefined();
    expect(ids(a.session, a.session.protocol.waiting())).toEqual(['p1']);

    advanceTo(env, 500);
    expect(a.session.protocol.machine.incarnation(1)).toEqual(b.session.incarnation);
    expect(ids(a.session, a.session.protocol.waiting())).toEqual([]);

    // Now a acks b: both sync.
    advanceTo(env, 1000);
    expect(payloadsTo(a, 1).filter(isCorePacket).length).toBeGreaterThan(0);
    expect(a.session.protocol.machine.synced).toBe(true);
    expect(b.session.protocol.machine.synced).toBe(true);
    expect([a, b].flatMap((p) => p.hooks.rejoins)).toEqual([]);
  });

  it('joins a peer at once when no hold was asked for', () => {
    const { env, peers } = world([{}, {}]);
    const a = peerAt(peers, 0);
    const b = peerAt(peers, 1);
    expect(a.session.protocol.joinsHeldLeftMs(a.session.nowMs())).toBe(0);
    advanceTo(env, 50);
    expect(a.session.protocol.machine.incarnation(1)).toEqual(b.session.incarnation);
    expect(ids(a.session, a.session.protocol.waiting())).toEqual([]);
    advanceTo(env, 300);
    expect(a.session.protocol.machine.synced).toBe(true);
    expect(b.session.protocol.machine.synced).toBe(true);
  });

  it('refuses a peer whose handshake clock is more than limits.clockAheadMsMax ahead, adopting nothing of it (issue 37)', () => {
    const { env, peers } = world([{}, { clockFloor: 2 ** 49 }]);
    const a = peerAt(peers, 0);
    const b = peerAt(peers, 1);
    advanceTo(env, 2000);
    expect(b.session.protocol.machine.clock).toBeGreaterThan(2 ** 49);
    expect(a.session.protocol.machine.incarnation(1)).toBeUndefined();
    expect(a.session.protocol.machine.clock).toBeLessThan(a.proc.env.wallMs() + limits.clockAheadMsMax);
    expect(a.session.protocol.machine.synced).toBe(false); // it waits for b, whose clock it refuses
  });
});

describe('Session: a successor waits for its predecessor\'s eviction (docs/design.md section 5, "Successors")', () => {
  it('keeps a restarted peer out of the core, sends it no ack and no core packet meant for its predecessor, and joins it in once the majority evicts the predecessor', () => {
    const w = world([{}, {}, {}]);
    const { env, peers } = w;
    const a = peerAt(peers, 0);
    const c = peerAt(peers, 2);
    advanceTo(env, 1000);
    expect(peers.every((p) => p.session.protocol.machine.synced)).toBe(true);
    // a holds a lock, so that its release later is a core packet for every peer of its view, c included.
    a.session.step({ type: 'acquire', ref: 1, parts: [{ lock: 'L', spec }], noWait: false });
    advanceTo(env, 1100);
    expect(a.hooks.effects).toContainEqual(expect.objectContaining({ type: 'granted', ref: 1, lock: 'L' }));

    const restartMs = env.monoMs();
    crash(w, c);
    const c2 = w.spawn(2, { clockFloor: c.session.protocol.machine.clock + 1 });
    advanceTo(env, 1300);
    // The successor's handshake is done, but a's core still counts the predecessor.
    expect(linkedTo(a, 2)).toEqual(c2.session.incarnation);
    expect(ids(a.session, a.session.protocol.waiting())).toEqual(['p2']);
    expect(a.session.protocol.machine.incarnation(2)).toEqual(c.session.incarnation);
    // a may ack in general (it synced with everyone): what keeps acks from the successor is that it waits.
    expect(a.session.protocol.machine.ackReady).toBe(true);
    const releaseMs = env.monoMs();
    a.session.step({ type: 'release', ref: 1 });
    advanceTo(env, 1500);
    // The release went to b as a core packet; the one for c's slot stayed here.
    expect(a.sent.filter((s) => s.to === 1 && s.atMs >= releaseMs && s.frame.t === 'data' && s.frame.payloads.some(isCorePacket)).length).toBeGreaterThan(0);
    const toSuccessor = a.sent.filter((s) => s.to === 2 && s.atMs > restartMs);
    expect(toSuccessor.filter((s) => s.frame.t === 'hb').length).toBeGreaterThanOrEqual(1);
    expect(toSuccessor.filter((s) => s.frame.t === 'hb' && s.frame.clock !== undefined)).toEqual([]);
    expect(toSuccessor.flatMap((s) => (s.frame.t === 'data' ? [...s.frame.payloads] : [])).filter(isCorePacket)).toEqual([]);
    expect(c2.session.protocol.machine.synced).toBe(false);

    // c went silent at the crash: past evict_ms a and b evict it, and c2 joins a's core.
    advanceTo(env, restartMs + evictMs + 3 * heartbeatMs);
    expect(a.session.protocol.isEvicted(2, c.session.incarnation)).toBe(true);
    expect(a.session.protocol.machine.incarnation(2)).toEqual(c2.session.incarnation);
    expect(ids(a.session, a.session.protocol.waiting())).toEqual([]);
    advanceTo(env, restartMs + evictMs + 10 * heartbeatMs);
    expect(a.session.protocol.machine.synced).toBe(true);
    expect(c2.session.protocol.machine.synced).toBe(true);
    expect(peers.flatMap((p) => p.hooks.rejoins)).toEqual([]);
  });
});

describe('Session: quiet after a restart (SessionOptions.quietForMs)', () => {
  it('echoes no heartbeat before the quiet ends, and echoes them after', () => {
    const { env, peers } = world([{ quietForMs: 450 }, {}]);
    const a = peerAt(peers, 0);
    const b = peerAt(peers, 1);
    expect(a.session.handover().quietForMs).toBe(450);
    advanceTo(env, 200);
    expect(a.session.handover().quietForMs).toBe(250);

    advanceTo(env, 449);
    expect(a.session.handover().quietForMs).toBe(1);
    // b heartbeats a, and a echoes none of them: b, which needs a's echo for its lease
    // (two peers: the majority is both), holds none.
    expect(framesTo(b, 0, 'hb').length).toBeGreaterThanOrEqual(3);
    expect(framesTo(a, 1, 'hbEcho')).toEqual([]);
    expect(b.hooks.echoesFrom).toEqual([]);
    expect(leaseValidForMs(b.session)).toBe(0);
    // b has no quiet: it echoes a from the start, so a holds a lease.
    expect(framesTo(b, 0, 'hbEcho').length).toBeGreaterThan(0);
    expect(leaseValidForMs(a.session)).toBeGreaterThan(0);

    advanceTo(env, 700);
    expect(a.session.handover().quietForMs).toBe(0);
    const echoes = framesTo(a, 1, 'hbEcho');
    expect(echoes.length).toBeGreaterThan(0);
    expect(Math.min(...echoes.map((e) => e.atMs))).toBeGreaterThanOrEqual(450);
    expect(b.hooks.echoesFrom).toContain('p0');
    expect(leaseValidForMs(b.session)).toBeGreaterThan(0);
  });
});

describe('Session: an echo leaves only once its bound is persisted (SessionHooks.onEchoing)', () => {
  it('keeps echoes back while onEchoing answers false, so the dialer lease is not renewed by us', () => {
    const { env, peers } = world([{}, {}]);
    const a = peerAt(peers, 0);
    const b = peerAt(peers, 1);
    a.hooks.echoing = false;

    advanceTo(env, 500);
    expect(framesTo(a, 1, 'hbEcho')).toEqual([]);
    expect(b.hooks.echoesFrom).toEqual([]);
    expect(leaseValidForMs(b.session)).toBe(0);
    // The hook is the last gate of an echo: being asked means the protocol let it out.
    expect(a.hooks.echoingAsked).toBeGreaterThanOrEqual(3);

    a.hooks.echoing = true;
    advanceTo(env, 700);
    expect(framesTo(a, 1, 'hbEcho').length).toBeGreaterThan(0);
    expect(b.hooks.echoesFrom).toContain('p0');
    expect(leaseValidForMs(b.session)).toBeGreaterThan(0);

    // Withheld again: the echoes stop, and b's lease lapses within lease_ms of the last one
    // it got (its lease runs from the send time of the heartbeat echoed last).
    a.hooks.echoing = false;
    const echoedBefore = framesTo(a, 1, 'hbEcho').length;
    advanceTo(env, 700 + leaseMs + heartbeatMs);
    expect(framesTo(a, 1, 'hbEcho').length).toBe(echoedBefore);
    expect(leaseValidForMs(b.session)).toBe(0);
    expect(ids(b.session, b.session.protocol.leaseSilentPeers(b.session.nowMs()))).toEqual(['p0']);
  });
});

describe('Session: a confirmation leaves only once its promise is persisted (SessionHooks.onPromise)', () => {
  it('sends no confirm while onPromise answers false, so a crashed peer is not evicted; sends it once the promise is kept', () => {
    const w = world([{}, {}, {}]);
    const { env, peers } = w;
    const a = peerAt(peers, 0);
    const b = peerAt(peers, 1);
    const c = peerAt(peers, 2);
    advanceTo(env, 1000);
    expect(peers.every((p) => p.session.protocol.machine.synced)).toBe(true);

    // c is killed: its timers and sockets die with its process.
    a.hooks.promising = false;
    b.hooks.promising = false;
    crash(w, c);

    // Past evict_ms of silence a and b suspect c on every tick, and each would confirm the
    // other's suspicion, but neither can persist the promise.
    advanceTo(env, 1000 + 2 * evictMs);
    expect(payloadsTo(a, 1).filter((m) => membershipOf(m, 'confirm'))).toEqual([]);
    expect(payloadsTo(b, 0).filter((m) => membershipOf(m, 'confirm'))).toEqual([]);
    expect(a.session.protocol.isEvicted(2, c.session.incarnation)).toBe(false);
    expect(b.session.protocol.isEvicted(2, c.session.incarnation)).toBe(false);
    // The suspicions did go both ways, and each confirmation was asked for its promise.
    expect(payloadsTo(a, 1).filter((m) => membershipOf(m, 'suspect')).length).toBeGreaterThan(0);
    expect(payloadsTo(b, 0).filter((m) => membershipOf(m, 'suspect')).length).toBeGreaterThan(0);
    expect(a.hooks.promiseAsked).toBeGreaterThan(0);
    expect(b.hooks.promiseAsked).toBeGreaterThan(0);

    // Once the promises can be written, the confirmations leave and the majority evicts c.
    a.hooks.promising = true;
    b.hooks.promising = true;
    advanceTo(env, 1000 + 2 * evictMs + 3 * heartbeatMs);
    expect(payloadsTo(a, 1).filter((m) => membershipOf(m, 'confirm')).length).toBeGreaterThan(0);
    expect(payloadsTo(b, 0).filter((m) => membershipOf(m, 'confirm')).length).toBeGreaterThan(0);
    expect(a.session.protocol.isEvicted(2, c.session.incarnation)).toBe(true);
    expect(b.session.protocol.isEvicted(2, c.session.incarnation)).toBe(true);
  });
});

describe('Session: one step at a time (issue 13: no re-entrant grant loop)', () => {
  it('runs an event stepped from inside an effect callback after the step that made the effect, and every later event in order', () => {
    const { env, peers } = world([{}, {}]);
    const a = peerAt(peers, 0);
    advanceTo(env, 1500);
    expect(a.session.protocol.machine.synced && a.session.protocol.machine.leaseValid).toBe(true);
    const seen: string[] = [];
    a.hooks.during = (effect) => {
      if (effect.type !== 'granted') return;
      seen.push(`granted ${effect.ref}`);
      if (effect.ref !== 1) return;
      // A client that releases inside its grant callback: the release waits for this step.
      a.session.step({ type: 'release', ref: 1 });
      seen.push(`release of 1 asked, holders now ${a.session.protocol.machine.stats().granted}`);
    };
    a.session.step({ type: 'acquire', ref: 1, parts: [{ lock: 'L', spec }], noWait: false });
    a.session.step({ type: 'acquire', ref: 2, parts: [{ lock: 'L', spec }], noWait: false });
    advanceTo(env, 1600);
    // 1 is granted once the other peer's ack arrives; its release runs after that step,
    // and grants 2 in its own step.
    expect(seen).toEqual(['granted 1', 'release of 1 asked, holders now 1', 'granted 2']);
    expect(a.session.protocol.machine.stats()).toMatchObject({ own: 1, granted: 1 });
  });
});

describe('Session: a release nobody waits for may wait for the next packet (docs/design.md "Batching")', () => {
  /** The core packets `p` sent to `to` that carry a message of type `t` for `lock`, and when. */
  function packetsWith(p: Peer, to: number, t: string, lock: string): { atMs: number; m: unknown[] }[] {
    return p.sent.flatMap((s) => (s.to === to && s.frame.t === 'data' ? s.frame.payloads.filter(isCorePacket).map((pk) => ({ atMs: s.atMs, m: (pk as { m: { t: string; lock: string }[] }).m })) : []))
      .filter((pk) => pk.m.some((msg) => (msg as { t: string; lock: string }).t === t && (msg as { lock: string }).lock === lock));
  }

  it('holds back a release of a lock with an empty queue until the next packet to that peer, which carries it first', () => {
    const { env, peers } = world([{}, {}]);
    const a = peerAt(peers, 0);
    advanceTo(env, 1500);
    expect(a.session.protocol.machine.synced && a.session.protocol.machine.leaseValid).toBe(true);
    a.session.step({ type: 'acquire', ref: 1, parts: [{ lock: 'L', spec }], noWait: false });
    advanceTo(env, 1510);
    expect(a.session.protocol.machine.stats()).toMatchObject({ granted: 1 });
    a.session.step({ type: 'release', ref: 1 });
    env.advance(0);
    expect(packetsWith(a, 1, 'rel', 'L')).toEqual([]);
    // The next request to that peer takes the release along, ahead of it, in one packet.
    a.session.step({ type: 'acquire', ref: 2, parts: [{ lock: 'M', spec }], noWait: false });
    env.advance(0);
    expect(packetsWith(a, 1, 'rel', 'L').map((pk) => [pk.atMs, pk.m.map((msg) => (msg as { t: string }).t)])).toEqual([[1510, ['rel', 'req']]]);
  });

  it('sends such a release on its own within limits.lazyPayloadDelayMs when nothing else goes to that peer', () => {
    const { env, peers } = world([{}, {}]);
    const a = peerAt(peers, 0);
    advanceTo(env, 1500);
    a.session.step({ type: 'acquire', ref: 1, parts: [{ lock: 'L', spec }], noWait: false });
    advanceTo(env, 1510);
    a.session.step({ type: 'release', ref: 1 });
    env.advance(0);
    expect(packetsWith(a, 1, 'rel', 'L')).toEqual([]);
    advanceTo(env, 1510 + limits.lazyPayloadDelayMs);
    const sent = packetsWith(a, 1, 'rel', 'L').map((pk) => pk.atMs);
    expect(sent).toHaveLength(1);
    expect(sent[0]).toBeGreaterThan(1510);
    advanceTo(env, 1510 + limits.lazyPayloadDelayMs + 1);
    expect(peerAt(peers, 1).session.protocol.machine.queueSize('L')).toBe(0);
  });

  it('sends a release at the end of its turn when a request of the other peer waits for that lock', () => {
    const { env, peers } = world([{}, {}]);
    const a = peerAt(peers, 0);
    const b = peerAt(peers, 1);
    advanceTo(env, 1500);
    a.session.step({ type: 'acquire', ref: 1, parts: [{ lock: 'L', spec }], noWait: false });
    advanceTo(env, 1510);
    b.session.step({ type: 'acquire', ref: 1, parts: [{ lock: 'L', spec }], noWait: false });
    advanceTo(env, 1520);
    expect(a.session.protocol.machine.queueSize('L')).toBe(2);
    a.session.step({ type: 'release', ref: 1 });
    env.advance(0);
    expect(packetsWith(a, 1, 'rel', 'L').map((pk) => pk.atMs)).toEqual([1520]);
  });
});

describe('Session: the lease timer (Session.#armLeaseTimer)', () => {
  it('ends a hold at the instant the lease lapses, with no event there to notice it', () => {
    // lease_ms not a multiple of heartbeat_ms: the lapse (a heartbeat's send + lease_ms) falls
    // 50 ms after a heartbeat tick, where no heartbeat, echo or membership tick is due.
    const { env, peers } = world([{}, {}], { leaseMs: 1050 });
    const a = peerAt(peers, 0);
    const b = peerAt(peers, 1);
    advanceTo(env, 500);
    b.session.step({ type: 'acquire', ref: 1, parts: [{ lock: 'L', spec }], noWait: false });
    advanceTo(env, 600);
    expect(b.hooks.effects.map((e) => e.type)).toEqual(['granted']);
    // a stops echoing: b's lease ends lease_ms after the send of the heartbeat echoed last.
    a.hooks.echoing = false;
    advanceTo(env, 650);
    const lapseAtMs = env.monoMs() + (b.session.protocol.leaseValidUntilMs() - b.session.nowMs());
    expect(lapseAtMs).toBeGreaterThan(env.monoMs() + heartbeatMs);
    advanceTo(env, Math.ceil(lapseAtMs) - 1);
    expect(b.hooks.effects.map((e) => e.type)).toEqual(['granted']);
    // Heartbeats, echoes and b's membership tick come every heartbeat_ms (100), none in this
    // millisecond: only a timer armed for the lapse ends the hold here.
    advanceTo(env, Math.ceil(lapseAtMs) + 1);
    expect(b.hooks.effects).toContainEqual(expect.objectContaining({ type: 'ended', ref: 1, reason: 'lease_lost' }));
  });
});
