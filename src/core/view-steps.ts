/**
 * The steps of a core that changes of the view take (docs/reconfiguration.md, rules P2 to P6):
 * the head acks of the view lock with their promises, the holder's proposal and the acceptances,
 * the chosen view applied and passed on, a member's own removal and the LEAVE of another. The
 * Machine owns the state they touch and lends it here (`ViewStepHost`); this keeps the Lamport
 * core's file about the Lamport core.
 */
import { assert } from '../assert.js';
import type { OwnRequest } from './lock-table.js';
import { firstLock } from './lock-table.js';
import type { Members } from './members.js';
import type { ViewChangeMessage } from './messages.js';
import { viewLock } from './messages.js';
import type { OwnStepHost } from './own-steps.js';
import type { AgreedView } from './view.js';
import { membersOf, ordinalsIn } from './view.js';

/** What of a Machine the view's steps read and move: what its own requests' steps do, and more. */
export interface ViewStepHost extends OwnStepHost {
  setMembers(members: Members): void;
  synced(): boolean;
  issuePending(): void;
  dropPeerRequests(peer: number): void;
  /** Issue and grant nothing more. */
  fence(): void;
  announceRelease(own: OwnRequest): void;
}

/** The view's steps of one Machine. */
export class ViewSteps {
  readonly #h: ViewStepHost;

  constructor(host: ViewStepHost) {
    this.#h = host;
  }

  /**
   * Rule P2, phase 2: our request on the view lock was granted; `view` is our change on top of
   * ours. The promises name what to propose; our acceptance goes to disk before any ACCEPT.
   */
  propose(view: AgreedView): void {
    const own = this.#h.locks.ownRequests().find((o) => o.state === 'granted' && firstLock(o) === viewLock);
    assert(own !== undefined && this.#h.changes.follows(view), 'a proposal by the holder of the view lock, on top of its view');
    const proposal = this.#h.changes.propose(own.ts, view, this.#h.members());
    if (proposal === null) return; // Too few promises: the holder asks again (Machine.proposal stays null).
    this.#h.out.push({ type: 'acceptor', state: proposal.persist });
    for (const p of this.#h.peers.met()) if (this.#h.members().has(p)) this.#h.out.send(p, proposal.msg);
    this.#chosen(this.#h.changes.onAccepted(this.#h.self, { t: 'accepted', ts: own.ts, epoch: view.epoch }, this.#h.members()));
  }

  /** A view the voters chose: ours from now on, and every peer's after it (rule P3). */
  #chosen(view: AgreedView | null): void {
    if (view === null) return;
    this.#applyView(view);
    this.#sendView(view);
  }

  /** Our view goes to every peer we met, after everything we sent them (FIFO). */
  #sendView(view: AgreedView): void {
    this.#h.changes.sent(this.#h.tick());
    for (const p of this.#h.peers.audience()) this.#h.out.send(p, { t: 'view', view });
  }

  onMessage(from: number, msg: ViewChangeMessage, touched: Set<string>): void {
    if (this.#h.changes.view === null) return;
    for (const lock of this.#h.locks.waitingLocks()) touched.add(lock);
    if (msg.t === 'leave' || msg.t === 'left') {
      // Rule P6: a removed peer's releases came first (its LEAVE), or another member had them
      // (LEFT, F72): it holds nothing, and leaves the ack set for good.
      const peer = msg.t === 'leave' ? from : msg.peer;
      if (this.#h.changes.left(peer)) this.#gone(peer);
    } else if (msg.t === 'view') {
      this.caughtUp(msg.view);
      if (this.#h.changes.heardAt(from, msg.view.epoch)) this.#h.issuePending();
    } else if (msg.t === 'accept') {
      const accepted = this.#h.changes.onAccept(from, msg);
      if (accepted === null) return;
      this.#h.out.push({ type: 'acceptor', state: accepted.persist });
      this.#h.out.send(from, accepted.reply);
    } else if (msg.t === 'accepted') {
      this.#chosen(this.#h.changes.onAccepted(from, msg, this.#h.members()));
    } else if (this.#h.locks.own(this.#h.locks.ownRef(msg.ts) ?? -1)?.state === 'waiting') {
      // Rule P4: a head ack with the (chosen) view after ours: we catch up, and bring every peer to it (P3 i).
      this.#chosen(this.#h.changes.onHeadAck(from, msg));
      touched.add(viewLock);
    }
  }

  /**
   * A chosen view, from any peer (it is the only one of its epoch, A1): ours if it is ahead of
   * ours, and passed on (every member passes a chosen view on: a promoted voter learns from it
   * that the sender counts it, rule P3 ii). True when it was ahead.
   */
  caughtUp(view: AgreedView): boolean {
    if (this.#h.changes.view === null || !this.#h.changes.ahead(view)) return false;
    this.#applyView(view);
    if (!this.#h.changes.removed) for (const p of this.#h.peers.audience()) this.#h.out.send(p, { t: 'view', view });
    return true;
  }

  /** `view`, chosen, is ours from now on: the ack set and the join rule count its members; without us in it, we leave. */
  #applyView(view: AgreedView): void {
    const wasVoter = this.#h.members().voter;
    this.#h.changes.apply(view);
    this.#h.out.push({ type: 'view', view });
    const me = view.members.find((m) => m.ordinal === this.#h.self);
    if (me === undefined || me.state === 'leaving') {
      this.#leaveCluster();
      return;
    }
    this.#h.setMembers(membersOf(view, this.#h.self));
    this.#h.peers.setMembers(this.#h.members(), ordinalsIn(view, 'leaving'), ordinalsIn(view, 'learner'));
    // A member whose LEAVE came before the view that removes it: gone at once.
    for (const p of this.#h.changes.leftPeers()) if (this.#h.peers.members().includes(p)) this.#gone(p);
    // A learner promoted requests once every member of its ack set counts it (rule P3 ii).
    if (me.state === 'voter' && !wasVoter) this.#h.changes.promoted(view.epoch);
    if (this.#h.synced()) this.#h.issuePending();
  }

  /**
   * A leaving member that left holds nothing: out of the ack set for good, and every peer we
   * met hears it from us once, as an eviction (F74: a peer that joined us after its LEAVE
   * went out would wait for it otherwise).
   */
  #gone(peer: number): void {
    this.#h.peers.leave(peer);
    this.#h.out.push({ type: 'left', peer });
    this.#h.dropPeerRequests(peer);
    for (const p of this.#h.peers.audience()) this.#h.out.send(p, { t: 'left', peer });
    // The last peer we waited for may have been that one (simulator seed 7 --changes --net link).
    if (this.#h.synced()) this.#h.issuePending();
  }

  /** Rule P6: our own removal. Every request of ours ends (`removed`), its release sent, then LEAVE; nothing more is issued or granted. */
  #leaveCluster(): void {
    this.#h.changes.remove();
    this.#h.fence();
    const own = this.#h.locks.ownRequests();
    this.#h.locks.dropOwnAll(own);
    for (const o of own) {
      this.#h.out.push({ type: 'ended', ref: o.ref, lock: firstLock(o), reason: 'removed' });
      this.#h.announceRelease(o);
    }
    for (const p of this.#h.peers.audience()) this.#h.out.send(p, { t: 'leave' });
  }

  /** Rule P2: the request heading the view lock's queue, if another peer's, gets our head ack once per view. */
  headAck(): void {
    if (this.#h.changes.view === null || this.#h.changes.removed) return;
    const head = this.#h.locks.head(viewLock, 1)[0];
    const ack = this.#h.changes.headAck(head, this.#h.self, (p) => this.#h.peers.incarnation(p) !== undefined);
    if (ack === null) return;
    if (ack.persist !== null) this.#h.out.push({ type: 'acceptor', state: ack.persist });
    this.#h.out.send(ack.to, ack.msg);
  }
}
