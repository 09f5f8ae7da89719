/**
 * Which other peers count for one peer's protocol (docs/design.md sections 3 and 5): the view
 * (configured peers not evicted), the incarnation we met of each, the evicted incarnations
 * we refuse, and lastTs, the highest clock heard from each, which is what an ack is. The
 * Machine decides when these change; this class only keeps them.
 *
 * "Met" is stage 4 of an incarnation's stages (src/core/incarnations.ts, the IncarnationBook,
 * which keeps the stages the mesh and the membership share). The core keeps its own met
 * incarnation and its own eviction floor, moved by its 'joined' and 'evicted' steps only
 * (docs/style.md convention 2): the met one lags the book's admitted one while a successor
 * waits, and the floor follows the book's within the same membership effect.
 */
import type { Members } from './members.js';
import type { Incarnation } from './types.js';
import { compareIncarnation } from './types.js';

/** The view of one peer, with the incarnations and timestamps heard from its members. */
export class PeerView {
  readonly #lastTs: number[];
  /** Peers whose requests count: configured and not evicted. */
  readonly #view = new Set<number>();
  /** Peers of the view that joined the core ('joined' step), and their incarnation: the met one. */
  readonly #inc = new Map<number, Incarnation>();
  /** The newest evicted incarnation of each peer, as the core's 'evicted' steps told it. */
  readonly #evictedInc = new Map<number, Incarnation>();
  /** The members: the join rule counts a majority of them. */
  #members: Members;

  /**
   * The peers whose requests count in the view's current shape: its voters and leaving members
   * (docs/reconfiguration.md, rules P5 and P6), this one excluded.
   */
  #candidates: ReadonlySet<number>;
  /** Learners met: they get our requests and our packets, and their acks count for nothing (rule P5). */
  readonly #listeners = new Set<number>();

  /**
   * Every voter and leaving member but this one is in the view at first, none of them met yet.
   * `leaving`: members removed and not retired (none for a config file's cluster).
   */
  constructor(members: Members, leaving: readonly number[] = []) {
    this.#members = members;
    this.#lastTs = new Array<number>(members.capacity).fill(0);
    this.#candidates = new Set([...members.others(), ...leaving.filter((p) => p !== members.self)]);
    for (const p of this.#candidates) this.#view.add(p);
  }

  /**
   * The view changed (docs/reconfiguration.md): the join rule counts `members` (its voters)
   * from now on, and the view holds its voters and `leaving` members. One that became a voter
   * or leaving (a learner promoted) enters the view, met or not; one that stayed keeps its
   * place (out if evicted or left); one gone from the view (retired, a learner removed) leaves
   * for good; `learners` are heard and sent to once met, never waited for (rule P5).
   */
  setMembers(members: Members, leaving: readonly number[] = [], learners: readonly number[] = []): void {
    this.#members = members;
    while (this.#lastTs.length < members.capacity) this.#lastTs.push(0);
    const next = new Set([...members.others(), ...leaving.filter((p) => p !== members.self)]);
    for (const p of next) {
      if (this.#candidates.has(p)) continue;
      this.#listeners.delete(p);
      this.#view.add(p);
    }
    const keep = new Set(learners);
    for (const p of this.#candidates) if (!next.has(p)) this.leave(p);
    for (const p of [...this.#listeners]) if (!keep.has(p) && !next.has(p)) this.leave(p);
    this.#candidates = next;
  }

  /** Who hears what we send: every peer of the view we met, then the learners met. */
  audience(): number[] {
    return this.#listeners.size === 0 ? this.met() : [...this.met(), ...this.listeners()];
  }

  /** Learners met, in ordinal order: they get our packets, and we wait for none of theirs. */
  listeners(): number[] {
    return [...this.#listeners].sort((a, b) => a - b);
  }

  /** A removed member left, its releases before it: out of the view for good. */
  leave(peer: number): void {
    this.#superseded.delete(peer);
    this.#view.delete(peer);
    this.#listeners.delete(peer);
    this.#inc.delete(peer);
    this.#letUsIn.delete(peer);
  }

  /** True when every peer of the view has handshaked and sent us a packet since. */
  get synced(): boolean {
    for (const p of this.#view) if (!this.#isSynced(p)) return false;
    return true;
  }

  /** The peers of the view that keep us from being synced: the ones a request not issued yet waits for. */
  unsynced(): number[] {
    return this.members().filter((p) => !this.#isSynced(p));
  }

  #isSynced(p: number): boolean {
    return this.#inc.has(p) && !this.#superseded.has(p) && (this.#lastTs[p] ?? 0) !== 0;
  }

  /** Members whose newer incarnation waits for the met one's eviction. */
  readonly #superseded = new Set<number>();

  /**
   * A newer incarnation of `peer` waits: until it joins, we are not synced. The met one was
   * cut off (maybe evicted by peers that crashed since), and its acks, however high, say
   * nothing of grants the others made meanwhile: our new requests must wait for the clock
   * the newer one brings (simulator seed 500451 --net link).
   */
  supersede(peer: number): void {
    if (this.#inc.has(peer)) this.#superseded.add(peer);
  }

  /**
   * True when every peer of the view we met has sent us a packet since: they all let this
   * incarnation join (a peer that knew a live predecessor of ours sends nothing before the
   * majority evicted it). Peers never met do not count: one down for good must not stop us
   * from answering the others.
   */
  get joinedByMet(): boolean {
    for (const p of this.#view) if (this.#inc.has(p) && !this.#letUsIn.has(p)) return false;
    return true;
  }

  /**
   * True when at least `size - majority + 1` of the other members let this
   * incarnation join (sent us a packet) or were evicted: the one we met, or, if we met none,
   * the newest the evictors knew (`gone`; a peer down for good must not keep us from acking,
   * simulator seed 348). Not the eviction of an older one alone: a newer one may live and
   * echo our predecessor (simulator seed 199 --net link). A predecessor of ours that still
   * holds a lease was echoed within lease_ms by `majority - 1` others; any such set meets
   * this one, and a peer in both tracked the predecessor, so it let us in only once the
   * majority evicted it. Peers we met are not enough: a restarted peer that never knew the
   * predecessor lets us in at once (simulator seed 101577).
   */
  get joinedByQuorum(): boolean {
    let admitted = 0;
    for (const p of this.#members.others()) {
      const met = this.#inc.has(p);
      if (met ? this.#letUsIn.has(p) : !this.#view.has(p) || this.#gone.has(p)) admitted++;
    }
    return admitted >= this.#members.meetsEveryMajority;
  }

  /** Peers of the view, this one excluded. */
  members(): number[] {
    return [...this.#view];
  }

  /** Peers of the view we have met, in view order: the ones a message can go to now. */
  met(): number[] {
    return this.members().filter((p) => this.#inc.has(p));
  }

  /** Peers of the view whose ack of `ts` (a later timestamp) has not arrived, or that never joined. */
  missingAcks(ts: number): number[] {
    return this.members().filter((p) => !this.#inc.has(p) || (this.#lastTs[p] ?? 0) <= ts);
  }

  /** The incarnation of `peer` we met, if it is in the view. */
  incarnation(peer: number): Incarnation | undefined {
    return this.#inc.get(peer);
  }

  /** Whether a packet from `peer` of `inc` counts: from the incarnation we met, in the view. */
  isLive(peer: number, inc: Incarnation): boolean {
    const current = this.#inc.get(peer);
    return current !== undefined && compareIncarnation(current, inc) === 0 && (this.#view.has(peer) || this.#listeners.has(peer));
  }

  /** Whether `inc` is newer than every incarnation of `peer` we met or refused. */
  isNew(peer: number, inc: Incarnation): boolean {
    const evicted = this.#evictedInc.get(peer);
    if (evicted !== undefined && compareIncarnation(inc, evicted) <= 0) return false;
    const current = this.#inc.get(peer);
    return current === undefined || compareIncarnation(inc, current) > 0;
  }

  /** The highest timestamp heard from `peer`. */
  lastTs(peer: number): number {
    return this.#lastTs[peer] ?? 0;
  }

  /** The smallest lastTs of the view: condition (a) of rule 3 holds below it. */
  minLastTs(): number {
    let min = Number.POSITIVE_INFINITY;
    for (const p of this.#view) min = Math.min(min, this.#lastTs[p] ?? 0);
    return min;
  }

  /** Peers met whose incarnation sent us a packet since: they let this incarnation join. */
  readonly #letUsIn = new Set<number>();

  /**
   * A packet stamped `clock` came from `peer`: it let us in, and, unless its sender could not
   * ack yet (`acks` false, a packet marked unready), it acks every timestamp below.
   */
  heard(peer: number, clock: number, acks = true): void {
    this.#letUsIn.add(peer);
    if (acks && clock > (this.#lastTs[peer] ?? 0)) this.#lastTs[peer] = clock;
  }

  /** Forgets every ack of `peer` (it is joining as a new incarnation). */
  resetLastTs(peer: number): void {
    this.#lastTs[peer] = 0;
    this.#letUsIn.delete(peer);
  }

  /** Peers never met whose newest incarnation the evictors knew was evicted. */
  readonly #gone = new Set<number>();

  /** The evictors of `inc` of `peer` knew no newer incarnation of it. */
  gone(peer: number, inc: Incarnation): void {
    const current = this.#inc.get(peer);
    if (current === undefined || compareIncarnation(current, inc) <= 0) this.#gone.add(peer);
  }

  /** `inc` of `peer` joined: it is in the view (a learner: among the listeners), and its packets count. */
  admit(peer: number, inc: Incarnation): void {
    this.#gone.delete(peer);
    this.#superseded.delete(peer);
    this.#inc.set(peer, inc);
    if (this.#candidates.has(peer)) this.#view.add(peer);
    else this.#listeners.add(peer);
  }

  /**
   * Evicts `inc` of `peer`: refuses it, and every older one, from now on, unless a newer
   * incarnation is the one we met (it lives). True when `inc` is the incarnation we met,
   * which leaves the view until a newer one joins.
   */
  evict(peer: number, inc: Incarnation, unmetLeaves = false): boolean {
    const current = this.#inc.get(peer);
    if (current !== undefined && compareIncarnation(current, inc) > 0) return false; // A newer one lives.
    const prev = this.#evictedInc.get(peer);
    if (prev === undefined || compareIncarnation(inc, prev) > 0) this.#evictedInc.set(peer, inc);
    if (current === undefined && !unmetLeaves) return false;
    this.leave(peer);
    return true;
  }
}
