/**
 * Local requests of one peer: what the HTTP API hands out (an id per request), their
 * TTLs and wait deadlines, and a bounded memory of how recent holds ended, so a release
 * or refresh of a hold that is gone answers 404 with the reason (docs/design.md section 6).
 */
import type { EndReason, Mode, RequestPart, RequestSpec } from '../core/types.js';
import type { Timer } from '../env.js';
import type { LockError } from '../errors.js';
import { RecentMap } from '../recent-map.js';

/** What a client asks for, validated: the request's fields (`RequestSpec`) and how to hold it. */
export interface AcquireOptions extends Omit<RequestSpec, 'requestedAtMs'> {
  readonly timeoutMs: number;
  /** 0 = no TTL (only with a connection-bound hold). */
  readonly ttlMs: number;
  readonly hold: 'ttl' | 'connection';
  /** Optional: a hold kept longer than this is logged and counted (operations). */
  readonly expectedMs: number | null;
}

/** How a request holds, whatever it names: `AcquireOptions` without the per-lock fields. */
export type HoldOptions = Omit<AcquireOptions, 'mode' | 'limit' | 'permits'>;

/** One lock of an all-or-nothing request, and how it is asked for there. */
export interface LockAsk {
  readonly lock: string;
  readonly mode: Mode;
  readonly limit: number;
  readonly permits: number;
}

/** A granted hold, as the HTTP API returns it. */
export interface Grant {
  /** The first lock it names (the only one, but for an all-or-nothing request). */
  readonly lock: string;
  /** Every lock it names, in the order asked, with its mode; they share the one token. */
  readonly locks: readonly { readonly lock: string; readonly mode: Mode }[];
  readonly id: string;
  readonly token: bigint;
  readonly mode: Mode;
  readonly peer: string;
  readonly grantedAt: number;
  readonly expiresAt: number | null;
}

/**
 * How a local request reports back, registered when it is made so that nothing can happen
 * before anyone listens (issue 12, defect 2: a hold ended in the turn of its grant, before
 * the HTTP layer had registered its end listener, and its client was never told).
 * Exactly one of `granted` and `failed` is called, once; after `granted`, `ended` is
 * called once when the hold ends, whatever the reason (`released` after a release call
 * too), unless the holder left first (`clientGone`).
 */
export interface RequestCallbacks {
  granted(grant: Grant): void;
  failed(error: LockError): void;
  ended(reason: EndReason): void;
}

/** A request as its maker holds it. */
export interface RequestHandle {
  /** The hold id (the same as the grant's). */
  readonly id: string;
  /**
   * The client went away: a waiting request is withdrawn (`failed` is not called), and a
   * connection-bound hold is released (`ended` is not called: the holder left).
   */
  clientGone(): void;
}

/** One local request, from acquire until it ends. */
export interface LocalRequest {
  readonly ref: number;
  readonly id: string;
  /** The first lock it names, and how it asks for it (the only one, but for an all-or-nothing request). */
  readonly lock: string;
  readonly spec: RequestSpec;
  /** Every lock it names (all-or-nothing when more than one), the first being `lock`. */
  readonly parts: readonly RequestPart[];
  readonly opts: HoldOptions;
  /** Monotonic ms of the acquire (durations); its epoch ms is `spec.requestedAtMs`. */
  readonly requestedAtMonoMs: number;
  state: 'waiting' | 'held' | 'ended';
  grant: Grant | null;
  ttlTimer: Timer | null;
  waitTimer: Timer | null;
  expectedTimer: Timer | null;
  readonly callbacks: RequestCallbacks;
}

/**
 * The live local requests of one peer, by hold id and by core ref, and a bounded memory of
 * how recent ones ended (so a release of a hold that is gone answers 404 with the reason).
 * LocalHolds adds and finishes them; the views only look them up.
 */
export class LocalRequests {
  readonly #byId = new Map<string, LocalRequest>();
  readonly #byRef = new Map<number, LocalRequest>();
  readonly #ended: RecentMap<string, EndReason>;

  /** `endedMax`: how many ended ids are remembered, the oldest forgotten first. */
  constructor(endedMax: number) {
    this.#ended = new RecentMap(endedMax);
  }

  /** How many are live. */
  get size(): number {
    return this.#byId.size;
  }

  /** The live request with hold id `id`. */
  byId(id: string): LocalRequest | undefined {
    return this.#byId.get(id);
  }

  /** The live request with core ref `ref`. */
  byRef(ref: number): LocalRequest | undefined {
    return this.#byRef.get(ref);
  }

  /** Every live request, oldest first (a copy: the caller may finish them while it iterates). */
  all(): LocalRequest[] {
    return [...this.#byId.values()];
  }

  add(req: LocalRequest): void {
    this.#byId.set(req.id, req);
    this.#byRef.set(req.ref, req);
  }

  /** `req` is live no more, and leaves no trace (a refusal before anything was queued). */
  forget(req: LocalRequest): void {
    this.#byId.delete(req.id);
    this.#byRef.delete(req.ref);
  }

  /** `req` is live no more; why it ended is remembered. */
  finish(req: LocalRequest, reason: EndReason): void {
    this.forget(req);
    this.#ended.set(req.id, reason);
  }

  /** Why hold `id` ended, if it is still remembered. */
  endedReason(id: string): EndReason | undefined {
    return this.#ended.get(id);
  }
}
