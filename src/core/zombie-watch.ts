/**
 * Whether this incarnation was superseded, and what a refusal of its links tells it
 * (docs/design.md section 5, "Zombies"): rejoin above the incarnation the refuser names, wait
 * for a predecessor's eviction, stay out while a newer process of its id lives, or become a
 * zombie, which grants, echoes and evicts nothing more. Part of the protocol (core/protocol.ts),
 * which lends it its outputs and is told when this incarnation becomes a zombie.
 */
import { ErrorCode, LockError } from '../errors.js';
import type { IncarnationBook } from './incarnations.js';
import type { LogLevel, ProtocolOutput } from './protocol-io.js';
import type { Incarnation } from './types.js';
import { compareIncarnation, formatIncarnation } from './types.js';

/** What of a protocol the watch uses. */
export interface ZombieWatchHost {
  readonly incarnation: Incarnation;
  readonly incarnations: IncarnationBook;
  peerId(index: number): string;
  log(level: LogLevel, fields: Readonly<Record<string, unknown>>, msg: string): void;
  push(output: ProtocolOutput): void;
  /** This incarnation just became a zombie: its waiters end, its lease is re-checked. */
  superseded(nowMs: number): void;
}

/** One incarnation's watch on the processes of its own id. */
export class ZombieWatch {
  readonly incarnation: Incarnation;
  readonly #incarnations: IncarnationBook;
  readonly #h: ZombieWatchHost;
  /**
   * Whether this incarnation ever synced with every peer: one that never did and is refused
   * as stale (its wall clock stepped back since its predecessor started) starts again above
   * the incarnation the refusal names; one that did is an old process a newer one replaced.
   */
  #everSynced = false;
  /**
   * Set once a peer refused this incarnation as older than one of our id it knows, after it
   * had synced: a newer process with our id runs, or ran, and this one is a zombie. Its lease
   * is not renewed (it lapses within lease_ms, and its holds end then), it echoes nothing and
   * decides no eviction, since the leases it would judge were lent by that newer process's
   * echoes, not its own. What its clients are told from then on; null while not a zombie.
   */
  #supersededError: LockError | null = null;
  /** A zombie that was evicted: it does not rejoin while the newer one lives. */
  #stayingOut = false;
  /** The newest incarnation of our id a refusal named above ours, and whether a refusal said it is evicted. */
  #newestOfOurs: { readonly inc: Incarnation; evicted: boolean } | null = null;

  constructor(host: ZombieWatchHost) {
    this.incarnation = host.incarnation;
    this.#incarnations = host.incarnations;
    this.#h = host;
  }

  /** ERR_SUPERSEDED once this incarnation is a zombie, else null. */
  get supersededError(): LockError | null {
    return this.#supersededError;
  }

  /**
   * Whether this incarnation sends anything on its links (payloads, heartbeats): not once it
   * is a zombie. A peer that never met the newer process of its id (a twin that reached some
   * peers only, then died) would keep hearing it and never confirm it silent, and the newer
   * one, waiting behind it where it was met, could never join nor be evicted: the zombie would
   * stay out for good, and every lock with it (fault run seed 27001). Silent, it is evicted as
   * a dead process is, then the newer one if it died too, and it rejoins above that one.
   */
  get speaks(): boolean {
    return this.#supersededError === null;
  }

  /** This incarnation synced with every peer (a refusal as stale from now on means a newer process). */
  synced(): void {
    this.#everSynced = true;
  }

  peerId(index: number): string {
    return this.#h.peerId(index);
  }

  #log(level: LogLevel, fields: Readonly<Record<string, unknown>>, msg: string): void {
    this.#h.log(level, fields, msg);
  }

  #push(output: ProtocolOutput): void {
    this.#h.push(output);
  }

  #superseded(nowMs: number): void {
    this.#h.superseded(nowMs);
  }

  /** A peer refused this incarnation's link: `known` is the newest incarnation of our id it knows. */
  refused(peer: number, reason: string, known: Incarnation | undefined, knownEvicted: boolean, nowMs: number): void {
    if (known !== undefined && this.#incarnations.isAhead(known.startMs)) {
      // A refuser that names an incarnation of ours too far ahead would make us start above it.
      this.#log('error', { code: ErrorCode.ClockAhead, remote: this.peerId(peer), known: formatIncarnation(known) }, `peer ${this.peerId(peer)} names an incarnation of this peer too far ahead of this host's wall clock: not starting above it (check that host's wall clock)`);
      return;
    }
    const newer = this.#newerOfOurs(known, knownEvicted);
    const newerLives = newer !== null;
    if (reason === 'evicted' && newerLives && this.#everSynced) {
      // A newer process of our id lives: we stay out while it does. Rejoining above it would
      // make that one the zombie, and while it did not know yet, our confirmations and its
      // echoes voted for one id on both sides of an eviction. Once a refuser has evicted that
      // one too (it died, or was stopped), the refusal says so and we rejoin. Not an
      // incarnation that never synced: it started below the others' knowledge (a wall clock
      // stepped back), granted nothing, and rejoins above it, as for a stale refusal below.
      if (!this.#stayingOut) this.#log('error', { remote: this.peerId(peer), known: formatIncarnation(newer) }, 'this incarnation was evicted and a newer process with this peer id runs: not rejoining while it lives (stop one of them)');
      this.#stayingOut = true;
      this.#becomeZombie(peer, newer, nowMs);
    } else if (reason === 'evicted') {
      this.#log('warn', { remote: this.peerId(peer) }, 'this incarnation was evicted by the majority: rejoining as a new one');
      // The new incarnation starts above the newest one of our id the refuser knows: one
      // that starts below an evicted one is refused again.
      this.#push({ type: 'rejoin', reason: 'evicted', startFloorMs: Math.max(this.incarnation.startMs, known?.startMs ?? 0) + 1 });
    } else if (reason === 'stale_incarnation' && known !== undefined && !this.#everSynced) {
      // We started older than an incarnation of our id that the others know: the wall clock
      // stepped back since it started, or another process runs with our id. Start again above
      // it; a live one is then superseded and evicted before we are admitted.
      this.#log('warn', { remote: this.peerId(peer), known: formatIncarnation(known) }, 'this incarnation started older than one of our id the others know: starting above it');
      this.#push({ type: 'rejoin', reason: 'stale_incarnation', startFloorMs: known.startMs + 1 });
    } else if (reason === 'stale_incarnation' && this.#everSynced) {
      this.#becomeZombie(peer, known, nowMs);
    } else if (reason === 'predecessor_live') {
      this.#log('info', { remote: this.peerId(peer) }, 'waiting until the previous incarnation of this peer is evicted (up to evict_ms)');
    }
  }

  /**
   * Notes the incarnation of our id a refusal names; returns the newest one named so far that no
   * refusal said is evicted (a newer process of our id that lives), or null. A refuser that never
   * met that one names an older one, or ours: that says nothing of it (simulator seed 45 --changes).
   */
  #newerOfOurs(known: Incarnation | undefined, knownEvicted: boolean): Incarnation | null {
    if (known !== undefined && compareIncarnation(known, this.incarnation) > 0) {
      const newest = this.#newestOfOurs;
      const order = newest === null ? 1 : compareIncarnation(known, newest.inc);
      if (order > 0) this.#newestOfOurs = { inc: known, evicted: knownEvicted };
      else if (order === 0 && knownEvicted && newest !== null) newest.evicted = true;
    }
    const n = this.#newestOfOurs;
    return n !== null && !n.evicted ? n.inc : null;
  }

  /** A newer process of our id runs or ran: from now on this incarnation is a zombie (`#supersededError`). */
  #becomeZombie(peer: number, known: Incarnation | undefined, nowMs: number): void {
    if (this.#supersededError !== null) return;
    this.#supersededError = new LockError(
      ErrorCode.Superseded,
      `another process runs or ran with this peer id (${known === undefined ? 'a newer incarnation' : `incarnation ${formatIncarnation(known)}`}, newer than this one): this one grants nothing from now on; stop it, and ask the peer that runs`,
      known === undefined ? {} : { newerIncarnation: formatIncarnation(known) },
    );
    this.#log('error', { remote: this.peerId(peer), known: known === undefined ? null : formatIncarnation(known) },
      'a newer incarnation of this peer id is known: this one grants and evicts nothing from now on (another process runs or ran with this id: stop this one)');
    this.#superseded(nowMs);
  }
}
