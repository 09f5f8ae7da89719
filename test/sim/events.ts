/**
 * Every kind of event the simulator's agenda holds. Peer-bound events carry the `life`
 * (incarnation counter) they were meant for, so an event aimed at a dead incarnation is
 * recognised and dropped instead of reaching its successor.
 */
import type { MembershipMessage } from '../../src/core/membership.js';
import type { Packet } from '../../src/core/messages.js';
import type { Incarnation, RequestSpec } from '../../src/core/types.js';

/** What travels on a link between two runtimes: core packets and membership messages. */
export type Payload = Packet | MembershipMessage;

/** The state of one simulated socket (one per ORDERED pair, dialed by `dialer`). */
export type ConnState = 'handshake' | 'up' | 'closing' | 'closed';

/**
 * One simulated socket between two incarnations, as the mesh has them (DESIGN section 4):
 * the dialer's stream to the listener rides on it, and the listener's acks and heartbeat
 * echoes come back on it. Both ends share this object; `closed` is seen by both at once.
 */
export interface Conn {
  readonly dialer: number;
  readonly listener: number;
  readonly dialerLife: number;
  readonly listenerLife: number;
  readonly dialerInc: Incarnation;
  /** Learned from the welcome. */
  listenerInc: Incarnation | null;
  state: ConnState;
  /** Local ms at which each end last received a frame on it (the silence watchdog). */
  heardByDialerMs: number;
  heardByListenerMs: number;
  /** Local ms (dialer) at which the dial started, for the handshake deadline. */
  readonly dialedAtMs: number;
}

/** The frames of the simulated mesh; which end sends which is fixed by the protocol. */
export type Frame =
  | { readonly t: 'hello'; readonly clock: number }
  | { readonly t: 'welcome'; readonly inc: Incarnation; readonly clock: number; readonly delivered: number }
  | { readonly t: 'refuse'; readonly reason: 'evicted' | 'stale_incarnation' }
  | { readonly t: 'data'; readonly seq: number; readonly payloads: readonly Payload[] }
  | { readonly t: 'ack'; readonly upTo: number }
  | { readonly t: 'hb'; readonly sentAtMs: number; readonly clock: number }
  | { readonly t: 'echo'; readonly sentAtMs: number }
  /** The listener closed the socket (it refused the dialer's incarnation): the FIN. */
  | { readonly t: 'close' };

/** How a client's request or hold ends on the client's side. */
export type ClientEnd = 'released' | 'expired' | 'cancelled';

/** Events aimed at one peer: they wait in its backlog while it is paused. */
export type PeerEvent =
  | { readonly k: 'frame'; readonly to: number; readonly toLife: number; readonly conn: Conn; readonly f: Frame }
  /** Heartbeat period: heartbeats, membership tick, silence watchdog, redials. */
  | { readonly k: 'tick'; readonly peer: number; readonly life: number }
  | { readonly k: 'leaseTick'; readonly peer: number; readonly life: number }
  | { readonly k: 'acquire'; readonly peer: number; readonly ref: number; readonly lock: string; readonly spec: RequestSpec; readonly noWait: boolean }
  | { readonly k: 'release'; readonly peer: number; readonly ref: number; readonly end: ClientEnd };

/** Events of the fault plan and the workload, which drive the cluster. */
export type DriverEvent =
  | { readonly k: 'fault' }
  | { readonly k: 'restart'; readonly peer: number }
  | { readonly k: 'resume'; readonly peer: number; readonly life: number }
  | { readonly k: 'arrival'; readonly peer: number }
  | { readonly k: 'burst' }
  | { readonly k: 'capacity'; readonly lock: string }
  | { readonly k: 'liveness' };

/** Anything on the agenda. */
export type SimEvent = PeerEvent | DriverEvent;

/** Puts an event on the agenda at a virtual time in ms. */
export type Schedule = (atMs: number, event: SimEvent) => void;
