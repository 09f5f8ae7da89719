/**
 * Planted bugs ("mutants") of the runtime's timing rules, one line each, that the
 * simulator must catch (issue 12, "Mutation score"). Production never sets any of them.
 * Together with the core's (core/faults.ts), the eviction logic's (core/membership.ts)
 * and the mesh's (transport/mesh-options.ts), they are what `npm run sim -- --mutants` runs.
 */
import type { MachineFaults, RuntimeFaults } from '../core/faults.js';
import type { MembershipFaults } from '../core/membership.js';
import type { MeshFaults } from '../transport/mesh-options.js';

/** Every planted bug a peer runtime can be built with, by layer. */
export interface PlantedFaults {
  readonly machine?: Partial<MachineFaults>;
  readonly membership?: Partial<MembershipFaults>;
  readonly mesh?: Partial<MeshFaults>;
  readonly runtime?: Partial<RuntimeFaults>;
}
