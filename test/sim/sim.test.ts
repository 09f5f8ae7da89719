/**
 * The simulator as a test, on the production runtime: a thousand seeds with no invariant
 * violated, seeds with random connection breaks, determinism, and every planted bug caught
 * by the seed recorded for it, which passes without the bug: each regression seed is proven
 * to fail when its fix is reverted. Seeds start at SEED (default 1) and are printed, so any
 * failure reproduces with `npm run sim -- --seed <S> --seeds 1`. The full mutation table
 * (every mutant within 2000 seeds) is `npm run sim -- --mutants`.
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { timingDefaults } from '../../src/config.js';
import { seedFrom } from '../support/seed.js';
import type { MutantName } from './mutants.js';
import { changesOf, multiChanceOf, mutantNames, proclaimChanceOf } from './mutants.js';
import { dropPlanted, simFor } from './planted.js';
import type { RunOptions, RunResult } from './run.js';
import { runSeed } from './run.js';
import { scenarioFor } from './scenarios.js';

const baseSeed = seedFrom('SEED', process.env, 1);
const chunkSeeds = 250;
const chunks = 4;

interface Batch {
  grants: number;
  failures: RunResult[];
}

function runSeeds(first: number, count: number, net: 'fifo' | 'link' = 'fifo'): Batch {
  const batch: Batch = { grants: 0, failures: [] };
  for (let seed = first; seed < first + count; seed++) {
    const result = runSeed({ seed, net });
    batch.grants += result.grants;
    if (result.violations.length > 0) batch.failures.push(result);
  }
  return batch;
}

/**
 * 60 seeds on each network with an opt-in workload (`extra`): from `baseSeed + offset` on the
 * FIFO network and 100,000 above that on the link network. `flags` are the CLI's for it
 * (null: run here only).
 */
function runBothNetworks(offset: number, extra: Pick<RunOptions, 'proclaimChance' | 'multiChance' | 'timing' | 'changes'>, flags: string | null, count = 60): { failures: string[]; results: RunResult[] } {
  const failures: string[] = [];
  const results: RunResult[] = [];
  for (const [first, net] of [[baseSeed + offset, 'fifo'], [baseSeed + offset + 100_000, 'link']] as const) {
    if (flags !== null) console.log(`reproduce with: npm run sim -- --seed ${first} --seeds ${count}${flags}${net === 'link' ? ' --net link' : ''}`);
    for (let seed = first; seed < first + count; seed++) {
      const r = runSeed({ seed, net, ...extra });
      results.push(r);
      if (r.violations.length > 0) failures.push(`seed ${seed} --net ${net}: ${r.violations[0] ?? ''}`);
    }
  }
  return { failures, results };
}

function report(batch: Batch, net: 'fifo' | 'link'): void {
  const first = batch.failures[0];
  if (first !== undefined) console.log(`seed ${first.seed}: ${first.violations.join('\n')}\nreproduce with: npm run sim -- --seed ${first.seed} --seeds 1${net === 'link' ? ' --net link' : ''}`);
}

/**
 * For every mutant caught so far, the first seed that catches it (`npm run sim -- --mutants`,
 * which counts a seed only where it passes without the bug): the regression seeds. Several
 * of these mutants revert a fix that a seed once found (named in the mutant's doc comment).
 */
type RegressionSeed = number | { readonly seed: number; readonly net: 'link' };

const regressionSeeds: Partial<Readonly<Record<MutantName, RegressionSeed>>> = {
  'ack-ge': 3,
  'no-fifo': 1,
  // Seed 9 until the hidden-suspend episode (drawn last) came to play in it.
  'clock-reset': 6,
  'no-state-transfer': 1,
  // bad-tiebreak, no-self-fence, forget-predecessor, zombie-suspects and zombie-keeps-waiters:
  // seed 2 until a bound episode (Scenario.boundEpisode, drawn last) came to play in it.
  'bad-tiebreak': 4,
  'semaphore-overcount': 2,
  // Seed 13 until a restart episode (Scenario.restartEpisode, drawn last) came to play in it.
  'no-self-fence': 14,
  'accept-evicted': 5,
  // Seed 17 --net link until a restart episode came to play in it; none of 18..157 --net link
  // nor 1..200 on the FIFO network catches it since. Seed 280 --net link until zombies fell
  // silent (finding F82).
  'synced-on-handshake': { seed: 57, net: 'link' },
  'issue-without-lease': 16,
  'keep-waiters-on-lease-loss': 33,
  'evict-unmet-incarnation': 349,
  // Seed 6298 (past the first 2000) until the twin-pair episode (test/sim/twin-episodes.ts):
  // a restarted peer meets a twin, the old process holding a lock out of its reach.
  'ack-while-unsynced': 57,
  'ack-without-quorum': 32,
  // A frozen process resumes beside its twin (twin-episodes.ts) and rejoins above it: the
  // checker's staying-out property (test/sim/cluster.ts).
  'zombie-rejoins': 48,
  'evict-without-majority': 5,
  'confirm-from-arrival': 18,
  // echo-despite-promise, hb-clock-while-pending, lease-from-arrival and
  // fingerprint-ignores-timings: seeds 129, 927, 67 and 43 until a late fast confirmation
  // (Scenario.boundEpisode) came to play in them; no seed of 1..2000 on the FIFO network
  // catches hb-clock-while-pending since, and its link seed 1119 moved to 1521 with the
  // hidden-suspend episode (the only one of 1..2500 --net link); the twin-pair episode came
  // to play in 1521 too, and no seed of 1..4000 --net link catches it since (notYetCaught).
  'echo-despite-promise': 37,
  'forget-predecessor': 4,
  // Seed 32 until the twin-pair episode (drawn last) came to play in it.
  'no-lease-check-before-event': 1,
  'lease-from-arrival': 132,
  'no-suspend-detect': 5,
  // Caught by the successor rule's check (test/sim/cluster.ts), not only by a double holder.
  'join-on-older-eviction': 128,
  // forget-incarnation-floor and forget-successor-heard: caught by the scripted scenarios
  // steppedBackBelowEvicted and replacedSuccessorSuspected, and since the restart episodes
  // (Scenario.restartEpisode, finding F55) by seeds 30 and 13 on both networks.
  'forget-incarnation-floor': 30,
  'forget-successor-heard': 13,
  // Runs with all-or-nothing requests (multiChanceOf): granted on one of its locks' queues only.
  'grant-on-one-part': 2,
  // Found with all-or-nothing requests, where a duplicate process's clock ran far from the
  // other's; no plain seed of 1..300 on either network reaches it.
  'hwm-overwritten-by-twin': { seed: 17, net: 'link' },
  // Caught by the checker's TTL and zombie properties (docs/design.md section 9): a refreshed
  // hold that ends at its old expiry; a superseded process that renews its lease, suspects,
  // counts confirmations, or leaves its waiters waiting.
  'refresh-keeps-old-expiry': 1,
  // A host's sleep hidden by its wall clock stepped back (the bound episode `hiddenSuspend`,
  // test/sim/bound-episodes.ts; first seed 100022 --net link too): counted by the wall clock
  // alone, the sleeper wakes holding beside the peer the others granted meanwhile.
  'ignore-boot-clock': 1,
  // Seed 32 until the twin-pair episode (drawn last) came to play in it.
  'zombie-renews-lease': 40,
  'zombie-suspects': 4,
  'zombie-keeps-waiters': 4,
  // A zombie that echoes or confirms (the checker's zombie property since issue 39's twin
  // work: it confirms and echoes nothing); one that goes on acting is caught by the waiter
  // property first. sync-on-unready: a plain crash and restart of two peers, whose unready
  // packets synced the restarted peer too early (a semaphore over its limit).
  // zombie-echoes 29, sync-on-unready 17, forget-quiet-on-rejoin 263, confirm-waiting-successor
  // 73 and fingerprint-ignores-timings 85 until the restart, twin-pair or wide-eviction draws
  // (all after every other draw) came to play in them.
  'zombie-echoes': 8,
  // Seed 163 until zombies fell silent (finding F82); 184 plays a twin elsewhere (twin-episodes.ts).
  'zombie-confirms': 184,
  'act-while-superseded': 4,
  'sync-on-unready': 27,
  // A host restarted with a config of its own (Scenario.misconfigEpisode): ahead of a peer it
  // swapped places with, each ranks its own request first on a tie; with three times the
  // lease, it holds on after the others evicted it.
  'fingerprint-ignores-order': 100,
  // Seed 109 until the twin-pair episode `twinElsewhere` (drawn last) came to play in it.
  'fingerprint-ignores-timings': 110,
  // A seed with 256-byte frames (Scenario.frameBytes), where packets leave in pieces: a
  // first piece's clock acks a request still in a later piece, two exclusive holders. (Seed
  // 73 until the waiting-successor episode, drawn last, came to play in it.)
  'pieces-ack': 92,
  // A 3-peer seed with a waiting-successor episode (Scenario.waitingSuccessorEpisode): the
  // peer that echoes the waiting successor confirms it silent, and it is evicted in its lease.
  'confirm-waiting-successor': 198,
  // The bound episodes (test/sim/bound-episodes.ts, Scenario.boundEpisode; issue 39), each
  // with the schedule its rule guards written at the episode. A host on a slow disk crashes
  // as the bound of its echoes runs short, beside a twin of the peer it echoed (two peers):
  'echo-bound-short': 14,
  'forget-echo-bound': 21,
  'count-bound-under-way': 124,
  // A confirmer on the fastest clock and a slow disk crashes after confirming; the suspecter,
  // on the slowest clock, gets the last confirmations it needs late (an odd cluster of 5+);
  // in a third of them a second process starts beside the restarted one.
  'promise-bound-short': 98,
  'forget-promises-on-restart': 52,
  'forget-quiet-on-rejoin': 528,
  // Only once evict_ms is drawn wider than its floor (drawWideEviction, finding F58).
  'bound-reaches-swapped': 74,
  // The fastest-clocked confirmer's confirmations reach the slowest-clocked suspecter 0.5 to
  // 1 evict_ms of its clock late, after the confirmer's promise ended (an odd cluster).
  'confirm-for-evict-ms': 20,
  // Run with holders announcing meta (proclaimChanceOf), caught by the META check
  // (test/sim/meta-check.ts): a peer that heard past a holder's META still shows the old meta.
  'meta-ignored': 1,
  'meta-not-sent': 1,
  // Changes of the members (--changes, changesOf): an ordinal reused is caught by the
  // checker's view property; a learner counted in the ack sets leaves a request waiting in the
  // liveness phase; a leaving member dropped from them lets a token go backwards (seed 2, a
  // stall, until the proposer faults of test/sim/proposer-faults.ts came to play in it). A view
  // chosen at the holder's own acceptance: the proposer, cut off as it commits, holds a view
  // of an epoch for which the others choose another (two views for one epoch).
  'learner-counted-as-voter': 1,
  'leaving-dropped-early': 33,
  'reused-ordinal': 67,
  'chosen-at-one-acceptance': 53,
  // An acceptance below the promise: a request on the view lock overtaken on its way to some voters
  // (test/sim/proposer-faults.ts; the scenario racedBallotsOvertaken too) is chosen with their
  // acceptances, and the later request, granted on their first head acks, chooses another view.
  'accept-without-promise': 85,
  // A learner counted among an eviction's voters: a learner and one voter evict a voter whose
  // lease another voter's echo holds (seed 242 --net link found it, until the rolling upgrade
  // and the proposer faults came to play in it).
  'eviction-counts-non-voters': 260,
  // A view applied that removes the voter whose echo carried a peer's lease: its holds outlive
  // the event (seed 9 found it, and now ends in a stall of its own).
  'view-without-lease-check': { seed: 110, net: 'link' },
  // Protocol levels (rule P9), with the rolling upgrade --changes draws (test/sim/upgrader.ts),
  // caught by the checker's levels property (test/sim/level-check.ts): a raise while a member
  // runs this release leaves it running at 11; a downgrade racing a raise comes back on this
  // release and its stream stays up to a peer that applies 11 (no cut), or is let in by one
  // that runs at 11 already (no refusal).
  'raise-unspoken': 41,
  'admit-below-level': 102,
  'no-drop-below': 102,
  // The fixes of the changes' runtime, each reverted, caught by the seed that found its bug: a
  // restarted peer waits for a member that left, whose process it met (commit fc1244c; the
  // review scenario restartMeetsLeftMember too); a LEFT that removes the last member a
  // request waited for leaves it waiting (a86f82a; seed 7 --net link found it, until the proposer
  // faults came to play in it); a zombie told of its newer process rejoins
  // below it on the refusal of a peer that never met that one (11df3a5; the review scenario
  // twinRefusedByPeerBlindToNewer too); a member that left, which acts on no membership of its
  // own once removed, tells no LEAVE to a successor it holds waiting for its predecessor's
  // eviction, which the voters, both restarted since, never decide (seed 279). The first moved
  // from seed 177 to 170 when membership messages came to name their epoch (rule P4), to 1
  // when the change overtaken came to play in 170, to 2 when the LEAVE told to a held
  // successor came to play in 1, and to 5 when a held successor's VIEW came to be taken at once
  // (F85); the second from 75 --net link to 222 then.
  'left-member-rejoins-ack-set': 5,
  'left-without-issuing': 222,
  'zombie-forgets-newer': 45,
  'left-silent-to-successor': 279,
  // A twin on a host of its own (the twin-pair episode `twinElsewhere`) reaches two of the
  // three other peers and dies; the third never met it and keeps hearing the zombie it made.
  'zombie-heard': 3,
  // A zombie of p0 holds p3's restarted incarnation waiting and takes the VIEW it sends (a
  // removal): the view's fewer voters count the zombie's old echoes anew (F85's fix).
  'zombie-takes-held-view': 626,
};

/** The violation a regression seed must report, where the mutant breaks a property of its own. */
const violationOf: Partial<Readonly<Record<MutantName, RegExp>>> = {
  'meta-ignored': /meta: .* not the latest/,
  'meta-not-sent': /meta: .* not the latest/,
  'reused-ordinal': /view: ordinal \d+ given to/,
  'chosen-at-one-acceptance': /view: p\d+ \(process \d+\) applied .* at epoch \d+, another data dir/,
  'accept-without-promise': /view: p\d+ \(process \d+\) applied .* at epoch \d+, another data dir/,
  'eviction-counts-non-voters': /eviction: p\d+ \(process \d+\) evicted p\d+ .* while its lease held/,
  'view-without-lease-check': /self-fencing: p\d+ \(process \d+\) has no lease/,
  'raise-unspoken': /levels: p\d+ \(process \d+\) runs at protocol level 11; its binary speaks 9 to 10/,
  'admit-below-level': /levels: p\d+ \(process \d+\) runs at protocol level 11 with a stream up to p\d+ \(process \d+\), whose binary speaks 9 to 10/,
  'no-drop-below': /levels: p\d+ \(process \d+\) runs at protocol level 11 with a stream up to p\d+ \(process \d+\), whose binary speaks 9 to 10/,
  'left-member-rejoins-ack-set': /liveness: \d+ request\(s\) stuck/,
  'left-without-issuing': /liveness: \d+ request\(s\) stuck/,
  'zombie-forgets-newer': /zombie: p\d+ \(process \d+\) rejoined as [\d.]+ above process \d+'s/,
  'left-silent-to-successor': /liveness: \d+ request\(s\) stuck/,
  'zombie-heard': /liveness: \d+ request\(s\) stuck/,
  'zombie-takes-held-view': /zombie: p\d+ \(process \d+\), superseded since \d+ms, renewed its lease/,
};

/**
 * Mutants a scripted scenario catches (test/sim/scenarios.ts, `scenarioFor`; checked with
 * the mutant and without in test/sim/scenarios.test.ts), most of them because no seed of
 * the first 2000 does. Those of the persisted bounds and of the confirmations' count
 * (`promise-bound-short`, `echo-bound-short`, `count-bound-under-way`, `forget-echo-bound`,
 * `forget-promises-on-restart`, `forget-quiet-on-rejoin`, `confirm-for-evict-ms`) are caught
 * by the bound episodes' seeds above too (issue 39); their scenarios stay. So are the twins'
 * (`zombie-echoes`, `zombie-confirms`, `act-while-superseded`, `sync-on-unready`,
 * `zombie-rejoins`, `ack-without-quorum`, `ack-while-unsynced`: the checker's zombie
 * properties and the twin-pair episodes, finding F56); what each one's schedule needs, and
 * the long-run seed that once found it, below. Of the others:
 * `forget-promises-on-rejoin` (seed 162227 found it before the mesh's dial-now changed that
 * run) needs a confirmer evicted right after it confirmed while the suspect stays reachable
 * to it alone; `zombie-rejoins` (seed 107362 of a
 * long run, before unready packets stopped syncing) needs a frozen process whose id a newer
 * one took to resume past its eviction; `zombie-confirms` (seed 300379 of a long run, before
 * restarted confirmers kept their promises) needs a suspecter that never met the newer twin,
 * which died, while the peer it suspects is still leased through that twin's echoes;
 * `sync-on-unready` (seed 89 until restarted confirmers kept their promises) needs a
 * restarted peer that meets a new twin before the old one, which grants meanwhile;
 * `no-dial-now` (seed 258 until the fifth session's last changes) shows as a slower join
 * only, which no invariant of a seed run flags: the scenario times the link;
 * `zombie-echoes` (seed 109815 of a long run, until twin episodes came to play alone) needs
 * a zombie that still reaches a peer its newer twin confirms silent; `ack-without-quorum` (seed 89 until restarted peers came to hold joins while their echoes
 * may vouch) needs a twin that meets only a peer restarted after its echoes lapsed;
 * `ack-while-unsynced` (seed 6298 above, past the first 2000, so hard to find again when a
 * change of timing moves it) needs a twin that meets every peer while one of them still
 * counts its predecessor; `zombie-counts-confirmations` (seed 399 until zombies fell silent,
 * finding F82; no seed of 1..550 nor 1..200 --net link since) needs a CONFIRM that reaches a
 * zombie for a suspicion it sent before it became one, held on a live connection meanwhile.
 */
const caughtByScenario: readonly MutantName[] = mutantNames.filter((m) => scenarioFor[m] !== undefined);

/**
 * Mutants the simulator does not catch yet: `hb-clock-while-pending` (its only seed of
 * 1..4000 --net link, 1521, came to play a twin-pair episode: a seed range to search further,
 * or an episode of its own); `last-despite-successor` (issue 39's third
 * survivor: an eviction says `last` though a successor waits; no seed of 1..2000 on either
 * network catches it, and no schedule that breaks a rule with it is known yet: a receiver
 * counts the peer gone only if it never met it and knows no newer incarnation, and then it
 * still keeps that peer in its view, so it grants nothing without the successor's ack).
 * (`gate-without-every-head-ack`, caught by no seed of 1..300 on either network, is caught by
 * the scripted scenario gateSkippedPastLaggard, two majorities that do not meet: a change that
 * times out lets go of the view lock though a member never passed its view back, F84; seed 626
 * --changes caught it as a stall until a held incarnation's VIEW was taken at once, F85.
 * `held-view-kept`, F85's own bug, is caught by the scripted scenario behindWhileHolderRestarts.
 * `act-while-superseded`, caught by
 * long-run seeds only until the sixth session, is caught by the zombie-echoes and
 * zombie-confirms scenarios: a zombie that goes on acting also echoes and confirms.
 * `evict-before-successor-joins` was retired as equivalent: docs/design.md section 3, "Why
 * each rule is there".) `evict-to-voters-only` (seed 3 --changes found its bug, a successor
 * held for good by a removed member that never heard the eviction): the LEAVE such a member
 * now tells the successor it holds (`left-silent-to-successor`'s fix) ends that wait too, and
 * no seed of 1..300 --changes on either network catches it since; test/sim/view-scenarios.test.ts shows removedHoldsSuccessor stall with
 * both planted, and test/core/membership.test.ts catches it alone.
 */
const notYetCaught: readonly MutantName[] = ['last-despite-successor', 'hb-clock-while-pending', 'evict-to-voters-only'];

/**
 * A seed range is a fixed amount of deterministic work, about 30 s on one core; the bound only
 * catches a hang. It is generous because the suite runs other files beside it on a 2-core
 * machine (real clusters of peer processes), which more than doubled one chunk's time in CI.
 */
const rangeTimeoutMs = 240_000;

// The patched copies of the build the planted bugs ran in (test/sim/planted.ts).
afterAll(dropPlanted);

describe('deterministic simulator on the production runtime', { timeout: rangeTimeoutMs }, () => {
  for (let chunk = 0; chunk < chunks; chunk++) {
    const first = baseSeed + chunk * chunkSeeds;
    it(`violates no invariant in seeds ${first}..${first + chunkSeeds - 1} and grants something`, () => {
      console.log(`reproduce with SEED=${baseSeed} (seeds ${first}..${first + chunkSeeds - 1})`);
      const batch = runSeeds(first, chunkSeeds);
      report(batch, 'fifo');
      expect(batch.failures.map((r) => r.seed)).toEqual([]);
      expect(batch.grants).toBeGreaterThan(chunkSeeds);
    });
  }

  it('keeps every invariant when connections also break at random (--net link)', () => {
    const first = baseSeed + 100_000;
    const count = 150;
    console.log(`reproduce with: npm run sim -- --seed ${first} --seeds ${count} --net link`);
    const batch = runSeeds(first, count, 'link');
    report(batch, 'link');
    expect(batch.failures.map((r) => r.seed)).toEqual([]);
    expect(batch.grants).toBeGreaterThan(count);
  });

  it('keeps every invariant when holders announce new meta (META) under the same faults, on both networks', () => {
    // Opt-in, with a generator of its own: the plain seed runs and their regression seeds stay as they are.
    // The META check (test/sim/meta-check.ts) holds every peer to the holders' latest meta.
    const { failures, results } = runBothNetworks(200_000, { proclaimChance: 0.5 }, ' --meta 0.5');
    expect(failures).toEqual([]);
    expect(results.reduce((n, r) => n + r.proclaims, 0)).toBeGreaterThan(500);
  });

  it('keeps every invariant, and leaves no request waiting forever, when requests name several locks at once, on both networks', () => {
    // Opt-in like META: each lock of an all-or-nothing grant is checked as a hold of that lock
    // (exclusion, token order), and the liveness phase finds any wait cycle as a stuck request.
    const { failures, results } = runBothNetworks(400_000, { multiChance: 0.3 }, ' --multi 0.3');
    expect(failures).toEqual([]);
    expect(results.reduce((n, r) => n + r.multiGrants, 0)).toBeGreaterThan(300);
  });

  it('keeps every safety invariant while changes of the members are drawn among the faults (--changes), on both networks', () => {
    // Opt-in like META (test/sim/changer.ts): adds, joins, promotions, removals and retirements
    // at random members, two raced at times. Liveness stalls are left out of this check for
    // now: a removed member down that a majority of the voters never met can be neither evicted
    // nor retired, and P4's catch-up is not built (docs/reconfiguration.md, "What is built").
    const { failures, results } = runBothNetworks(800_000, { changes: true }, ' --changes', 15);
    expect(failures.filter((f) => !/ liveness: /.test(f))).toEqual([]);
    expect(results.reduce((n, r) => n + r.changesMade, 0)).toBeGreaterThan(30);
  });

  it('keeps every invariant at the default timings (heartbeat 200, lease 1000, evict 1700: issue 15), on both networks', () => {
    // The drawn timings cover these ratios; this runs the defaults themselves, everything else drawn.
    const { failures, results } = runBothNetworks(600_000, { timing: { ...timingDefaults } }, ' --timing defaults', 20);
    expect(failures).toEqual([]);
    expect(results.every((r) => r.scenario.evictMs === timingDefaults.evictMs)).toBe(true);
    expect(results.reduce((n, r) => n + r.grants, 0)).toBeGreaterThan(40);
  });

  it('--jobs runs the same seeds in child processes and adds up the same summary, failing seeds included', () => {
    // The built CLI (npm test builds first), as a long run starts it.
    const cli = fileURLToPath(new URL('../../dist/test/sim/main.js', import.meta.url));
    const run = (args: string[]): string => {
      try {
        return execFileSync(process.execPath, [cli, ...args], { encoding: 'utf8' });
      } catch (err) {
        return String((err as { stdout?: unknown }).stdout ?? '');
      }
    };
    const plain = runSeeds(1, 12);
    expect(run(['--seeds', '12', '--seed', '1', '--jobs', '3'])).toMatch(new RegExp(`^sim: 12 seeds, ${plain.grants} grants, 0 violations$`, 'm'));
    const planted = run(['--seeds', '3', '--seed', '4', '--jobs', '2', '--mutant', 'clock-reset']);
    expect(planted).toMatch(/^failing seeds: 6$/m);
    expect(planted).toMatch(/^sim: 3 seeds, \d+ grants, 1 violations$/m);
  });

  it('replays a seed identically: same transcript, same grants', () => {
    const a = runSeed({ seed: baseSeed + 7, transcript: true });
    const b = runSeed({ seed: baseSeed + 7, transcript: true });
    expect(a.grants).toBeGreaterThan(0);
    expect(b.grants).toBe(a.grants);
    expect(b.transcript.lines()).toEqual(a.transcript.lines());
  });

  it('knows, for every planted bug, a seed that catches it or that it is not caught yet', () => {
    expect(mutantNames.filter((m) => regressionSeeds[m] === undefined && !notYetCaught.includes(m) && !caughtByScenario.includes(m))).toEqual([]);
  });

  for (const mutant of mutantNames) {
    const entry = regressionSeeds[mutant];
    if (entry === undefined) continue;
    const { seed, net } = typeof entry === 'number' ? { seed: entry, net: 'fifo' as const } : entry;
    const netFlag = net === 'link' ? ' --net link' : '';
    const multi = multiChanceOf(mutant);
    const meta = proclaimChanceOf(mutant);
    const workload = { ...(multi === undefined ? {} : { multiChance: multi }), ...(meta === undefined ? {} : { proclaimChance: meta }), ...(changesOf(mutant) ? { changes: true } : {}) };
    const changesFlag = changesOf(mutant) ? ' --changes' : '';
    it(`regression seed ${seed}${netFlag}${changesFlag} fails with the ${mutant} mutant and passes without it`, async () => {
      const planted = (await simFor(mutant)).run.runSeed({ seed, net, ...workload });
      console.log(`mutant ${mutant}, seed ${seed}: ${planted.violations[0] ?? 'NOT caught'} (reproduce with: npm run sim -- --seed ${seed} --seeds 1${netFlag}${changesFlag} --mutant ${mutant})`);
      expect(planted.violations.length).toBeGreaterThan(0);
      expect(planted.violations[0]).toMatch(violationOf[mutant] ?? /./);
      expect(runSeed({ seed, net, ...workload }).violations).toEqual([]);
    });
  }
});
