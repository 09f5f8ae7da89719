/**
 * A peer's monotonic clock (what `performance.now()` is to the runtime): local ms as a
 * linear function of virtual ms, with the peer's own rate and offset. Rates of any two
 * peers differ by at most the margin the config assumes (DESIGN section 5), so leases and
 * eviction are exercised exactly at the edge of what the design claims to survive.
 */
export class PeerClock {
  readonly rate: number;
  readonly offsetMs: number;

  constructor(opts: { rate: number; offsetMs: number }) {
    this.rate = opts.rate;
    this.offsetMs = opts.offsetMs;
  }

  /** The peer's local reading at virtual time `globalMs`. */
  local(globalMs: number): number {
    return this.offsetMs + this.rate * globalMs;
  }

  /** The virtual time at which the peer's clock reads `localMs`. */
  global(localMs: number): number {
    return (localMs - this.offsetMs) / this.rate;
  }
}
