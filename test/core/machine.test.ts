/**
 * Behaviour of the protocol core (docs/design.md section 3 and the membership rules of section 4),
 * one rule per test, driven by hand through the Net harness.
 */
import { Members } from '../../src/core/members.js';
import { afterAll, describe, expect, it } from 'vitest';
import { Machine } from '../../src/core/machine.js';
import type * as MachineModule from '../../src/core/machine.js';
import { removeOneByOneMax } from '../../src/core/request-queue.js';
import type { PeerMessage, RequestMessage } from '../../src/core/messages.js';
import { tokenOf } from '../../src/core/types.js';
import { limits } from '../../src/limits.js';
import { dropPlanted, plantedModule } from '../sim/planted.js';
import { Net, outcomes, spec } from './harness.js';

/** Three peers: peer 2 holds `a` (ref 1), peer 0 asks for it (ref 2), and only peer 1 has heard so far. */
function behindHeldByPeer2(): Net {
  const net = new Net(3);
  net.joinAll();
  net.acquire(2, 1, 'a');
  expect(net.settle()).toEqual(['p2 granted 1']);
  net.acquire(0, 2, 'a');
  net.deliver(0, 1);
  return net;
}

// The patched copies of the build the planted bugs ran in (test/sim/planted.ts).
afterAll(dropPlanted);

describe('Machine: grants', () => {
  it('grants a single peer immediately, with token ts * 1024 + peer index', () => {
    const m = new Machine({ members: Members.first(0, 1), clockFloor: 41 });
    const effects = m.step({ type: 'acquire', ref: 1, parts: [{ lock: 'a', spec: spec() }], noWait: false });
    expect(effects).toEqual([{ type: 'granted', ref: 1, lock: 'a', ts: 42, token: tokenOf(42, 0), mode: 'exclusive' }]);
    expect(tokenOf(42, 0)).toBe(42n * 1024n);
  });

  it('needs the other peer\'s ack (a later timestamp) before it grants', () => {
    const net = new Net(2);
    net.joinAll();
    expect(outcomes(net.acquire(0, 1, 'a'))).toEqual([]);
    expect(net.pending(0, 1)).toHaveLength(1);
    expect(outcomes(net.deliver(0, 1))).toEqual([]); // Peer 1 queues the request and owes an ack.
    const ack = net.pending(1, 0)[0];
    expect(ack?.m).toEqual([]);
    expect(ack?.c).toBeGreaterThan(net.machine(0).clock - 1);
    expect(outcomes(net.deliver(1, 0))).toEqual(['granted 1']);
  });

  it('owes no ack for a request that its own requests ahead keep out: the release it sends later acks it', () => {
    const net = behindHeldByPeer2();
    net.deliver(0, 2);
    expect(net.pending(1, 0).map((p) => p.m)).toEqual([[]]); // Peer 1 has nothing ahead of it: an ack.
    expect(net.pending(2, 0)).toEqual([]); // Peer 2's hold is ahead: no ack.
    net.deliver(1, 0);
    expect(net.machine(0).explain(2)?.missingPeers).toEqual([]); // Not waiting for peer 2's answer: for its release.
    expect(outcomes(net.release(2, 1))).toEqual([]);
    expect(outcomes(net.deliver(2, 0))).toEqual(['granted 2']);
  });

  it('acks at once a request that its own requests ahead do not keep out (shared beside shared, permits to spare)', () => {
    for (const [held, asked] of [[spec('shared'), spec('shared')], [spec('semaphore', 3, 1), spec('semaphore', 3, 2)]] as const) {
      const net = new Net(2);
      net.joinAll();
      net.acquire(1, 1, 'a', held);
      expect(net.settle()).toEqual(['p1 granted 1']);
      net.acquire(0, 2, 'a', asked);
      net.deliver(0, 1);
      expect(net.pending(1, 0).map((p) => p.m)).toEqual([[]]);
      expect(outcomes(net.deliver(1, 0))).toEqual(['granted 2']);
    }
  });

  it('owes no ack when its own requests ahead keep a request out only together', () => {
    const net = new Net(2);
    net.joinAll();
    net.acquire(1, 1, 'a', spec('semaphore', 3, 1));
    net.acquire(1, 2, 'a', spec('semaphore', 3, 1));
    expect(net.settle().sort()).toEqual(['p1 granted 1', 'p1 granted 2']);
    net.acquire(0, 3, 'a', spec('semaphore', 3, 2)); // 1 + 1 + 2 > 3: both of peer 1's keep it out.
    net.deliver(0, 1);
    expect(net.pending(1, 0)).toEqual([]);
    net.release(1, 1);
    expect(outcomes(net.deliver(1, 0))).toEqual(['granted 3']);
  });

  it('grants two peers in timestamp order, the later one after the release', () => {
    const net = new Net(2);
    net.joinAll();
    net.acquire(0, 1, 'a');
    net.deliver(0, 1); // Peer 1's clock passes peer 0's request: its own request is later.
    net.acquire(1, 2, 'a');
    expect(net.settle()).toEqual(['p0 granted 1']);
    expect(net.release(0, 1).filter((f) => f.type === 'send')).toHaveLength(1);
    expect(net.settle()).toEqual(['p1 granted 2']);
  });

  it('breaks a timestamp tie by peer index: the lower index goes first', () => {
    const net = new Net(2);
    net.joinAll();
    net.acquire(1, 2, 'a');
    net.acquire(0, 1, 'a');
    const [req0] = net.pending(0, 1)[0]?.m ?? [];
    const [req1] = net.pending(1, 0)[0]?.m ?? [];
    expect(req0?.t === 'req' && req0.ts).toBe(req1?.t === 'req' && req1.ts);
    expect(net.settle()).toEqual(['p0 granted 1']);
    net.release(0, 1);
    expect(net.settle()).toEqual(['p1 granted 2']);
  });

  it('serves many lock names on one clock: an ack for one name unblocks another', () => {
    const net = new Net(2);
    net.joinAll();
    net.acquire(0, 1, 'a');
    net.acquire(0, 2, 'b');
    expect(net.settle().sort()).toEqual(['p0 granted 1', 'p0 granted 2']);
  });
});

describe('Machine: all-or-nothing requests', () => {
  it('sends one REQUEST per lock at one timestamp, and grants once every queue admits it', () => {
    const net = new Net(2);
    net.joinAll();
    net.acquireAll(0, 1, ['a', 'b']);
    const sent = net.pending(0, 1)[0]?.m ?? [];
    expect(sent.map((m) => [m.t, 'lock' in m && m.lock])).toEqual([['req', 'a'], ['req', 'b']]);
    expect(new Set(sent.map((m) => 'ts' in m && m.ts)).size).toBe(1);
    expect(net.settle()).toEqual(['p0 granted 1']);
    expect(net.machine(1).queue('a').map((e) => e.token)).toEqual(net.machine(1).queue('b').map((e) => e.token));
    net.release(0, 1);
    net.settle();
    expect([net.machine(1).queue('a'), net.machine(1).queue('b')]).toEqual([[], []]);
  });

  it('never deadlocks crosswise: {a, b} on one peer and {b, a} on the other are granted one after the other', () => {
    const net = new Net(2);
    net.joinAll();
    net.acquireAll(0, 1, ['a', 'b']);
    net.acquireAll(1, 2, ['b', 'a']);
    expect(net.settle()).toEqual(['p0 granted 1']); // The earlier (ts, peer) is first in both queues.
    net.release(0, 1);
    expect(net.settle()).toEqual(['p1 granted 2']);
  });

  it('waits while one lock is held by an earlier request, and holds its place in the other lock\'s queue (FIFO)', () => {
    const net = new Net(2);
    net.joinAll();
    net.acquire(1, 1, 'b');
    expect(net.settle()).toEqual(['p1 granted 1']);
    net.acquireAll(0, 2, ['a', 'b']);
    net.settle();
    net.acquire(1, 3, 'a');
    expect(net.settle()).toEqual([]); // a is free, but the earlier all-or-nothing request is ahead of it.
    net.release(1, 1);
    expect(net.settle()).toEqual(['p0 granted 2']);
    net.release(0, 2);
    expect(net.settle()).toEqual(['p1 granted 3']);
  });

  it('refuses a no-wait request when one of its locks is not free, and frees its place in the others', () => {
    const net = new Net(2);
    net.joinAll();
    net.acquire(1, 1, 'b');
    net.settle();
    net.acquireAll(0, 2, ['a', 'b'], spec(), true);
    expect(net.settle()).toEqual(['p0 refused 2']);
    expect(net.machine(0).queue('a')).toEqual([]);
  });

  it('refuses the whole request when one of its locks\' queue is full', () => {
    const m = new Machine({ members: Members.first(0, 2), clockFloor: 1 });
    for (let ref = 1; ref <= limits.queuedPerLockMax; ref++) m.step({ type: 'acquire', ref, parts: [{ lock: 'b', spec: spec() }], noWait: false });
    const ref = limits.queuedPerLockMax + 1;
    expect(m.step({ type: 'acquire', ref, parts: [{ lock: 'a', spec: spec() }, { lock: 'b', spec: spec() }], noWait: false })).toEqual([{ type: 'full', ref, lock: 'b' }]);
    expect(m.queue('a')).toEqual([]);
  });
});

describe('Machine: modes', () => {
  it('grants shared beside shared, and an exclusive request is a barrier both ways', () => {
    const net = new Net(2);
    net.joinAll();
    net.acquire(0, 1, 'a', spec('shared'));
    net.acquire(1, 2, 'a', spec('shared'));
    expect(net.settle().sort()).toEqual(['p0 granted 1', 'p1 granted 2']);
    net.acquire(0, 3, 'a', spec('exclusive'));
    net.settle();
    net.acquire(1, 4, 'a', spec('shared')); // Later than the exclusive one: waits behind it.
    expect(net.settle()).toEqual([]);
    net.release(0, 1);
    expect(net.settle()).toEqual([]);
    net.release(1, 2);
    expect(net.settle()).toEqual(['p0 granted 3']);
    net.release(0, 3);
    expect(net.settle()).toEqual(['p1 granted 4']);
  });

  it('lets a request admitted at capacity 6 coexist with one that believes 3 (canal lock)', () => {
    const net = new Net(2);
    net.joinAll();
    net.acquire(0, 1, 'canal', spec('semaphore', 6, 2));
    expect(net.settle()).toEqual(['p0 granted 1']);
    net.acquire(1, 2, 'canal', spec('semaphore', 3, 1)); // 2 ahead + 1 <= 3: admitted.
    expect(net.settle()).toEqual(['p1 granted 2']);
    net.acquire(1, 3, 'canal', spec('semaphore', 3, 1)); // 3 ahead + 1 > 3: waits.
    net.acquire(0, 4, 'canal', spec('semaphore', 6, 1)); // Behind a waiter it cannot pass? It can: 4 <= 6.
    expect(net.settle()).toEqual(['p0 granted 4']);
    net.release(0, 1); // 1 + 1 <= 3 now.
    expect(net.settle()).toEqual(['p1 granted 3']);
  });

  it('refuses a no-wait request when something is ahead, once the acks are in: the holder acks it (nw)', () => {
    const net = new Net(2);
    net.joinAll();
    net.acquire(0, 1, 'a');
    expect(net.settle()).toEqual(['p0 granted 1']);
    expect(outcomes(net.acquire(1, 2, 'a', spec(), true))).toEqual([]);
    expect(net.pending(1, 0)[0]?.m).toEqual([expect.objectContaining({ t: 'req', nw: true })]);
    expect(net.settle()).toEqual(['p1 refused 2']);
    expect(net.machine(0).queue('a').map((e) => e.ref)).toEqual([1]); // Its release reached peer 0.
  });

  it('grants a no-wait request behind a hold whose release is on its way: the ack comes after it', () => {
    const net = new Net(2);
    net.joinAll();
    net.acquire(0, 1, 'a');
    expect(net.settle()).toEqual(['p0 granted 1']);
    net.release(0, 1); // Not delivered yet: peer 1 still queues the hold.
    expect(outcomes(net.acquire(1, 2, 'a', spec(), true))).toEqual([]);
    expect(net.settle()).toEqual(['p1 granted 2']);
  });
});

describe('Machine: membership', () => {
  it('sends no request before every peer of the view has joined (join gating)', () => {
    const net = new Net(3);
    net.join(0, 1);
    const before = net.acquire(0, 1, 'a');
    expect(before.filter((f) => f.type === 'send')).toEqual([]);
    expect(net.machine(0).synced).toBe(false);
    net.join(0, 2);
    // Joined, but no packet from 1 or 2 yet: their first packet, sent from inside their join,
    // bounds what they granted while we were out of their view.
    expect(net.machine(0).synced).toBe(false);
    // Their first packets let us in, but they were sent before 1 and 2 could ack (each waits
    // for the others to let it in): marked unready, they sync nothing.
    expect(net.pending(1, 0).map((p) => p.u)).toEqual([true]);
    net.deliver(1, 0);
    net.deliver(2, 0);
    expect(net.machine(0).synced).toBe(false);
    net.join(1, 2);
    const requests: number[] = [];
    for (;;) {
      const key = [[1, 0], [2, 0], [0, 1], [0, 2], [1, 2], [2, 1]].find(([f, t]) => net.pending(f ?? 0, t ?? 0).length > 0);
      if (key === undefined) break;
      const [from = 0, to = 0] = key;
      for (const f of net.deliver(from, to)) if (f.type === 'send' && f.packet.m.some((m) => m.t === 'req')) requests.push(f.to);
    }
    expect(requests.sort()).toEqual([1, 2]);
  });

  it('marks its packets unready until the peers let it in, and sends every peer its clock the moment they have', () => {
    const net = new Net(2);
    net.join(0, 1);
    expect(net.machine(0).ackReady).toBe(false);
    expect(net.pending(0, 1)).toEqual([{ c: net.machine(0).clock, m: [], u: true }]);
    // 0 lets 1 in: 1 can ack now, and tells 0 at once with a packet that syncs it.
    const ready = net.deliver(0, 1).filter((f) => f.type === 'send');
    expect(ready).toEqual([{ type: 'send', to: 0, packet: { c: net.machine(1).clock, m: [] } }]);
    expect(net.machine(1).synced).toBe(false); // 0's packet was unready
    net.deliver(1, 0); // 1's state transfer, unready: it lets 0 in
    expect(net.machine(0).synced).toBe(false);
    net.deliver(1, 0);
    expect(net.machine(0).synced).toBe(true);
    net.settle();
    expect(net.machine(1).synced).toBe(true);
  });

  it('takes no ack and no sync from an unready packet, but lets its sender in (sync-on-unready plants the bug)', async () => {
    const planted = (await plantedModule<typeof MachineModule>('sync-on-unready', 'src/core/machine.js')).Machine;
    for (const [M, syncOnUnready] of [[Machine, false], [planted, true]] as const) {
      const m = new M({ members: Members.first(0, 2), clockFloor: 0 });
      m.step({ type: 'joined', peer: 1, inc: { startMs: 1, nonce: 0 }, clock: 10 });
      m.step({ type: 'packet', from: 1, inc: { startMs: 1, nonce: 0 }, packet: { c: 20, m: [], u: true } });
      expect(m.ackReady).toBe(true);
      expect(m.synced).toBe(syncOnUnready);
      expect(m.lastTs(1)).toBe(syncOnUnready ? 20 : 0);
    }
  });

  it('takes the handshake clock as a floor: requests after a join sort after it', () => {
    const net = new Net(2);
    net.restart(1, 1, 5000);
    net.join(0, 1);
    expect(net.machine(0).clock).toBeGreaterThan(5000);
  });

  it('drops the old incarnation\'s requests when a peer restarts', () => {
    const net = new Net(2);
    net.joinAll();
    net.acquire(1, 1, 'a');
    expect(net.settle()).toEqual(['p1 granted 1']);
    net.acquire(0, 2, 'a');
    expect(net.settle()).toEqual([]);
    net.restart(1, 2, 0);
    // The holder's request dies with its incarnation. The old incarnation's acks no longer
    // count (lastTs is reset at the join), so the waiter goes through once the new
    // incarnation's first packet arrives, which carries a later clock.
    expect(outcomes(net.join(0, 1))).toEqual([]);
    expect(net.machine(0).queue('a').map((e) => e.peer)).toEqual([0]);
    expect(net.settle()).toEqual(['p0 granted 2']);
    net.acquire(1, 3, 'a');
    expect(net.settle()).toEqual([]); // The new incarnation queues behind the transferred hold.
  });

  it('transfers our outstanding requests to a joining incarnation first, before its own request', () => {
    const net = new Net(2);
    net.joinAll();
    net.acquire(0, 1, 'a');
    expect(net.settle()).toEqual(['p0 granted 1']);
    net.restart(1, 2, 0);
    net.acquire(1, 2, 'a'); // Pending: peer 1 is not synced yet.
    net.join(0, 1);
    const first = net.pending(0, 1)[0];
    expect(first?.m[0]).toMatchObject({ t: 'req', lock: 'a', mode: 'exclusive' });
    expect(net.settle()).toEqual([]); // Peer 1 queued behind the held lock.
    net.release(0, 1);
    expect(net.settle()).toEqual(['p1 granted 2']);
  });

  it('drops an evicted peer\'s requests, leaves it out of the ack rule and ignores its later packets', () => {
    const net = behindHeldByPeer2();
    net.deliver(1, 0); // Peer 1 acked; peer 2 never hears of it.
    expect(net.step(0, { type: 'evicted', peer: 2, inc: net.inc(2) }).filter((f) => f.type === 'granted')).toHaveLength(1);
    const lastTs = net.machine(0).lastTs(2);
    net.deliver(0, 2); // Peer 2's hold keeps the request out: it owes no ack (rule 2).
    expect(net.pending(2, 0)).toEqual([]);
    net.release(2, 1);
    const late = net.deliver(2, 0); // Peer 2's release, from the evicted incarnation.
    expect(late).toEqual([]);
    expect(net.machine(0).lastTs(2)).toBe(lastTs);
    expect(net.machine(0).view()).toEqual([1]);
  });

  it('ends granted holds with lease_lost when the lease lapses, and grants nothing until it is back', () => {
    const m = new Machine({ members: Members.first(0, 1), clockFloor: 0 });
    m.step({ type: 'acquire', ref: 1, parts: [{ lock: 'a', spec: spec() }], noWait: false });
    expect(outcomes(m.step({ type: 'lease', valid: false }))).toEqual(['ended 1 lease_lost']);
    expect(outcomes(m.step({ type: 'acquire', ref: 2, parts: [{ lock: 'a', spec: spec() }], noWait: false }))).toEqual([]);
    expect(outcomes(m.step({ type: 'lease', valid: true }))).toEqual(['granted 2']);
  });
});

describe('Machine: bounded queues', () => {
  const max = limits.queuedPerLockMax;

  it('refuses a request of ours, sending nothing, once its lock has queuedPerLockMax requests here (pending ones count)', () => {
    // Two peers, the other never joined: every request of ours stays pending, and counts.
    const m = new Machine({ members: Members.first(0, 2), clockFloor: 0 });
    for (let ref = 1; ref <= max; ref++) expect(m.step({ type: 'acquire', ref, parts: [{ lock: 'a', spec: spec() }], noWait: false })).toEqual([]);
    expect(m.step({ type: 'acquire', ref: max + 1, parts: [{ lock: 'a', spec: spec() }], noWait: false })).toEqual([{ type: 'full', ref: max + 1, lock: 'a' }]);
    expect(m.stats().own).toBe(max);
    expect(m.step({ type: 'acquire', ref: max + 2, parts: [{ lock: 'b', spec: spec() }], noWait: false })).toEqual([]); // Another lock has room.
    m.step({ type: 'release', ref: 1 });
    expect(m.step({ type: 'acquire', ref: max + 3, parts: [{ lock: 'a', spec: spec() }], noWait: false })).toEqual([]); // A slot came free.
  });

  it('counts the other peers\' requests, and still queues every one of theirs past the limit', () => {
    const m = new Machine({ members: Members.first(0, 2), clockFloor: 0 });
    const inc = { startMs: 1, nonce: 1 };
    m.step({ type: 'joined', peer: 1, inc, clock: 0 });
    const req = (ts: number): RequestMessage => ({ t: 'req', lock: 'a', ts, mode: 'exclusive', limit: 1, permits: 1, owner: '', meta: null, at: 0 });
    const theirs = Array.from({ length: max }, (_, i) => req(i + 1));
    m.step({ type: 'packet', from: 1, inc, packet: { c: max + 1, m: theirs } });
    expect(outcomes(m.step({ type: 'acquire', ref: 1, parts: [{ lock: 'a', spec: spec() }], noWait: false }))).toEqual(['full 1']);
    m.step({ type: 'packet', from: 1, inc, packet: { c: max + 2, m: [req(max + 2)] } });
    expect(m.queue('a')).toHaveLength(max + 1); // Refusing theirs would break the agreement on the order.
    expect(outcomes(m.step({ type: 'acquire', ref: 2, parts: [{ lock: 'b', spec: spec() }], noWait: false }))).toEqual([]); // Issued: it waits for an ack.
    expect(m.explain(2)?.state).toBe('waiting');
  });
});

describe('Machine: meta', () => {
  it('a holder\'s new meta reaches every queue, after its request, and changes no grant; a peer joining later gets it in the state transfer', () => {
    const net = new Net(3);
    net.joinAll();
    net.acquire(0, 1, 'leader', { ...spec(), meta: { value: 'host-a:1' } });
    expect(net.settle()).toEqual(['p0 granted 1']);
    net.acquire(1, 2, 'leader');
    expect(net.settle()).toEqual([]);
    const metaOf = (peer: number): unknown => net.machine(peer).queue('leader')[0]?.meta;
    expect(metaOf(1)).toEqual({ value: 'host-a:1' });
    const sent = net.step(0, { type: 'meta', ref: 1, meta: { value: 'host-a:2' } });
    expect(outcomes(sent)).toEqual([]);
    expect(metaOf(0)).toEqual({ value: 'host-a:2' });
    expect(net.pending(0, 1).flatMap((p) => p.m)).toEqual([{ t: 'meta', lock: 'leader', ts: net.machine(0).queue('leader')[0]?.ts, meta: { value: 'host-a:2' } }]);
    expect(net.settle()).toEqual([]);
    expect(metaOf(1)).toEqual({ value: 'host-a:2' });
    expect(net.machine(1).queue('leader').map((e) => e.held)).toEqual([true, false]);
    expect(metaOf(2)).toEqual({ value: 'host-a:2' });
    // Peer 2 restarts: the state transfer it gets carries the current meta.
    net.restart(2, 1_800_000_000_000);
    for (const p of [0, 1]) {
      net.join(p, 2);
      net.join(2, p);
    }
    net.settle();
    expect(net.machine(2).queue('leader').map((e) => e.meta)).toEqual([{ value: 'host-a:2' }, null]);
    // Released: the next holder's meta is its own.
    net.release(0, 1);
    net.settle();
    expect(net.machine(1).queue('leader').map((e) => e.meta)).toEqual([null]);
  });
});

describe('Machine: RELEASEs in one packet', () => {
  it('removes a run of RELEASEs at once, and every REQUEST and META between them sees the queues one removal at a time would leave', () => {
    const inc = { startMs: 1, nonce: 1 };
    const req = (lock: string, ts: number): RequestMessage => ({ t: 'req', lock, ts, mode: 'exclusive', limit: 1, permits: 1, owner: `o${ts}`, meta: null, at: 0 });
    const rel = (lock: string, ts: number): PeerMessage => ({ t: 'rel', lock, ts });
    const queued = [...Array.from({ length: 40 }, (_, i) => req('a', i + 1)), ...Array.from({ length: 20 }, (_, i) => req('b', i + 41))];
    const longRun = [
      ...Array.from({ length: 30 }, (_, i) => rel('a', 30 - i)), // a run longer than removeOneByOneMax: one pass per lock
      ...Array.from({ length: 20 }, (_, i) => rel('b', 41 + i)),
      ...Array.from({ length: 16 }, (_, i) => rel('zz', i + 1)), // never queued
    ];
    expect(longRun.length).toBeGreaterThanOrEqual(removeOneByOneMax);
    const mixed: PeerMessage[] = [
      ...longRun,
      { t: 'meta', lock: 'a', ts: 35, meta: { value: 'm35' } },
      { t: 'meta', lock: 'a', ts: 37, meta: { value: 'm37' } },
      rel('a', 35), req('a', 61), rel('a', 61), rel('b', 41), rel('b', 41), // a request released in the packet that brought it, a duplicate
      req('b', 62), rel('a', 36),
    ];
    const fresh = (): Machine => {
      const m = new Machine({ members: Members.first(0, 2), clockFloor: 0 });
      m.step({ type: 'joined', peer: 1, inc, clock: 0 });
      m.step({ type: 'packet', from: 1, inc, packet: { c: 61, m: queued } });
      return m;
    };
    const batched = fresh();
    batched.step({ type: 'packet', from: 1, inc, packet: { c: 63, m: mixed } });
    const oneByOne = fresh();
    mixed.forEach((msg) => oneByOne.step({ type: 'packet', from: 1, inc, packet: { c: 63, m: [msg] } }));
    const view = (m: Machine): unknown => ['a', 'b', 'zz'].map((lock) => m.queue(lock).map((e) => [e.ts, e.meta]));
    expect(view(batched)).toEqual(view(oneByOne));
    expect(batched.queue('a').map((e) => [e.ts, e.meta?.['value'] ?? null])).toEqual([[31, null], [32, null], [33, null], [34, null], [37, 'm37'], [38, null], [39, null], [40, null]]);
    expect(batched.queue('b').map((e) => e.ts)).toEqual([62]);
  });
});
