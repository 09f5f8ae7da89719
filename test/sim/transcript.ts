/**
 * A readable record of a run: one line per machine step (time, peer, event, effects) and
 * per driver action. Recording costs string building, so runs record only when asked; a
 * failing seed is simply run again with the transcript on, which the determinism allows.
 */
import type { Effect, MachineEvent } from '../../src/core/machine.js';
import type { MembershipMessage } from '../../src/core/membership.js';
import type { Packet, PeerMessage } from '../../src/core/messages.js';

/** Lines of one run, capped so that a long run cannot exhaust memory. */
export class Transcript {
  readonly enabled: boolean;
  readonly #lines: string[] = [];
  readonly #keepLines: number;

  constructor(opts: { enabled: boolean; keepLines?: number }) {
    this.enabled = opts.enabled;
    this.#keepLines = opts.keepLines ?? 200_000;
  }

  /** Appends one line; `peer` null for cluster-wide lines. */
  add(nowMs: number, peer: number | null, what: string): void {
    if (!this.enabled) return;
    if (this.#lines.length >= this.#keepLines) {
      this.#lines.shift();
    }
    this.#lines.push(`${nowMs.toFixed(1).padStart(8)}ms ${peer === null ? '  ' : `p${peer}`} ${what}`);
  }

  /** The last `n` lines. */
  tail(n: number): string[] {
    return this.#lines.slice(-n);
  }

  /** Every line kept, oldest first. */
  lines(): readonly string[] {
    return this.#lines;
  }
}

function formatMessage(m: PeerMessage): string {
  if (m.t === 'rel') return `rel ${m.lock}@${m.ts}`;
  const sem = m.mode === 'semaphore' ? ` ${m.permits}/${m.limit}` : '';
  return `req ${m.lock}@${m.ts} ${m.mode}${sem}`;
}

/** `c=12 [req L0@11 exclusive, rel L1@7]`. */
export function formatPacket(p: Packet): string {
  return `c=${p.c} [${p.m.map(formatMessage).join(', ')}]`;
}

/** One machine event, briefly. */
export function formatEvent(e: MachineEvent): string {
  switch (e.type) {
    case 'acquire': {
      const sem = e.spec.mode === 'semaphore' ? ` ${e.spec.permits}/${e.spec.limit}` : '';
      return `acquire ref=${e.ref} ${e.lock} ${e.spec.mode}${sem}${e.noWait ? ' noWait' : ''}`;
    }
    case 'release':
      return `release ref=${e.ref}`;
    case 'packet':
      return `recv p${e.from} ${formatPacket(e.packet)}`;
    case 'joined':
      return `joined p${e.peer} inc=${e.inc.startMs}.${e.inc.nonce} clock=${e.clock}`;
    case 'evicted':
      return `evicted p${e.peer}`;
    case 'lease':
      return `lease ${e.valid ? 'valid' : 'lapsed'}`;
  }
}

/** The effects of one step, briefly; empty when there were none. */
export function formatEffects(effects: readonly Effect[]): string {
  const parts = effects.map((f) => {
    switch (f.type) {
      case 'send':
        return `send p${f.to} ${formatPacket(f.packet)}`;
      case 'granted':
        return `GRANTED ref=${f.ref} ${f.lock}@${f.ts} ${f.mode} token=${f.token}`;
      case 'refused':
        return `refused ref=${f.ref} ${f.lock}`;
      case 'ended':
        return `ended ref=${f.ref} ${f.lock} ${f.reason}`;
    }
  });
  return parts.length === 0 ? '' : ` -> ${parts.join('; ')}`;
}

/** A membership message, e.g. `CONFIRM p1 inc=1700000000000.42 at=1487.0`. */
export function formatMembership(m: MembershipMessage): string {
  const at = m.t === 'evict' ? '' : ` at=${m.at.toFixed(1)}`;
  return `${m.t.toUpperCase()} p${m.peer} inc=${m.inc.startMs}.${m.inc.nonce}${at}`;
}
