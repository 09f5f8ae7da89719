/**
 * The agreed view of the cluster (docs/reconfiguration.md, "Terms"): its epoch, its members by
 * ordinal with where they are reached, the next ordinal to give, and the protocol level. Pure:
 * the runtime keeps it in the data dir; the core counts its majorities (core/members.ts).
 *
 * A view is changed one step at a time (rule P1): add a learner, promote it, remove a member,
 * retire a leaving one, or raise the level; the voters of two adjacent views differ by at most
 * one. Each step makes the next epoch; an ordinal is given once and never again.
 */
import { limits } from '../limits.js';
import { Members } from './members.js';
import { isRecord } from './types.js';

/**
 * A voter counts in every majority and every ack set; a learner in neither (it requests
 * nothing, rule P5); a leaving member in every ack set but no majority, until it is retired
 * (rule P6).
 */
export type MemberState = 'voter' | 'learner' | 'leaving';

export const memberStates: readonly MemberState[] = ['voter', 'learner', 'leaving'];

/** One member of a view. */
export interface ViewMember {
  readonly id: string;
  /** Given at its addition, never given again: tie-break and the low bits of its tokens. */
  readonly ordinal: number;
  /** Where its peer links listen (`ws://host:port`), as the operator who added it gave it. */
  readonly ws: string;
  /** Where its local HTTP API listens (`host:port`). */
  readonly http: string;
  readonly state: MemberState;
}

/** The cluster as its members agreed it. */
export interface AgreedView {
  /** 0 for the view a config file seeds; each change makes the next one. */
  readonly epoch: number;
  /** Ascending ordinal. */
  readonly members: readonly ViewMember[];
  /** The ordinal the next added member gets: above every ordinal ever given. */
  readonly nextOrdinal: number;
  /** The protocol level every member runs at. */
  readonly level: number;
}

/** One step of a view. */
export type ViewChange =
  | { readonly op: 'add'; readonly id: string; readonly ws: string; readonly http: string }
  | { readonly op: 'promote'; readonly id: string }
  | { readonly op: 'remove'; readonly id: string }
  | { readonly op: 'retire'; readonly id: string }
  | { readonly op: 'level'; readonly level: number };

/** The view a config file seeds: its peers, in file order, are ordinals 0..N-1 (today's indexes). */
export function firstView(peers: readonly { readonly id: string; readonly ws: string; readonly http: string }[], level: number): AgreedView {
  return {
    epoch: 0,
    members: peers.map((p, ordinal) => ({ id: p.id, ordinal, ws: p.ws, http: p.http, state: 'voter' })),
    nextOrdinal: peers.length,
    level,
  };
}

/** The member of `view` with this id, if any. */
export function memberById(view: AgreedView, id: string): ViewMember | undefined {
  return view.members.find((m) => m.id === id);
}

/**
 * The view after `change`, or why it cannot be made (a sentence for the operator). `speaks`:
 * the newest level every member's binary advertised, which a level may not pass.
 */
export function applyChange(view: AgreedView, change: ViewChange, speaks = view.level): AgreedView | string {
  const next = { ...view, epoch: view.epoch + 1 };
  switch (change.op) {
    case 'add': {
      if (memberById(view, change.id) !== undefined) return `${change.id} is a member already`;
      const clash = view.members.find((m) => m.ws === change.ws || m.http === change.http);
      if (clash !== undefined) return `member ${clash.id} listens at ${clash.ws === change.ws ? change.ws : change.http} already`;
      if (view.members.length >= limits.peersMax) return `a cluster has at most ${limits.peersMax} members`;
      if (view.nextOrdinal >= limits.peersMax) return `every ordinal of this cluster (${limits.peersMax}, the low bits of a token) was given: recover into a new cluster to add more (docs/operations.md)`;
      const member: ViewMember = { id: change.id, ordinal: view.nextOrdinal, ws: change.ws, http: change.http, state: 'learner' };
      return { ...next, members: [...view.members, member], nextOrdinal: view.nextOrdinal + 1 };
    }
    case 'promote':
      return withState(next, view, change.id, 'learner', 'voter');
    case 'remove': {
      const m = memberById(view, change.id);
      if (m === undefined) return `${change.id} is not a member`;
      if (m.state === 'learner') return { ...next, members: view.members.filter((x) => x.id !== change.id) };
      if (m.state === 'voter' && voters(view).length === 1) return `${change.id} is the last voter: a cluster keeps one`;
      return withState(next, view, change.id, 'voter', 'leaving');
    }
    case 'retire': {
      const m = memberById(view, change.id);
      if (m?.state !== 'leaving') return `${change.id} is not leaving`;
      return { ...next, members: view.members.filter((x) => x.id !== change.id) };
    }
    case 'level': {
      if (change.level <= view.level) return `the cluster runs at level ${view.level} already`;
      if (change.level > speaks) return `level ${change.level} is not spoken by every member yet (the newest all of them speak: ${speaks})`;
      return { ...next, level: change.level };
    }
  }
}

/** `next` with member `id`, now `from`, made `to`; or why not. */
function withState(next: AgreedView, view: AgreedView, id: string, from: MemberState, to: MemberState): AgreedView | string {
  const m = memberById(view, id);
  if (m === undefined) return `${id} is not a member`;
  if (m.state !== from) return `${id} is ${m.state === 'voter' ? 'a voter' : m.state === 'learner' ? 'a learner' : 'leaving'}`;
  return { ...next, members: view.members.map((x) => (x.id === id ? { ...x, state: to } : x)) };
}

/** The ordinals of the members of `view` in `state`, ascending. */
export function ordinalsIn(view: AgreedView, state: MemberState): number[] {
  return view.members.filter((m) => m.state === state).map((m) => m.ordinal);
}

/** The voters of `view`. */
export function voters(view: AgreedView): readonly ViewMember[] {
  return view.members.filter((m) => m.state === 'voter');
}

/** The majorities `self` counts in `view`: its voters' (core/members.ts). */
export function membersOf(view: AgreedView, self: number): Members {
  return new Members(self, voters(view).map((m) => m.ordinal));
}

/**
 * One view as far as agreement goes: same epoch, next ordinal, level, and members (ordinal, id,
 * state). Not their addresses: the view a config file seeds (epoch 0) has each host's own, and
 * hosts behind NAT or a proxy reach each other at different ones (a chosen view, the same
 * everywhere, names one address per member, which each host's config file may override).
 */
export function sameView(a: AgreedView, b: AgreedView): boolean {
  const agreed = (v: AgreedView): string => JSON.stringify([v.epoch, v.nextOrdinal, v.level, v.members.map((m) => [m.ordinal, m.id, m.state])]);
  return agreed(a) === agreed(b);
}

/** A fixed text of a view, for comparing and hashing (key order never matters). */
export function canonicalView(v: AgreedView): string {
  return JSON.stringify([v.epoch, v.nextOrdinal, v.level, v.members.map((m) => [m.ordinal, m.id, m.ws, m.http, m.state])]);
}

const count = (x: unknown): x is number => typeof x === 'number' && Number.isSafeInteger(x) && x >= 0;
const text = (x: unknown, max: number): x is string => typeof x === 'string' && x.length >= 1 && x.length <= max;

function isViewMember(v: unknown): v is ViewMember {
  return isRecord(v) && text(v['id'], limits.peerIdCharsMax) && count(v['ordinal']) && (v['ordinal'] as number) < limits.peersMax &&
    text(v['ws'], limits.addressCharsMax) && text(v['http'], limits.addressCharsMax) && (memberStates as readonly unknown[]).includes(v['state']);
}

/**
 * Shape guard for a view from the network or the disk: members by ascending ordinal, ids
 * distinct, every ordinal below the next one, within the limits.
 */
export function isAgreedView(v: unknown): v is AgreedView {
  if (!isRecord(v) || !count(v['epoch']) || !count(v['nextOrdinal']) || !count(v['level'])) return false;
  const members = v['members'];
  if (!Array.isArray(members) || members.length === 0 || members.length > limits.peersMax || !members.every(isViewMember)) return false;
  const ids = new Set(members.map((m) => m.id));
  const ascending = members.every((m, i) => i === 0 || m.ordinal > (members[i - 1]?.ordinal ?? -1));
  const last = members[members.length - 1]?.ordinal ?? 0;
  return ids.size === members.length && ascending && last < v['nextOrdinal'] && v['nextOrdinal'] <= limits.peersMax && members.some((m) => m.state === 'voter');
}
