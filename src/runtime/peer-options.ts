/**
 * What a peer runtime (runtime/peer.ts) offers the HTTP API (`LockService`), what it is
 * started with (`PeerOptions`, `PeerWorld`), and the events it emits.
 */
import type { ClusterConfig } from '../config.js';
import type { EndReason, Meta } from '../core/types.js';
import type { AgreedView, ViewChange } from '../core/view.js';
import type { LockError } from '../errors.js';
import type { Logger } from '../log.js';
import type { ProtocolLevels } from '../transport/codec.js';
import type { ClockStore } from './clock-store.js';
import type { AcquireOptions, HoldOptions, LockAsk, RequestCallbacks, RequestHandle } from './holds.js';
import type { PeerInspector } from './inspector.js';
import type { SessionWorld } from './session-options.js';
import type { ChangeOptions } from './view-change.js';
import type { JoinTicket, ViewStore } from './view-store.js';
/**
 * What the HTTP API asks of a peer (docs/architecture.md section 1): `PeerRuntime` is the one
 * implementation; the API depends on this, not on the runtime's class.
 */
export interface LockService {
  /** True while this peer holds a lease, is synced with its view and is not superseded: it can grant (readyz). */
  ready(): boolean;
  /** Why this peer is not ready (`ready()` false): ERR_SUPERSEDED once a newer process runs with its id, else ERR_NOT_READY. */
  notReadyError(): LockError;
  /** Starts a request; `cb` hears its grant or failure, then how the hold ended. */
  request(lock: string, opts: AcquireOptions, cb: RequestCallbacks): RequestHandle;
  /** Starts an all-or-nothing request for several locks (names distinct); as `request`. */
  requestAll(asks: readonly LockAsk[], opts: HoldOptions, cb: RequestCallbacks): RequestHandle;
  /**
   * Releases a live hold (`lock`: one it names, or null: by id alone); throws ERR_NOT_HELD
   * (404) with the reason otherwise. True when a lock it named still has requests queued
   * (someone waits for it, here or on another peer).
   */
  release(lock: string | null, id: string): boolean;
  /** Extends a live hold's TTL (`lock` as for `release`); returns the new expiry (epoch ms). */
  refresh(lock: string | null, id: string, ttlMs?: number): number | null;
  /** Announces new meta for a live hold on every peer (a leader's new value). */
  setMeta(lock: string, id: string, meta: Meta | null): void;
  /**
   * Proposes one change of the agreed view (docs/reconfiguration.md, rules P1 and P2) and
   * resolves with the view that has it, once chosen and passed back by every member. Rejects
   * with ERR_CHANGE_REFUSED (the change does not apply to the view, or the cluster cannot take
   * changes now), ERR_TIMEOUT, ERR_NOT_READY or ERR_SHUTTING_DOWN.
   */
  changeView(change: ViewChange, opts: ChangeOptions): Promise<AgreedView>;
  /** What a host added to the cluster starts from (`lamport-peer --join`): the cluster's name and founders, and the view now. */
  joinTicket(): JoinTicket;
  /** What the API reads of the peer: its locks' queues and its cluster view. */
  readonly inspect: Pick<PeerInspector, 'lock' | 'locks' | 'cluster' | 'members'>;
}

/** The world a peer process runs in: a session's, plus the disk of its clock store. */
export interface PeerWorld extends SessionWorld {
  readonly clockStore: ClockStore;
  /**
   * Where the agreed view and the acceptor state are kept (a data dir's view.json,
   * runtime/view-store.ts). None: this peer takes no part in changes of the view, since a
   * voter's promises must survive its restarts (docs/reconfiguration.md P2).
   */
  readonly viewStore?: ViewStore | undefined;
}

/** How a peer process is started. */
export interface PeerOptions {
  readonly config: ClusterConfig;
  readonly id: string;
  readonly logger: Logger;
  readonly world: PeerWorld;
  /** Node's process metrics in the registry (default true; the simulator runs many peers). */
  readonly processMetrics?: boolean;
  /**
   * Each link's resend buffer bound (default limits.linkUnackedBytesMax). The simulator sets
   * a small one in some seeds, so that backpressure and the rejoin on overflow happen.
   */
  readonly linkUnackedBytesMax?: number;
  /**
   * Largest frame the links write (default limits.frameBytesMax). The simulator sets a small
   * one in some seeds, so that packets are split into pieces (docs/design.md "Pieces").
   */
  readonly frameBytesMax?: number;
  /**
   * The protocol level of this peer's cluster shape (docs/operations.md, "Protocol levels"):
   * the one its data dir records (server.ts, cluster-memory.ts `runningLevel`); default the
   * newest this binary speaks (transport/codec.ts `protocolLevels`). The peer runs at its
   * agreed view's level, which a raise moves above this (Session.level).
   */
  readonly protocolLevel?: number;
  /** The protocol levels this binary speaks (default transport/codec.ts `protocolLevels`; tests inject ranges). */
  readonly levels?: ProtocolLevels;
}

/** A local hold began or ended: what the dashboard's "recent grants and ends" shows. */
export interface HoldEvent {
  readonly type: 'granted' | 'ended';
  readonly lock: string;
  readonly id: string;
  readonly owner: string;
  readonly mode: string;
  readonly token: string;
  readonly peer: string;
  readonly reason: EndReason | null;
  readonly at: number;
}

/** Events a runtime emits: `changed` after any step (queues or links may differ), `hold`. */
export interface PeerEvents {
  changed: [];
  hold: [HoldEvent];
}
