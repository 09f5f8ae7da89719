/**
 * What META promises (docs/design.md section 6, "Elections"; section 9): a holder's new meta
 * reaches every peer's copy of its queue entry, in order, and an older announcement never
 * replaces a newer one. Checked after every task of a process, reading it through its
 * PeerInspector only:
 *
 * - **reach**: a process whose core counts the announcing incarnation, and has heard from it
 *   a clock above the one its last announcement left it at, shows that announcement's meta on
 *   the request (if the request is in its queue). That clock is what an ack is: the sender's
 *   link is FIFO and a heartbeat carries no clock while anything is unsent, so every message
 *   sent before it has arrived. The holder's own queue shows it at once.
 * - **order**: a process never shows, for one request, a meta older than one it showed before.
 *
 * Announcements carry rising numbers (Clients.proclaim: `{value: n}`, n counting the run's
 * announcements); a request's meta before any is null, counted as 0.
 */
import type { Incarnation, Meta } from '../../src/core/types.js';
import { compareIncarnation, tokenPeerFactor } from '../../src/core/types.js';
import type { Checker } from './checker.js';
import type { ClientRequest } from './clients.js';
import type { SimPeerProcess } from './cluster.js';

/** The latest announcement of one hold. */
interface Announcement {
  readonly req: ClientRequest;
  readonly ts: number;
  /** The holder's incarnation when it announced. */
  readonly inc: Incarnation;
  /** The number of its latest announcement. */
  value: number;
  /** The holder's clock just after its latest announcement: a clock heard above it acks it. */
  clock: number;
}

/** The number an entry's meta carries (0: none yet); NaN for a meta no announcement made. */
function numberOf(meta: Meta | null): number {
  if (meta === null) return 0;
  const v = meta['value'];
  return typeof v === 'number' ? v : NaN;
}

/** Holds the cluster to META's promise. */
export class MetaCheck {
  readonly #checker: Checker;
  readonly #now: () => number;
  readonly #announced = new Map<number, Announcement>();
  /** The highest number each process showed for each request and lock (`ref lock procId`). */
  readonly #shown = new Map<string, number>();

  constructor(checker: Checker, now: () => number) {
    this.#checker = checker;
    this.#now = now;
  }

  /** `req`'s holder announced meta `{value}` and was answered 200: its core has applied and sent it. */
  announced(req: ClientRequest, value: number): void {
    if (req.grant === null) return;
    const inspect = req.proc.runtime.inspect;
    const clock = inspect.protocol.machine.clock;
    const known = this.#announced.get(req.ref);
    if (known !== undefined) {
      known.value = value;
      known.clock = clock;
      return;
    }
    const ts = Number(req.grant.token / BigInt(tokenPeerFactor));
    this.#announced.set(req.ref, { req, ts, inc: inspect.incarnation, value, clock });
  }

  /** After a task of `p`: its queues against every announcement (reach and order). */
  afterTask(p: SimPeerProcess): void {
    if (!p.proc.alive || p.proc.frozen || !p.runtime.started) return;
    const inspect = p.runtime.inspect;
    const machine = inspect.protocol.machine;
    for (const a of this.#announced.values()) {
      // Judged while held: a hold's RELEASE follows its METAs on every stream, and the
      // entries it leaves behind (its peer crashed) show what they showed at its end.
      if (a.req.state === 'done') {
        this.#announced.delete(a.req.ref);
        continue;
      }
      const holder = a.req.proc === p;
      if (!holder && p.proc.peer === a.req.peer) continue; // a twin of the holder: its queue has its own requests under this index
      const counted = holder ? inspect.incarnation : machine.incarnation(a.req.peer);
      if (counted === undefined || compareIncarnation(counted, a.inc) !== 0) continue;
      const heard = holder || machine.lastTs(a.req.peer) > a.clock;
      for (const { lock } of a.req.asks) {
        if (machine.queueSize(lock) === 0) continue;
        const entry = machine.queue(lock).find((e) => e.peer === a.req.peer && e.ts === a.ts);
        if (entry === undefined) continue;
        this.#judge(p, a, lock, numberOf(entry.meta), heard);
      }
    }
  }

  #judge(p: SimPeerProcess, a: Announcement, lock: string, shows: number, heard: boolean): void {
    const who = `p${p.proc.peer} (process ${p.proc.id})`;
    const what = `ref ${a.req.ref} of p${a.req.peer} (${lock} ts=${a.ts})`;
    const key = `${a.req.ref} ${lock} ${p.proc.id}`;
    const before = this.#shown.get(key) ?? 0;
    if (Number.isNaN(shows) || shows > a.value) {
      this.#checker.meta(this.#now(), `${who} shows meta no announcement of ${what} made (${shows}; the latest is ${a.value})`);
    } else if (shows < before) {
      this.#checker.meta(this.#now(), `${who} shows announcement ${shows} of ${what} after it showed ${before}: an older meta replaced a newer one`);
    } else if (heard && shows !== a.value) {
      const since = p === a.req.proc ? 'at once' : `having heard clock ${a.clock + 1} or later from it`;
      this.#checker.meta(this.#now(), `${who} shows announcement ${shows} of ${what}, not the latest (${a.value}), ${since}`);
    }
    if (shows > before) this.#shown.set(key, shows);
  }
}
