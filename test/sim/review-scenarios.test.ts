/** The executions of test/sim/review-scenarios.ts, each with what its fix promises. */
import { afterAll, describe, expect, it } from 'vitest';
import { dropPlanted, plantedModule } from './planted.js';
import { runSeed } from './run.js';
import type * as Review from './review-scenarios.js';
import { ownChangeRetried, removedAsksItself, replacedWhileCutOff, restartMeetsLeftMember, twinRefusedByPeerBlindToNewer } from './review-scenarios.js';

/** The scenarios as the build with `mutant` planted runs them (test/sim/planted.ts). */
const planted = (mutant: 'left-member-rejoins-ack-set' | 'zombie-forgets-newer'): Promise<typeof Review> => plantedModule<typeof Review>(mutant, 'test/sim/review-scenarios.js');

// The patched copies of the build the planted bugs ran in.
afterAll(dropPlanted);

describe('changes of the view, as the review found them', () => {
  it('a member replaced while cut off, back after its retirement, grants nothing and breaks nothing', () => {
    const r = replacedWhileCutOff();
    expect(r.steps.map((s) => (s !== null && 'epoch' in s ? s.epoch : s))).toEqual([1, 2, 3, 4]);
    expect(r.violations).toEqual([]);
    expect(r.p2Granted).toBe(false);
    // It is told why, and its dialing does not make the members report a configuration mismatch.
    expect(r.p2ToldRemoved).toBe(true);
    expect(r.p0Ready).toBe(true);
  });

  it('a change retried by its own run after its hold ended is reported made', () => {
    const r = ownChangeRetried();
    expect(r.violations).toEqual([]);
    expect(r.outcome).toEqual({ epoch: 1, members: 'p0:voter,p1:voter,p2:voter,p3:learner' });
  });

  it('member remove asked of the member removed answers the view that removes it', () => {
    const r = removedAsksItself();
    expect(r.violations).toEqual([]);
    expect(r.removed).toEqual({ epoch: 1, members: 'p0:voter,p1:voter,p2:leaving' });
    expect(r.retired).toEqual({ epoch: 2, members: 'p0:voter,p1:voter' });
  });

  it('a twin told of its newer process stays out when a peer that never met that one refuses it as evicted', () => {
    const r = twinRefusedByPeerBlindToNewer();
    expect(r.toldOfY).toBe(true);
    expect(r.refusedByBlindPeer).toBe(true);
    expect(r.violations).toEqual([]);
    expect(r.xStayedOut).toBe(true);
    expect(r.ySuperseded).toBe(false);
    expect(r.xRejoinedAboveY).toBe(true);
  });

  it('a restarted peer that learnt a member left does not wait for it when it meets its process', () => {
    const r = restartMeetsLeftMember();
    expect(r.removed).toEqual({ epoch: 1, members: 'p0:voter,p1:leaving,p2:voter,p3:voter' });
    expect(r.violations).toEqual([]);
    expect(r.p3Granted).toBe(true);
    expect(r.p0Granted).toBe(true);
  });

  it('catches the planted bugs of those two fixes: the twin rejoins above its newer process; the restarted peer waits for the member that left', async () => {
    const twin = (await planted('zombie-forgets-newer')).twinRefusedByPeerBlindToNewer();
    expect(twin.xStayedOut).toBe(false);
    expect(twin.violations.join('\n')).toMatch(/zombie: p0 \(process 1\) rejoined as [\d.]+ above process \d+'s [\d.]+, which lives/);
    const left = (await planted('left-member-rejoins-ack-set')).restartMeetsLeftMember();
    expect(left.violations).toEqual([]);
    // p3 waits for p1 for good; p0 is granted since p1, which holds p3's new incarnation waiting,
    // tells it its LEAVE (rule P6), so p3 may ack without p1 (it counts p1 as gone).
    expect([left.p3Granted, left.p0Granted]).toEqual([false, true]);
  });

  it('the liveness check lets wait, and names, only the peers that wait for a removed member down that they never met (simulator seed 171 --changes)', () => {
    const r = runSeed({ seed: 171, changes: true });
    expect(r.violations).toEqual([]);
    expect(r.excused.map((e) => e.split(',')[0])).toEqual(['p0 waits for p5', 'p3 waits for p5', 'p7 waits for p5']);
  });
});
