/**
 * A change of the agreed view asked for by an operator (`lamport-lock member ...`, the HTTP
 * API's member endpoints): docs/reconfiguration.md, rules P1 and P2. The runtime takes the view
 * lock like any lock, proposes the change on top of the view it holds when granted, waits until
 * the view is chosen and every member passed it back, then releases the lock.
 */
import type { Machine, MachineEvent } from '../core/machine.js';
import { viewLock } from '../core/messages.js';
import type { AgreedView, ViewChange } from '../core/view.js';
import { applyChange } from '../core/view.js';
import type { Env, Timer } from '../env.js';
import { ErrorCode, LockError } from '../errors.js';
import type { Logger } from '../log.js';
import type { AcquireOptions, RequestCallbacks, RequestHandle } from './holds.js';

/** How long a change may take, and who may give up on it. */
export interface ChangeOptions {
  /** From the call to the view chosen and passed back by every member; ERR_TIMEOUT after it. */
  readonly timeoutMs: number;
  readonly signal?: AbortSignal | undefined;
}

/** The newest protocol level a member's binary advertised (its last handshake; this binary's for this peer), null: none since this peer started. */
export interface MemberLevel {
  readonly id: string;
  readonly newestLevel: number | null;
}

/**
 * Who among `members` has not told a binary that speaks `level` (rule P9), in words; null:
 * every one has. A member not heard from since this peer started counts as not speaking it.
 */
export function unspoken(members: readonly MemberLevel[], level: number): string | null {
  const behind = members.filter((m) => m.newestLevel === null || m.newestLevel < level)
    .map((m) => (m.newestLevel === null ? `${m.id} (not heard from since this peer started)` : `${m.id} (speaks up to ${m.newestLevel})`));
  return behind.length === 0 ? null : behind.join(', ');
}

/** `change` applied to `view`, or why not; a raise only once every member's binary speaks the level (rule P9). */
function changed(view: AgreedView, change: ViewChange, members: readonly MemberLevel[]): AgreedView | string {
  if (change.op !== 'level' || change.level <= view.level) return applyChange(view, change);
  const behind = unspoken(members, change.level);
  if (behind !== null) return `level ${change.level} is not spoken by every member yet: ${behind}. Run a binary that speaks it on every member first (remove a member that is down for good)`;
  return applyChange(view, change, change.level);
}

/** What the operator's change is checked against before anything is sent: the view as this peer knows it. */
export function checkChange(view: AgreedView, change: ViewChange, members: readonly MemberLevel[]): AgreedView {
  const next = changed(view, change, members);
  if (typeof next === 'string') throw new LockError(ErrorCode.ChangeRefused, `${next} (the view at epoch ${view.epoch})`, { epoch: view.epoch });
  return next;
}

/** Whether `change` is in effect in `view` (an add with the addresses asked). */
function madeIn(view: AgreedView, change: ViewChange): boolean {
  const m = change.op === 'level' ? undefined : view.members.find((x) => x.id === change.id);
  switch (change.op) {
    case 'add':
      return m !== undefined && m.ws === change.ws && m.http === change.http;
    case 'promote':
      return m?.state === 'voter';
    case 'remove':
      return m === undefined || m.state === 'leaving';
    case 'retire':
      return m === undefined;
    case 'level':
      return view.level >= change.level;
  }
}

/** What a change reads and moves of its peer (PeerRuntime lends it). */
export interface ChangeHost {
  readonly env: Env;
  readonly log: Logger;
  /** The view as this peer holds it now. */
  view(): AgreedView;
  /** The newest level each member's binary advertised, this peer's included. */
  memberLevels(): readonly MemberLevel[];
  /** Whether no echo of member `id` (a learner's too) would vouch for this peer's lease now (core/lease.ts `echoedBy`). */
  silent(id: string): boolean;
  /** Why this peer cannot take part in a change now, if it cannot (no data dir, a level below 10). */
  refusal(): LockError | null;
  /** The core's view of its proposal. */
  machine(): Pick<Machine, 'proposal' | 'viewAcked' | 'clusterView' | 'removed'>;
  request(lock: string, opts: AcquireOptions, cb: RequestCallbacks): RequestHandle;
  release(lock: string, id: string): void;
  /** Steps the current incarnation's core (`propose`). */
  step(event: MachineEvent): void;
  /** Calls `fn` after every step of the core until the returned function is called. */
  onChanged(fn: () => void): () => void;
}

/** Waits between two tries when too few voters promised (a rival's ballot was higher). */
const retryMs = 50;

/**
 * Runs `change` to its end (docs/reconfiguration.md P1-P3): takes the view lock, proposes the
 * change on top of the view held at the grant (or finishes a predecessor's first, then tries
 * again), waits until the view is chosen and every member of the ack set passed it back,
 * releases. `done` hears the view that has the change, or why there is none. Driven by the
 * core's steps and the env's timers alone, so the simulator runs it as production does.
 */
export function startChange(host: ChangeHost, change: ViewChange, opts: ChangeOptions, done: (result: AgreedView | LockError) => void): void {
  try {
    checkChange(host.view(), change, host.memberLevels());
  } catch (err) {
    return done(err as LockError);
  }
  const refused = host.refusal();
  if (refused !== null) return done(refused);
  new ChangeRun(host, change, opts, done).ask();
}

/** One change under way: its view lock requests, one after another, and what it waits for. */
class ChangeRun {
  readonly #host: ChangeHost;
  readonly #change: ViewChange;
  readonly #opts: ChangeOptions;
  readonly #done: (result: AgreedView | LockError) => void;
  readonly #deadline: number;
  /** The view lock as held now: its id, and whether the hold still lives. */
  #hold: { readonly id: string; live: boolean } | null = null;
  #timer: Timer | null = null;
  #stopWatching: (() => void) | null = null;
  #finished = false;
  /** Set once this run proposed its change: a later try that finds it made (finished by the next holder) succeeds. */
  #proposed = false;

  constructor(host: ChangeHost, change: ViewChange, opts: ChangeOptions, done: (result: AgreedView | LockError) => void) {
    this.#host = host;
    this.#change = change;
    this.#opts = opts;
    this.#done = done;
    this.#deadline = host.env.monoMs() + opts.timeoutMs;
  }

  /** Asks for the view lock, for at most what is left of the time. */
  ask(): void {
    if (this.#finished) return;
    const left = Math.ceil(this.#deadline - this.#host.env.monoMs());
    if (left <= 0 || this.#opts.signal?.aborted === true) return this.#finish(this.#timedOut());
    const handle = this.#host.request(viewLock, {
      mode: 'exclusive', limit: 1, permits: 1, owner: 'lamport-lock member change', meta: null,
      timeoutMs: left, ttlMs: left, hold: 'ttl', expectedMs: null,
    }, {
      // Proposed at the next turn: the grant comes inside a step of the core, which takes no other.
      granted: (grant) => {
        const hold = { id: grant.id, live: true };
        this.#hold = hold;
        this.#host.env.soon(() => this.#propose(hold));
      },
      failed: (err) => this.#finish(err.code === ErrorCode.Timeout ? this.#timedOut() : err),
      ended: () => {
        if (this.#hold !== null) this.#hold.live = false;
      },
    });
    this.#opts.signal?.addEventListener('abort', () => handle.clientGone(), { once: true });
  }

  /** With the view lock held: proposes the change on top of the core's view, then waits for its end. */
  #propose(hold: { readonly id: string; live: boolean }): void {
    // A grant that comes after the run ended (timed out, aborted) is let go at once.
    if (this.#finished) return this.#letGo();
    const view = this.#host.machine().clusterView;
    // The incarnation that was granted the lock ended meanwhile (its holds ended with it).
    if (!hold.live || view === null) return this.#again();
    // A learner promoted before its echoes reach this peer would count in the majority of every
    // lease from the view on, and lapse it at once while a voter is down (member-replace.test.ts
    // saw every hold of the proposer and another voter end): wait for its echo first.
    if (this.#change.op === 'promote' && this.#host.silent(this.#change.id)) return this.#again();
    const target = changed(view, this.#change, this.#host.memberLevels());
    if (typeof target === 'string') {
      // Our own change, proposed by an earlier try and finished by the next holder: made.
      if (this.#proposed && madeIn(view, this.#change)) return this.#finish(view);
      return this.#finish(new LockError(ErrorCode.ChangeRefused, `${target} (the view at epoch ${view.epoch})`, { epoch: view.epoch }));
    }
    this.#host.step({ type: 'propose', view: target });
    const proposal = this.#host.machine().proposal;
    if (proposal === null) return this.#again(); // Too few promises: a rival's ballot was higher.
    if (proposal.own) this.#proposed = true;
    const ready = (): boolean => {
      const m = this.#host.machine();
      // The view chosen and passed back by every member; or this peer removed by it (it holds nothing more).
      return (m.clusterView?.epoch ?? -1) >= proposal.view.epoch && (m.viewAcked || m.removed);
    };
    const settled = (): void => {
      if (!proposal.own) {
        this.#host.log.warn({ epoch: proposal.view.epoch }, 'finished the change a previous holder of the view lock had begun; proposing ours next');
        return this.#again();
      }
      this.#host.log.warn({ epoch: proposal.view.epoch, change: this.#change }, 'the members of the cluster changed');
      this.#finish(this.#host.view());
    };
    if (ready()) return settled();
    this.#timer = this.#host.env.after(Math.max(1, Math.ceil(this.#deadline - this.#host.env.monoMs())), () => this.#finish(this.#timedOut()));
    this.#stopWatching = this.#host.onChanged(() => {
      if (!this.#finished && ready()) {
        this.#unwatch();
        settled();
      } else if (hold.live === false) {
        this.#unwatch();
        this.#again();
      }
    });
  }

  /** Lets go of the view lock and asks again a little later. */
  #again(): void {
    this.#letGo();
    this.#host.env.after(retryMs, () => this.ask());
  }

  #unwatch(): void {
    this.#stopWatching?.();
    this.#stopWatching = null;
    this.#host.env.clear(this.#timer);
    this.#timer = null;
  }

  #letGo(): void {
    const hold = this.#hold;
    this.#hold = null;
    if (hold?.live === true) this.#host.release(viewLock, hold.id);
  }

  #finish(result: AgreedView | LockError): void {
    if (this.#finished) return;
    this.#finished = true;
    this.#unwatch();
    this.#letGo();
    this.#done(result);
  }

  #timedOut(): LockError {
    const epoch = this.#host.view().epoch;
    return new LockError(ErrorCode.Timeout, `the change (${this.#change.op}) did not complete within ${this.#opts.timeoutMs} ms; the view is at epoch ${epoch}. Every member must be up and synced for a change (GET /v1/members)`, { epoch });
  }
}
