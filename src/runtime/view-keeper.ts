/**
 * The agreed view a peer process keeps (docs/reconfiguration.md): the record of its view store
 * (a data dir's view.json; runtime/view-store.ts), or, without one, the view its config file
 * seeds. It gives each session the view, the founders, the acceptor's state and id, and writes
 * what the core applies before the packets that depend on it leave (SessionHooks.onView,
 * onAcceptor, onAcceptorId).
 */
import type { AcceptorState } from '../core/acceptor.js';
import { viewFramesLevel } from '../core/messages.js';
import type { AgreedView } from '../core/view.js';
import { firstView } from '../core/view.js';
import { ErrorCode, LockError } from '../errors.js';
import type { Logger } from '../log.js';
import type { ClusterConfig } from '../config.js';
import type { JoinTicket, ViewRecord, ViewStore } from './view-store.js';
import { checkAcceptorId, withView } from './view-store.js';

export class ViewKeeper {
  readonly #config: ClusterConfig;
  readonly #store: ViewStore | undefined;
  readonly #log: Logger;
  /** The record as the store keeps it; null without a store (then `#seeded` is the view). */
  #record: ViewRecord | null;
  readonly #seeded: AgreedView;
  /** The protocol level of the cluster's shape (PeerOptions.protocolLevel), told in join tickets. */
  readonly #shapeLevel: number;

  constructor(opts: { config: ClusterConfig; level: number; store: ViewStore | undefined; log: Logger }) {
    this.#config = opts.config;
    this.#shapeLevel = opts.level;
    this.#store = opts.store;
    this.#log = opts.log;
    this.#seeded = firstView(opts.config.peers, opts.level);
    this.#record = opts.store?.load(this.#seeded) ?? null;
  }

  /** The agreed view as this peer holds it now. */
  get view(): AgreedView {
    const chain = this.#record?.chain;
    return chain?.[chain.length - 1] ?? this.#seeded;
  }

  /**
   * Whether this peer's core takes part in changes of the view: it keeps its promises on disk
   * (a view store), and its cluster runs at a level whose binaries all read messages about the
   * view (`viewFramesLevel`).
   */
  takesPart(): boolean {
    return this.#record !== null && this.view.level >= viewFramesLevel;
  }

  /** What a session of this peer is given: the founders and lineage for its links; the acceptor, when it takes part. */
  forSession(): { founders: readonly string[]; lineage: string | undefined; acceptor?: AcceptorState; acceptorId?: string } {
    const { founders, lineage } = this.joinTicket();
    const record = this.takesPart() ? this.#record : null;
    return record === null ? { founders, lineage } : { founders, lineage, acceptor: record.acceptor, acceptorId: record.acceptorId };
  }

  /** What a host added to the cluster starts from (`lamport-peer --join`): the cluster's name and founders, and the view now. */
  joinTicket(): JoinTicket {
    const lineage = this.#record?.lineage;
    const ticket = { cluster: this.#config.cluster, founders: this.#record?.founders ?? this.#config.peers.map((p) => p.id), shapeLevel: this.#shapeLevel, view: this.view };
    return lineage === undefined ? ticket : { ...ticket, lineage };
  }

  /** Why this peer cannot run a change of the view at all, if it cannot. */
  refusal(): LockError | null {
    if (this.#record === null) return new LockError(ErrorCode.ChangeRefused, 'this peer runs without --data-dir: a peer that changes the members keeps its promises on disk. Ask a peer with a data dir, or give this one a data dir');
    const level = this.view.level;
    if (level < viewFramesLevel) return new LockError(ErrorCode.ChangeRefused, `this cluster runs at protocol level ${level}; changes of the members need level ${viewFramesLevel} (docs/operations.md, "Protocol levels")`);
    return null;
  }

  /**
   * Whether `aid` is the acceptor id first told by the member of `ordinal`, recording it when
   * none was (SessionHooks.onAcceptorId). Without a record there is nothing to check.
   */
  acceptorIdOf(ordinal: number, aid: string): boolean {
    if (this.#record === null) return true;
    const { trusted, record } = checkAcceptorId(this.#record, ordinal, aid);
    if (record !== this.#record) this.#save(() => record);
    return trusted;
  }

  /** Persists a view the core applied (docs/reconfiguration.md P2): false when it could not be. */
  saveView(view: AgreedView): boolean {
    return this.#save((record) => withView(record, view));
  }

  /** Persists the acceptor's state before what depends on it leaves: false when it could not be. */
  saveAcceptor(state: AcceptorState): boolean {
    return this.#save((record) => ({ ...record, acceptor: state }));
  }

  #save(change: (record: ViewRecord) => ViewRecord): boolean {
    if (this.#record === null || this.#store === undefined) return false;
    try {
      const next = change(this.#record);
      this.#store.save(next);
      this.#record = next;
      return true;
    } catch (err) {
      this.#log.error({ code: ErrorCode.Storage, err: (err as Error).message }, 'cannot write the agreed view');
      return false;
    }
  }
}
