/**
 * The simulated clients, entering where a real client does: the peer's HTTP API
 * (src/http/handler.ts, reached through http.ts with plain requests in virtual time):
 * acquire, release, refresh, proclaim, and going away (a closed connection, on which the API
 * withdraws a waiting request or ends a connection-bound hold). A client acts on the answers
 * it gets. Beneath the API, the checker hears the runtime's callbacks (http.ts's tap) and
 * holds the runtime to its promise that a holder is told when and why its hold ended:
 * exactly once, and for every end it did not cause itself.
 */
import type { EndReason } from '../../src/core/types.js';
import { tokenPeerFactor } from '../../src/core/types.js';
import { httpStatusOf } from '../../src/errors.js';
import type { AcquireOptions, Grant, HoldOptions, LockAsk, RequestHandle } from '../../src/runtime/holds.js';
import type { Checker } from './checker.js';
import type { SimPeerProcess } from './cluster.js';
import type { SimTime } from './host.js';
import type { AcquireObserver, Told } from './http.js';
import { SimExchange, SimHttp, acquireRequest, lockPath } from './http.js';

/** waiting: asked, no answer yet; held; done (failed, ended, released, or its peer died). */
export type ClientState = 'waiting' | 'held' | 'done';

/** One client request and what became of it. */
export interface ClientRequest {
  readonly ref: number;
  readonly peer: number;
  readonly proc: SimPeerProcess;
  /** The first lock it names (its only one, but for an all-or-nothing request). */
  readonly lock: string;
  /** Every lock it names, with mode, limit and permits; the first is `lock`, as `opts` asks. */
  readonly asks: readonly LockAsk[];
  readonly opts: AcquireOptions;
  readonly issuedMs: number;
  /** The client cancels by going away; false in the liveness phase's requests. */
  state: ClientState;
  /** The runtime's handle of its request (the tap's), once the request reached the runtime. */
  handle: RequestHandle | null;
  /** The connection of its acquire, once sent. */
  conn: SimExchange | null;
  /** The grant the runtime made (the tap's), which the client may never have been answered. */
  grant: Grant | null;
  /** The hold id its acquire was answered with. */
  holdId: string | null;
  /** Its process's monotonic ms at which its TTL runs out, as its grant or last refresh set it (null: no TTL). */
  expiresMonoMs: number | null;
  /** Ends the runtime told (more than one is a violation). */
  told: EndReason[];
  /**
   * Its client closed the connection after asking, and the peer does not notice before the
   * grant (a parked socket, src/http/parked-sockets.ts): the API releases the grant inside
   * its callback (re-entrant).
   */
  readonly leftUnnoticed: boolean;
  /** Held as long as whoever asked decides (a fault episode), not as the workload does. */
  readonly keptByCaller: boolean;
  outcome: string;
}

/** Told when a request is granted, so the workload can schedule what the holder does next. */
export type OnGranted = (req: ClientRequest) => void;

/** Every request of the run. */
export class Clients {
  readonly #checker: Checker;
  readonly #time: SimTime;
  readonly #open = new Map<number, ClientRequest>();
  #nextRef = 1;
  #unresolved = 0;
  onGranted: OnGranted = () => undefined;
  /** Told when a holder's announcement of meta `{value}` was answered 200 (the META check, test/sim/meta-check.ts). */
  onProclaimed: (req: ClientRequest, value: number) => void = () => undefined;
  transcript: { add(nowMs: number, peer: number | null, what: string): void } | null = null;

  constructor(checker: Checker, time: SimTime) {
    this.#checker = checker;
    this.#time = time;
  }

  /** The ref the next request will get. */
  get nextRef(): number {
    return this.#nextRef;
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
    let n = 0;
    for (const r of this.#open.values()) if (r.peer === peer) n++;
    return n;
  }

  /** A client asks a process for a lock; the request reaches it when the process runs. */
  acquire(proc: SimPeerProcess, lock: string, opts: AcquireOptions, leftUnnoticed = false, keptByCaller = false): ClientRequest {
    return this.acquireAll(proc, [{ lock, mode: opts.mode, limit: opts.limit, permits: opts.permits }], opts, leftUnnoticed, keptByCaller);
  }

  /**
   * A client asks a process for every lock of `asks` at once (POST /v1/acquire, all-or-nothing);
   * `opts` holds as for a single lock, its mode, limit and permits being the first ask's.
   */
  acquireAll(proc: SimPeerProcess, asks: readonly LockAsk[], opts: AcquireOptions, leftUnnoticed = false, keptByCaller = false): ClientRequest {
    const lock = asks[0]?.lock ?? '';
    const req: ClientRequest = {
      ref: this.#nextRef++, peer: proc.proc.peer, proc, lock, asks, opts, issuedMs: this.#time.nowMs, state: 'waiting',
      handle: null, conn: null, grant: null, holdId: null, expiresMonoMs: null, told: [], outcome: '', leftUnnoticed, keptByCaller,
    };
    this.#open.set(req.ref, req);
    this.#unresolved += 1;
    proc.proc.at(this.#time.nowMs, () => {
      if (req.state !== 'waiting') return false;
      if (!proc.runtime.started) {
        // Its HTTP listener opens only once the runtime started: the connection is refused.
        this.#close(req, 'refused');
        return false;
      }
      const { path, body } = acquireRequest(asks, opts);
      req.conn = new SimExchange((status, answer) => this.#answered(req, status, answer), leftUnnoticed);
      this.#http(proc).post(path, body, req.conn, this.#observer(req));
      return true;
    });
    return req;
  }

  /** Each process's API, as its clients reach it. */
  readonly #apis = new WeakMap<SimPeerProcess, SimHttp>();

  #http(proc: SimPeerProcess): SimHttp {
    let api = this.#apis.get(proc);
    if (api === undefined) {
      api = new SimHttp(proc);
      this.#apis.set(proc, api);
    }
    return api;
  }

  /** What the checker hears of `req` beneath the API: the runtime's callbacks. */
  #observer(req: ClientRequest): AcquireObserver {
    return {
      took: (handle, asks, opts) => {
        req.handle = handle;
        checkSent(req, asks, opts);
      },
      heard: (told) => {
        if ('granted' in told) return this.#granted(req, told.granted);
        if ('ended' in told) return this.#ended(req, told.ended);
        const err = told.failed;
        if (req.state !== 'waiting') return this.#checker.told(this.#time.nowMs, `ref ${req.ref} failed (${err.code}) after it ${req.state === 'held' ? 'was granted' : 'ended'}`);
        this.#close(req, err.code);
      },
      answered: (told) => this.#checkAnswered(req, told),
    };
  }

  /**
   * The API writes what the runtime tells a request to its client's connection in the turn it
   * is told (src/http/handler.ts `#acquire`): the grant, the failure with its code, and a
   * connection-bound hold's end. A client that left is answered nothing.
   */
  #checkAnswered(req: ClientRequest, told: Told): void {
    const conn = req.conn;
    if (conn === null || conn.left) return;
    let missing: string | null = null;
    if ('granted' in told) {
      if (conn.status !== 200 || conn.first?.['id'] !== told.granted.id) missing = `its grant ${told.granted.id}`;
    } else if ('failed' in told) {
      const { code } = told.failed;
      if (conn.status !== httpStatusOf[code] || conn.first?.['error'] !== code) missing = `its failure ${code}`;
    } else if (req.opts.hold === 'connection' && conn.last?.['ended'] !== told.ended) missing = `the end of its hold (${told.ended})`;
    if (missing !== null) this.#checker.told(this.#time.nowMs, `ref ${req.ref}'s open connection was not answered ${missing} in the turn the runtime told it`);
  }

  /**
   * The answer to an acquire (of a connection-bound hold, its first line). A failure was
   * heard beneath already; one the runtime never made is the simulator's request at fault.
   */
  #answered(req: ClientRequest, status: number, answer: Record<string, unknown>): void {
    if (status !== 200) {
      if (req.state === 'waiting') throw new Error(`simulator: ref ${req.ref}'s acquire was refused by the API: ${status} ${JSON.stringify(answer)}`);
      return;
    }
    req.holdId = String(answer['id']);
    if (!req.keptByCaller) this.onGranted(req);
  }

  #granted(req: ClientRequest, g: Grant): void {
    if (req.state !== 'waiting') {
      this.#checker.told(this.#time.nowMs, `ref ${req.ref} granted while ${req.state}`);
      return;
    }
    req.state = 'held';
    req.grant = g;
    req.expiresMonoMs = req.opts.ttlMs > 0 ? req.proc.proc.env.monoMs() + req.opts.ttlMs : null;
    this.#unresolved -= 1;
    const ts = Number(g.token / BigInt(tokenPeerFactor));
    const names = req.asks.map((a) => a.lock).join('+');
    if (req.asks.length > 1) this.multiGrants += 1;
    if (this.transcript !== null) this.transcript.add(this.#time.nowMs, req.peer, `#${req.proc.proc.id} GRANT ref ${req.ref} ${names} ${g.mode} token ${g.token}`);
    if (g.locks.length !== req.asks.length || g.locks.some((l, i) => l.lock !== req.asks[i]?.lock || l.mode !== req.asks[i]?.mode)) {
      this.#checker.told(this.#time.nowMs, `ref ${req.ref} asked for ${names}, granted ${g.locks.map((l) => `${l.lock} ${l.mode}`).join(', ')}`);
    }
    // Each lock an all-or-nothing request names is a hold of that lock, judged with that lock's others.
    for (const { lock, mode, limit, permits } of req.asks) {
      this.#checker.grant({ ref: req.ref, peer: req.peer, ordinal: req.proc.runtime.index, life: req.proc.proc.id, lock, ts, mode, limit, permits, token: g.token, grantedMs: this.#time.nowMs }, this.#time.nowMs);
    }
  }

  #ended(req: ClientRequest, reason: EndReason): void {
    req.told.push(reason);
    const monoMs = req.proc.proc.env.monoMs();
    if (reason === 'expired' && req.expiresMonoMs !== null && monoMs + 1e-6 < req.expiresMonoMs) {
      this.#checker.expiredEarly(this.#time.nowMs, `ref ${req.ref} ended as expired ${(req.expiresMonoMs - monoMs).toFixed(1)} ms before the expiry its last grant or refresh set`);
    }
    if (req.told.length > 1) this.#checker.told(this.#time.nowMs, `ref ${req.ref} was told its hold ended ${req.told.length} times: ${req.told.join(', ')}`);
    if (req.state === 'held') this.#close(req, reason);
  }

  /** The holder releases its hold (it must be live, or the client must have been told it ended). */
  release(req: ClientRequest): void {
    req.proc.proc.at(this.#time.nowMs, () => {
      if (req.state !== 'held') return false;
      this.#onHolder(req, lockPath('locks', req.lock, 'release'), { id: req.holdId }, 'release');
      if (req.state === 'held') this.#checker.told(this.#time.nowMs, `ref ${req.ref} released, but its end was not told`);
      return true;
    });
  }

  /** The holder extends its TTL. */
  refresh(req: ClientRequest): void {
    req.proc.proc.at(this.#time.nowMs, () => {
      if (req.state !== 'held') return false;
      this.#onHolder(req, lockPath('locks', req.lock, 'refresh'), { id: req.holdId }, 'refresh', () => {
        if (req.opts.ttlMs > 0) req.expiresMonoMs = req.proc.proc.env.monoMs() + req.opts.ttlMs;
      });
      return true;
    });
  }

  /** Grants of requests that named several locks at once. */
  multiGrants = 0;

  /** META announcements made (a holder's new meta). */
  proclaims = 0;

  /** The holder announces new meta (a leader's new value): META to every peer it met. */
  proclaim(req: ClientRequest): void {
    req.proc.proc.at(this.#time.nowMs, () => {
      if (req.state !== 'held') return false;
      const value = ++this.proclaims;
      this.#onHolder(req, lockPath('elections', req.lock, 'proclaim'), { id: req.holdId, value }, 'proclaim', () => this.onProclaimed(req, value));
      return true;
    });
  }

  /**
   * The client goes away: it closes the connection of its acquire, if it still has one open
   * (a waiting request, a connection-bound hold; a TTL grant's answer ended its exchange).
   */
  leave(req: ClientRequest): void {
    req.proc.proc.at(this.#time.nowMs, () => {
      if (req.state === 'done') return false;
      if (req.state === 'held' && req.conn?.closed !== false) return false;
      req.conn?.leave();
      this.#close(req, 'left');
      return true;
    });
  }

  /**
   * A holder's call on its process (release, refresh, proclaim); `ok` runs on its 200. A 404
   * for a hold it was never told had ended is a violation; any other refusal is the
   * simulator's request at fault.
   */
  #onHolder(req: ClientRequest, path: string, body: Record<string, unknown>, what: string, ok: () => void = () => undefined): void {
    if (req.state !== 'held') return;
    this.#http(req.proc).post(path, body, new SimExchange((status, answer) => {
      if (status === 200) return ok();
      if (answer['error'] !== 'ERR_NOT_HELD') throw new Error(`simulator: ref ${req.ref}'s ${what} was refused by the API: ${status} ${JSON.stringify(answer)}`);
      if (req.state === 'held') {
        this.#checker.told(this.#time.nowMs, `ref ${req.ref}'s ${what} answered 404 (${String(answer['reason'])}): its hold ended untold`);
        this.#close(req, 'untold');
      }
    }));
  }

  /** A process died: its clients' connections reset; their requests and holds are over. */
  crashed(procId: number): void {
    for (const req of [...this.#open.values()]) if (req.proc.proc.id === procId) this.#close(req, 'crashed');
  }

  /** At the end of a run: every hold a client still believes live must be live in its runtime. */
  checkBelieved(): void {
    for (const req of this.#open.values()) {
      if (req.state !== 'held' || !req.proc.proc.alive) continue;
      const state = req.proc.runtime.inspect.requestState(req.grant?.id ?? '');
      if (state !== 'held') this.#checker.told(this.#time.nowMs, `ref ${req.ref} believes it holds ${req.lock}, but its peer says ${state ?? 'nothing'}: ended untold`);
    }
  }

  /**
   * A zombie answers its waiters at once (docs/design.md section 9): after its first task as a
   * zombie, the fence has ended every request it had taken, and one taken later is refused on
   * the spot. Called after each later task of that process (a later virtual time, so the
   * batches the fence answers at the end of its turn have run).
   */
  checkZombieWaiters(p: SimPeerProcess): void {
    for (const req of this.#open.values()) {
      if (req.proc !== p || req.state !== 'waiting' || req.handle === null) continue;
      this.#checker.zombie(this.#time.nowMs, `process ${p.proc.id} of p${p.proc.peer} is superseded, but its client's ref ${req.ref} (${req.lock}) still waits`);
      return;
    }
  }

  /** Requests still waiting, for the liveness report. */
  waiting(): ClientRequest[] {
    return [...this.#open.values()].filter((r) => r.state === 'waiting');
  }

  #close(req: ClientRequest, outcome: string): void {
    if (req.state === 'done') return;
    if (req.state === 'held' && this.transcript !== null) this.transcript.add(this.#time.nowMs, req.peer, `#${req.proc.proc.id} END ref ${req.ref} ${req.lock} ${outcome}`);
    if (req.state === 'held') for (const { lock } of req.asks) this.#checker.end(lock, req.ref);
    else this.#unresolved -= 1;
    req.state = 'done';
    req.outcome = outcome;
    this.#open.delete(req.ref);
  }
}

/** The request the runtime got must be the one the client asked for: the API's parsing round trip loses nothing. */
function checkSent(req: ClientRequest, asks: readonly LockAsk[], opts: HoldOptions): void {
  const key = (a: readonly LockAsk[], o: HoldOptions): string => JSON.stringify([a.map((x) => [x.lock, x.mode, x.limit, x.permits]), o.timeoutMs, o.ttlMs, o.hold, o.owner, o.meta, o.expectedMs]);
  if (key(asks, opts) !== key(req.asks, req.opts)) throw new Error(`simulator: ref ${req.ref} reached the runtime as ${key(asks, opts)}, not as asked: ${key(req.asks, req.opts)}`);
}
