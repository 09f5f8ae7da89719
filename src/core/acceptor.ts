/**
 * One epoch of the view as a consensus instance (docs/reconfiguration.md, rule P2;
 * finding F60): Paxos, with the view lock's queue choosing who proposes. Pure; the runtime
 * writes `AcceptorState` to the data dir before any message that depends on it leaves.
 *
 * A ballot is the `(ts, ordinal)` of a request on the view lock: Lamport's order, so a later
 * request has a higher ballot. Phase 1: a member head-acks the request at the head of its
 * queue, which promises to accept no lower ballot and reports what it accepted for the next
 * epoch. Phase 2: once granted, the holder asks every voter to accept one view: the one of the
 * highest ballot any head ack reported, else its own change; once a majority of the voters of
 * the current view accepted it, it is chosen, and the holder commits it.
 */
import type { AgreedView } from './view.js';

/** A ballot: the timestamp and ordinal of a request on the view lock. */
export interface Ballot {
  readonly ts: number;
  readonly peer: number;
}

/** Negative, zero or positive as `a` is lower than, equal to or higher than `b`. */
export function compareBallots(a: Ballot, b: Ballot): number {
  return a.ts !== b.ts ? a.ts - b.ts : a.peer - b.peer;
}

/** A view accepted under a ballot. */
export interface Accepted {
  readonly ballot: Ballot;
  readonly view: AgreedView;
}

/** What one member must keep on disk for the epoch after its committed view. */
export interface AcceptorState {
  /** The epoch this state is about: the committed view's + 1. */
  readonly epoch: number;
  /** The highest ballot head-acked: no lower one is accepted any more. */
  readonly promised: Ballot | null;
  readonly accepted: Accepted | null;
}

/** The state of a member that promised and accepted nothing for `epoch`. */
export function freshAcceptor(epoch: number): AcceptorState {
  return { epoch, promised: null, accepted: null };
}

/**
 * Phase 1: the state after promising `ballot` for `epoch`, or null when a higher ballot was
 * promised already, or the epoch is behind ours (the promise is refused). A state of an older
 * epoch is left behind.
 */
export function promise(state: AcceptorState, epoch: number, ballot: Ballot): AcceptorState | null {
  if (epoch < state.epoch) return null; // An epoch behind ours: its view was chosen already.
  const s = state.epoch === epoch ? state : freshAcceptor(epoch);
  if (s.promised !== null && compareBallots(ballot, s.promised) < 0) return null;
  return { ...s, promised: ballot };
}

/**
 * Phase 2: the state after accepting `view` under `ballot`, or null when it is refused: a view
 * that is not of `state.epoch`, or a ballot below the one promised.
 */
export function accept(state: AcceptorState, ballot: Ballot, view: AgreedView): AcceptorState | null {
  if (view.epoch !== state.epoch) return null;
  if (state.promised !== null && compareBallots(ballot, state.promised) < 0) return null;
  return { epoch: state.epoch, promised: ballot, accepted: { ballot, view } };
}

/**
 * The view a holder must propose for `epoch`: the one accepted under the highest ballot among
 * `reports` (its own acceptor state among them), else `own` (its own change). Paxos's rule: a
 * view a majority may have accepted is never replaced.
 */
export function valueToPropose(epoch: number, reports: readonly (Accepted | null)[], own: AgreedView): AgreedView {
  let best: Accepted | null = null;
  for (const r of reports) {
    if (r === null || r.view.epoch !== epoch) continue;
    if (best === null || compareBallots(r.ballot, best.ballot) > 0) best = r;
  }
  return best === null ? own : best.view;
}
