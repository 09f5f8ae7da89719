/**
 * What a session (runtime/session.ts) is given: its construction options, the world it runs in
 * (production's or the simulator's), and the hooks through which it reports to its runtime.
 */
import type { ClusterConfig } from '../config.js';
import type { AcceptorState } from '../core/acceptor.js';
import type { EchoPromise } from '../core/membership.js';
import type { LocalEffect, RejoinReason } from '../core/protocol-io.js';
import type { QueueLog } from '../core/queue-log.js';
import type { AgreedView } from '../core/view.js';
import type { Env } from '../env.js';
import type { Logger } from '../log.js';
import type { ProtocolLevels } from '../transport/codec.js';
import type { Listener, Network } from '../transport/network.js';

/** How a session reports to its runtime. */
export interface SessionHooks {
  onEffect(effect: LocalEffect): void;
  /**
   * This incarnation cannot go on: end holds, start a new one. `startFloorMs`: the new
   * incarnation must start above this (the newer incarnation of our id the others know).
   */
  onRejoin(reason: RejoinReason, startFloorMs: number): void;
  /** Something a viewer may care about changed (queues, membership). */
  onChanged(): void;
  onSent(messages: number): void;
  onRtt(peer: string, rttMs: number): void;
  /** A link's socket failed or was refused, either way (lamport_link_refusals_total). */
  onLinkFailure(reason: string): void;
  /** The clock moved: persist the high-water mark. */
  onClock(clock: number): void;
  /**
   * A confirmation is about to leave: persist the promise it gives, so that a process
   * restarted after a crash keeps it. False when that failed: the confirmation stays here.
   */
  onPromise(): boolean;
  /**
   * A heartbeat echo is about to leave: persist how long it may vouch for the dialer's lease,
   * so that a process restarted after a crash lets no newcomer in before that. False when
   * that failed: the echo is not sent.
   */
  onEchoing(): boolean;
  /**
   * The core applied a view, or its acceptor state moved (docs/reconfiguration.md, P2): persist
   * it before the packets that depend on it leave. False when that failed: they do not leave,
   * and this incarnation ends (the next one starts from what the disk holds).
   */
  onView(view: AgreedView): boolean;
  onAcceptor(state: AcceptorState): boolean;
  /**
   * The member of `ordinal` told acceptor id `aid` in its handshake: true when it is the one
   * recorded for that ordinal first (recorded now when none was), false when its data dir was
   * lost or replaced since (F70, F76).
   */
  onAcceptorId(ordinal: number, aid: string): boolean;
}

/** The world a session runs in: production's or the simulator's. */
export interface SessionWorld {
  readonly env: Env;
  readonly network: Network;
  /** The bound peer listener, shared by the successive sessions of one process. */
  readonly listener: Listener;
}

/** Construction parameters of a session. */
export interface SessionOptions {
  readonly config: ClusterConfig;
  /** This peer's ordinal in `view`. */
  readonly index: number;
  /**
   * The agreed view (docs/reconfiguration.md): the members linked to, by ordinal. The core
   * takes part in its changes only when `acceptor` is given too (a data dir keeps both).
   */
  readonly view: AgreedView;
  /** The ids the cluster was founded with (`ViewRecord.founders`): with the name and timings, the identity every link checks. */
  readonly founders: readonly string[];
  /** The cluster's lineage, once it was recovered from a lost majority (ClusterShape.lineage). */
  readonly lineage?: string | undefined;
  /** This peer's acceptor id (view.json), told in its hellos; none without a data dir. */
  readonly acceptorId?: string | undefined;
  /** The acceptor state the data dir keeps for the epoch after `view`'s; none: this incarnation takes no part in changes of the view. */
  readonly acceptor?: AcceptorState | undefined;
  /**
   * The protocol level of this peer's cluster shape (PeerOptions.protocolLevel), which every
   * link checks: the level the cluster was founded at, or set to with every peer stopped. A
   * raise while the cluster runs moves the agreed view's level instead (`Session.level`).
   */
  readonly protocolLevel: number;
  /** The protocol levels this binary speaks (PeerOptions.levels). */
  readonly levels: ProtocolLevels;
  readonly clockFloor: number;
  /**
   * The incarnation starts at or above this, or at the wall clock if later. Its clock starts
   * at or above the incarnation's start, so that the high-water mark on disk, always above
   * the clock, orders the next process's incarnation after this one (docs/design.md
   * section 5, "Incarnations").
   */
  readonly startFloorMs: number;
  readonly logger: Logger;
  readonly world: SessionWorld;
  /** Each link's resend buffer bound (PeerOptions.linkUnackedBytesMax). */
  readonly linkUnackedBytesMax?: number | undefined;
  /** Largest frame the links write (PeerOptions.frameBytesMax). */
  readonly frameBytesMax?: number | undefined;
  /** The previous incarnation's confirmation promises that still bind (after a rejoin). */
  readonly promises?: readonly EchoPromise[] | undefined;
  /**
   * After a restart: echo no heartbeat for this long (ms of this session's clock), since a
   * promise the previous process gave may still bind (its bound on disk, ClockStore.loadPromise).
   */
  readonly quietForMs?: number | undefined;
  /**
   * After a restart or a rejoin: join no peer into the core for this long (ms of this
   * session's clock), since a heartbeat the previous process or incarnation echoed may still
   * vouch for a lease we cannot know of (docs/design.md section 5, "Successors").
   */
  readonly joinsHeldForMs?: number | undefined;
  /** Where the machine tells the changes of its queues (the watches), if anywhere. */
  readonly queueLog?: QueueLog | undefined;
}
