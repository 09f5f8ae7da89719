/**
 * The planted bugs the simulator must catch (issue 12, "Mutation score"): one line each,
 * in the production code behind a flag that only the simulator sets. They cover the
 * protocol core (core/faults.ts), the eviction rules (core/membership.ts), the mesh
 * (transport/mesh-options.ts) and the runtime's timing rules (runtime/faults.ts); `no-fifo`
 * lives in the simulated network, which then lets messages of one direction overtake each
 * other, breaking the FIFO premise of the ack rule.
 *
 * The regression mutants revert the fix of a bug a seed once found (named in the fix's
 * commit): `npm run sim -- --mutants` shows each is caught, so no regression seed is a
 * seed that could no longer fail.
 */
import type { PlantedFaults } from '../../src/runtime/faults.js';

/** Every mutant, with the layer and the one-line deviation it plants. */
const mutants = {
  'ack-ge': { machine: { ackGe: true } },
  'no-fifo': {},
  'clock-reset': { machine: { clockReset: true } },
  'no-state-transfer': { machine: { noStateTransfer: true } },
  'bad-tiebreak': { machine: { badTiebreak: true } },
  'semaphore-overcount': { machine: { semaphoreOvercount: true } },
  'no-self-fence': { machine: { noSelfFence: true } },
  'accept-evicted': { machine: { acceptEvicted: true }, mesh: { acceptEvicted: true } },
  'synced-on-handshake': { machine: { syncedOnHandshake: true } },
  'issue-without-lease': { machine: { issueWithoutLease: true } },
  'keep-waiters-on-lease-loss': { machine: { keepWaitersOnLeaseLoss: true } },
  'evict-unmet-incarnation': { machine: { evictUnmetIncarnation: true } },
  'ack-while-unsynced': { machine: { ackWhileUnsynced: true } },
  'evict-without-majority': { membership: { evictWithoutMajority: true } },
  'confirm-from-arrival': { membership: { confirmFromArrival: true } },
  'echo-despite-promise': { membership: { echoDespitePromise: true } },
  'hb-clock-while-pending': { runtime: { heartbeatClockWhilePending: true } },
  'forget-predecessor': { membership: { forgetPredecessor: true } },
  'no-lease-check-before-event': { runtime: { noLeaseCheckBeforeEvent: true } },
  'lease-from-arrival': { runtime: { leaseFromArrival: true } },
  'no-suspend-detect': { runtime: { noSuspendDetect: true } },
  'ignore-boot-clock': { runtime: { ignoreBootClock: true } },
  'join-on-older-eviction': { runtime: { joinOnOlderEviction: true } },
  'act-while-superseded': { runtime: { actWhileSuperseded: true } },
  'ack-without-quorum': { machine: { ackWithoutQuorum: true } },
  'forget-promises-on-rejoin': { membership: { forgetPromisesOnRejoin: true } },
  'zombie-echoes': { runtime: { zombieEchoes: true } },
  'no-dial-now': { mesh: { noDialNow: true } },
  'sync-on-unready': { machine: { syncOnUnready: true } },
  'zombie-rejoins': { runtime: { zombieRejoins: true } },
  'zombie-confirms': { runtime: { zombieConfirms: true } },
  'forget-promises-on-restart': { runtime: { forgetPromisesOnRestart: true } },
  'forget-quiet-on-rejoin': { runtime: { forgetQuietOnRejoin: true } },
  'forget-successor-heard': { membership: { forgetSuccessorHeard: true } },
  'confirm-waiting-successor': { membership: { confirmWaitingSuccessor: true } },
  'last-despite-successor': { membership: { lastDespiteSuccessor: true } },
  'confirm-for-evict-ms': { membership: { confirmForEvictMs: true } },
  'forget-echo-bound': { runtime: { forgetEchoBound: true } },
  'count-bound-under-way': { runtime: { countBoundUnderWay: true } },
  'promise-bound-short': { runtime: { promiseBoundShort: true } },
  'echo-bound-short': { runtime: { echoBoundShort: true } },
  'forget-incarnation-floor': { runtime: { forgetIncarnationFloor: true } },
  'grant-on-one-part': { machine: { grantOnOnePart: true } },
  'zombie-renews-lease': { runtime: { zombieRenewsLease: true } },
  'zombie-suspects': { runtime: { zombieSuspects: true } },
  'zombie-counts-confirmations': { runtime: { zombieCountsConfirmations: true } },
  'zombie-keeps-waiters': { runtime: { zombieKeepsWaiters: true } },
  'refresh-keeps-old-expiry': { runtime: { refreshKeepsOldExpiry: true } },
  'fingerprint-ignores-order': { runtime: { fingerprintIgnoresOrder: true } },
  'fingerprint-ignores-timings': { runtime: { fingerprintIgnoresTimings: true } },
  'pieces-ack': { runtime: { piecesAck: true } },
} as const satisfies Record<string, PlantedFaults>;

/** The name of one mutant, as `--mutant` takes it. */
export type MutantName = keyof typeof mutants;

/** Every mutant, in the order the mutation table runs them. */
export const mutantNames = Object.keys(mutants) as MutantName[];

/** Narrows a CLI string to a mutant name. */
export function isMutantName(s: string): s is MutantName {
  return Object.hasOwn(mutants, s);
}

/** The planted faults a mutant turns on (none for the network's own mutant). */
export function plantedFaultsOf(mutant: MutantName | undefined): PlantedFaults {
  return mutant === undefined ? {} : mutants[mutant];
}

/**
 * The chance of all-or-nothing requests a mutant's seeds run with: the multi-lock mutant
 * needs them, every other mutant runs the workload its regression seed was found with.
 */
export function multiChanceOf(mutant: MutantName | undefined): number | undefined {
  return mutant === 'grant-on-one-part' ? 0.3 : undefined;
}

/** True when the mutant lets the network reorder messages on one link. */
export function reordersLinks(mutant: MutantName | undefined): boolean {
  return mutant === 'no-fifo';
}
