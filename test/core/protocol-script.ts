/**
 * Transcript tests for the peer protocol (core/protocol.ts), in the manner of etcd-io/raft's
 * datadriven `testdata/*.txt`: each file is a script of inputs, each followed by `----` and
 * the outputs the protocol answers with, so that a rule's corner cases read as events in,
 * effects out. `UPDATE_TRANSCRIPTS=1 npx vitest run test/core/protocol-transcripts.test.ts`
 * rewrites the expected outputs; review the diff.
 *
 * Commands (times are lease-clock ms; an incarnation is written `startMs.nonce`; peers by index):
 *   new self=0 peers=3 lease=1000 evict=3000 inc=1000.1 [floor=N] [quiet=MS] [joins-held=MS] [wall=MS]
 *   joined peer=1 inc=I [clock=N] [restarted] now=T     the links admitted it (as the mesh does)
 *   packet from=1 inc=I now=T {json packet}             payload: a core packet or a membership message
 *   heartbeat from=1 inc=I [clock=N] [sent=T] now=T    (sent: its send time, default now)
 *   heartbeat-due peer=1 [all-sent]                     our heartbeat to p1 is due
 *   echo peer=1 sent=T now=T
 *   refused peer=1 reason=R [known=I] [known-evicted] now=T
 *   tick now=T | check-lease now=T | fence now=T
 *   acquire ref=1 lock=a [mode=shared] [nowait] now=T | release ref=1 now=T
 *   state now=T | explain ref=1 | wall ms=W
 * Outputs print one per line: `send pJ {...}` (with `lazy`, `promise`), `echo pJ I sent T`,
 * `heartbeat pJ clock N|none`, `local {...}`, `clock N`
 * (only when it moved), `refuse`, `refuse-ahead`, `rejoin`, `log LEVEL: msg {fields}`; the
 * `sent` and `changed` outputs, for metrics and views, are left out.
 */
import { IncarnationBook } from '../../src/core/incarnations.js';
import type { MachineEvent } from '../../src/core/machine.js';
import { PeerProtocol } from '../../src/core/protocol.js';
import type { Payload, ProtocolOutput } from '../../src/core/protocol-io.js';
import type { Incarnation, Mode } from '../../src/core/types.js';
import { clockCeiling, formatIncarnation } from '../../src/core/types.js';

/** One command: its name, `key=value` and bare-flag arguments, and a trailing JSON value. */
interface Command {
  readonly name: string;
  readonly args: ReadonlyMap<string, string>;
  readonly json: unknown;
}

/** One block of a script: the command line as written and the expected output lines. */
export interface Block {
  readonly line: string;
  readonly expected: readonly string[];
  readonly lineNo: number;
}

/** Blocks of a script file: a command line, `----`, expected lines up to a blank line. Lines starting `#` are comments. */
export function parseScript(text: string): Block[] {
  const lines = text.split('\n');
  const blocks: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? '';
    if (line.trim() === '' || line.startsWith('#')) continue;
    if (lines[i + 1] !== '----') throw new Error(`line ${i + 1}: a command is followed by a line '----'`);
    const expected: string[] = [];
    let j = i + 2;
    for (; j < lines.length && (lines[j] ?? '') !== ''; j++) expected.push(lines[j] ?? '');
    blocks.push({ line, expected, lineNo: i + 1 });
    i = j;
  }
  return blocks;
}

/** A script written back with `actual` as every block's output (the rewrite mode). */
export function formatScript(text: string, actual: readonly (readonly string[])[]): string {
  const out: string[] = [];
  const lines = text.split('\n');
  let block = 0;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? '';
    if (line.trim() === '' || line.startsWith('#')) {
      out.push(line);
      continue;
    }
    out.push(line, '----', ...(actual[block++] ?? []));
    let j = i + 2;
    while (j < lines.length && (lines[j] ?? '') !== '') j++;
    i = j - 1;
  }
  return out.join('\n');
}

function parseCommand(line: string): Command {
  const brace = line.indexOf('{');
  const head = brace < 0 ? line : line.slice(0, brace);
  const [name = '', ...words] = head.trim().split(/\s+/);
  const args = new Map<string, string>();
  for (const w of words) {
    const eq = w.indexOf('=');
    args.set(eq < 0 ? w : w.slice(0, eq), eq < 0 ? '' : w.slice(eq + 1));
  }
  return { name, args, json: brace < 0 ? undefined : JSON.parse(line.slice(brace)) as unknown };
}

function num(c: Command, key: string, fallback?: number): number {
  const v = c.args.get(key);
  if (v === undefined && fallback !== undefined) return fallback;
  if (v === undefined || !Number.isFinite(Number(v))) throw new Error(`${c.name}: needs ${key}=<number>`);
  return Number(v);
}

function inc(c: Command, key = 'inc'): Incarnation {
  const v = c.args.get(key);
  const m = v === undefined ? null : /^(\d+)\.(\d+)$/.exec(v);
  if (m === null) throw new Error(`${c.name}: needs ${key}=<startMs>.<nonce>`);
  return { startMs: Number(m[1]), nonce: Number(m[2]) };
}

function show(v: unknown): string {
  return JSON.stringify(v, (_k, x: unknown) => (typeof x === 'bigint' ? `${x}n` : x));
}

/** A handshake the links would refuse: the protocol never hears of it. */
class RefusedByLinks extends Error {}

/** Runs one script's commands against one protocol and answers each block's output lines. */
export class ProtocolScript {
  #protocol: PeerProtocol | null = null;
  #book: IncarnationBook | null = null;
  #wallMs = 0;
  #lastClock = Number.NaN;

  run(line: string): string[] {
    const c = parseCommand(line);
    if (c.name === 'new') return this.#create(c);
    if (c.name === 'wall') {
      this.#wallMs = num(c, 'ms');
      return [];
    }
    const p = this.#protocol;
    const book = this.#book;
    if (p === null || book === null) throw new Error(`${c.name}: the script starts with 'new'`);
    const query = this.#query(p, c);
    if (query !== null) return query;
    try {
      return this.#format(this.#input(p, book, c));
    } catch (err) {
      if (err instanceof RefusedByLinks) return [`(the links refuse it: ${err.message})`];
      throw err;
    }
  }

  #create(c: Command): string[] {
    const peers = num(c, 'peers');
    const incarnation = inc(c);
    this.#wallMs = num(c, 'wall', incarnation.startMs);
    const book = new IncarnationBook(peers, () => clockCeiling(this.#wallMs, this.#protocol?.machine.clock ?? 0));
    this.#book = book;
    this.#protocol = new PeerProtocol({
      self: num(c, 'self'), peerIds: Array.from({ length: peers }, (_, i) => `p${i}`), leaseMs: num(c, 'lease', 1000), evictMs: num(c, 'evict', 3000),
      clockRateMargin: 1.5, incarnation, clockFloor: num(c, 'floor', incarnation.startMs), nowMs: num(c, 'now', 0), incarnations: book,
      quietForMs: num(c, 'quiet', 0), joinsHeldForMs: num(c, 'joins-held', 0),
    });
    this.#lastClock = this.#protocol.machine.clock;
    return [`clock ${this.#lastClock}`];
  }

  #query(p: PeerProtocol, c: Command): string[] | null {
    switch (c.name) {
      case 'state': {
        const m = p.machine;
        const now = num(c, 'now');
        return [
          `clock ${m.clock} synced ${m.synced} ack-ready ${m.ackReady} lease ${m.leaseValid} (until ${p.leaseValidUntilMs()})`,
          `waiting [${p.waiting().join(', ')}] superseded ${p.supersededError === null ? 'no' : `(${p.supersededError.message})`} quiet-left ${p.quietLeftMs(now)} joins-held-left ${p.joinsHeldLeftMs(now)}`,
        ];
      }
      case 'explain':
        return [show(p.machine.explain(num(c, 'ref')) ?? 'unknown ref')];
      default:
        return null;
    }
  }

  #input(p: PeerProtocol, book: IncarnationBook, c: Command): readonly ProtocolOutput[] {
    // The one input that needs no time: rule 3a reads the core, not the lease.
    if (c.name === 'heartbeat-due') return p.heartbeatDue(num(c, 'peer'), c.args.has('all-sent'));
    const now = num(c, 'now');
    switch (c.name) {
      case 'joined': {
        const i = inc(c);
        const peer = num(c, 'peer');
        // What the mesh does before it reports a peer joined: the handshake admits the incarnation.
        const refusal = book.check(peer, i);
        if (refusal !== null) throw new RefusedByLinks(refusal);
        book.admit(peer, i);
        return p.peerJoined(peer, i, num(c, 'clock', 0), c.args.has('restarted'), now);
      }
      case 'packet':
        return p.payload(num(c, 'from'), inc(c), c.json as Payload, now);
      case 'heartbeat':
        return p.heartbeat(num(c, 'from'), inc(c), c.args.has('clock') ? num(c, 'clock') : undefined, num(c, 'sent', now), now);
      case 'echo':
        return p.echo(num(c, 'peer'), num(c, 'sent'), now);
      case 'refused':
        return p.refused(num(c, 'peer'), c.args.get('reason') ?? '', c.args.has('known') ? inc(c, 'known') : undefined, c.args.has('known-evicted'), now);
      case 'tick':
        return p.tick(now);
      case 'check-lease':
        return p.checkLease(now);
      default:
        return p.local(this.#localEvent(c), now);
    }
  }

  #localEvent(c: Command): MachineEvent {
    const ref = num(c, 'ref', 0);
    if (c.name === 'acquire') {
      const mode = (c.args.get('mode') ?? 'exclusive') as Mode;
      return { type: 'acquire', ref, parts: [{ lock: c.args.get('lock') ?? 'a', spec: { mode, limit: 1, permits: 1, owner: `c${ref}`, meta: null, requestedAtMs: 0 } }], noWait: c.args.has('nowait') };
    }
    if (c.name === 'release') return { type: 'release', ref };
    if (c.name === 'fence') return { type: 'fence' };
    throw new Error(`unknown command '${c.name}'`);
  }

  #format(outputs: readonly ProtocolOutput[]): string[] {
    const lines: string[] = [];
    for (const o of outputs) {
      switch (o.type) {
        case 'send':
          lines.push(`send p${o.to} ${show(o.payload)}${o.lazy ? ' lazy' : ''}${o.promise ? ' promise' : ''}`);
          break;
        case 'local':
          lines.push(`local ${show(o.effect)}`);
          break;
        case 'echo':
          lines.push(`echo p${o.to} ${formatIncarnation(o.inc)} sent ${o.sentAtMs}`);
          break;
        case 'heartbeat':
          lines.push(`heartbeat p${o.to} clock ${o.clock ?? 'none'}`);
          break;
        case 'clock':
          if (o.clock !== this.#lastClock) lines.push(`clock ${o.clock}`);
          this.#lastClock = o.clock;
          break;
        case 'refuse':
          lines.push(`refuse p${o.peer} up to ${formatIncarnation(o.inc)}`);
          break;
        case 'refuse_ahead':
          lines.push(`refuse-ahead p${o.peer} ${formatIncarnation(o.inc)} clock ${o.clock}`);
          break;
        case 'rejoin':
          lines.push(`rejoin ${o.reason} above ${o.startFloorMs}`);
          break;
        case 'log':
          lines.push(`log ${o.level}: ${o.msg}${Object.keys(o.fields).length === 0 ? '' : ` ${show(o.fields)}`}`);
          break;
        case 'sent':
        case 'changed':
          break;
      }
    }
    return lines;
  }
}
