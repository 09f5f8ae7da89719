/**
 * Clients of a fault run: a few per peer, each talking HTTP to its own peer only (docs/design.md
 * section 6) in a loop: acquire one of the locks, then read-modify-write increments of that
 * lock's fenced register under the grant's token, then release. Every step is recorded.
 */
import { performance } from 'node:perf_hooks';
import type { LocalCluster } from '../../src/tools/local-cluster.js';
import type { Prng } from '../support/prng.js';
import { delay } from '../support/wait.js';
import type { FencedRegister } from './fenced-register.js';
import type { AcquireOutcome, Op, OpMode } from './history.js';

/** Client loop parameters. */
export interface ClientOptions {
  readonly cluster: LocalCluster;
  readonly registers: ReadonlyMap<string, FencedRegister>;
  readonly history: Op[];
  /** Asked with every acquire. */
  readonly acquireTimeoutMs: number;
  readonly ttlMs: number;
  /** Extra time to wait for an HTTP answer beyond what the request asked for. */
  readonly answerGraceMs: number;
  /**
   * How long to wait for the answer to a release: longer than a pause, so a release sent to
   * a paused peer is answered after SIGCONT and shows whether the peer tells the client its
   * hold was lost meanwhile (it must: 404 lease_lost or evicted, never 200).
   */
  readonly releaseWaitMs: number;
}

interface Answer {
  readonly status: number;
  readonly body: Record<string, unknown>;
}

async function post(url: string, body: unknown, waitMs: number): Promise<Answer> {
  const res = await fetch(url, {
    method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' }, signal: AbortSignal.timeout(waitMs),
  });
  const text = await res.text();
  try {
    return { status: res.status, body: JSON.parse(text) as Record<string, unknown> };
  } catch {
    return { status: res.status, body: { raw: text } };
  }
}

function outcomeOf(status: number): AcquireOutcome {
  if (status === 200) return 'granted';
  if (status === 423) return 'timeout';
  if (status === 503) return 'unavailable';
  return 'error';
}

/** One client bound to one peer (moved to its replacement when the nemesis replaces it). */
export class Client {
  readonly name: string;
  #peer: string;
  readonly #opts: ClientOptions;
  readonly #rng: Prng;
  #stopping = false;
  #done: Promise<void> | null = null;

  constructor(name: string, peer: string, rng: Prng, opts: ClientOptions) {
    this.name = name;
    this.#peer = peer;
    this.#rng = rng;
    this.#opts = opts;
  }

  /** The peer its next acquire goes to. */
  get peer(): string {
    return this.#peer;
  }

  /**
   * Sends the next acquires to `peer` (its peer was replaced by it). A hold keeps its own peer:
   * its release goes where it was granted.
   */
  moveTo(peer: string): void {
    this.#peer = peer;
  }

  /** Starts the loop. */
  start(): void {
    this.#done = this.#loop();
  }

  /** Asks the loop to stop after its current operation and waits for it. */
  async stop(): Promise<void> {
    this.#stopping = true;
    await this.#done;
  }

  async #loop(): Promise<void> {
    const locks = [...this.#opts.registers.keys()];
    while (!this.#stopping) {
      const op = await this.#acquire(this.#rng.pick(locks), this.#mode());
      if (op.outcome === 'granted') await this.#hold(op);
      else await delay(op.outcome === 'no-answer' ? this.#rng.int(100, 300) : this.#rng.int(10, 100));
    }
  }

  #base(peer: string = this.#peer): string {
    return this.#opts.cluster.url(peer);
  }

  /**
   * Mostly exclusive holds (they do the fenced increments); one in ten shared, one in ten a
   * semaphore request of limit 2 or 3 for 1 or 2 permits. Limits differ between requests
   * of one lock on purpose: each holder is judged by its own limit (the canal-lock rule).
   */
  #mode(): OpMode {
    const x = this.#rng.float();
    if (x < 0.8) return { mode: 'exclusive', limit: 1, permits: 1 };
    if (x < 0.9) return { mode: 'shared', limit: 1, permits: 1 };
    const limit = this.#rng.int(2, 3);
    return { mode: 'semaphore', limit, permits: this.#rng.int(1, 2) };
  }

  async #acquire(lock: string, mode: OpMode): Promise<Op> {
    const op: Op = {
      client: this.name, peer: this.#peer, lock, ...mode, invokedAt: performance.now(), completedAt: 0, outcome: null, status: null, token: null, id: null,
      grantedAt: null, releasedAt: null, releaseDoneAt: null, end: null, reason: null, writesAccepted: 0, writesRejected: 0, refusedAt: null,
    };
    this.#opts.history.push(op);
    const modeBody = mode.mode === 'exclusive' ? {} : mode.mode === 'shared' ? { mode: 'shared' } : { limit: mode.limit, permits: mode.permits };
    const base = this.#base(op.peer);
    const body = { timeout_ms: this.#opts.acquireTimeoutMs, ttl_ms: this.#opts.ttlMs, owner: this.name, ...modeBody };
    try {
      const a = await post(`${base}/v1/locks/${lock}/acquire`, body, this.#opts.acquireTimeoutMs + this.#opts.answerGraceMs);
      op.completedAt = performance.now();
      op.status = a.status;
      op.outcome = outcomeOf(a.status);
      if (op.outcome === 'granted') {
        op.grantedAt = op.completedAt;
        op.token = BigInt(String(a.body['token']));
        op.id = String(a.body['id']);
      } else op.reason = typeof a.body['error'] === 'string' ? a.body['error'] : null;
    } catch (err) {
      op.completedAt = performance.now();
      op.outcome = 'no-answer';
      op.reason = (err as Error).name === 'TimeoutError' ? 'timeout' : String((err as Error & { cause?: { code?: string } }).cause?.code ?? (err as Error).message);
    }
    return op;
  }

  /**
   * While holding: an exclusive holder does 1-3 fenced read-modify-write increments; a
   * shared or semaphore holder (not alone by design) only holds for a while. Then the release.
   */
  async #hold(op: Op): Promise<void> {
    if (op.mode === 'exclusive') await this.#increments(op);
    else await delay(this.#pauseMs());
    await delay(this.#rng.int(0, 20));
    await this.#release(op);
  }

  async #increments(op: Op): Promise<void> {
    const register = this.#opts.registers.get(op.lock);
    const token = op.token;
    if (register === undefined || token === null) throw new Error('a granted op has a register and a token');
    const increments = this.#rng.int(1, 3);
    for (let i = 0; i < increments; i++) {
      const value = register.read(token);
      if (value === null) {
        this.#refused(op);
        break;
      }
      await delay(this.#pauseMs());
      if (register.write(token, value + 1)) op.writesAccepted++;
      else {
        this.#refused(op);
        break;
      }
    }
  }

  #refused(op: Op): void {
    op.writesRejected++;
    op.refusedAt ??= performance.now();
  }

  /**
   * How long to wait between a read and its write. Mostly a few ms, so the other clients
   * interleave. Now and then a slow client (a GC pause, a slow disk) holds on for most of
   * its TTL, so faults land in the middle of holds; and rarely a zombie sleeps past its TTL:
   * the peer ends its hold, the next holder gets a higher token, and the zombie's write
   * meets the fence (fencing is exercised even between faults).
   */
  #pauseMs(): number {
    const x = this.#rng.float();
    if (x < 0.004) return this.#opts.ttlMs + this.#rng.int(500, 2000);
    if (x < 0.01) return this.#rng.int(200, this.#opts.ttlMs - 1500);
    return this.#rng.int(0, 15);
  }

  async #release(op: Op): Promise<void> {
    op.releasedAt = performance.now();
    try {
      const a = await post(`${this.#base(op.peer)}/v1/locks/${op.lock}/release`, { id: op.id }, this.#opts.releaseWaitMs);
      op.releaseDoneAt = performance.now();
      if (a.status === 200) op.end = 'released';
      else {
        op.end = a.status === 404 ? 'lost' : 'unanswered';
        op.reason = typeof a.body['reason'] === 'string' ? a.body['reason'] : `status ${a.status}`;
      }
    } catch (err) {
      op.releaseDoneAt = performance.now();
      op.end = 'unanswered';
      op.reason = (err as Error).name;
    }
  }
}
