/**
 * What one machine keeps of changes of the view (docs/reconfiguration.md, rules P2 to P6): its
 * view, its acceptor state for the next epoch (core/acceptor.ts), the head acks and promises
 * its request on the view lock gathered, the head of the view lock's queue it last head-acked,
 * the acceptances of its proposal, when its last view went out, and whether it was removed. The Machine
 * decides when these change; this class only keeps them and answers its questions.
 */
import type { Accepted, AcceptorState, Ballot } from './acceptor.js';
import { accept, freshAcceptor, promise, valueToPropose } from './acceptor.js';
import type { Members } from './members.js';
import type { AcceptMessage, AcceptedMessage, HeadAckMessage } from './messages.js';
import type { AgreedView } from './view.js';
import { canonicalView, sameView } from './view.js';

/** The head of the view lock's queue: who asks, at which timestamp. */
export interface ViewLockHead {
  readonly ts: number;
  readonly peer: number;
}

/** A head ack to send, and the acceptor state to write to disk before it leaves (null: unchanged). */
export interface HeadAck {
  readonly to: number;
  readonly msg: HeadAckMessage;
  readonly persist: AcceptorState | null;
}

/** What the holder's proposal came to (rule P2). */
export interface Proposal {
  readonly ts: number;
  /** The view proposed: the highest accepted one the promises named, else the holder's own. */
  readonly view: AgreedView;
  /** Whether it is the holder's own change (else a predecessor's, to finish first). */
  readonly own: boolean;
  /** Voters that accepted it. */
  readonly acceptedBy: ReadonlySet<number>;
  readonly chosen: boolean;
}

/** The view and the state of its changes, for one machine. */
export class ViewChanges {
  #view: AgreedView | null;
  /** The newest protocol level this binary speaks. */
  readonly speaks: number;
  /** This member's promise and acceptance for the epoch after its view (on disk before they are sent). */
  #acceptor: AcceptorState;
  /** Head acks for our request on the view lock, by sender. */
  readonly #headAcks = new Map<number, HeadAckMessage>();
  /** The head we last head-acked (`ts.peer`), so that one head gets one head ack per view. */
  #headAcked: string | null = null;
  /** Our clock when our last view went out (as holder, or adopted from a head ack); null: none. */
  #sentAt: number | null = null;
  #removed = false;
  /** Leaving members that left (their LEAVE, or a LEFT about them). */
  readonly #left = new Set<number>();
  /** The newest view each peer sent us (VIEW): it counts by it from then on. */
  readonly #heardAt = new Map<number, number>();
  /** The epoch at which this peer became a voter while it ran, if it did (rule P3 ii). */
  #promotedAt: number | null = null;
  #proposal: { ts: number; view: AgreedView; own: boolean; acceptedBy: Set<number>; chosen: boolean } | null = null;

  /** Members whose acceptor id is not the one recorded for them first (their data dir lost or replaced): their votes count for nothing (F70, F76). */
  readonly #replaced = new Set<number>();
  /** Set once a member told us that our own acceptor id is not the one it recorded: our own vote counts for nothing either. */
  #selfReplaced = false;

  /** Whether `peer`'s acceptor id is the one recorded for it first (runtime: view.json's acceptor ids). */
  trustAcceptor(peer: number, trusted: boolean): void {
    if (trusted) this.#replaced.delete(peer);
    else this.#replaced.add(peer);
  }

  /** Whether a vote of `peer` counts (`self`: this member's ordinal). */
  #votes(peer: number, self: number): boolean {
    return peer === self ? !this.#selfReplaced : !this.#replaced.has(peer);
  }

  /** `acceptor`: what the data dir kept of this member's promise and acceptance, if anything. */
  constructor(view: AgreedView | null, speaks: number, acceptor?: AcceptorState) {
    this.#view = view;
    this.speaks = speaks;
    const next = (view?.epoch ?? 0) + 1;
    this.#acceptor = acceptor !== undefined && acceptor.epoch >= next ? acceptor : freshAcceptor(next);
  }

  get view(): AgreedView | null {
    return this.#view;
  }

  get sentAt(): number | null {
    return this.#sentAt;
  }

  get removed(): boolean {
    return this.#removed;
  }

  get acceptor(): AcceptorState {
    return this.#acceptor;
  }

  get proposal(): Proposal | null {
    return this.#proposal;
  }

  /** `peer` sent us the view of `epoch`: true when that lets a promoted voter request (rule P3 ii). */
  heardAt(peer: number, epoch: number): boolean {
    if (epoch <= (this.#heardAt.get(peer) ?? -1)) return false;
    this.#heardAt.set(peer, epoch);
    return this.#promotedAt !== null && epoch >= this.#promotedAt;
  }

  /**
   * `peer` left (rule P6): kept even while our view has it as a voter (its LEAVE can come before
   * the view that removes it reaches us). True the first time, if it is leaving in our view.
   */
  left(peer: number): boolean {
    if (this.#left.has(peer)) return false;
    this.#left.add(peer);
    return this.#isLeaving(peer);
  }

  #isLeaving(peer: number): boolean {
    return this.#view?.members.some((m) => m.ordinal === peer && m.state === 'leaving') === true;
  }

  /** The leaving members of our view that left, for a state transfer (LEFT). */
  leftPeers(): number[] {
    return [...this.#left].filter((p) => this.#isLeaving(p));
  }

  /** Whether every peer of `ackSet` sent us our view, or a later one (it applied it). */
  heardFromAll(ackSet: readonly number[]): boolean {
    const epoch = this.#view?.epoch ?? 0;
    return ackSet.every((p) => (this.#heardAt.get(p) ?? -1) >= epoch);
  }

  /** This peer became a voter in the view of `epoch`. */
  promoted(epoch: number): void {
    this.#promotedAt = epoch;
  }

  /**
   * Rule P3 (ii): a voter promoted while it ran requests nothing until every member of its ack
   * set sent it a view of the promotion's epoch or later: until then one still at the epoch
   * before could grant a lock without waiting for its acks (F67).
   */
  mayRequest(ackSet: readonly number[]): boolean {
    const at = this.#promotedAt;
    return at === null || ackSet.every((p) => (this.#heardAt.get(p) ?? -1) >= at);
  }

  /** Whether `peer` is in our view, in any state; without a view, whether it is one of `members`. */
  inView(peer: number, members: Members): boolean {
    const view = this.#view;
    return view === null ? members.has(peer) : view.members.some((m) => m.ordinal === peer);
  }

  /**
   * Rule P3 (i): our request `ts` on the view lock is granted only with a head ack for it from
   * every peer of the ack set, each at our view (a peer behind is brought to it first). A
   * machine without a view takes no part.
   */
  gateOpen(ts: number, ackSet: readonly number[]): boolean {
    const view = this.#view;
    if (view === null) return false;
    return ackSet.every((p) => {
      const h = this.#headAcks.get(p);
      return h !== undefined && h.ts === ts && sameView(h.view, view);
    });
  }

  /** The newest level every peer of `ackSet` speaks, by their head acks for `ts` (rule P9), and ours. */
  speaksAll(ts: number, ackSet: readonly number[]): number {
    let min = this.speaks;
    for (const p of ackSet) {
      const h = this.#headAcks.get(p);
      min = h !== undefined && h.ts === ts ? Math.min(min, h.speaks) : Number.NEGATIVE_INFINITY;
    }
    return min;
  }

  /** A head ack arrived for our request `msg.ts`: kept. The view after ours in it is returned, to catch up on (rule P4). */
  onHeadAck(from: number, msg: HeadAckMessage): AgreedView | null {
    this.#headAcks.set(from, msg);
    if (msg.replaced === true) this.#selfReplaced = true;
    const view = this.#view;
    return view !== null && msg.view.epoch > view.epoch ? msg.view : null;
  }

  /**
   * The head ack to send now, if any: to the peer whose request heads the view lock's queue,
   * once per head and view, and only to a peer we met (`met`). It carries our promise (Paxos
   * phase 1, rule P2) for the epoch after our view; `persist` is the acceptor state to write
   * to disk before it leaves, when it changed.
   */
  headAck(head: Ballot | undefined, self: number, met: (peer: number) => boolean): HeadAck | null {
    const view = this.#view;
    if (view === null || head === undefined) {
      this.#headAcked = null;
      return null;
    }
    const key = `${head.ts}.${head.peer}`;
    if (key === this.#headAcked || head.peer === self || !met(head.peer)) return null;
    this.#headAcked = key;
    // The ballot alone goes to disk: the head is a whole queue entry (its token a bigint).
    const promised = promise(this.#acceptor, view.epoch + 1, { ts: head.ts, peer: head.peer });
    const persist = promised !== null && promised !== this.#acceptor ? promised : null;
    if (promised !== null) this.#acceptor = promised;
    const base: HeadAckMessage = { t: 'hack', ts: head.ts, view, speaks: this.speaks, promised: promised !== null, accepted: this.#acceptor.accepted };
    const msg: HeadAckMessage = this.#replaced.has(head.peer) ? { ...base, replaced: true } : base;
    return { to: head.peer, msg, persist };
  }

  /**
   * Paxos phase 2 for our granted request `ts` (rule P2): the view to propose is the one the
   * promises of the voters (`voters`, ours included) name under the highest ballot, else `own`.
   * Null when fewer than a majority of the voters promised: the holder releases and asks
   * again, above every ballot it heard of. Else our own acceptance (to write to disk first) and
   * the ACCEPT for the other voters.
   */
  propose(ts: number, own: AgreedView, voters: Members): { readonly persist: AcceptorState; readonly msg: AcceptMessage } | null {
    // A previous proposal is over: one refused now must not read as the last one made.
    this.#proposal = null;
    const epoch = own.epoch;
    const ballot = { ts, peer: voters.self };
    const mine = promise(this.#acceptor, epoch, ballot);
    // Only promises made at our view count: one made at another is about another epoch (F77).
    const current = this.#view;
    const promisers = voters.others().filter((p) => {
      const h = this.#headAcks.get(p);
      return h !== undefined && h.ts === ts && h.promised && current !== null && sameView(h.view, current) && this.#votes(p, voters.self);
    });
    if (mine === null || promisers.length + (voters.voter && this.#votes(voters.self, voters.self) ? 1 : 0) < voters.majority) return null;
    const reports: (Accepted | null)[] = [mine.accepted, ...promisers.map((p) => this.#headAcks.get(p)?.accepted ?? null)];
    const view = valueToPropose(epoch, reports, own);
    const accepted = accept(mine, ballot, view);
    if (accepted === null) return null;
    this.#acceptor = accepted;
    this.#proposal = { ts, view, own: canonicalView(view) === canonicalView(own), acceptedBy: new Set(voters.voter && this.#votes(voters.self, voters.self) ? [voters.self] : []), chosen: false };
    return { persist: accepted, msg: { t: 'accept', ts, view } };
  }

  /** An ACCEPT of ballot `(msg.ts, from)`: our acceptance to write to disk, then ACCEPTED; null when refused. */
  onAccept(from: number, msg: AcceptMessage): { readonly persist: AcceptorState; readonly reply: AcceptedMessage } | null {
    const next = accept(this.#acceptor, { ts: msg.ts, peer: from }, msg.view);
    if (next === null) return null;
    this.#acceptor = next;
    return { persist: next, reply: { t: 'accepted', ts: msg.ts, epoch: msg.view.epoch } };
  }

  /** ACCEPTED from `from`: the view proposed, once a majority of `voters` accepted it (chosen), else null. */
  onAccepted(from: number, msg: AcceptedMessage, voters: Members): AgreedView | null {
    const p = this.#proposal;
    if (p === null || p.chosen || p.ts !== msg.ts || p.view.epoch !== msg.epoch || !voters.has(from) || !this.#votes(from, voters.self)) return null;
    p.acceptedBy.add(from);
    if (p.acceptedBy.size < voters.majority) return null;
    p.chosen = true;
    return p.view;
  }

  /**
   * Whether `view` follows ours (epoch + 1): only then is it applied. Older or equal ones are
   * ours or behind us; one further ahead is caught up on view by view (rule P4).
   */
  follows(view: AgreedView): boolean {
    return this.#view !== null && view.epoch === this.#view.epoch + 1;
  }

  /**
   * Whether `view`, chosen, is ahead of ours: then it is applied, however far ahead (a peer
   * that was down through several changes jumps to the newest: every chosen view is the only
   * one of its epoch, rule P2).
   */
  ahead(view: AgreedView): boolean {
    return this.#view !== null && view.epoch > this.#view.epoch;
  }

  /** `view`, chosen, is ours from now on; every head gets a head ack with it again, and the acceptor moves to the next epoch. */
  apply(view: AgreedView): void {
    this.#view = view;
    this.#headAcked = null;
    if (this.#acceptor.epoch <= view.epoch) this.#acceptor = freshAcceptor(view.epoch + 1);
  }

  /** Our view went out at `clock`: the holder waits for every peer's packet after it. */
  sent(clock: number): void {
    this.#sentAt = clock;
  }

  /** This peer applied its own removal. */
  remove(): void {
    this.#removed = true;
  }
}
