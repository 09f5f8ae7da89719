/**
 * Fault windows per peer: when a peer may have been without its lease (docs/design.md section 5),
 * and when its process died. The checker bounds the validity of a hold by the death of its
 * peer (a dead process holds no lease) and reports how many checked holds lay in a window;
 * it no longer excludes such holds (checker.ts says what bounds them instead).
 *
 * A peer's lease needs echoes of its own heartbeats from a majority of the configured
 * peers, itself included, and those echoes travel on the sockets it dials: through the
 * proxies of its OUTGOING links (LocalCluster `linkProxies`). So peer p is "degraded" while
 * p is paused, dead or twinned (a second process runs with its id), or while fewer than a
 * majority of {p} + {q running and link p -> q fully open} remain. The nemesis reports every
 * change of a peer or a link here; the degraded intervals are recorded per peer id (across
 * incarnations) on the test's clock. The model is coarse (a link counts as broken the moment
 * a fault touches it, healthy the moment it is healed): it serves the summary, not safety.
 */

/** What a peer process is doing. */
export type PeerStatus = 'up' | 'paused' | 'down' | 'twinned';

/** One interval, in ms on the test's clock. */
export interface Window {
  readonly start: number;
  end: number;
}

/** Peer and link state, and the degraded windows it implies. */
export class FaultWindows {
  /** The members: founders, and replacements in place of the peers they replaced. */
  readonly #ids: string[];
  readonly #now: () => number;
  readonly #status = new Map<string, PeerStatus>();
  readonly #brokenLinks = new Set<string>();
  readonly #windows = new Map<string, Window[]>();
  readonly #open = new Map<string, Window>();
  /** When each peer's process was killed (test clock), in order. */
  readonly #deaths = new Map<string, number[]>();

  constructor(ids: readonly string[], now: () => number) {
    this.#ids = [...ids];
    this.#now = now;
    for (const id of ids) {
      this.#status.set(id, 'up');
      this.#windows.set(id, []);
    }
  }

  /** Peers, itself included, that make a majority of the configuration. */
  get majority(): number {
    return Math.floor(this.#ids.length / 2) + 1;
  }

  /** A peer was killed, paused, resumed or restarted. */
  setPeer(id: string, status: PeerStatus): void {
    if (status === 'down') this.#deaths.set(id, [...(this.#deaths.get(id) ?? []), this.#now()]);
    this.#status.set(id, status);
    this.#recompute();
  }

  /**
   * `neu` (just started with its join ticket) takes the place of `old` (dead, being replaced)
   * among the members whose echoes count: a majority stays one of as many peers. `old` keeps
   * its recorded death and windows.
   */
  replace(old: string, neu: string): void {
    const i = this.#ids.indexOf(old);
    if (i < 0) throw new Error(`${old} is not a member`);
    this.#ids[i] = neu;
    this.#status.set(neu, 'up');
    this.#windows.set(neu, []);
    this.#recompute();
  }

  /** The link `from` -> `to` (the socket `from` dials) was broken or healed. */
  setLink(from: string, to: string, ok: boolean): void {
    if (ok) this.#brokenLinks.delete(`${from}>${to}`);
    else this.#brokenLinks.add(`${from}>${to}`);
    this.#recompute();
  }

  /** True while `id` can keep its lease according to the model. */
  hasMajority(id: string): boolean {
    if (this.#status.get(id) !== 'up') return false;
    let echoes = 1;
    for (const q of this.#ids) {
      if (q !== id && this.#answers(q) && !this.#brokenLinks.has(`${id}>${q}`)) echoes++;
    }
    return echoes >= this.majority;
  }

  /** A twinned peer's old process still runs and echoes. */
  #answers(id: string): boolean {
    const status = this.#status.get(id);
    return status === 'up' || status === 'twinned';
  }

  #recompute(): void {
    const now = this.#now();
    for (const id of this.#ids) {
      const open = this.#open.get(id);
      const degraded = !this.hasMajority(id);
      if (degraded && open === undefined) {
        const w: Window = { start: now, end: Number.POSITIVE_INFINITY };
        this.#open.set(id, w);
        this.#windows.get(id)?.push(w);
      } else if (!degraded && open !== undefined) {
        open.end = now;
        this.#open.delete(id);
      }
    }
  }

  /** True when `id` was degraded at some instant of [start, end] (bounds included). */
  degradedDuring(id: string, start: number, end: number): boolean {
    return (this.#windows.get(id) ?? []).some((w) => w.start <= end && start <= w.end);
  }

  /** The first kill of `id` at or after `t`; Infinity when none. */
  downAfter(id: string, t: number): number {
    return (this.#deaths.get(id) ?? []).find((d) => d >= t) ?? Number.POSITIVE_INFINITY;
  }

  /** The recorded windows of one peer (the last one may still be open: end Infinity). */
  windowsOf(id: string): readonly Window[] {
    return this.#windows.get(id) ?? [];
  }
}
