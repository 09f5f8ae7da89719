/**
 * The scripted changes of the view (test/sim/view-scenarios.ts) on the production runtime in
 * the simulated world: each ends as docs/reconfiguration.md says, with no violation, and each
 * fails with a planted bug that breaks it (test/sim/mutants.ts).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { patchesOf } from './mutants.js';
import { dropPlanted, patchedModule, plantedModule } from './planted.js';
import * as scenarios from './view-scenarios.js';

const { addJoinPromote, behindWhileHolderRestarts, gateSkippedPastLaggard, promotedAsItJoins, promotedWhileVoterDown, racedBallotsOvertaken, removedHoldsSuccessor, removedTellsSuccessorLate, removeThenRetire, staleCountAcrossTwoEpochs } = scenarios;
type ViewScenarios = typeof scenarios;

afterAll(dropPlanted);

const four = '2 p0:voter,p1:voter,p2:voter,p3:voter';

describe('scripted changes of the view', () => {
  it('three founders add p3, which joins with the ticket, is promoted and is granted a lock', () => {
    const r = addJoinPromote();
    expect(r.violations).toEqual([]);
    expect(r.added).toEqual({ epoch: 1, members: 'p0:voter,p1:voter,p2:voter,p3:learner' });
    expect(r.promoted).toEqual({ epoch: 2, members: 'p0:voter,p1:voter,p2:voter,p3:voter' });
    expect(r.p3Granted).toBe(true);
    expect(r.views).toEqual([four, four, four, four]);
  });

  it('p0 removes p2, which applies its removal, then retires it', () => {
    const r = removeThenRetire();
    expect(r.violations).toEqual([]);
    expect(r.removed).toEqual({ epoch: 1, members: 'p0:voter,p1:voter,p2:leaving' });
    expect(r.retired).toEqual({ epoch: 2, members: 'p0:voter,p1:voter' });
    expect(r.views).toEqual(['2 p0:voter,p1:voter', '2 p0:voter,p1:voter', '1 p0:voter,p1:voter,p2:leaving']);
  });

  it('p0 promotes the learner p3 while p2 is down, and the hold of its client is kept: the echoes p3 gave as a learner count at once', () => {
    const r = promotedWhileVoterDown();
    expect(r.violations).toEqual([]);
    expect(r.added).toEqual({ epoch: 1, members: 'p0:voter,p1:voter,p2:voter,p3:learner' });
    expect(r.promoted).toEqual({ epoch: 2, members: 'p0:voter,p1:voter,p2:voter,p3:voter' });
    expect(r.told).toEqual([]);
    expect(r.held).toBe(true);
  });

  it('p0, asked to promote p3 the moment p3 joined it while p2 is down, waits for an echo of p3: the hold of its client is kept', () => {
    const r = promotedAsItJoins();
    expect(r.violations).toEqual([]);
    expect(r.promoted).toEqual({ epoch: 2, members: 'p0:voter,p1:voter,p2:voter,p3:voter' });
    expect(r.told).toEqual([]);
    expect(r.held).toBe(true);
  });

  it('p2, removed while cut off and back as a new incarnation, hears the eviction of p3\'s old incarnation: p3 restarted syncs, and p0 grants', () => {
    const r = removedHoldsSuccessor();
    expect(r.violations).toEqual([]);
    expect(r.removed).toEqual({ epoch: 1, members: 'p0:voter,p1:voter,p2:leaving,p3:voter' });
    expect(r.p3Synced).toBe(true);
    expect(r.p0Granted).toBe(true);
  });

  it('with an EVICT told to the voters only, and no LEAVE told to a successor held, the removed p2 holds p3\'s new incarnation for good: p3 never syncs, p0 never grants', async () => {
    const patches = [...patchesOf('evict-to-voters-only'), ...patchesOf('left-silent-to-successor')];
    const planted = await patchedModule<ViewScenarios>(patches, 'test/sim/view-scenarios.js');
    const r = planted.removedHoldsSuccessor();
    expect(r.removed).toEqual({ epoch: 1, members: 'p0:voter,p1:voter,p2:leaving,p3:voter' });
    expect(r.p3Synced).toBe(false);
    expect(r.p0Granted).toBe(false);
  });

  it('with an EVICT told to the voters only, p2 tells p3\'s new incarnation its LEAVE (P6): p3 syncs without p2, and p0 grants', async () => {
    const planted = await plantedModule<ViewScenarios>('evict-to-voters-only', 'test/sim/view-scenarios.js');
    const r = planted.removedHoldsSuccessor();
    expect(r.violations).toEqual([]);
    expect(r.p3Synced).toBe(true);
    expect(r.p0Granted).toBe(true);
  });

  it('p2, removed as p3 restarts, tells p3\'s new incarnation held there its LEAVE only once its last echo stops vouching (1.5 x lease_ms)', () => {
    const r = removedTellsSuccessorLate();
    expect(r.violations).toEqual([]);
    expect(r.removed).toEqual({ epoch: 1, members: 'p0:voter,p1:voter,p2:leaving,p3:voter' });
    expect(r.toldAfterMs).not.toBeNull();
    expect(r.toldAfterMs).toBeGreaterThanOrEqual(r.vouchMs);
    expect(r.toldAfterMs).toBeLessThan(r.vouchMs + 300);
  });

  it('with the LEAVE told at once, p2 tells p3 while its last echo may still vouch for the predecessor\'s lease', async () => {
    const planted = await plantedModule<ViewScenarios>('leave-before-echoes-lapse', 'test/sim/view-scenarios.js');
    const r = planted.removedTellsSuccessorLate();
    expect(r.toldAfterMs).not.toBeNull();
    expect(r.toldAfterMs).toBeLessThan(100);
  });

  it('with no LEAVE told to a successor held, p2 never tells p3 (the EVICT ends its wait here)', async () => {
    const planted = await plantedModule<ViewScenarios>('left-silent-to-successor', 'test/sim/view-scenarios.js');
    expect(planted.removedTellsSuccessorLate().toldAfterMs).toBeNull();
  });

  it('a restarted peer two epochs behind gets no confirmation across epochs: nobody evicts the leased p0 (F81, rule P4)', () => {
    const r = staleCountAcrossTwoEpochs();
    expect(r.violations).toEqual([]);
    expect(r.epochs).toEqual({ p2: 2, p1: 4, p0: 4 });
    expect(r.p2EvictedP0).toBe(false);
    expect(r.p0Held).toBe(true);
  });

  it('with membership messages counted across epochs, that peer evicts p0 while its lease holds', async () => {
    const planted = await plantedModule<ViewScenarios>('membership-across-epochs', 'test/sim/view-scenarios.js');
    const r = planted.staleCountAcrossTwoEpochs();
    expect(r.p2EvictedP0).toBe(true);
    expect(r.violations).toEqual([expect.stringMatching(/p2 \(process \d+\) evicted p0 \(process \d+\) while its lease held/)]);
  });

  it('with the echoes of a learner dropped, p0 never hears p3 vouch for its lease, and never promotes it (the change times out)', async () => {
    const planted = await plantedModule<ViewScenarios>('learner-echoes-dropped', 'test/sim/view-scenarios.js');
    const r = planted.promotedWhileVoterDown();
    expect(r.promoted).toBeNull();
    expect(r.held).toBe(true);
  });

  it('p2 promises p1 before p0\'s lower ballot reaches it, and takes no ACCEPT of p0: p1 chooses its add once p0 is evicted, the only view of epoch 1', () => {
    const r = racedBallotsOvertaken();
    expect(r.violations).toEqual([]);
    expect(r.second).toEqual({ epoch: 1, members: 'p0:voter,p1:voter,p2:voter,p4:learner' });
    expect(r.views).toEqual(['0 p0:voter,p1:voter,p2:voter', '1 p0:voter,p1:voter,p2:voter,p4:learner', '1 p0:voter,p1:voter,p2:voter,p4:learner']);
  });

  it('with an acceptance below the promise, p0 chooses its add with p2, and p1 another view for epoch 1', async () => {
    const planted = await plantedModule<ViewScenarios>('accept-without-promise', 'test/sim/view-scenarios.js');
    const r = planted.racedBallotsOvertaken();
    expect(r.views[0]).toBe('1 p0:voter,p1:voter,p2:voter,p3:learner');
    expect(r.violations[0]).toMatch(/view: p\d+ \(process \d+\) applied .* at epoch 1, another data dir/);
  });

  it('without the state transfer, the founders never choose the add: the ticket names no learner', async () => {
    const planted = await plantedModule<ViewScenarios>('no-state-transfer', 'test/sim/view-scenarios.js');
    expect(() => planted.addJoinPromote()).toThrow(/this join ticket adds no learner, not p3/);
    expect(planted.removeThenRetire().removed).toBeNull();
  });

  it('with a leaving member out of the ack set at once, p2 never hears the view that removes it', async () => {
    const planted = await plantedModule<ViewScenarios>('leaving-dropped-early', 'test/sim/view-scenarios.js');
    expect(planted.removeThenRetire().views[2]).toBe('0 p0:voter,p1:voter,p2:voter');
  });

  it('a change that times out lets go of the view lock with p0 behind it; the next holder waits for p0\'s head ack at its view (P3 i), never comes to propose, and nobody evicts p0', () => {
    const r = gateSkippedPastLaggard();
    expect(r.violations).toEqual([]);
    expect(r.first).toMatchObject({ code: 'ERR_TIMEOUT' });
    expect(r.second).toMatchObject({ code: 'ERR_TIMEOUT' });
    expect(r.epochs).toEqual([2, 3, 3, 3, 3, 3, 3]);
    expect(r.p0Evicted).toBe(false);
    expect(r.p0Held).toBe(true);
  });

  it('with the gate open on one head ack, p3 chooses epoch 4 while p0 is at 2, and p3..p6 evict p0 while its lease, counted over the voters of epoch 2, holds', async () => {
    const planted = await plantedModule<ViewScenarios>('gate-without-every-head-ack', 'test/sim/view-scenarios.js');
    const r = planted.gateSkippedPastLaggard();
    expect(r.second).toEqual({ epoch: 4, members: 'p0:voter,p1:voter,p2:voter,p3:voter,p4:voter,p5:voter,p6:voter' });
    expect(r.epochs).toEqual([2, 4, 4, 4, 4, 4, 4]);
    expect(r.p0Evicted).toBe(true);
    expect(r.violations[0]).toMatch(/eviction: p\d \(process \d+\) evicted p0 \(process \d+\) while its lease held/);
  });

  it('p1 misses the view that removes p2 while p0 restarts: it takes the VIEW p0\'s new incarnation sends, though it holds that incarnation waiting, and the two grant and retire p2', () => {
    const r = behindWhileHolderRestarts();
    expect(r.violations).toEqual([]);
    expect(r.viewsBehind).toEqual(['1 p0:voter,p1:voter,p2:leaving', '0 p0:voter,p1:voter,p2:voter', '1 p0:voter,p1:voter,p2:leaving']);
    expect(r.p1Granted).toBe(true);
    expect(r.p0Granted).toBe(true);
    expect(r.retired).toEqual({ epoch: 2, members: 'p0:voter,p1:voter' });
    expect(r.views).toEqual(['2 p0:voter,p1:voter', '2 p0:voter,p1:voter', '1 p0:voter,p1:voter,p2:leaving']);
  });

  it('with that VIEW kept back with the waiting incarnation\'s packets, p1 stays at epoch 0 and holds p0 for good: nothing is granted, nothing changes', async () => {
    const planted = await plantedModule<ViewScenarios>('held-view-kept', 'test/sim/view-scenarios.js');
    const r = planted.behindWhileHolderRestarts();
    expect(r.views[1]).toBe('0 p0:voter,p1:voter,p2:voter');
    expect(r.p1Granted).toBe(false);
    expect(r.p0Granted).toBe(false);
    expect(r.retired).toMatchObject({ code: 'ERR_UNREACHABLE' });
  });
});
