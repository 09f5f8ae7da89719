/**
 * Majority-confirmed eviction (docs/design.md section 5), pure: time is an argument, so the
 * simulator drives the same code as the runtime.
 *
 * When this peer has heard nothing from peer j's incarnation X for `evictMs`, it sends
 * SUSPECT(j, X) to the others. A peer confirms only if it too has heard nothing from j
 * (X or any newer incarnation it knows) for `evictMs`. With confirmations from a majority
 * of the configured peers (itself included; j never counts), it sends EVICT(j, X) to
 * everyone and applies it. Any two majorities intersect, so some peer both echoed X's last
 * lease heartbeat and later confirmed X silent: X's lease lapsed before anyone acts. A
 * two-peer cluster has no majority without both, so it never evicts.
 */
import { assert } from '../assert.js';
import { IncarnationBook } from './incarnations.js';
import type { Members } from './members.js';
import type { Incarnation } from './types.js';
import { compareIncarnation } from './types.js';
import type { EchoPromise, MembershipEffect, MembershipMessage } from './membership-messages.js';
import { epochOf } from './membership-messages.js';

/** The incarnation that stands for "never heard from": older than every real one. */
export const unknownIncarnation: Incarnation = { startMs: 0, nonce: 0 };

export type { EchoPromise, MembershipEffect, MembershipMessage } from './membership-messages.js';
export { epochOf, isMembershipMessage } from './membership-messages.js';


interface PeerTrack {
  inc: Incarnation;
  lastHeardMs: number;
  /**
   * Confirmations gathered for suspecting `inc`: peer index -> when we sent the suspicion it
   * answers (local ms). Never the arrival time: a confirmation can arrive long after it was
   * given (held in a cut TCP connection, resent on a new one), when its promise no longer
   * binds the confirmer (simulator seed 248088: a confirmation sent at 1487 ms arrived at
   * 2971 ms and evicted a peer that the confirmer had been lending a lease for 900 ms).
   */
  confirmations: Map<number, number>;
  /** We confirmed `noEchoUpTo` silent: we echo none of its (or older) heartbeats before this (local ms). */
  noEchoUntilMs: number;
  /**
   * The newest incarnation a confirmation we gave is about. The promise binds it and older
   * ones only: a newer incarnation is another process, whose lease the promise says nothing
   * of (simulator seed 504945 --net link: a promise about p0's evicted incarnation kept its
   * successor from every echo for evict_ms, and its link was cut as silent over and over).
   */
  noEchoUpTo: Incarnation;
  /**
   * A newer incarnation that joined while `inc` was not evicted. `inc` stays the one
   * tracked until the majority evicts it: hearing the successor is not hearing `inc`,
   * `inc` itself no longer counts as heard and is lent no lease, so it goes silent and is
   * evicted, which proves its lease lapsed, before the runtime lets the successor join the
   * protocol (issue 12, defect 1: freeing `inc`'s requests at once let another peer take a
   * lock `inc`, a frozen process or a second one with the same id, still validly held).
   */
  successor: Incarnation | null;
  /**
   * The successor a newer one replaced here, and when it was last heard (local ms). A
   * successor is linked and echoed while it waits, so it may hold a lease through us; once
   * a newer one replaces it, it is neither tracked nor waiting, and this is all that says
   * we lent it a lease lately (the 100,000-seed run, seeds 2042388 and 2048353: a twin
   * waiting as a successor, replaced by a newer one, was confirmed silent at once and
   * evicted with its lease held).
   */
  formerSuccessor: { readonly inc: Incarnation; readonly atMs: number } | null;
  /** When `successor` was last heard (local ms). */
  successorAtMs: number;
}

/** What is tracked of a member never heard, from `nowMs`. */
function newTrack(nowMs: number): PeerTrack {
  return {
    inc: unknownIncarnation, lastHeardMs: nowMs, confirmations: new Map(), noEchoUntilMs: Number.NEGATIVE_INFINITY,
    noEchoUpTo: unknownIncarnation, successor: null, formerSuccessor: null, successorAtMs: Number.NEGATIVE_INFINITY,
  };
}

function key(inc: Incarnation): string {
  return `${inc.startMs}.${inc.nonce}`;
}

/**
 * One peer's view of who is alive, who is suspected and who was evicted. The eviction floor
 * of each peer (stage 5) is kept in the IncarnationBook, which the session shares with its
 * mesh; this class alone moves it. What it tracks as heard (stage 2) is its own.
 */
export class Membership {
  readonly #self: number;
  /** Where the evictions decided here are kept (src/core/incarnations.ts). */
  readonly #incarnations: IncarnationBook;
  /** The members of the view: majorities are counted over them. */
  #members: Members;
  /** The epoch of this peer's view: membership messages count only between peers at one epoch (rule P4). */
  #epoch: number;
  readonly #evictMs: number;
  /** What is tracked of each member, this one included (never read for it), by ordinal. */
  readonly #peers = new Map<number, PeerTrack>();
  /** How long a confirmation binds its sender (its clock): evictMs. */
  readonly #promiseMs: number;
  /**
   * How long the suspecter counts a confirmation (its clock), from the moment it sent the
   * suspicion: the promise over the rate margin. The confirmer gave its promise after that
   * moment, so the promise still binds it whenever the confirmation counts.
   */
  readonly #confirmationValidMs: number;
  /** When this membership (this incarnation) started: older suspicions are not ours. */
  readonly #startMs: number;
  /**
   * What this membership decided on its own, counted for the simulator's checker (a superseded
   * incarnation decides nothing: docs/design.md section 9): suspicions it started (one per tick
   * and silent peer), confirmations it counted, evictions it decided, suspicions it confirmed.
   */
  readonly decided = { suspicions: 0, confirmations: 0, evictions: 0, confirmed: 0 };

  /** `incarnations`: the session's book, shared with its mesh; default, a book of its own. */
  constructor(opts: {
    members: Members;
    /** The epoch of the view `members` come from; 0 (the default) without views. */
    epoch?: number | undefined;
    /** Leaving members of the view (docs/reconfiguration.md P6): tracked, so that a majority of the voters can evict one that dies (F64). */
    leaving?: readonly number[] | undefined;
    evictMs: number;
    nowMs: number;
    clockRateMargin?: number;
    promises?: readonly EchoPromise[] | undefined;
    incarnations?: IncarnationBook | undefined;
  }) {
    this.#self = opts.members.self;
    this.#incarnations = opts.incarnations ?? new IncarnationBook(opts.members.capacity);
    assert(this.#incarnations.capacity >= opts.members.capacity, 'one incarnation record per ordinal');
    this.#incarnations.grow(Math.max(0, ...(opts.leaving ?? []).map((p) => p + 1)));
    this.#members = opts.members;
    this.#epoch = opts.epoch ?? 0;
    this.#evictMs = opts.evictMs;
    this.#promiseMs = opts.evictMs;
    this.#confirmationValidMs = opts.evictMs / (opts.clockRateMargin ?? 1.5);
    this.#startMs = opts.nowMs;
    for (const p of [...opts.members.all(), ...(opts.leaving ?? [])]) if (!this.#peers.has(p)) this.#peers.set(p, newTrack(opts.nowMs));
    for (const promise of opts.promises ?? []) {
      const t = this.#track(promise.peer);
      if (t === undefined) continue;
      t.noEchoUntilMs = Math.max(t.noEchoUntilMs, opts.nowMs + promise.remainingMs);
      if (compareIncarnation(promise.upTo, t.noEchoUpTo) > 0) t.noEchoUpTo = promise.upTo;
    }
  }

  /**
   * The view changed (docs/reconfiguration.md): majorities are of `members` from now on,
   * suspicions go to them, and membership messages count only from peers at `epoch`. An added member is tracked from now, never heard. A removed one is
   * still tracked, so that it can be evicted if it dies before it leaves (`forget`).
   */
  setMembers(members: Members, nowMs: number, epoch: number): void {
    this.#members = members;
    this.#epoch = epoch;
    this.#incarnations.grow(members.capacity);
    for (const p of members.all()) if (!this.#peers.has(p)) this.#peers.set(p, newTrack(nowMs));
  }

  /** A removed member left (or was evicted): nothing of it is tracked any more. */
  forget(peer: number): void {
    if (!this.#members.has(peer)) this.#peers.delete(peer);
  }

  /**
   * The promises that still bind (see mayEcho), for the next incarnation of this process:
   * a peer that rejoined after an eviction and echoed at once what it had confirmed silent
   * just before kept that peer leased while the suspecter, counting the confirmation,
   * evicted it (simulator seed 162227).
   */
  promises(nowMs: number): EchoPromise[] {
    const out: EchoPromise[] = [];
    this.#peers.forEach((t, peer) => {
      if (peer !== this.#self && t.noEchoUntilMs > nowMs) out.push({ peer, upTo: t.noEchoUpTo, remainingMs: t.noEchoUntilMs - nowMs });
    });
    return out;
  }

  /**
   * May we echo a heartbeat of `peer`'s incarnation `inc`? Not once it is evicted, and not
   * while a confirmation we gave binds us. A confirmation is a promise: for `evictMs` after
   * it, we lend that incarnation no lease, even if we hear it again meanwhile. Without the
   * promise a confirmer could hear the suspect right after confirming and keep its lease
   * alive while the suspecter, counting that confirmation, evicts it (simulator seed 101151).
   */
  mayEcho(peer: number, inc: Incarnation, nowMs: number): boolean {
    const t = this.#track(peer);
    if (t === undefined) return true;
    if (this.isEvicted(peer, inc) || this.#isSuperseded(t, inc)) return false;
    return !(nowMs < t.noEchoUntilMs && compareIncarnation(inc, t.noEchoUpTo) <= 0);
  }

  /**
   * The live predecessor a newer incarnation of `peer` waits for: the incarnation tracked
   * while `inc` is its pending successor, else null (nothing to wait for).
   */
  predecessorOf(peer: number, inc: Incarnation): Incarnation | null {
    const t = this.#track(peer);
    if (t?.successor == null || compareIncarnation(inc, t.inc) <= 0) return null;
    return t.inc;
  }

  #isSuperseded(t: PeerTrack, inc: Incarnation): boolean {
    return t.successor !== null && compareIncarnation(inc, t.successor) < 0;
  }

  /** Peers (this one included) that make a majority of the configuration. */
  get majority(): number {
    return this.#members.majority;
  }

  #track(peer: number): PeerTrack | undefined {
    return peer === this.#self ? undefined : this.#peers.get(peer);
  }

  /** Anything arrived from `peer`'s incarnation `inc` (a payload, a heartbeat, a handshake). */
  heard(peer: number, inc: Incarnation, nowMs: number): void {
    const t = this.#track(peer);
    if (t === undefined || this.isEvicted(peer, inc) || this.#isSuperseded(t, inc)) return;
    const order = compareIncarnation(inc, t.inc);
    if (order < 0) return;
    const known = compareIncarnation(t.inc, unknownIncarnation) !== 0;
    if (order > 0 && known && !this.isEvicted(peer, t.inc)) {
      // A successor while `t.inc` lives: `t.inc` stays tracked, and is silent from now on.
      if (t.successor !== null && compareIncarnation(inc, t.successor) > 0) {
        t.formerSuccessor = { inc: t.successor, atMs: t.successorAtMs };
      }
      if (t.successor === null || compareIncarnation(inc, t.successor) > 0) t.successor = inc;
      t.successorAtMs = nowMs;
      return;
    }
    if (order > 0) {
      t.inc = inc;
      t.successor = null;
    }
    // A superseded incarnation no longer counts as heard: it returned above, since a waiting
    // successor is always newer than the one tracked. So `order >= 0` above would change
    // nothing (issue 39: an equivalent mutant; test/core/membership.test.ts shows the cover).
    assert(t.successor === null, 'a successor waits only behind an older tracked incarnation');
    // A confirmation vouches for one period of silence only. Once the peer is heard again,
    // the confirmations gathered while it was silent are void: a confirmer may have heard it
    // (and echoed its heartbeats, keeping its lease) since. Kept, they would add up with the
    // confirmations of a LATER silence into a "majority" that never was silent at once
    // (found by the fault test, seed 20261122: a 2|2 bridge partition evicted two live
    // peers with the bridge's confirmation from an earlier partition, and both sides granted).
    if (t.confirmations.size > 0) t.confirmations.clear();
    t.lastHeardMs = Math.max(t.lastHeardMs, nowMs);
  }

  /** True when an incarnation of `peer` newer than `inc` was heard here (tracked, or waiting as a successor). */
  knowsNewer(peer: number, inc: Incarnation): boolean {
    const t = this.#track(peer);
    if (t === undefined) return false;
    const waiting = t.successor !== null && compareIncarnation(t.successor, inc) > 0;
    return compareIncarnation(t.inc, inc) > 0 || waiting;
  }

  /** True when `inc` of `peer` (or a newer one) was evicted. */
  isEvicted(peer: number, inc: Incarnation): boolean {
    return this.#track(peer) !== undefined && this.#incarnations.isEvicted(peer, inc);
  }

  #silent(t: PeerTrack, nowMs: number): boolean {
    return nowMs - t.lastHeardMs >= this.#evictMs;
  }

  /**
   * Two peers never evict each other: neither can tell a dead peer from a cut link, and each
   * would evict the other. A superseded incarnation is the exception: a newer process with
   * its id proved itself, and its lease needs our echo, which we have withheld for evictMs.
   */
  #alone(t: PeerTrack): boolean {
    return this.#members.isPair && t.successor !== null;
  }

  /** Periodic check: suspect every peer silent for evictMs that is not evicted yet. */
  tick(nowMs: number): MembershipEffect[] {
    const out: MembershipEffect[] = [];
    const pair = this.#members.isPair;
    this.#peers.forEach((t, peer) => {
      if (peer === this.#self || this.isEvicted(peer, t.inc) || !this.#silent(t, nowMs)) return;
      // A leaving member is no voter: both voters of a pair are a majority against it (F64).
      if (pair && !this.#alone(t) && this.#members.has(peer)) return;
      // Only an incarnation we have heard may be suspected. Evicting the placeholder of a
      // peer nobody here has met would let us count it out of the view while its live
      // incarnation (met by no confirmer, so never refused) still grants on stale acks.
      if (compareIncarnation(t.inc, unknownIncarnation) === 0) return;
      const inc = t.inc;
      this.decided.suspicions++;
      t.confirmations.set(this.#self, nowMs);
      out.push(...this.#maybeEvict(peer, t, nowMs));
      if (this.isEvicted(peer, inc)) return;
      for (const q of this.#members.others()) {
        if (q !== peer) out.push({ type: 'send', to: q, msg: this.#stamp({ t: 'suspect', peer, inc, at: nowMs }) });
      }
    });
    return out;
  }

  #maybeEvict(peer: number, t: PeerTrack, nowMs: number): MembershipEffect[] {
    const needed = this.#alone(t) ? 1 : this.majority;
    // Only confirmations whose promise still binds their senders count (see mayEcho).
    for (const [from, atMs] of t.confirmations) {
      if (from !== this.#self && nowMs - atMs >= this.#confirmationValidMs) t.confirmations.delete(from);
    }
    // Voters' only: a learner's or leaving member's own suspicion is no vote (docs/reconfiguration.md P5).
    let votes = 0;
    for (const from of t.confirmations.keys()) if (this.#members.has(from)) votes++;
    if (votes < needed) return [];
    const inc = t.inc; // #apply moves on to a successor, if any
    this.decided.evictions++;
    const last = !this.knowsNewer(peer, inc);
    const out: MembershipEffect[] = this.#apply(peer, inc, nowMs, last);
    // To every peer tracked, leaving members too: one that applied its own removal acts on no
    // membership of its own, and a successor it holds waiting for this eviction would wait for
    // good, and every request after it (simulator seed 3 --changes).
    for (const q of this.#peers.keys()) {
      if (q !== peer && q !== this.#self) out.push({ type: 'send', to: q, msg: this.#stamp({ t: 'evict', peer, inc, last }) });
    }
    return out;
  }

  #apply(peer: number, inc: Incarnation, nowMs: number, last: boolean): MembershipEffect[] {
    const t = this.#track(peer);
    if (t === undefined || this.isEvicted(peer, inc)) return [];
    this.#incarnations.evict(peer, inc);
    t.confirmations.clear();
    if (t.successor !== null && compareIncarnation(t.successor, inc) > 0 && compareIncarnation(t.inc, inc) <= 0) {
      // The predecessor is out: its successor is the one tracked from now on.
      t.inc = t.successor;
      t.successor = null;
      t.lastHeardMs = Math.max(t.lastHeardMs, nowMs);
    }
    return [{ type: 'evict', peer, inc, last }];
  }

  /** A membership message from `from`. */
  onMessage(from: number, msg: MembershipMessage, nowMs: number): MembershipEffect[] {
    const t = this.#track(msg.peer);
    if (t === undefined) return []; // About ourselves: the mesh tells us when we are refused.
    // Rule P4: a suspicion is confirmed and a confirmation counted only between peers at one
    // epoch. A suspecter two epochs behind was evicted at the view lock's gate of the view
    // between (P3 i) without knowing it (a restarted one waiting here gets no VIEW of ours);
    // counted over its view's voters, its eviction could miss every voter that lends a lease
    // under the newest view (docs/reconfiguration.md, A2). For that reason an eviction sent two
    // or more epochs behind ours is not applied. One epoch behind is: views in use are two
    // adjacent ones, and a notice passed on at a join may be the only news of an eviction.
    const e = epochOf(msg);
    if (msg.t === 'evict' ? e + 1 < this.#epoch : e !== this.#epoch) return [];
    switch (msg.t) {
      case 'suspect': {
        // An incarnation older than the one we track, and not evicted, was never tracked here
        // (a tracked one leaves only by eviction): we never admitted it, so never echoed it.
        // We confirm it once this membership is evict_ms old: its successor waits for that
        // eviction, and a peer that met only the successor must not block it.
        // One newer than the one we track is a successor we do not watch yet: never confirmed,
        // unless the one we track is gone (never heard, or evicted) and we have heard nothing
        // of that peer for evict_ms since.
        const order = compareIncarnation(msg.inc, t.inc);
        const never = compareIncarnation(t.inc, unknownIncarnation) === 0 || this.isEvicted(msg.peer, t.inc);
        const placeholder = compareIncarnation(msg.inc, unknownIncarnation) === 0;
        // One we heard as a successor we may have echoed: silent for evict_ms since, first.
        const former = t.formerSuccessor;
        const heardAsSuccessor = former !== null && key(former.inc) === key(msg.inc) && nowMs - former.atMs < this.#evictMs;
        const agree = this.isEvicted(msg.peer, msg.inc) ||
          (!placeholder && (order < 0 ? nowMs - this.#startMs >= this.#evictMs && !heardAsSuccessor : (order === 0 || never) && this.#silent(t, nowMs)));
        if (!agree) return [];
        this.decided.confirmed++;
        t.noEchoUntilMs = Math.max(t.noEchoUntilMs, nowMs + this.#promiseMs);
        if (compareIncarnation(msg.inc, t.noEchoUpTo) > 0) t.noEchoUpTo = msg.inc;
        return [{ type: 'send', to: from, msg: this.#stamp({ t: 'confirm', peer: msg.peer, inc: msg.inc, at: msg.at }) }];
      }
      case 'confirm': {
        if (key(msg.inc) !== key(t.inc) || this.isEvicted(msg.peer, msg.inc) || !this.#silent(t, nowMs)) return [];
        // `at` is our own clock when we sent the suspicion this answers: one from before this
        // incarnation, from the future (a forged or corrupted echo) or too old counts for nothing.
        if (msg.at < this.#startMs || msg.at > nowMs || nowMs - msg.at >= this.#confirmationValidMs) return [];
        this.decided.confirmations++;
        t.confirmations.set(from, Math.max(msg.at, t.confirmations.get(from) ?? Number.NEGATIVE_INFINITY));
        return this.#maybeEvict(msg.peer, t, nowMs);
      }
      case 'evict':
        return this.#apply(msg.peer, msg.inc, nowMs, msg.last === true && !this.knowsNewer(msg.peer, msg.inc));
    }
  }

  /** `msg` as sent at our epoch (rule P4); epoch 0 names none, as a binary of level 9 sends it. */
  #stamp<M extends MembershipMessage>(msg: M): M {
    return this.#epoch === 0 ? msg : { ...msg, e: this.#epoch };
  }

  /**
   * Read-only, for the views (docs/design.md section 6, `degraded`): how long the incarnation
   * of `peer` tracked here has been silent (ms of our clock; since this membership started if
   * none was ever heard), and in how many ms this peer suspects it: 0 once due (the eviction
   * then waits for a majority's confirmations), null when it never will (a two-peer cluster,
   * an incarnation never met, one already evicted). Null for this peer itself.
   */
  silence(peer: number, nowMs: number): { readonly silentMs: number; readonly suspectInMs: number | null } | null {
    const t = this.#track(peer);
    if (t === undefined) return null;
    const silentMs = Math.max(0, nowMs - t.lastHeardMs);
    const met = compareIncarnation(t.inc, unknownIncarnation) !== 0;
    const pair = this.#members.isPair && !this.#alone(t) && this.#members.has(peer);
    const suspects = met && !pair && !this.isEvicted(peer, t.inc);
    return { silentMs, suspectInMs: suspects ? Math.max(0, this.#evictMs - silentMs) : null };
  }

  /** EVICT notices for every eviction we know, for a peer that just joined. */
  evictions(to: number): MembershipEffect[] {
    const out: MembershipEffect[] = [];
    this.#peers.forEach((_t, peer) => {
      const evicted = peer === this.#self ? null : this.#incarnations.evictedUpTo(peer);
      if (evicted === null || peer === to) return;
      const last = !this.knowsNewer(peer, evicted);
      out.push({ type: 'send', to, msg: this.#stamp({ t: 'evict', peer, inc: evicted, last }) });
    });
    return out;
  }
}
