/**
 * The sim runtime's client bookkeeping: every request a simulated client made, its state
 * as the client sees it, and the holds it reports to the checker. Refs are allocated here,
 * as the real runtime allocates them, and are unique across the whole run.
 */
import type { Effect } from '../../src/core/machine.js';
import type { RequestSpec } from '../../src/core/types.js';
import type { Checker } from './checker.js';
import type { ClientEnd } from './events.js';

/** queued: not yet seen by its peer (paused); waiting: in the core; held; done. */
export type ClientState = 'queued' | 'waiting' | 'held' | 'done';

/** One client request and what became of it. */
export interface ClientRequest {
  readonly ref: number;
  readonly peer: number;
  readonly life: number;
  readonly lock: string;
  readonly spec: RequestSpec;
  readonly noWait: boolean;
  readonly issuedMs: number;
  state: ClientState;
  outcome: string;
}

/** Told when a request is granted, so the workload can schedule its release. */
export type OnGranted = (req: ClientRequest) => void;

type GrantedEffect = Extract<Effect, { type: 'granted' }>;

/** Every open request of the run, by ref. */
export class Clients {
  readonly #checker: Checker;
  readonly #open = new Map<number, ClientRequest>();
  #nextRef = 1;
  #unresolved = 0;
  readonly #openPerPeer = new Map<number, number>();
  readonly #heldPerPeer = new Map<number, number>();
  onGranted: OnGranted = () => undefined;

  constructor(checker: Checker) {
    this.#checker = checker;
  }

  /** Requests neither granted nor finished: what the liveness phase waits for. */
  get unresolved(): number {
    return this.#unresolved;
  }

  /** Requests and holds not finished yet. */
  get openCount(): number {
    return this.#open.size;
  }

  /** Open requests and holds of one peer's clients. */
  openOf(peer: number): number {
    return this.#openPerPeer.get(peer) ?? 0;
  }

  /** Holds of one peer's clients granted and not ended (the self-fencing check). */
  heldOf(peer: number): number {
    return this.#heldPerPeer.get(peer) ?? 0;
  }

  /** A client asks its peer for a lock. */
  create(opts: { peer: number; life: number; lock: string; spec: RequestSpec; noWait: boolean; nowMs: number }): ClientRequest {
    const req: ClientRequest = { ref: this.#nextRef++, ...opts, issuedMs: opts.nowMs, state: 'queued', outcome: '' };
    this.#open.set(req.ref, req);
    this.#openPerPeer.set(req.peer, this.openOf(req.peer) + 1);
    this.#unresolved += 1;
    return req;
  }

  /** The open request with this ref, if any. */
  get(ref: number): ClientRequest | undefined {
    return this.#open.get(ref);
  }

  /** The peer's core has taken the request. */
  submitted(req: ClientRequest): void {
    req.state = 'waiting';
  }

  /** The core granted: the hold becomes valid and the checker learns of it. */
  granted(peer: number, f: GrantedEffect, nowMs: number): void {
    const req = this.#open.get(f.ref);
    if (req === undefined || req.state !== 'waiting') throw new Error(`p${peer} granted ref ${f.ref}, which is not waiting`);
    req.state = 'held';
    this.#unresolved -= 1;
    this.#heldPerPeer.set(peer, this.heldOf(peer) + 1);
    const { limit, permits } = req.spec;
    const hold = { ref: f.ref, peer, life: req.life, lock: f.lock, ts: f.ts, mode: f.mode, limit, permits, token: f.token, grantedMs: nowMs };
    this.#checker.grant(hold, nowMs);
    this.onGranted(req);
  }

  /** The core ended the request itself (no-wait refusal, lease lost). */
  endedByCore(ref: number, outcome: string): void {
    const req = this.#open.get(ref);
    if (req !== undefined) this.#close(req, outcome);
  }

  /** The client released, its TTL expired or its wait was cancelled. */
  finish(req: ClientRequest, end: ClientEnd): void {
    this.#close(req, end);
  }

  /** A peer's incarnation ended (crashed, or evicted and rejoining): its clients' requests and holds end. */
  endAll(peer: number, outcome: 'crashed' | 'evicted'): void {
    for (const req of [...this.#open.values()]) if (req.peer === peer) this.#close(req, outcome);
  }

  /** Requests still waiting, for the liveness report. */
  waiting(): ClientRequest[] {
    return [...this.#open.values()].filter((r) => r.state === 'queued' || r.state === 'waiting');
  }

  #close(req: ClientRequest, outcome: string): void {
    if (req.state === 'held') {
      this.#checker.end(req.lock, req.ref);
      this.#heldPerPeer.set(req.peer, this.heldOf(req.peer) - 1);
    } else this.#unresolved -= 1;
    req.state = 'done';
    req.outcome = outcome;
    this.#open.delete(req.ref);
    this.#openPerPeer.set(req.peer, this.openOf(req.peer) - 1);
  }
}
