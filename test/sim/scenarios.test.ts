/**
 * The scripted scenarios of test/sim/scenarios.ts, each checked in detail without its mutant
 * and with it (in the mutant's patched build: test/sim/planted.ts).
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { MutantName } from './mutants.js';
import type { Sim } from './planted.js';
import { dropPlanted, simFor } from './planted.js';
import { boundUnderWayTiming, confirmerRejoins, downLongThenBack, echoerCrashesOnShortBound, lateConfirmationFastConfirmer, slowConfirmerDiskCrashes, echoerDiskFails, frozenTwinResumes, replacedSuccessorSuspected, restartedEchoerMeetsTwin, slowEchoerDiskMeetsTwin, steppedBackBelowEvicted, suspendHiddenByWallStep, twinMeetsRestartedOnly, twinMetFirstByRestarted, unsyncedTwinAsked, waitingSuccessorSuspected, zombieAnswers, zombieAsked, zombieConfirmedLate, zombieEchoes } from './scenarios.js';

/** The scenarios as the build with `mutant` planted runs them. */
async function planted(mutant: MutantName): Promise<Sim['scenarios']> {
  return (await simFor(mutant)).scenarios;
}

// The patched copies of the build the planted bugs ran in (test/sim/planted.ts).
afterAll(dropPlanted);

describe('scripted scenarios on the production runtime', () => {
  it('a zombie echoes no heartbeat: the peer its newer twin confirms silent is not leased through it (seed 109815)', () => {
    const r = zombieEchoes();
    const tail = r.transcript.filter((l) => !/stream resumed|link up|link down|connection error|silent too long|cutting connection|stale_incarnation/.test(l)).slice(-60).join('\n');
    expect(r.violations, tail).toEqual([]);
    expect(r.evictedP, tail).toBe(true);
  });

  // The checker's zombie property (it echoes and confirms nothing) sees the zombie's first echo
  // or confirmation, before the eviction within P's lease that follows (finding F51).
  it('fails with the zombie-echoes mutant: the zombie echoes, which would keep the peer leased while it is evicted', async () => {
    expect((await planted('zombie-echoes')).zombieEchoes().violations.join('\n')).toMatch(/zombie: p1 \(process 2\), superseded since [\d.]+ms, went on deciding: echoes/);
  });

  it('fails with the act-while-superseded mutant too: a zombie that goes on acting echoes, which the checker sees first', async () => {
    expect((await planted('act-while-superseded')).zombieEchoes().violations.join('\n')).toMatch(/zombie: p1 \(process 2\), superseded since [\d.]+ms, went on deciding: echoes/);
  });

  it('a peer back after a long outage is dialed back at once by the peers it dials (seed 258)', () => {
    const r = downLongThenBack();
    expect(r.violations).toEqual([]);
    expect(r.linked).toEqual([true, true]);
  });

  it('fails with the no-dial-now mutant: the others wait out their redial backoff', async () => {
    expect((await planted('no-dial-now')).downLongThenBack().linked).not.toEqual([true, true]);
  });

  it('a restarted peer that meets a new twin first syncs on none of its packets before it can ack (seed 202828)', () => {
    const r = twinMetFirstByRestarted();
    const tail = r.transcript.filter((l) => !/membership message|stream resumed|link up|link down|connection error|silent too long|cutting connection|stale_incarnation/.test(l)).slice(-60).join('\n');
    expect(r.violations, tail).toEqual([]);
    expect(r.rGranted, tail).toBe(true);
  });

  it('fails with the sync-on-unready mutant: the restarted peer is granted below the old twin\'s grants', async () => {
    const r = (await planted('sync-on-unready')).twinMetFirstByRestarted();
    const tail = r.transcript.filter((l) => /GRANT|CRASH|START|evicted by/.test(l)).slice(-40).join('\n');
    expect(r.violations.join('\n'), tail).toMatch(/not above the previous grant/);
  });

  it('a zombie confirms no suspicion: the peer its newer twin echoes is not evicted through it (seed 300379)', () => {
    const r = zombieAsked();
    const tail = r.transcript.filter((l) => !/stream resumed|link up|link down|connection error|silent too long|cutting connection/.test(l)).slice(-60).join('\n');
    expect(r.violations, tail).toEqual([]);
    expect(r.transcript.some((l) => / p1 #2 .*a newer incarnation of this peer id is known/.test(l)), tail).toBe(true);
    expect(r.transcript.some((l) => / p2 #3 .*"t":"suspect","about":"p0"/.test(l)), tail).toBe(true);
  });

  it('fails with the zombie-confirms mutant: the zombie confirms, which would evict the peer while its lease holds', async () => {
    expect((await planted('zombie-confirms')).zombieAsked().violations.join('\n')).toMatch(/zombie: p1 \(process 2\), superseded since [\d.]+ms, went on deciding: confirmed/);
  });

  it('fails with the act-while-superseded mutant too: a zombie that goes on acting echoes as well', async () => {
    expect((await planted('act-while-superseded')).zombieAsked().violations.join('\n')).toMatch(/zombie: p1 \(process 2\), superseded since [\d.]+ms, went on deciding: echoes/);
  });

  it('a zombie counts no confirmation of a suspicion it sent before it became one (finding F82: no seed reaches it since zombies fell silent)', () => {
    const r = zombieConfirmedLate();
    const tail = r.transcript.filter((l) => !/stream resumed|link up|link down|connection error|silent too long|cutting connection/.test(l)).slice(-60).join('\n');
    expect(r.violations, tail).toEqual([]);
    // Not vacuous: p0's CONFIRM reached X's protocol, and X was a zombie by then.
    expect(r.zombieAtConfirms, tail).toEqual([true]);
  });

  it('fails with the zombie-counts-confirmations mutant: the zombie counts the late CONFIRM', async () => {
    expect((await planted('zombie-counts-confirmations')).zombieConfirmedLate().violations.join('\n')).toMatch(/zombie: p1 \(process 2\), superseded since [\d.]+ms, went on deciding: confirmations/);
  });

  it('a restarted peer lets no newcomer in while a heartbeat its previous process echoed may still vouch for a lease (seed 903454)', () => {
    const r = restartedEchoerMeetsTwin();
    const tail = r.transcript.filter((l) => /GRANT|END|CRASH|START|joins|waits|lease/.test(l)).slice(-40).join('\n');
    expect(r.violations, tail).toEqual([]);
    expect(r.yGranted, tail).toBe(true);
  });

  it('fails with the forget-echo-bound mutant: the twin is granted the lock its predecessor still holds', async () => {
    expect((await planted('forget-echo-bound')).restartedEchoerMeetsTwin().violations.join('\n')).toMatch(/L: 2 exclusive holders/);
  });

  it('a peer whose disk is slow echoes nothing past the bound on disk while the next one is still being written', () => {
    const r = slowEchoerDiskMeetsTwin();
    const tail = r.transcript.filter((l) => /GRANT|END|CRASH|START|joins|waits|lease/.test(l)).slice(-40).join('\n');
    expect(r.violations, tail).toEqual([]);
    expect(r.xLeasedAtCrash, tail).toBe(false);
    expect(r.yGranted, tail).toBe(true);
  });

  it('fails with the count-bound-under-way mutant: the echoes outlive the bound on disk, and the twin is granted the lock X still holds', async () => {
    const r = (await planted('count-bound-under-way')).slowEchoerDiskMeetsTwin();
    expect(r.xLeasedAtCrash).toBe(true);
    expect(r.violations.join('\n')).toMatch(/L: 2 exclusive holders/);
  });

  it('a peer whose data dir takes no writes echoes nothing once its echo bound runs short, and echoes again once a write succeeds', () => {
    const r = echoerDiskFails();
    const tail = r.transcript.filter((l) => /lease|persist|takes writes/.test(l)).slice(-20).join('\n');
    expect(r.violations, tail).toEqual([]);
    expect([r.p1LeaseAt(900), r.p1LeaseAt(4900), r.p1LeaseAt(6900)], tail).toEqual([true, false, true]);
    expect(r.transcript.filter((l) => /p0 #\d+ runtime: cannot persist how long an echo vouches/.test(l)), tail).toHaveLength(1);
    expect(r.transcript.some((l) => /p0 #\d+ runtime: the data dir takes writes again/.test(l)), tail).toBe(true);
  });

  it('a new process of an id acks nothing while only a restarted peer that never knew its predecessor let it in (seed 101577)', () => {
    const r = twinMeetsRestartedOnly();
    const tail = r.transcript.filter((l) => /GRANT|END|CRASH|START|joins|waits|lease/.test(l)).slice(-40).join('\n');
    expect(r.violations, tail).toEqual([]);
  });

  it('fails with the ack-without-quorum mutant: the restarted peer is granted the lock the old process holds', async () => {
    expect((await planted('ack-without-quorum')).twinMeetsRestartedOnly().violations.join('\n')).toMatch(/L: 2 exclusive holders/);
  });

  it('a confirmer evicted and rejoined right after confirming keeps its promise: the suspect gets no echo from it (seed 162227)', () => {
    const r = confirmerRejoins();
    const tail = r.transcript.filter((l) => !/membership message|stream resumed|link up|link down|connection error|silent too long|cutting connection/.test(l)).slice(-60).join('\n');
    expect(r.violations, tail).toEqual([]);
    expect([r.rejoined, r.evictedP], tail).toEqual([true, true]);
  });

  it('fails with the forget-promises-on-rejoin mutant: the suspect is evicted while its lease holds', async () => {
    expect((await planted('forget-promises-on-rejoin')).confirmerRejoins().violations.join('\n')).toMatch(/evicted p0 \(process 1\) while its lease held/);
  });

  it('a confirmer that crashes right after confirming and restarts keeps its promise from its data dir: it echoes nothing until it lapses', () => {
    const r = confirmerRejoins(4102);
    const tail = r.transcript.filter((l) => !/membership message|stream resumed|link up|link down|connection error|silent too long|cutting connection/.test(l)).slice(-60).join('\n');
    expect(r.violations, tail).toEqual([]);
    expect([r.rejoined, r.evictedP], tail).toEqual([true, true]);
  });

  it('fails with the forget-promises-on-restart mutant: the restarted confirmer echoes the suspect, evicted while its lease holds', async () => {
    expect((await planted('forget-promises-on-restart')).confirmerRejoins(4102).violations.join('\n')).toMatch(/evicted p0 \(process 1\) while its lease held/);
  });

  it('a restarted confirmer refused as stale (a second copy started beside it) rejoins still quiet: the promise binds the process, not the incarnation (seed 906566)', () => {
    const r = confirmerRejoins(4102, true);
    const tail = r.transcript.filter((l) => !/membership message|stream resumed|link up|link down|connection error|silent too long|cutting connection/.test(l)).slice(-60).join('\n');
    expect(r.violations, tail).toEqual([]);
    expect(r.transcript.some((l) => /p2 #\d+ runtime: rejoining as a new incarnation/.test(l)), tail).toBe(true);
    expect([r.rejoined, r.evictedP], tail).toEqual([true, true]);
  });

  it('fails with the forget-quiet-on-rejoin mutant: the rejoined confirmer echoes the suspect, evicted while its lease holds', async () => {
    expect((await planted('forget-quiet-on-rejoin')).confirmerRejoins(4102, true).violations.join('\n')).toMatch(/evicted p0 \(process 1\) while its lease held/);
  });

  it('a zombie tells its clients why at once: its waiter ends and a new request is refused with ERR_SUPERSEDED while its lease still holds', () => {
    const r = zombieAnswers();
    const tail = r.transcript.slice(-30).join('\n');
    expect(r.violations, tail).toEqual([]);
    // The lease has not lapsed yet: the fence ended the waiter, not the lease (until the
    // twentieth session no fence ran outside the act-while-superseded mutant, and the waiter
    // waited here for its timeout or the lease).
    expect(r.leaseValid, tail).toBe(true);
    expect(r.waiterOutcome, tail).toBe('ERR_SUPERSEDED');
    expect(r.askedOutcome, tail).toBe('ERR_SUPERSEDED');
    expect(r.ready, tail).toBe(false);
  });

  it('fails with the zombie-keeps-waiters mutant: the checker sees the zombie\'s waiter still waiting', async () => {
    expect((await planted('zombie-keeps-waiters')).zombieAnswers().violations.join('\n')).toMatch(/zombie: process \d+ of p1 is superseded, but its client's ref \d+ \(W\) still waits/);
  });

  // zombie-renews-lease: a zombie sends no heartbeat (finding F82), so only an echo already on
  // its way renews it under that mutant, which this schedule has not; seed 40 has (sim.test.ts).
  it('fails with the zombie-suspects mutant: the checker sees the zombie act (scenario zombieAsked)', async () => {
    expect((await planted('zombie-suspects')).zombieAsked().violations.join('\n')).toMatch(/zombie: p1 \(process \d+\), superseded since [\d.]+ms, went on deciding: suspicions 0 -> 1/);
  });

  it('a frozen process whose id a newer process took stays out while that one lives, and rejoins once it is evicted (seed 107362)', () => {
    const r = frozenTwinResumes();
    const tail = r.transcript.slice(-30).join('\n');
    expect(r.violations, tail).toEqual([]);
    expect(r.stayedOut, tail).toBe(true);
    expect(r.rejoinedAfter, tail).toBe(true);
  });

  it('fails with the zombie-rejoins mutant: the frozen process rejoins above the live one', async () => {
    expect((await planted('zombie-rejoins')).frozenTwinResumes().stayedOut).toBe(false);
  });
  it('a restart whose wall clock stepped back still sorts above its previous processes: an eviction of a dead one does not cover it (seed 1043577)', () => {
    const r = steppedBackBelowEvicted();
    expect(r.violations, r.transcript.slice(-40).join('\n')).toEqual([]);
    expect(r.yGranted).toBe(true);
    expect(r.yAboveX).toBe(true);
  });

  it('fails with the forget-incarnation-floor mutant: the eviction of the dead process covers the live one while its lease holds', async () => {
    const r = (await planted('forget-incarnation-floor')).steppedBackBelowEvicted();
    expect(r.violations.join('\n')).toMatch(/evicted p1 \(process \d+\) while its lease held/);
  });

  it('a new process whose predecessor may still hold a lease acks nothing, though every peer it met let it in or keeps it waiting (seed 6298)', () => {
    const r = unsyncedTwinAsked();
    const tail = r.transcript.filter((l) => /GRANT|END|START|CRASH|evicted by|waits/.test(l)).slice(-40).join('\n');
    expect(r.violations, tail).toEqual([]);
    // X's hold ends with its lease; the restarted peer is granted L only once X is evicted.
    expect(r.xEndedAtMs, tail).not.toBeNull();
    expect(r.rGranted, tail).toBe(true);
  });

  it('fails with the ack-while-unsynced mutant: the new process acks, and the restarted peer is granted L beside the old process', async () => {
    const r = (await planted('ack-while-unsynced')).unsyncedTwinAsked();
    expect(r.violations.join('\n')).toMatch(/L: 2 exclusive holders/);
  });

  it('a successor replaced by a newer one is confirmed silent only evict_ms after it was last heard, after its lease lapsed (seeds 2042388, 2048353)', () => {
    const r = replacedSuccessorSuspected();
    expect(r.violations, r.transcript.slice(-40).join('\n')).toEqual([]);
    // Y's lease, lent by p1's echoes while it waited, lapses; p2 evicts it only later, once p1 confirms.
    expect(r.yLeaseLapsedAtMs).not.toBeNull();
    expect(r.yEvictedAtMs).not.toBeNull();
    expect(r.yEvictedAtMs ?? 0).toBeGreaterThan(r.yLeaseLapsedAtMs ?? Infinity);
  });

  it('fails with the forget-successor-heard mutant: p1 confirms the replaced successor at once and it is evicted within its lease', async () => {
    const r = (await planted('forget-successor-heard')).replacedSuccessorSuspected();
    expect(r.violations.join('\n')).toMatch(/p2 \(process \d+\) evicted p0 \(process \d+\) while its lease held/);
  });

  it('a successor waiting behind a live, silent predecessor is not confirmed silent by the peer that echoes it (issue 39)', () => {
    const r = waitingSuccessorSuspected();
    const tail = r.transcript.filter((l) => /evicted by|waits until|joined|"t":"confirm"/.test(l)).slice(-30).join('\n');
    expect(r.violations, tail).toEqual([]);
    // p1 refuses to confirm Y, evicts X with p2's confirmation instead, and lets Y join.
    expect([r.yJoinedAtP1, r.yEvicted], tail).toEqual([true, false]);
  });

  it('fails with the confirm-waiting-successor mutant: p1 confirms the successor it echoes, and p2 evicts it within its lease', async () => {
    const r = (await planted('confirm-waiting-successor')).waitingSuccessorSuspected();
    expect(r.yEvicted).toBe(true);
    expect(r.violations.join('\n')).toMatch(/p2 \(process \d+\) evicted p0 \(process \d+\) while its lease held/);
  });

  it('a confirmation counts for evict_ms / 1.5 of the suspecter\'s clock only: a fast confirmer\'s promise outlasts it (issue 39)', () => {
    const r = lateConfirmationFastConfirmer();
    const tail = r.transcript.filter((l) => /evicted by|"t":"confirm"|lease/.test(l)).slice(-30).join('\n');
    expect(r.violations, tail).toEqual([]);
    // The window is driven: C's echoes lease X again when its late confirmations reach S, which refuses them.
    expect(r.xLeasedAtHeal, tail).toBe(true);
    expect(r.transcript.some((l) => / p1 #\d+ session: membership message .*"remote":"p2","t":"confirm","about":"p0"/.test(l)), tail).toBe(true);
    expect(r.xEvicted, tail).toBe(false);
  });

  it('fails with the confirm-for-evict-ms mutant: S counts the confirmation past C\'s promise and evicts X within its lease', async () => {
    const r = (await planted('confirm-for-evict-ms')).lateConfirmationFastConfirmer();
    expect(r.violations.join('\n')).toMatch(/p1 \(process \d+\) evicted p0 \(process \d+\) while its lease held/);
  });
  it('a confirmer on a slow disk that crashes right after confirming restarts quiet for longer than its promise (issue 39)', () => {
    const r = slowConfirmerDiskCrashes();
    const tail = r.transcript.filter((l) => /evicted by|quietForMs|lease/.test(l)).slice(-30).join('\n');
    expect(r.violations, tail).toEqual([]);
    // i evicts P once a's confirmations arrive, P's lease long lapsed; the restarted k stays quiet past it.
    expect(r.evictedP, tail).toBe(true);
    const quiet = r.transcript.map((l) => / p2 #\d+ session: .*"quietForMs":(\d+)/.exec(l)?.[1]).find((q) => q !== undefined);
    expect(Number(quiet), tail).toBeGreaterThan(3000);
  });

  it('fails with the promise-bound-short mutant: the restarted confirmer echoes P within its promise, and P is evicted within its lease', async () => {
    expect((await planted('promise-bound-short')).slowConfirmerDiskCrashes().violations.join('\n')).toMatch(/p1 \(process \d+\) evicted p0 \(process \d+\) while its lease held/);
  });
  it('an echoer on a slow disk that crashes with its echo bound running short holds joins past the lease it vouched for (issue 39)', () => {
    const r = echoerCrashesOnShortBound();
    const tail = r.transcript.filter((l) => /joinsHeldForMs|lease|joined|END/.test(l)).slice(-30).join('\n');
    expect(r.violations, tail).toEqual([]);
    expect(r.yGranted, tail).toBe(true);
  });

  it('fails with the echo-bound-short mutant: the restarted echoer lets Y in while X\'s lease from its last echo holds, and Y is granted L', async () => {
    expect((await planted('echo-bound-short')).echoerCrashesOnShortBound().violations.join('\n')).toMatch(/L: 2 exclusive holders/);
  });
  it('a confirmer whose promise bound write is still under way sends no confirmation past the bound on disk (issue 39)', () => {
    const r = slowConfirmerDiskCrashes(boundUnderWayTiming);
    const tail = r.transcript.filter((l) => /evicted by|quietForMs|lease/.test(l)).slice(-30).join('\n');
    expect(r.violations, tail).toEqual([]);
    // k's last confirmation left by 7.1 s and no longer counts when a's arrive: i does not evict P.
    expect(r.evictedP, tail).toBe(false);
  });

  it('fails with the count-bound-under-way mutant on the promise bound too: k confirms until it crashes, and P is evicted within its lease', async () => {
    expect((await planted('count-bound-under-way')).slowConfirmerDiskCrashes(boundUnderWayTiming).violations.join('\n')).toMatch(/p1 \(process \d+\) evicted p0 \(process \d+\) while its lease held/);
  });
});

describe('a suspend during which the wall clock is stepped back (issue 37)', () => {
  it('is counted by a host that tells a boot clock: its hold ends before the others grant L again', () => {
    const r = suspendHiddenByWallStep(2);
    expect(r.violations).toEqual([]);
    expect(r.otherGranted).toBe(true);
  });

  it('is hidden where there is no boot clock (the README assumption), and under ignore-boot-clock', async () => {
    expect(suspendHiddenByWallStep(1).violations.join('\n')).toMatch(/has no lease .* hold\(s\) still granted after its event/);
    expect((await planted('ignore-boot-clock')).suspendHiddenByWallStep(2).violations.length).toBeGreaterThan(0);
  });
});
