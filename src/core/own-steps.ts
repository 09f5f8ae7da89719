/**
 * The steps of a core about its own clients' requests (docs/design.md section 3, rules 1, 3, 4
 * and 5): a request issued or kept pending, released or cancelled, its meta, the grant or
 * refusal of rule 3, and what a lost lease or a fence ends. The Machine owns the state they
 * share with the peers' side and lends it here (`OwnStepHost`), as it does for the view's steps
 * (core/view-steps.ts); the lease and the fence are this side's own.
 */
import { limits } from '../limits.js';
import type { EffectBuffer, Explanation } from './effects.js';
import type { LockTable, OwnRequest } from './lock-table.js';
import { firstLock, firstPart } from './lock-table.js';
import type { Members } from './members.js';
import type { PeerMessage } from './messages.js';
import { toRequestMessage, viewLock } from './messages.js';
import type { PeerView } from './peer-view.js';
import type { Meta, RequestPart } from './types.js';
import { tokenOf } from './types.js';
import type { ViewChanges } from './view-changes.js';

/** What of a Machine the steps of its own requests read and move. */
export interface OwnStepHost {
  readonly self: number;
  readonly changes: ViewChanges;
  readonly locks: LockTable;
  readonly peers: PeerView;
  readonly out: EffectBuffer;
  members(): Members;
  /** `clock += 1`; the new clock. */
  tick(): number;
}

/** The steps of one Machine's own requests. */
export class OwnSteps {
  readonly #self: number;
  readonly #changes: ViewChanges;
  readonly #locks: LockTable;
  readonly #peers: PeerView;
  readonly #out: EffectBuffer;
  readonly #members: () => Members;
  readonly #tick: () => number;
  #leaseValid = true;
  /** A zombie, or a member removed, issues and grants nothing more. */
  #fenced = false;

  constructor(host: OwnStepHost) {
    this.#self = host.self;
    this.#changes = host.changes;
    this.#locks = host.locks;
    this.#peers = host.peers;
    this.#out = host.out;
    this.#members = () => host.members();
    this.#tick = () => host.tick();
  }

  /** Whether this peer currently holds a lease (the runtime decides, the core obeys). */
  get leaseValid(): boolean {
    return this.#leaseValid;
  }

  /** Issue and grant nothing more, from now on; what was granted stays until released. */
  halt(): void {
    this.#fenced = true;
  }

  acquire(ref: number, parts: readonly RequestPart[], noWait: boolean): void {
    // A limit on every queue (docs/style.md convention 9): a new request of ours is refused
    // when one of its locks already has this many here. Other peers' requests are always
    // queued: refusing one would break the agreement on the order.
    const full = parts.find((p) => this.#locks.queued(p.lock) >= limits.queuedPerLockMax);
    if (full !== undefined) {
      this.#out.push({ type: 'full', ref, lock: full.lock });
      return;
    }
    const own: OwnRequest = { ref, parts: [...parts], noWait, ts: 0, state: 'pending' };
    this.#locks.addOwn(own);
    // A request leaves only while we are synced AND hold a lease: a request issued without
    // a lease could outlive an eviction we were never told of and be granted, on acks heard
    // before it, below grants the majority made meanwhile (simulator seed 276422).
    if (this.#fenced) {
      this.#out.push({ type: 'ended', ref, lock: firstLock(own), reason: 'lease_lost' });
      this.#locks.dropOwn(own);
      return;
    }
    if (this.#peers.synced && this.#leaseValid && this.#mayRequest()) this.#issue(own);
  }

  /**
   * Rule 1: clock++, queue (ts, self), send REQUEST to every peer in the view: one REQUEST
   * per lock the request names, all at the one timestamp.
   */
  #issue(own: OwnRequest): void {
    own.ts = this.#tick();
    own.state = 'waiting';
    for (const request of this.#locks.enqueueOwn(own)) this.#broadcast(toRequestMessage(request, own.noWait));
    this.#recheckParts(own);
  }

  /** Rules 4 and 5: a release, or the cancel of a waiting request, which is the same. */
  release(ref: number): void {
    const own = this.#locks.own(ref);
    if (own === undefined) return; // Already ended by the core (lease lost): nothing to do.
    this.#dropOwn(own);
    this.#recheckParts(own);
  }

  /** Rule 3 on every lock `own` names (it was issued, or it left their queues). */
  #recheckParts(own: OwnRequest): void {
    for (const { lock } of own.parts) this.recheck(lock);
  }

  /**
   * New meta for a request of ours: every queue that holds it takes it (META); one not
   * issued yet carries it in its REQUEST. No rule reads meta, so nothing is re-checked.
   */
  meta(ref: number, meta: Meta | null): void {
    const own = this.#locks.own(ref);
    if (own === undefined) return;
    if (own.state === 'pending') {
      own.parts.forEach((part, i) => (own.parts[i] = { lock: part.lock, spec: { ...part.spec, meta } }));
      return;
    }
    this.#tick();
    for (const { lock } of own.parts) {
      this.#locks.setMeta(lock, own.ts, this.#self, meta);
      this.#broadcast({ t: 'meta', lock, ts: own.ts, meta });
    }
  }

  #dropOwn(own: OwnRequest): void {
    this.#locks.dropOwn(own);
    this.announceRelease(own);
  }

  /** Rule 4's RELEASE of a request of ours that left our queues, for every lock it names (none for one never issued). */
  announceRelease(own: OwnRequest): void {
    if (own.state === 'pending') return;
    this.#tick();
    for (const { lock } of own.parts) this.#broadcast({ t: 'rel', lock, ts: own.ts });
  }

  /** Every pending request of ours leaves, if it may: synced (the caller checked), a lease, no fence, a voter. */
  issuePending(): void {
    // A learner requests nothing until it is promoted (docs/reconfiguration.md, rule P5).
    if (!this.#leaseValid || this.#fenced || !this.#mayRequest()) return;
    const pending = this.#locks.ownRequests().filter((o) => o.state === 'pending');
    for (const own of pending) this.#issue(own);
  }

  /** A learner requests nothing; a voter promoted while it ran waits for every member to count it (docs/reconfiguration.md P3 ii, P5). */
  #mayRequest(): boolean {
    return this.#members().voter && this.#changes.mayRequest(this.#peers.members());
  }

  /** A zombie issues and grants nothing more; what it waits for ends now, its holds with its lease. */
  fence(): void {
    this.#fenced = true;
    for (const own of this.#locks.ownRequests()) {
      if (own.state === 'granted') continue;
      this.#out.push({ type: 'ended', ref: own.ref, lock: firstLock(own), reason: 'lease_lost' });
      this.#dropOwn(own);
    }
  }

  /** The lease came back, or lapsed: then every hold and waiter of our own clients ends, and nothing is granted until it is back. */
  lease(valid: boolean): void {
    this.#leaseValid = valid;
    if (valid) {
      if (this.#peers.synced) this.issuePending();
      for (const lock of [...this.#locks.waitingLocks()]) this.recheck(lock);
      return;
    }
    // Waiting requests end too: a peer without a lease may have been evicted, and its old
    // requests, granted later on acks it heard before the eviction, would sort below grants
    // the majority made meanwhile (simulator seed 216761: a zombie regained a lease through
    // peers that restarted after evicting it, and granted a request older than their grants).
    const dropped = this.#locks.ownRequests().filter((own) => own.state !== 'pending');
    this.#locks.dropOwnAll(dropped);
    for (const own of dropped) {
      this.#out.push({ type: 'ended', ref: own.ref, lock: firstLock(own), reason: 'lease_lost' });
      this.announceRelease(own);
    }
  }

  /** Rule 3 for every waiting request of ours on one lock. */
  recheck(lock: string): void {
    if (!this.#locks.isWaiting(lock) || !this.#leaseValid || this.#fenced) return;
    const decided = this.#locks.grantCheck(lock, this.#peers.minLastTs())
      .filter(({ own }) => lock !== viewLock || this.#changes.gateOpen(own.ts, this.#peers.members()));
    for (const { own, grant } of decided) this.#decide(own, grant);
    // A refused no-wait request left its queues, which may admit a later one of ours.
    if (decided.every((d) => d.grant)) return;
    const left = new Set(decided.flatMap((d) => (d.grant ? [] : d.own.parts.map((p) => p.lock))));
    for (const l of left) this.recheck(l);
  }

  #decide(own: OwnRequest, grant: boolean): void {
    if (!grant) {
      this.#out.push({ type: 'refused', ref: own.ref, lock: firstLock(own), ahead: this.#position(own) });
      this.#dropOwn(own);
      return;
    }
    own.state = 'granted';
    this.#locks.stopWaiting(own);
    const token = tokenOf(own.ts, this.#self);
    this.#out.push({ type: 'granted', ref: own.ref, lock: firstLock(own), ts: own.ts, token, mode: firstPart(own).spec.mode });
  }

  /** Whether requests of `peer` ahead of our issued request keep it out of one of its queues. */
  #blockedBy(own: OwnRequest, peer: number): boolean {
    return own.parts.some(({ lock, spec }) => this.#locks.blockedBy({ lock, ts: own.ts, peer: this.#self, ...spec }, peer));
  }

  /** Requests ahead of an issued request of ours: in the longest queue, for one naming several locks. */
  #position(own: OwnRequest): number {
    return Math.max(0, ...own.parts.map((p) => this.#locks.indexOf(p.lock, own.ts, this.#self)));
  }

  #broadcast(msg: PeerMessage): void {
    // A peer of the view not joined yet is skipped: the state transfer will cover it.
    for (const p of this.#peers.audience()) this.#out.send(p, msg);
  }

  /** Why a request of ours is not granted yet (for a timeout's 423 or 503). */
  explain(ref: number): Explanation | undefined {
    const own = this.#locks.own(ref);
    if (own === undefined) return undefined;
    // A peer whose requests ahead keep ours out owes no ack (rule 2): its release will carry one.
    // A request not issued yet waits for the peers we are not synced with; synced, it waits
    // for the lease, which every peer may renew (issue 37: a peer that never started was
    // named beside the peers that answer).
    const unsynced = own.state === 'pending' ? this.#peers.unsynced() : [];
    const missing = own.state === 'pending' ? (unsynced.length > 0 ? unsynced : this.#peers.members()) : this.#peers.missingAcks(own.ts).filter((p) => !this.#blockedBy(own, p));
    const position = own.state === 'pending' ? 0 : this.#position(own);
    return { state: own.state, position, missingPeers: own.state === 'granted' ? [] : missing };
  }
}
