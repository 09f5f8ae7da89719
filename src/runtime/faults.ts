/**
 * Planted bugs ("mutants") of the runtime's timing rules, one line each, that the
 * simulator must catch (issue 12, "Mutation score"). Production never sets any of them.
 * Together with the core's (core/faults.ts), the eviction logic's (core/membership.ts)
 * and the mesh's (transport/mesh-options.ts), they are what `npm run sim -- --mutants` runs.
 */
import type { MachineFaults } from '../core/faults.js';
import type { MembershipFaults } from '../core/membership.js';
import type { MeshFaults } from '../transport/mesh-options.js';

/** The runtime's own planted bugs. */
export interface RuntimeFaults {
  /** Heartbeats carry the clock even while payloads wait unsent (breaks rule 3a's FIFO premise). */
  readonly heartbeatClockWhilePending: boolean;
  /** The lease is not re-checked before each event and client call, only on its timer. */
  readonly noLeaseCheckBeforeEvent: boolean;
  /** An echo extends the lease from its arrival, not from the heartbeat's send time. */
  readonly leaseFromArrival: boolean;
  /** A suspend of the host is not counted: the lease clock is the bare monotonic clock. */
  readonly noSuspendDetect: boolean;
  /** A suspend is counted by the wall clock alone, though the OS tells a boot clock (a wall clock stepped back during it hides it). */
  readonly ignoreBootClock: boolean;
  /** A waiting successor joins on the eviction of any older incarnation (seed 404471's bug). */
  readonly joinOnOlderEviction: boolean;
  /** A superseded incarnation keeps its lease and its eviction decisions (seed 152084's bug). */
  readonly actWhileSuperseded: boolean;
  /** A superseded incarnation still echoes heartbeats (seed 109815's bug). */
  readonly zombieEchoes: boolean;
  /** A superseded incarnation still confirms suspicions (seed 300379's bug). */
  readonly zombieConfirms: boolean;
  /** A restarted process ignores the promise bound on disk: it echoes at once (the crash-restart hole). */
  readonly forgetPromisesOnRestart: boolean;
  /** A rejoin ends the quiet a restart began: the new incarnation echoes at once (seed 906566's bug). */
  readonly forgetQuietOnRejoin: boolean;
  /** A restart or rejoin lets peers join at once, though an echo of the previous one may still vouch (seed 903454's bug). */
  readonly forgetEchoBound: boolean;
  /** A bound write still under way counts as on disk: a message leaves on it (the slow-disk hole of bounds.ts). */
  readonly countBoundUnderWay: boolean;
  /** The promise bound is written evict_ms ahead, not 2 x evict_ms: a confirmation may leave with evict_ms / 2 of it left. */
  readonly promiseBoundShort: boolean;
  /** The echo bound is written 1.5 x lease_ms ahead, not 2 x 1.5 x lease_ms: an echo may leave with 0.75 x lease_ms of it left. */
  readonly echoBoundShort: boolean;
  /** A restart's incarnation starts at its wall clock alone, not above the high-water mark (seed 1043577's bug). */
  readonly forgetIncarnationFloor: boolean;
  /** A superseded incarnation, once evicted, rejoins above the newer one while that one lives (seed 107362's bug). */
  readonly zombieRejoins: boolean;
  /** A superseded incarnation's lease is still renewed by echoes (its holds outlive its supersession). */
  readonly zombieRenewsLease: boolean;
  /** A superseded incarnation still suspects silent peers (its membership still ticks). */
  readonly zombieSuspects: boolean;
  /** A superseded incarnation still counts the confirmations its suspicions get. */
  readonly zombieCountsConfirmations: boolean;
  /** A superseded incarnation does not fence: its waiters wait for their timeout or its lease. */
  readonly zombieKeepsWaiters: boolean;
  /** A refresh does not cancel the hold's earlier expiry: a refreshed hold ends at its old TTL. */
  readonly refreshKeepsOldExpiry: boolean;
  /** The cluster fingerprint leaves out the order of the peers: a host that lists them in another order is let in. */
  readonly fingerprintIgnoresOrder: boolean;
  /** The cluster fingerprint leaves out heartbeat_ms, lease_ms and evict_ms: a host with other timings is let in. */
  readonly fingerprintIgnoresTimings: boolean;
  /** Every piece of a packet split to fit a frame keeps the packet's mark: the first pieces' clock acks what later pieces bring. */
  readonly piecesAck: boolean;
}

/** Every planted bug a peer runtime can be built with, by layer. */
export interface PlantedFaults {
  readonly machine?: Partial<MachineFaults>;
  readonly membership?: Partial<MembershipFaults>;
  readonly mesh?: Partial<MeshFaults>;
  readonly runtime?: Partial<RuntimeFaults>;
}
