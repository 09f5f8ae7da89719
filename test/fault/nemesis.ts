/**
 * The nemesis of a fault run: one fault at a time, drawn from a seeded PRNG, each healed
 * after a while, with a quiet gap between faults. Every change of a peer or a link is
 * reported to the FaultWindows, so the checker knows which holds were guaranteed.
 *
 * Faults (docs/design.md section 5 and issue 5):
 * - kill: kill -9 of one peer, restarted after 1-6 s (before or after its eviction);
 * - pause: SIGSTOP of one peer for longer than evict_ms, then SIGCONT;
 * - partition: a random 2|3 split, links across it blocked (cut, new connections refused)
 *   or stalled (half-open: nothing forwarded, nothing closed);
 * - bridge: one peer sees both sides of a 2|2 split, the two sides do not see each other;
 * - stall: 1-4 random ordered links stalled, both ways or one way only;
 * - one-way: 1-2 peers cannot send (their outgoing links blocked) but still receive;
 * - link-kill: the connections of 1-6 random links cut, some mid-frame (they reconnect);
 * - wipe: kill -9 of one peer, its data dir deleted (a lost disk, a fresh VM), restarted
 *   after 2-3 evict_ms (what the README asks of a lost data dir);
 * - twin: a second process started with a live peer's id (twin-peer.ts) for 1-4 lease_ms,
 *   then killed (issue 12, defect 1: today the others drop the old process's holds when the
 *   twin handshakes, while the old one still holds its lease; the checker flags it).
 */
import { rmSync } from 'node:fs';
import type { LocalCluster } from '../../src/tools/local-cluster.js';
import type { Prng } from '../support/prng.js';
import { delay } from '../support/wait.js';
import type { FaultWindows } from './fault-windows.js';
import { TwinPeer } from './twin-peer.js';

/** The kinds of fault the nemesis draws from. */
export const faultKinds = ['kill', 'pause', 'partition', 'bridge', 'stall', 'one-way', 'link-kill', 'wipe', 'twin'] as const;

/** One kind of fault. */
export type FaultKind = (typeof faultKinds)[number];

/** Relative weights of the fault kinds. */
const weights: Readonly<Record<FaultKind, number>> = { kill: 2, pause: 2, partition: 3, bridge: 2, stall: 2, 'one-way': 2, 'link-kill': 2, wipe: 1, twin: 2 };

/** Timings the nemesis scales its fault durations by. */
export interface NemesisTimings {
  readonly leaseMs: number;
  readonly evictMs: number;
}

/** A line of the nemesis log, with its time on the test's clock. */
export interface NemesisEvent {
  readonly at: number;
  readonly what: string;
}

/** Draws, injects and heals faults on a LocalCluster started with `linkProxies`. */
export class Nemesis {
  /** Faults injected, by kind. */
  readonly counts: Record<FaultKind, number> = { kill: 0, pause: 0, partition: 0, bridge: 0, stall: 0, 'one-way': 0, 'link-kill': 0, wipe: 0, twin: 0 };
  readonly events: NemesisEvent[] = [];
  /** Peers that did not answer /readyz within the bound after a restart (liveness notes). */
  readonly slowRestarts: string[] = [];
  readonly #cluster: LocalCluster;
  readonly #windows: FaultWindows;
  readonly #rng: Prng;
  readonly #timings: NemesisTimings;
  readonly #now: () => number;
  readonly #ids: readonly string[];
  readonly #log: (line: string) => void;
  readonly #kinds: readonly FaultKind[];
  readonly #twins = new Set<TwinPeer>();

  /** `kinds` narrows the faults drawn (all by default). */
  constructor(opts: {
    cluster: LocalCluster; windows: FaultWindows; rng: Prng; timings: NemesisTimings; now: () => number; log: (line: string) => void; kinds?: readonly FaultKind[];
  }) {
    this.#kinds = opts.kinds ?? faultKinds;
    this.#cluster = opts.cluster;
    this.#windows = opts.windows;
    this.#rng = opts.rng;
    this.#timings = opts.timings;
    this.#now = opts.now;
    this.#log = opts.log;
    this.#ids = opts.cluster.peers.map((p) => p.id);
  }

  /** Total faults injected. */
  get total(): number {
    return Object.values(this.counts).reduce((a, b) => a + b, 0);
  }

  #note(what: string): void {
    this.events.push({ at: this.#now(), what });
    this.#log(`nemesis ${(this.#now() / 1000).toFixed(1)}s: ${what}`);
  }

  #draw(): FaultKind {
    const total = this.#kinds.reduce((s, k) => s + weights[k], 0);
    let x = this.#rng.float() * total;
    for (const k of this.#kinds) {
      x -= weights[k];
      if (x < 0) return k;
    }
    return this.#kinds[this.#kinds.length - 1] ?? 'link-kill';
  }

  /** Injects faults one after another until `untilMs` (test clock), then heals everything. */
  async run(untilMs: number): Promise<void> {
    while (this.#now() < untilMs) {
      const kind = this.#draw();
      this.counts[kind]++;
      await this.#inject(kind);
      await delay(this.#rng.int(500, 2000));
    }
    await this.healAll();
  }

  async #inject(kind: FaultKind): Promise<void> {
    switch (kind) {
      case 'kill':
        return this.#kill();
      case 'pause':
        return this.#pause();
      case 'partition':
        return this.#partition();
      case 'bridge':
        return this.#bridge();
      case 'stall':
        return this.#stall();
      case 'one-way':
        return this.#oneWay();
      case 'link-kill':
        return this.#linkKill();
      case 'wipe':
        return this.#kill(true);
      case 'twin':
        return this.#twin();
    }
  }

  /**
   * kill -9, then a restart after 1 s to 2 evict_ms; with `wipe` the data dir deleted, and the
   * restart after 2 to 3 evict_ms (README: a peer that lost its data dir stays down 2 x
   * evict_ms, until the promises and echoes of its last process can bind no longer).
   */
  async #kill(wipe = false): Promise<void> {
    const id = this.#rng.pick(this.#ids);
    const evictMs = this.#timings.evictMs;
    const downMs = wipe ? this.#rng.int(2 * evictMs, 3 * evictMs) : this.#rng.int(1000, 2 * evictMs);
    this.#note(`kill -9 ${id}${wipe ? ', data dir deleted,' : ''} for ${downMs} ms`);
    this.#windows.setPeer(id, 'down');
    await this.#cluster.stopPeer(id, 'SIGKILL');
    if (wipe) rmSync(this.#cluster.peer(id).dataDir, { recursive: true, force: true });
    await delay(downMs);
    this.#restart(id);
    await this.#waitReady(id);
  }

  /** A second process with a live peer's id, killed after 1-4 lease_ms. */
  async #twin(): Promise<void> {
    const id = this.#rng.pick(this.#ids);
    const liveMs = this.#rng.int(this.#timings.leaseMs, 4 * this.#timings.leaseMs);
    this.#note(`twin of ${id} started beside it for ${liveMs} ms`);
    this.#windows.setPeer(id, 'twinned');
    const twin = await TwinPeer.start(this.#cluster, id);
    this.#twins.add(twin);
    await delay(liveMs);
    await twin.stop();
    this.#twins.delete(twin);
    this.#windows.setPeer(id, 'up');
    this.#note(`twin of ${id} killed`);
    await this.#waitReady(id);
  }

  /** Kills any twin still running (a run that failed midway must not leave one behind). */
  async dispose(): Promise<void> {
    await Promise.all([...this.#twins].map((t) => t.stop()));
    this.#twins.clear();
  }

  #restart(id: string): void {
    this.#cluster.startPeer(id);
    this.#windows.setPeer(id, 'up');
    this.#note(`restarted ${id}`);
  }

  async #waitReady(id: string): Promise<void> {
    const boundMs = 4 * this.#timings.evictMs;
    try {
      await this.#cluster.waitReady(boundMs, [id]);
    } catch {
      this.slowRestarts.push(`${id} at ${(this.#now() / 1000).toFixed(1)}s`);
      this.#note(`${id} not ready within ${boundMs} ms of its restart`);
    }
  }

  async #pause(): Promise<void> {
    const id = this.#rng.pick(this.#ids);
    const pauseMs = this.#timings.evictMs + this.#rng.int(500, this.#timings.evictMs);
    this.#note(`SIGSTOP ${id} for ${pauseMs} ms`);
    this.#windows.setPeer(id, 'paused');
    this.#cluster.signal(id, 'SIGSTOP');
    await delay(pauseMs);
    this.#cluster.signal(id, 'SIGCONT');
    this.#windows.setPeer(id, 'up');
    this.#note(`SIGCONT ${id}`);
  }

  /** Breaks the link from -> to: blocked (clean cut) or stalled (half-open), maybe one way. */
  #breakLink(from: string, to: string, how: 'block' | 'stall' | 'stall-to' | 'stall-from'): void {
    const proxy = this.#cluster.link(from, to);
    if (how === 'block') proxy.block();
    else if (how === 'stall') proxy.stall();
    else proxy.stallOneWay(how === 'stall-to' ? 'toTarget' : 'fromTarget');
    this.#windows.setLink(from, to, false);
  }

  /** Resumes every link that is not open. */
  #healLinks(): void {
    for (const [from, to, proxy] of this.#cluster.links()) {
      if (proxy.state === 'open') continue;
      proxy.resume();
      this.#windows.setLink(from, to, true);
    }
  }

  /** Cuts every link between the two sides, both directions, for a while. */
  async #split(sideA: readonly string[], sideB: readonly string[], holdMs: number): Promise<void> {
    const how = this.#rng.float() < 0.5 ? 'block' : 'stall';
    for (const a of sideA) {
      for (const b of sideB) {
        this.#breakLink(a, b, how);
        this.#breakLink(b, a, how);
      }
    }
    this.#note(`${how} links between [${sideA.join(',')}] and [${sideB.join(',')}] for ${holdMs} ms`);
    await delay(holdMs);
    this.#healLinks();
    this.#note('healed links');
  }

  async #partition(): Promise<void> {
    const order = this.#rng.shuffle(this.#ids);
    const cut = Math.floor(order.length / 2);
    await this.#split(order.slice(0, cut), order.slice(cut), this.#rng.int(this.#timings.leaseMs, 2 * this.#timings.evictMs));
  }

  async #bridge(): Promise<void> {
    const [bridge, ...rest] = this.#rng.shuffle(this.#ids);
    const half = Math.floor(rest.length / 2);
    this.#note(`bridge ${bridge ?? '?'}`);
    await this.#split(rest.slice(0, half), rest.slice(half), this.#rng.int(this.#timings.leaseMs, 2 * this.#timings.evictMs));
  }

  #randomLink(): [string, string] {
    const from = this.#rng.pick(this.#ids);
    const to = this.#rng.pick(this.#ids.filter((x) => x !== from));
    return [from, to];
  }

  async #stall(): Promise<void> {
    const n = this.#rng.int(1, 4);
    const parts: string[] = [];
    for (let i = 0; i < n; i++) {
      const [from, to] = this.#randomLink();
      const how = this.#rng.pick(['stall', 'stall-to', 'stall-from'] as const);
      this.#breakLink(from, to, how);
      parts.push(`${from}->${to} ${how}`);
    }
    const holdMs = this.#rng.int(this.#timings.leaseMs, 2 * this.#timings.evictMs);
    this.#note(`stalled ${parts.join(', ')} for ${holdMs} ms`);
    await delay(holdMs);
    this.#healLinks();
    this.#note('healed links');
  }

  async #oneWay(): Promise<void> {
    const mute = this.#rng.shuffle(this.#ids).slice(0, this.#rng.int(1, 2));
    for (const from of mute) for (const to of this.#ids) if (to !== from) this.#breakLink(from, to, 'block');
    const holdMs = this.#rng.int(this.#timings.leaseMs, 2 * this.#timings.evictMs);
    this.#note(`[${mute.join(',')}] cannot send (outgoing links blocked, incoming open) for ${holdMs} ms`);
    await delay(holdMs);
    this.#healLinks();
    this.#note('healed links');
  }

  async #linkKill(): Promise<void> {
    const n = this.#rng.int(1, 6);
    const parts: string[] = [];
    for (let i = 0; i < n; i++) {
      const [from, to] = this.#randomLink();
      const proxy = this.#cluster.link(from, to);
      if (this.#rng.float() < 0.5) proxy.killMidChunk();
      else proxy.killAll();
      parts.push(`${from}->${to}`);
    }
    this.#note(`cut connections of ${parts.join(', ')}`);
    await delay(this.#rng.int(200, 1000));
  }

  /** Heals everything: links resumed, paused peers continued, dead peers restarted. */
  async healAll(): Promise<void> {
    this.#healLinks();
    for (const p of this.#cluster.peers) {
      if (p.proc === null) this.#restart(p.id);
      else {
        this.#cluster.signal(p.id, 'SIGCONT');
        this.#windows.setPeer(p.id, 'up');
      }
    }
    this.#note('healed everything');
  }
}
