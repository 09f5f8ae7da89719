/**
 * What one machine keeps of changes of the view (docs/reconfiguration.md, rules P2 to P6, as the
 * first draft had them: the acceptor of P2 is not wired in yet): its
 * view, the head acks its request on the view lock gathered, the head of the view lock's queue
 * it last head-acked, when its last view went out, and whether it was removed. The Machine
 * decides when these change; this class only keeps them and answers its questions.
 */
import type { Members } from './members.js';
import type { HeadAckMessage } from './messages.js';
import type { ClusterView } from './view.js';
import { sameView } from './view.js';

/** The head of the view lock's queue: who asks, at which timestamp. */
export interface ViewLockHead {
  readonly ts: number;
  readonly peer: number;
}

/** The view and the state of its changes, for one machine. */
export class ViewChanges {
  #view: ClusterView | null;
  /** The newest protocol level this binary speaks. */
  readonly speaks: number;
  /** Head acks for our request on the view lock, by sender: the request's ts and the sender's view. */
  readonly #headAcks = new Map<number, { readonly ts: number; readonly view: ClusterView; readonly speaks: number }>();
  /** The head we last head-acked (`ts.peer`), so that one head gets one head ack per view. */
  #headAcked: string | null = null;
  /** Our clock when our last view went out (as holder, or adopted from a head ack); null: none. */
  #sentAt: number | null = null;
  #removed = false;

  constructor(view: ClusterView | null, speaks: number) {
    this.#view = view;
    this.speaks = speaks;
  }

  get view(): ClusterView | null {
    return this.#view;
  }

  get sentAt(): number | null {
    return this.#sentAt;
  }

  get removed(): boolean {
    return this.#removed;
  }

  /** Whether `peer` is in our view, in any state; without a view, whether it is one of `members`. */
  inView(peer: number, members: Members): boolean {
    const view = this.#view;
    return view === null ? members.has(peer) : view.members.some((m) => m.ordinal === peer);
  }

  /**
   * Rule M2: our request `ts` on the view lock may be granted only with a head ack for it from
   * every peer of the ack set, each at our view. A machine without a view takes no part.
   */
  gateOpen(ts: number, ackSet: readonly number[]): boolean {
    const view = this.#view;
    if (view === null) return false;
    return ackSet.every((p) => {
      const h = this.#headAcks.get(p);
      return h !== undefined && h.ts === ts && sameView(h.view, view);
    });
  }

  /** The newest level every peer of `ackSet` speaks, by their head acks for `ts` (rule M9), and ours. */
  speaksAll(ts: number, ackSet: readonly number[]): number {
    let min = this.speaks;
    for (const p of ackSet) {
      const h = this.#headAcks.get(p);
      min = h !== undefined && h.ts === ts ? Math.min(min, h.speaks) : Number.NEGATIVE_INFINITY;
    }
    return min;
  }

  /** A head ack arrived for our request `msg.ts`: kept. A newer view in it is returned, to adopt (rule M4). */
  onHeadAck(from: number, msg: HeadAckMessage): ClusterView | null {
    this.#headAcks.set(from, { ts: msg.ts, view: msg.view, speaks: msg.speaks });
    const view = this.#view;
    return view !== null && msg.view.epoch === view.epoch + 1 ? msg.view : null;
  }

  /**
   * The head ack to send now, if any: to the peer whose request heads the view lock's queue,
   * once per head and view, and only to a peer we met (`met`); null otherwise.
   */
  headAck(head: ViewLockHead | undefined, self: number, met: (peer: number) => boolean): { readonly to: number; readonly msg: HeadAckMessage } | null {
    const view = this.#view;
    if (view === null || head === undefined) {
      this.#headAcked = null;
      return null;
    }
    const key = `${head.ts}.${head.peer}`;
    if (key === this.#headAcked || head.peer === self || !met(head.peer)) return null;
    this.#headAcked = key;
    return { to: head.peer, msg: { t: 'hack', ts: head.ts, view, speaks: this.speaks } };
  }

  /**
   * Whether `view` follows ours (epoch + 1): only then is it applied. Older or equal ones are
   * ours or behind us; one further ahead cannot come from a live member (A1).
   */
  follows(view: ClusterView): boolean {
    return this.#view !== null && view.epoch === this.#view.epoch + 1;
  }

  /** `view` is ours from now on; every head gets a head ack with it again. */
  apply(view: ClusterView): void {
    this.#view = view;
    this.#headAcked = null;
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
