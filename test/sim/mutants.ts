/**
 * The planted bugs the simulator must catch (issue 2, "Mutants"). Five live in the core
 * (`MachineFaults`); `no-fifo` lives in the simulated network, which then lets packets of
 * one link overtake each other, breaking the FIFO premise of the ack rule.
 */
import type { MachineFaults } from '../../src/core/faults.js';

/** Every mutant, in the order the mutation test runs them. */
export const mutantNames = ['ack-ge', 'no-fifo', 'clock-reset', 'no-state-transfer', 'bad-tiebreak', 'semaphore-overcount'] as const;

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
      return {};
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

/** True when the mutant lets the network reorder packets on one link. */
export function reordersLinks(mutant: MutantName | undefined): boolean {
  return mutant === 'no-fifo';
}
