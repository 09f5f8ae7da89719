/**
 * A hand-driven network of real cores for unit tests (the etcd-io/raft `network` habit):
 * effects are routed into per-pair FIFO queues, and a test delivers packets one at a time
 * or until the cluster is quiet, so each test states exactly the interleaving it means.
 */
import { Members } from '../../src/core/members.js';
import type { Effect, MachineEvent } from '../../src/core/machine.js';
import { Machine } from '../../src/core/machine.js';
import type { Packet } from '../../src/core/messages.js';
import { mergePackets } from '../../src/core/messages.js';
import type { Incarnation, Mode, RequestSpec } from '../../src/core/types.js';
import type { AgreedView } from '../../src/core/view.js';
import { membersOf } from '../../src/core/view.js';

/** A request spec with defaults: exclusive, one permit. */
export function spec(mode: Mode = 'exclusive', limit = 1, permits = 1): RequestSpec {
  return { mode, limit, permits, owner: 'test', meta: null, requestedAtMs: 1_735_000_000_000 };
}

/** Effects other than sends, as short strings: `granted 1`, `refused 2`, `full 3`, `ended 4 lease_lost`. */
export function outcomes(effects: readonly Effect[]): string[] {
  return effects.flatMap((f) => {
    if (f.type === 'granted') return [`granted ${f.ref}`];
    if (f.type === 'refused') return [`refused ${f.ref}`];
    if (f.type === 'full') return [`full ${f.ref}`];
    if (f.type === 'ended') return [`ended ${f.ref} ${f.reason}`];
    return [];
  });
}

/** Several machines and the packets between them. */
export class Net {
  readonly machines: Machine[];
  readonly incs: Incarnation[];
  readonly #queues = new Map<string, Packet[]>();
  readonly #opts: { clockFloor: number; merge: boolean; view: AgreedView | undefined };
  readonly #peers: number;

  /**
   * `merge`: a packet queued behind one not delivered yet is merged into it, as the runtime's
   * links do within a turn (core/messages.ts `mergePackets`). `view`: every machine takes part
   * in changes of this view (docs/reconfiguration.md), its binary speaking level 10.
   */
  constructor(peers: number, opts: { clockFloor?: number; merge?: boolean; view?: AgreedView } = {}) {
    this.#opts = { clockFloor: opts.clockFloor ?? 0, merge: opts.merge ?? false, view: opts.view };
    this.#peers = peers;
    this.machines = [];
    this.incs = [];
    for (let p = 0; p < peers; p++) this.restart(p, 1);
  }

  /** A new machine (state lost) with incarnation `{startMs, nonce: 0}`. */
  restart(peer: number, startMs: number, clockFloor = this.#opts.clockFloor, view = this.#opts.view): void {
    this.machines[peer] = view === undefined
      ? new Machine({ members: Members.first(peer, this.#peers), clockFloor })
      : new Machine({ members: membersOf(view, peer), view, speaks: 10, clockFloor });
    this.incs[peer] = { startMs, nonce: 0 };
    for (const key of [...this.#queues.keys()]) {
      const [from, to] = key.split('>').map(Number);
      if (from === peer || to === peer) this.#queues.delete(key);
    }
  }

  /** The machine of one peer. */
  machine(peer: number): Machine {
    const m = this.machines[peer];
    if (m === undefined) throw new Error(`no peer ${peer}`);
    return m;
  }

  /** The current incarnation of one peer. */
  inc(peer: number): Incarnation {
    const inc = this.incs[peer];
    if (inc === undefined) throw new Error(`no peer ${peer}`);
    return inc;
  }

  /** One event on one machine; its sends are queued, its effects returned. */
  step(peer: number, event: MachineEvent): readonly Effect[] {
    const effects = this.machine(peer).step(event);
    for (const f of effects) {
      if (f.type !== 'send') continue;
      const key = `${peer}>${f.to}`;
      const q = this.#queues.get(key) ?? [];
      const last = q[q.length - 1];
      const merged = this.#opts.merge && last !== undefined ? mergePackets(last, f.packet) : null;
      if (merged === null) q.push(f.packet);
      else q[q.length - 1] = merged;
      this.#queues.set(key, q);
    }
    return effects;
  }

  /** The handshake between a and b, both ways, with their current clocks. */
  join(a: number, b: number): Effect[] {
    const ca = this.machine(a).clock;
    const cb = this.machine(b).clock;
    return [...this.step(a, { type: 'joined', peer: b, inc: this.inc(b), clock: cb }), ...this.step(b, { type: 'joined', peer: a, inc: this.inc(a), clock: ca })];
  }

  /** Every pair handshakes, and the (empty) state transfers are delivered. */
  joinAll(): void {
    for (let a = 0; a < this.machines.length; a++) for (let b = a + 1; b < this.machines.length; b++) this.join(a, b);
    this.settle();
  }

  /** A local client acquires `lock` on `peer` with ref `ref`. */
  acquire(peer: number, ref: number, lock: string, s: RequestSpec = spec(), noWait = false): readonly Effect[] {
    return this.step(peer, { type: 'acquire', ref, parts: [{ lock, spec: s }], noWait });
  }

  /** A local client acquires every lock of `locks` at once (all-or-nothing) on `peer`. */
  acquireAll(peer: number, ref: number, locks: readonly string[], s: RequestSpec = spec(), noWait = false): readonly Effect[] {
    return this.step(peer, { type: 'acquire', ref, parts: locks.map((lock) => ({ lock, spec: s })), noWait });
  }

  /** A local client releases (or cancels) ref `ref` on `peer`. */
  release(peer: number, ref: number): readonly Effect[] {
    return this.step(peer, { type: 'release', ref });
  }

  /** Packets queued from `from` to `to`. */
  pending(from: number, to: number): readonly Packet[] {
    return this.#queues.get(`${from}>${to}`) ?? [];
  }

  /** Delivers the oldest packet from `from` to `to`; returns the receiver's effects. */
  deliver(from: number, to: number): readonly Effect[] {
    const packet = this.#queues.get(`${from}>${to}`)?.shift();
    if (packet === undefined) throw new Error(`nothing queued from ${from} to ${to}`);
    return this.step(to, { type: 'packet', from, inc: this.inc(from), packet });
  }

  /** Delivers everything, oldest pair first, until no packet is queued; returns the outcomes. */
  settle(): string[] {
    const seen: string[] = [];
    for (let rounds = 0; rounds < 10_000; rounds++) {
      const key = [...this.#queues.keys()].find((k) => (this.#queues.get(k)?.length ?? 0) > 0);
      if (key === undefined) return seen;
      const [from, to] = key.split('>').map(Number);
      if (from === undefined || to === undefined) throw new Error('bad queue key');
      seen.push(...outcomes(this.deliver(from, to)).map((o) => `p${to} ${o}`));
    }
    throw new Error('the cluster never went quiet');
  }
}
