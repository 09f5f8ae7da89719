/**
 * The planted bugs the simulator must catch (issue 12, "Mutation score"): each one a small
 * textual patch of the BUILT code (dist/), applied by the test runner to a copy of it
 * (test/sim/planted.ts); production code carries no trace of them. Each patch names a file
 * under dist/ and a piece of its text that must occur exactly once there (whitespace runs
 * match any whitespace, so a line broken by tsc still matches); `no-fifo` patches the
 * simulated network, which then lets messages of one direction overtake each other,
 * breaking the FIFO premise of the ack rule.
 *
 * The regression mutants revert the fix of a bug a seed once found (named in the fix's
 * commit): `npm run sim -- --mutants` shows each is caught, so no regression seed is a
 * seed that could no longer fail; test/sim/planted.test.ts shows each patch still applies.
 */

/** One textual change of one built file. */
export interface Patch {
  /** The built file, under dist/: `src/core/machine.js`. */
  readonly file: string;
  /** Text that occurs exactly once in it (a run of whitespace matches any run of whitespace). */
  readonly from: string;
  /** What replaces it. */
  readonly to: string;
}

const machine = 'src/core/machine.js';
const ownSteps = 'src/core/own-steps.js';
const membership = 'src/core/membership.js';
const protocol = 'src/core/protocol.js';
const zombieWatch = 'src/core/zombie-watch.js';
const peer = 'src/runtime/peer.js';
const at = (file: string, from: string, to: string): Patch => ({ file, from, to });

/** Every mutant: what it breaks (its doc comment) and the patches that plant it. */
const mutants = {
  /**
   * The ack test off by one tick (`lastTs[j] >= ts - 1` instead of `lastTs[j] > ts`). A plain
   * `>=` would be an equivalent mutant in this core: every peer increments its clock before
   * it issues a request, so no request of j can carry a timestamp j has already sent.
   */
  'ack-ge': [at('src/core/lock-table.js', 'const acksIn = minLastTs > r.ts;', 'const acksIn = minLastTs >= r.ts - 1;')],
  /** The simulated network lets frames of one direction overtake each other. */
  'no-fifo': [at('test/sim/run.js', 'reorder: false,', 'reorder: true,')],
  /** A (re)starting peer begins at clock 0 and ignores the clock floor and handshake clocks. */
  'clock-reset': [
    at(machine, 'this.#clock = opts.clockFloor;', 'this.#clock = 0;'),
    at(machine, 'this.#clock = Math.max(this.#clock, clock) + 1;', ''),
  ],
  /** A joining peer is not sent our outstanding requests. */
  'no-state-transfer': [at(machine, 'this.#transferState(peer);', '')],
  /** Every peer ranks itself first on timestamp ties, so peers disagree on the order. */
  'bad-tiebreak': [at(machine, 'new LockTable(opts.members.self, (p) => p,', 'new LockTable(opts.members.self, (p) => (p - opts.members.self + opts.members.capacity) % opts.members.capacity,')],
  /** Off-by-one in the semaphore permit sum: admits one permit too many. */
  'semaphore-overcount': [at('src/core/modes.js', 'ahead.permits + r.permits <= r.limit;', 'ahead.permits + r.permits <= r.limit + 1;')],
  /** A peer whose lease lapses keeps its clients' holds. */
  'no-self-fence': [at(ownSteps, "const dropped = this.#locks.ownRequests().filter((own) => own.state !== 'pending');", "return; const dropped = this.#locks.ownRequests().filter((own) => own.state !== 'pending');")],
  /** Packets of an evicted or replaced incarnation are still accepted; the mesh never refuses it: its streams stay, and it may dial again. */
  'accept-evicted': [
    at(machine, 'if (!this.#peers.isLive(from, inc)) return;', ''),
    at('src/transport/mesh.js', 'refuseIncarnation(peer, inc) {', 'refuseIncarnation(peer, inc) { return;'),
  ],
  /** Synced once every peer handshaked, before its first packet (seed 1371's bug). */
  'synced-on-handshake': [at('src/core/peer-view.js', '&& (this.#lastTs[p] ?? 0) !== 0;', ';')],
  /** Requests leave without a lease (seed 276422's bug). */
  'issue-without-lease': [
    at(ownSteps, 'if (this.#peers.synced && this.#leaseValid && this.#mayRequest()) this.#issue(own);', 'if (this.#peers.synced && this.#mayRequest()) this.#issue(own);'),
    at(ownSteps, 'if (!this.#leaseValid || this.#fenced || !this.#mayRequest()) return;', 'if (this.#fenced || !this.#mayRequest()) return;'),
  ],
  /** A lease lapse ends holds but keeps waiting requests (seed 216761's bug). */
  'keep-waiters-on-lease-loss': [at(ownSteps, ".filter((own) => own.state !== 'pending');", ".filter((own) => own.state !== 'pending' && own.state !== 'waiting');")],
  /** An eviction notice for an incarnation never met takes the peer out of the view (seed 150336's bug). */
  'evict-unmet-incarnation': [at(machine, 'this.#peers.evict(peer, inc, metHeld)', 'this.#peers.evict(peer, inc, true)')],
  /**
   * Requests are acknowledged before this peer is synced. A new incarnation whose
   * predecessor may still hold a lease is not synced until every peer evicted that
   * predecessor; its acks would let a third peer grant a lock the predecessor holds.
   */
  'ack-while-unsynced': [at(machine, 'return this.#peers.joinedByMet && this.#peers.joinedByQuorum;', 'return true;')],
  /** Evict on the suspecting peer's word alone, without a majority. */
  'evict-without-majority': [
    at(membership, 'const pair = this.#members.isPair;', 'const pair = false;'),
    at(membership, 'if (compareIncarnation(t.inc, unknownIncarnation) === 0) return;', ''),
    at(membership, 'const needed = this.#alone(t) ? 1 : this.majority;', 'const needed = 1;'),
  ],
  /** A confirmation counts from its arrival, not from its suspicion's send time (seed 248088's bug). */
  'confirm-from-arrival': [
    at(membership, 'if (msg.at < this.#startMs || msg.at > nowMs || nowMs - msg.at >= this.#confirmationValidMs) return [];', ''),
    at(membership, 't.confirmations.set(from, Math.max(msg.at, t.confirmations.get(from) ?? Number.NEGATIVE_INFINITY));', 't.confirmations.set(from, nowMs);'),
  ],
  /** A confirmer echoes the suspect again at once: a confirmation is no promise (seed 101151's bug). */
  'echo-despite-promise': [at(membership, 'return !(nowMs < t.noEchoUntilMs && compareIncarnation(inc, t.noEchoUpTo) <= 0);', 'return true;')],
  /** Heartbeats carry the clock even while payloads wait unsent (breaks rule 3a's FIFO premise). */
  'hb-clock-while-pending': [at(protocol, 'const clock = allSent && !this.#waiting.has(peer)', 'const clock = !this.#waiting.has(peer)')],
  /** A newer incarnation replaces a live one at once (issue 12, defect 1). */
  'forget-predecessor': [at(membership, 'if (order > 0 && known && !this.isEvicted(peer, t.inc)) {', 'if (false) {')],
  /** The lease is not re-checked before each event and client call, only on its timer. */
  'no-lease-check-before-event': [
    at(protocol, 'this.#refreshLease(nowMs); this.#stepCore(event, nowMs);', 'this.#stepCore(event, nowMs);'),
    at('src/runtime/session.js', '=> { this.#refreshLease(); fn(...args);', '=> { fn(...args);'),
    at('src/runtime/session.js', '=> { this.#refreshLease(); this.#input(() => this.#protocol.tick(', '=> { this.#input(() => this.#protocol.tick('),
    at('src/runtime/current-session.js', 'this.#session?.checkLease();', ''),
  ],
  /** An echo extends the lease from its arrival, not from the heartbeat's send time. */
  'lease-from-arrival': [at(protocol, 'this.#lease.onEcho(peer, sentAtMs);', 'this.#lease.onEcho(peer, nowMs);')],
  /** A suspend of the host is not counted: the lease clock is the bare monotonic clock. */
  'no-suspend-detect': [
    at('src/runtime/lease-clock.js', 'if (gapMs > limits.suspendDetectMs)', 'if (false)'),
    at('src/runtime/lease-clock.js', 'const bootMs = this.#bootLeadMs === null ? null :', 'const bootMs = true ? null :'),
  ],
  /** A suspend is counted by the wall clock alone, though the OS tells a boot clock (a wall clock stepped back during it hides it). */
  'ignore-boot-clock': [at('src/runtime/lease-clock.js', 'const bootMs = env.bootMs?.() ?? null;', 'const bootMs = null;')],
  /** A waiting successor joins on the eviction of any older incarnation (seed 404471's bug). */
  'join-on-older-eviction': [at(protocol, 'this.#membership.predecessorOf(e.peer, waiting.inc) === null;', 'true;')],
  /** A superseded incarnation keeps its lease and its eviction decisions (seed 152084's bug). */
  'act-while-superseded': [at(protocol, 'return this.#zombie.supersededError === null && !this.#machine.removed;', 'return !this.#machine.removed;')],
  /** Acks once every peer met let us join, without the quorum of others (seed 101577's bug). */
  'ack-without-quorum': [at(machine, 'return this.#peers.joinedByMet && this.#peers.joinedByQuorum;', 'return this.#peers.joinedByMet;')],
  /** A rejoin forgets the promises the evicted incarnation gave (seed 162227's bug). */
  'forget-promises-on-rejoin': [at(membership, 'for (const promise of opts.promises ?? []) {', 'return; for (const promise of opts.promises ?? []) {')],
  /** A superseded incarnation still echoes heartbeats (seed 109815's bug). */
  'zombie-echoes': [at(protocol, '#votes() {', '#votes() { return true;')],
  /** A peer that dials us does not cut our redial's backoff short (seed 258's bug). */
  'no-dial-now': [at('src/transport/mesh-acceptor.js', 'this.#mesh.dialNow(link);', '')],
  /** A packet sent before its sender may ack (`u`) syncs and acks like any other (seed 202828's bug). */
  'sync-on-unready': [at(machine, 'this.#peers.heard(from, packet.c, packet.u !== true);', 'this.#peers.heard(from, packet.c, true);')],
  /** A superseded incarnation, once evicted, rejoins above the newer one while that one lives (seed 107362's bug). */
  'zombie-rejoins': [at(zombieWatch, "if (reason === 'evicted' && newerLives && this.#everSynced) {", 'if (false) {')],
  /** A superseded incarnation still confirms suspicions (seed 300379's bug). */
  'zombie-confirms': [at(protocol, "if (payload.t === 'suspect' && !this.#actsOnMembership()) return;", '')],
  /** A restarted process ignores the promise bound on disk: it echoes at once (the crash-restart hole). */
  'forget-promises-on-restart': [at(peer, "const quietForMs = this.#boundLeftMs(store.loadBound('promise'), 'promise');", 'const quietForMs = 0;')],
  /** A rejoin ends the quiet a restart began: the new incarnation echoes at once (seed 906566's bug). */
  'forget-quiet-on-rejoin': [at(peer, 'const { promises, quietForMs } = old.handover();', 'const { promises } = old.handover(); const quietForMs = 0;')],
  /** A successor replaced by a newer one counts as never heard (seeds 2042388 and 2048353's bug). */
  'forget-successor-heard': [at(membership, 'if (t.successor !== null && compareIncarnation(inc, t.successor) > 0) {', 'if (false) {')],
  /** A suspicion of the successor waiting behind a live, silent predecessor is confirmed (issue 39's survivor 2). */
  'confirm-waiting-successor': [at(membership, '(order === 0 || never) && this.#silent(t, nowMs)', 'this.#silent(t, nowMs)')],
  /** An eviction says `last` though a successor waits (issue 39's survivor 3). */
  'last-despite-successor': [at(membership, 'const waiting = t.successor !== null && compareIncarnation(t.successor, inc) > 0;', 'const waiting = false;')],
  /** A confirmation counts for evict_ms from its suspicion, not evict_ms / margin (issue 39's confirmation survivor). */
  'confirm-for-evict-ms': [at(membership, 'this.#confirmationValidMs = opts.evictMs / (opts.clockRateMargin ?? 1.5);', 'this.#confirmationValidMs = opts.evictMs;')],
  /** A restart or rejoin lets peers join at once, though an echo of the previous one may still vouch (seed 903454's bug). */
  'forget-echo-bound': [at(peer, 'return Math.max(0, this.#vouchedUntilMono - this.#env.monoMs());', 'return 0;')],
  /** A bound write still under way counts as on disk: a message leaves on it (the slow-disk hole of bounds.ts). */
  'count-bound-under-way': [at('src/runtime/bounds.js', 'if (this.#writing.has(kind)) return covers;', 'if (this.#writing.has(kind)) return true;')],
  /** The promise bound is written evict_ms ahead, not 2 x evict_ms: a confirmation may leave with evict_ms / 2 of it left. */
  'promise-bound-short': [at(peer, "if (kind === 'promise') return 2 * this.config.evictMs;", "if (kind === 'promise') return this.config.evictMs;")],
  /** The echo bound is written 1.5 x lease_ms ahead, not 2 x 1.5 x lease_ms: an echo may leave with 0.75 x lease_ms of it left. */
  'echo-bound-short': [at(peer, 'return 2 * clockRateMargin * this.config.leaseMs;', 'return clockRateMargin * this.config.leaseMs;')],
  /**
   * The promise and echo bounds' reaches swapped (3 x lease_ms against 2 x evict_ms): the same
   * while evict_ms stays near its floor, short for the promise once it is longer (F58: caught
   * since the simulator draws evict_ms wide in some seeds).
   */
  'bound-reaches-swapped': [at(peer, "if (kind === 'promise') return 2 * this.config.evictMs;", "if (kind !== 'promise') return 2 * this.config.evictMs;")],
  /** A restart's incarnation starts at its wall clock alone, not above the high-water mark (seed 1043577's bug). */
  'forget-incarnation-floor': [at(peer, 'this.#newSession(Math.max(this.#env.wallMs(), floor), floor,', 'this.#newSession(Math.max(this.#env.wallMs(), floor), 0,')],
  /** An all-or-nothing request is granted once the mode rule admits it in one of its locks' queues. */
  'grant-on-one-part': [at('src/core/lock-table.js', '(own.parts.length === 1 || (acksIn', '(own.parts.length === 1 || true || (acksIn')],
  /** A superseded incarnation's lease is still renewed by echoes (its holds outlive its supersession). */
  'zombie-renews-lease': [at(protocol, 'if (this.#actsOnMembership()) this.#lease.onEcho(', 'this.#lease.onEcho(')],
  /** A superseded incarnation still suspects silent peers (its membership still ticks). */
  'zombie-suspects': [at(protocol, 'if (this.#actsOnMembership()) this.#applyMembership(this.#membership.tick(nowMs), nowMs);', 'this.#applyMembership(this.#membership.tick(nowMs), nowMs);')],
  /** A superseded incarnation still counts the confirmations its suspicions get. */
  'zombie-counts-confirmations': [at(protocol, "if (payload.t === 'confirm' && !this.#actsOnMembership()) return;", '')],
  /** A superseded incarnation does not fence: its waiters wait for their timeout or its lease. */
  'zombie-keeps-waiters': [at(protocol, "if (!this.#actsOnMembership()) this.#step({ type: 'fence' }, nowMs);", '')],
  /** A refresh does not cancel the hold's earlier expiry: a refreshed hold ends at its old TTL. */
  'refresh-keeps-old-expiry': [at('src/runtime/local-holds.js', "const ttl = ttlMs ?? req.opts.ttlMs; this.#clearTimer(req, 'ttlTimer');", 'const ttl = ttlMs ?? req.opts.ttlMs;')],
  /** The cluster fingerprint leaves out the order of the peers: a host that lists them in another order is let in. */
  'fingerprint-ignores-order': [at('src/runtime/session.js', 'this.shape = clusterShapeOf({ ...opts.config, peers: opts.founders.map((id) => ({ id })) }, opts.protocolLevel);', 'const shape = clusterShapeOf({ ...opts.config, peers: opts.founders.map((id) => ({ id })) }, opts.protocolLevel); this.shape = { ...shape, peers: [...shape.peers].sort() };')],
  /** The cluster fingerprint leaves out heartbeat_ms, lease_ms and evict_ms: a host with other timings is let in. */
  'fingerprint-ignores-timings': [at('src/runtime/session.js', 'this.shape = clusterShapeOf({ ...opts.config, peers: opts.founders.map((id) => ({ id })) }, opts.protocolLevel);', 'this.shape = { ...clusterShapeOf({ ...opts.config, peers: opts.founders.map((id) => ({ id })) }, opts.protocolLevel), heartbeatMs: 0, leaseMs: 0, evictMs: 0 };')],
  /**
   * A second process on one data dir (one started beside a live one with its id) writes its
   * clock mark over the other's higher one: the next process starts below the grants that
   * one made, and tokens go back (simulator seed 17 --net link --multi 0.3).
   */
  'hwm-overwritten-by-twin': [at('src/runtime/clock-store.js', 'if (onDisk < next) this.#store.write(next); else next = onDisk;', 'this.#store.write(next);')],
  /** A META from another peer is dropped: receivers keep the meta its REQUEST brought. */
  'meta-ignored': [at(machine, 'this.#locks.setMeta(msg.lock, msg.ts, from, msg.meta);', '')],
  /** A holder's new meta changes its own queue only: no META leaves (the state transfer to a later joiner still carries it). */
  'meta-not-sent': [at(ownSteps, "this.#broadcast({ t: 'meta', lock, ts: own.ts, meta });", '')],
  /** Every piece of a packet split to fit a frame keeps the packet's mark: the first pieces' clock acks what later pieces bring. */
  'pieces-ack': [at('src/core/messages.js', 'pieces.push(last && packet.u !== true ?', 'pieces.push(packet.u !== true ?')],
  // Changes of the members (docs/reconfiguration.md): their seeds run with --changes (changesOf).
  /**
   * An acceptor accepts a ballot below the one it promised (rule P2): two views can be chosen for
   * one epoch. Two requests on the view lock reach it out of order; it takes the earlier one's
   * ACCEPT, which is chosen with it; the later one, granted on its first head ack, chooses another
   * (proposer-faults.ts's overtaken request; view-scenarios.ts's racedBallotsOvertaken).
   */
  'accept-without-promise': [at('src/core/acceptor.js', 'if (state.promised !== null && compareBallots(ballot, state.promised) < 0)', 'if (false)')],
  /** A view counts as chosen at the holder's own acceptance, without a majority of the voters (rule P2). */
  'chosen-at-one-acceptance': [at('src/core/view-changes.js', 'if (p.acceptedBy.size < voters.majority)', 'if (p.acceptedBy.size < 1)')],
  /** A learner counts in the majorities as a voter does (rule P5). */
  'learner-counted-as-voter': [at('src/core/view.js', 'return new Members(self, voters(view).map((m) => m.ordinal));', "return new Members(self, view.members.filter((m) => m.state !== 'leaving').map((m) => m.ordinal));")],
  /** A leaving member leaves the ack set as soon as the view removes it, before its LEAVE or its eviction (rule P3 iii). */
  'leaving-dropped-early': [
    at('src/core/peer-view.js', 'this.#candidates = new Set([...members.others(), ...leaving.filter((p) => p !== members.self)]);', 'this.#candidates = new Set([...members.others()]);'),
    at('src/core/peer-view.js', 'const next = new Set([...members.others(), ...leaving.filter((p) => p !== members.self)]);', 'const next = new Set([...members.others()]);'),
  ],
  /** An added member gets the ordinal of the members' count, which a removed member's leaves free for another to reuse (rule P1). */
  'reused-ordinal': [at('src/core/view.js', 'const member = { id: change.id, ordinal: view.nextOrdinal,', 'const member = { id: change.id, ordinal: view.members.length,')],
  /** The view lock is granted with a head ack from any one member of its ack set, not every one (rule P3 i). */
  'gate-without-every-head-ack': [at('src/core/view-changes.js', 'return ackSet.every((p) => { const h = this.#headAcks.get(p);', 'return ackSet.length === 0 || ackSet.some((p) => { const h = this.#headAcks.get(p);')],
  /** A learner's heartbeat echoes are dropped: a promotion, which waits for the learner's echo (runtime/view-change.ts), is never made (P5). */
  'learner-echoes-dropped': [at('src/core/lease.js', 'this.#echoedSentAt[peer] = sentAtMs; if (this.#members.has(peer)) this.#recompute();', 'if (!this.#members.has(peer)) return; this.#echoedSentAt[peer] = sentAtMs; this.#recompute();')],
  /** An eviction counts every member's confirmation, a learner's or leaving member's own suspicion too, not the voters' only (P5, P6; seed 242's bug). */
  'eviction-counts-non-voters': [at(membership, 'if (this.#members.has(from)) votes++;', 'votes++;')],
  /** Membership messages count across epochs: a suspicion from a peer at another epoch is confirmed, a confirmation given at another counted, an eviction sent two epochs behind applied (rule P4). */
  'membership-across-epochs': [at(membership, "if (msg.t === 'evict' ? e + 1 < this.#epoch : e !== this.#epoch)", 'if (false)')],
  /** A view applied does not re-check the lease: a view whose voters echoed too few heartbeats leaves holds granted past its event (seed 9's bug). */
  'view-without-lease-check': [at(protocol, "if (effects.some((e) => e.type === 'view')) this.#refreshLease(nowMs);", '')],
  // Protocol levels (rule P9): their seeds run with --changes, which draws a rolling upgrade (test/sim/upgrader.ts).
  /** A raise is proposed whatever level the members' binaries advertised. */
  'raise-unspoken': [at('src/runtime/view-change.js', 'const behind = unspoken(members, change.level);', 'const behind = null;')],
  /** The listener lets in a dialer whose binary speaks no level as high as the one the cluster runs at. */
  'admit-below-level': [at('src/transport/handshake.js', 'if ((h.newest ?? h.v) < level) {', 'if (false) {')],
  /** A view applied leaves up the links to binaries below its level. */
  'no-drop-below': [at('src/runtime/session.js', 'this.#mesh.dropBelow(this.level());', '')],
  /** A member that left is let back into the ack set when its live process joins a new incarnation of ours (rule P6; fix fc1244c, seed 177's bug). */
  'left-member-rejoins-ack-set': [at(machine, 'if (this.#changes.leftPeers().includes(peer)) return;', '')],
  /** A LEFT that removes the last member a waiting request waited for does not issue it (fix a86f82a, seed 7 --net link's bug). */
  'left-without-issuing': [at('src/core/view-steps.js', 'if (this.#h.synced()) this.#h.issuePending(); } /** Rule P6: our own removal.', '} /** Rule P6: our own removal.')],
  /** A zombie still sends payloads and heartbeats: a peer that never met its newer twin keeps hearing it, and it stays out for good once that twin died (fault run seed 27001). */
  'zombie-heard': [at(zombieWatch, 'get speaks() {', 'get speaks() { return true;')],
  /** A zombie rejoins on a refusal from a peer that never met the newer process of its id a refusal named before (fix 11df3a5, seed 45's bug). */
  'zombie-forgets-newer': [at(zombieWatch, 'const newer = this.#newerOfOurs(known, knownEvicted);', 'const newer = known !== undefined && compareIncarnation(known, this.incarnation) > 0 && !knownEvicted ? known : null;')],
  /** An EVICT goes to the voters only, not to a leaving member, which acts on no membership of its own once removed (seed 3 --changes's bug). */
  'evict-to-voters-only': [at(membership, 'for (const q of this.#peers.keys()) { if (q !== peer && q !== this.#self)', 'for (const q of this.#members.others()) { if (q !== peer)')],
  /** A member that left tells no LEAVE to a successor it holds waiting for its predecessor's eviction (seed 279 --changes's bug). */
  'left-silent-to-successor': [at('src/core/waiting-room.js', 'if (this.#toldLeave.has(waiting)) continue;', 'if (this.#toldLeave.has(waiting) || waiting) continue;')],
  /** The VIEW in a packet of an incarnation held waiting to join is kept back with its packets: a peer that missed the view holds that successor for good (F85). */
  'held-view-kept': [at(protocol, "if (this.#actsOnMembership()) for (const msg of payload.m) if (msg.t === 'view') this.#step({ type: 'heldView', view: msg.view }, nowMs);", '')],
  /** A zombie takes the VIEW of an incarnation it holds waiting: a view with fewer voters counts its old echoes anew and renews its lease (seed 626 --changes). */
  'zombie-takes-held-view': [at(protocol, "if (this.#actsOnMembership()) for (const msg of payload.m) if (msg.t === 'view')", "for (const msg of payload.m) if (msg.t === 'view')")],
  /** A member that left tells its LEAVE to a successor it holds at once, while its last echo may still vouch for the predecessor's lease. */
  'leave-before-echoes-lapse': [at('src/core/waiting-room.js', 'this.#leftQuietAtMs ??= nowMs + vouchMs;', 'this.#leftQuietAtMs ??= nowMs;')],
} as const satisfies Record<string, readonly Patch[]>;

/** The name of one mutant, as `--mutant` takes it. */
export type MutantName = keyof typeof mutants;

/** Every mutant, in the order the mutation table runs them. */
export const mutantNames = Object.keys(mutants) as MutantName[];

/** Narrows a CLI string to a mutant name. */
export function isMutantName(s: string): s is MutantName {
  return Object.hasOwn(mutants, s);
}

/** The patches that plant a mutant. */
export function patchesOf(mutant: MutantName): readonly Patch[] {
  return mutants[mutant];
}

/** The META mutants: their seeds run with holders announcing meta (RunOptions.proclaimChance). */
const metaMutants: readonly MutantName[] = ['meta-ignored', 'meta-not-sent'];

/** The chance that a holder announces new meta in a mutant's seeds: the META mutants need it, no other mutant runs with it. */
export function proclaimChanceOf(mutant: MutantName | undefined): number | undefined {
  return mutant !== undefined && metaMutants.includes(mutant) ? 0.5 : undefined;
}

/**
 * The chance of all-or-nothing requests a mutant's seeds run with: the multi-lock mutant
 * needs them, every other mutant runs the workload its regression seed was found with.
 */
export function multiChanceOf(mutant: MutantName | undefined): number | undefined {
  return mutant === 'grant-on-one-part' || mutant === 'hwm-overwritten-by-twin' ? 0.3 : undefined;
}

/** The mutants of the rules of changes of the members (docs/reconfiguration.md): their seeds run with `--changes`. */
const changeMutants: readonly MutantName[] = ['accept-without-promise', 'chosen-at-one-acceptance', 'learner-counted-as-voter', 'leaving-dropped-early', 'reused-ordinal', 'gate-without-every-head-ack', 'learner-echoes-dropped', 'eviction-counts-non-voters', 'view-without-lease-check',
  'membership-across-epochs', 'raise-unspoken', 'admit-below-level', 'no-drop-below'];

/** The mutants that revert fixes of the changes' runtime (their seeds run with `--changes` too). */
const changeFixMutants: readonly MutantName[] = ['left-member-rejoins-ack-set', 'left-without-issuing', 'zombie-forgets-newer', 'evict-to-voters-only', 'left-silent-to-successor', 'leave-before-echoes-lapse', 'held-view-kept', 'zombie-takes-held-view'];

/** Whether a mutant's seeds draw changes of the members (RunOptions.changes). */
export function changesOf(mutant: MutantName | undefined): boolean {
  return mutant !== undefined && (changeMutants.includes(mutant) || changeFixMutants.includes(mutant));
}
