/**
 * Every kind of event the simulator's agenda holds. Peer-bound events carry the `life`
 * (incarnation counter) they were meant for, so an event aimed at a crashed incarnation is
 * recognised and dropped instead of reaching its successor.
 */
import type { Packet } from '../../src/core/messages.js';
import type { Incarnation, RequestSpec } from '../../src/core/types.js';

/** The first frame of a stream (DESIGN section 4): who opens it and its clock at that moment. */
export interface Hello {
  readonly inc: Incarnation;
  readonly clock: number;
}

/** A hello or a packet in flight from one incarnation to another. */
export interface Delivery {
  readonly from: number;
  readonly to: number;
  readonly fromLife: number;
  readonly toLife: number;
  /** Set on the stream's first frame only; the packet is then empty. */
  readonly hello: Hello | null;
  readonly packet: Packet;
  /** Below-the-link networks only: the frame's seq and connection, or a reconnect marker. */
  readonly wire?: { readonly seq: number; readonly conn: number; readonly reconnect: boolean };
}

/** How a client's request or hold ends on the client's side. */
export type ClientEnd = 'released' | 'expired' | 'cancelled';

/** Events aimed at one peer: they wait in its backlog while it is paused. */
export type PeerEvent =
  | { readonly k: 'deliver'; readonly d: Delivery }
  | { readonly k: 'dial'; readonly from: number; readonly to: number; readonly fromLife: number; readonly toLife: number }
  | { readonly k: 'heartbeat'; readonly peer: number; readonly life: number }
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
