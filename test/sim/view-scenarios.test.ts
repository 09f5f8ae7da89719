/**
 * The scripted changes of the view (test/sim/view-scenarios.ts) on the production runtime in
 * the simulated world: each ends as docs/reconfiguration.md says, with no violation, and each
 * fails with a planted bug that breaks it (test/sim/mutants.ts).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { dropPlanted, plantedModule } from './planted.js';
import * as scenarios from './view-scenarios.js';

const { addJoinPromote, promotedAsItJoins, promotedWhileVoterDown, removeThenRetire, staleCountAcrossTwoEpochs } = scenarios;
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

  it('without the state transfer, the founders never choose the add: the ticket names no learner', async () => {
    const planted = await plantedModule<ViewScenarios>('no-state-transfer', 'test/sim/view-scenarios.js');
    expect(() => planted.addJoinPromote()).toThrow(/this join ticket adds no learner, not p3/);
    expect(planted.removeThenRetire().removed).toBeNull();
  });

  it('with a leaving member out of the ack set at once, p2 never hears the view that removes it', async () => {
    const planted = await plantedModule<ViewScenarios>('leaving-dropped-early', 'test/sim/view-scenarios.js');
    expect(planted.removeThenRetire().views[2]).toBe('0 p0:voter,p1:voter,p2:voter');
  });
});
