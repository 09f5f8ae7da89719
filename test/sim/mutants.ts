/**
 * The planted bugs the simulator must catch (issues 2 and 5, "Mutants"). Most live in the
 * core (`MachineFaults`); `evict-without-majority` lives in the eviction logic
 * (`MembershipFaults`); `no-fifo` lives in the simulated network, which then lets frames of
 * one direction overtake each other, breaking the FIFO premise of the ack rule.
 */
import type { MachineFaults } from '../../src/core/faults.js';
import type { MembershipFaults } from '../../src/core/membership.js';

/** Every mutant, in the order the mutation test runs them. */
export const mutantNames = ['ack-ge', 'no-fifo', 'clock-reset', 'no-state-transfer', 'bad-tiebreak', 'semaphore-overcount', 'evict-without-majority', 'no-self-fence', 'accept-evicted'] as const;

/** The name of one mutant, as `--mutant` takes it. */
export type MutantName = (typeof mutantNames)[number];

/** Narrows a CLI string to a mutant name. */
export function isMutantName(s: string): s is MutantName {
  return (mutantNames as readonly string[]).includes(s);
}

/** The core faults a mutant turns on (none for a network mutant). */
export function machineFaultsOf(mutant: MutantName | undefined): Partial<MachineFaults> {
  switch (mutant) {
    case undefined:
    case 'no-fifo':
    case 'evict-without-majority':
      return {};
    case 'no-self-fence':
      return { noSelfFence: true };
    case 'accept-evicted':
      return { acceptEvicted: true };
    case 'ack-ge':
      return { ackGe: true };
    case 'clock-reset':
      return { clockReset: true };
    case 'no-state-transfer':
      return { noStateTransfer: true };
    case 'bad-tiebreak':
      return { badTiebreak: true };
    case 'semaphore-overcount':
      return { semaphoreOvercount: true };
  }
}

/** The eviction faults a mutant turns on. */
export function membershipFaultsOf(mutant: MutantName | undefined): Partial<MembershipFaults> {
  return mutant === 'evict-without-majority' ? { evictWithoutMajority: true } : {};
}

/**
 * False for the accept-evicted mutant: the whole planted bug, as a real implementation would
 * have it. The mesh does not refuse an evicted incarnation (no refusal at the handshake, the
 * streams with it are kept), and the core processes its packets (`acceptEvicted`). A zombie
 * (a peer paused or cut off past evict_ms, back with its old incarnation) then reconnects,
 * resumes its streams, is never told it was evicted, regains a lease from the echoes and
 * grants on the acks of peers that no longer send it their requests.
 */
export function refusesEvicted(mutant: MutantName | undefined): boolean {
  return mutant !== 'accept-evicted';
}

/** True when the mutant lets the network reorder packets on one link. */
export function reordersLinks(mutant: MutantName | undefined): boolean {
  return mutant === 'no-fifo';
}
