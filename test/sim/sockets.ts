/**
 * Simulated sockets under the production mesh: the bytes the real codec encodes travel
 * through the Wire (network.ts: delays, FIFO per direction, healing cuts, random breaks).
 * A socket is what TCP gives the runtime: dial (a SYN that reaches the host now listening
 * for that peer id, or a refusal), messages in order, close (a FIN after what was sent),
 * and on a crash the host's kernel closing every socket of the dead process. Nothing here
 * knows the mesh's frames: this is the network the runtime is given, not a copy of it.
 */
import type { Listener, Network, RawSocket, SocketHandlers } from '../../src/transport/network.js';
import type { SimProcess, SimTime } from './host.js';
import type { Wire } from './network.js';
import type { Prng } from '../support/prng.js';

/** The peer id a dial address names: ws://p3:1 -> 3. */
function peerOfUrl(url: string): number {
  const m = /^wss?:\/\/p(\d+):/.exec(url);
  if (m === null) throw new Error(`sim: unexpected peer address ${url}`);
  return Number(m[1]);
}

/** One end of a simulated connection. */
class SimSocket implements RawSocket {
  readonly proc: SimProcess;
  peerEnd: SimSocket | null = null;
  readonly conn: SimConn;
  #handlers: SocketHandlers | null = null;
  #open: boolean;
  #closed = false;

  constructor(proc: SimProcess, conn: SimConn, open: boolean) {
    this.proc = proc;
    this.conn = conn;
    this.#open = open;
  }

  get isOpen(): boolean {
    return this.#open && !this.#closed;
  }

  get closed(): boolean {
    return this.#closed;
  }

  handle(h: SocketHandlers): void {
    this.#handlers = h;
  }

  send(data: Uint8Array): void {
    if (!this.isOpen) return;
    this.conn.net.transmit(this, data);
  }

  close(): void {
    this.#shut();
  }

  terminate(): void {
    this.#shut();
  }

  /** Our side stops; the other side hears the FIN after everything we sent. */
  #shut(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#open = false;
    this.conn.net.fin(this);
  }

  /** The connection finished opening (dialer side). */
  opened(): void | false {
    if (this.#closed || this.#handlers === null) return false;
    this.#open = true;
    this.#handlers?.onOpen();
  }

  message(data: Uint8Array): void | false {
    if (this.#closed || this.#handlers === null) return false;
    this.#handlers.onMessage(data, true);
  }

  /** The other side closed, the dial was refused, or the connection broke. */
  ended(refused: boolean): void | false {
    if (this.#closed) return false;
    this.#closed = true;
    this.#open = false;
    if (refused) this.#handlers?.onError({ code: 'ECONNREFUSED', message: 'connection refused' });
    this.#handlers?.onClose();
  }

  /** The process died: the socket goes with it, silently on this side. */
  drop(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#open = false;
    this.conn.net.fin(this);
  }
}

/** One connection: two ends, and whether it broke (what is in flight on it is lost). */
interface SimConn {
  readonly net: SimNetworks;
  readonly dialerPeer: number;
  readonly listenerPeer: number;
  readonly dialerProc: SimProcess;
  /** The process that accepted it (null until then). */
  listenerProc: SimProcess | null;
  broken: boolean;
}

/**
 * The listener each peer id's address leads to: the newest live process that listens
 * there. When it dies the address leads back to an older one still alive (the duplicate
 * took the address over, like a moved virtual IP, and gave it back).
 */
interface Listening {
  readonly proc: SimProcess;
  accept: ((sock: RawSocket, remote: string) => void) | null;
}

/** Every simulated socket of a run, over one wire. */
export class SimNetworks {
  readonly #wire: Wire;
  readonly #rng: Prng;
  readonly #time: SimTime;
  readonly #listeners = new Map<number, Listening[]>();
  readonly #socketsOf = new Map<SimProcess, Set<SimSocket>>();
  /** Runs network work at a virtual time whatever the processes' state: the hosts' kernels. */
  readonly #kernel: (atMs: number, fn: () => void) => void;
  log: (peer: number, what: string) => void = () => undefined;
  /** Stalled routes, `dialer>listener` -> until when (virtual ms). */
  readonly #stalledUntil = new Map<string, number>();

  constructor(opts: { wire: Wire; rng: Prng; time: SimTime; kernel: (atMs: number, fn: () => void) => void }) {
    this.#wire = opts.wire;
    this.#rng = opts.rng;
    this.#time = opts.time;
    this.#kernel = opts.kernel;
  }

  /** The network one process is given: it listens at its peer id's address and dials others. */
  networkOf(proc: SimProcess): { network: Network; listener: Listener } {
    const entry: Listening = { proc, accept: null };
    this.#stack(proc.peer).push(entry);
    const listener: Listener = {
      port: 1,
      accept: (fn) => {
        entry.accept = fn;
      },
      close: () => {
        this.#listeners.set(proc.peer, this.#stack(proc.peer).filter((e) => e !== entry));
        return Promise.resolve();
      },
    };
    const network: Network = {
      listen: () => Promise.reject(new Error('sim: a process listens once, through networkOf')),
      dial: (url) => this.#dial(proc, peerOfUrl(url)),
    };
    return { network, listener };
  }

  /** A process died: its sockets close, and the other ends hear it after the wire's delay. */
  crashed(proc: SimProcess): void {
    for (const sock of this.#socketsOf.get(proc) ?? []) sock.drop();
    this.#socketsOf.delete(proc);
    for (const dialer of this.#pending(proc)) {
      dialer.proc.at(this.#wire.arrivalMs(proc.peer, dialer.proc.peer, this.#time.nowMs), () => dialer.ended(true));
    }
    this.#pendingAccepts.delete(proc);
    this.#listeners.set(proc.peer, this.#stack(proc.peer).filter((e) => e.proc !== proc));
  }

  #stack(peer: number): Listening[] {
    let stack = this.#listeners.get(peer);
    if (stack === undefined) this.#listeners.set(peer, (stack = []));
    return stack;
  }

  /** Where a dial to `peer`'s address lands now. */
  #listening(peer: number): Listening | undefined {
    const stack = this.#stack(peer);
    return stack[stack.length - 1];
  }

  readonly #pendingAccepts = new Map<SimProcess, Set<SimSocket>>();

  #pending(proc: SimProcess): Set<SimSocket> {
    let set = this.#pendingAccepts.get(proc);
    if (set === undefined) this.#pendingAccepts.set(proc, (set = new Set()));
    return set;
  }

  #track(sock: SimSocket): void {
    let set = this.#socketsOf.get(sock.proc);
    if (set === undefined) this.#socketsOf.set(sock.proc, (set = new Set()));
    set.add(sock);
  }

  /**
   * Stalls every connection that `dialer` opens to `listener`, in both directions, and its
   * new dials, until `untilMs`, while the connections `listener` opens to `dialer` carry on:
   * a stuck NAT or firewall entry, or a TCP connection retransmitting into a black hole.
   * What is sent meanwhile arrives when the stall ends, if its connection still lives.
   */
  stall(dialer: number, listener: number, untilMs: number): void {
    const key = `${dialer}>${listener}`;
    this.#stalledUntil.set(key, Math.max(this.#stalledUntil.get(key) ?? 0, untilMs));
  }

  /**
   * Stalls, until `untilMs`, every connection between process `proc` and peer `peer`'s
   * processes, both ways, new dials too, while the other processes of `proc`'s peer id talk
   * to `peer` as before: the per-process routes of two processes with one id on two hosts
   * (a VM its supervisor replaced elsewhere), which a cut of the peer id cannot tell apart.
   */
  stallProcess(proc: SimProcess, peer: number, untilMs: number): void {
    const key = `${proc.id}~${peer}`;
    this.#procStalledUntil.set(key, Math.max(this.#procStalledUntil.get(key) ?? 0, untilMs));
  }

  /** True while any route or process stall lasts. */
  anyStall(nowMs: number): boolean {
    for (const until of this.#stalledUntil.values()) if (nowMs < until) return true;
    for (const until of this.#procStalledUntil.values()) if (nowMs < until) return true;
    return false;
  }

  /** Process-level stalls, `procId~peer` -> until when (virtual ms). */
  readonly #procStalledUntil = new Map<string, number>();

  /** Ends every stall now (the liveness phase). */
  healStalls(): void {
    this.#stalledUntil.clear();
    this.#procStalledUntil.clear();
  }

  /** When something sent now on `conn` from `fromPeer` arrives: the wire's time, held by a stall. */
  #arrival(conn: SimConn, fromPeer: number, toPeer: number): number {
    const at = this.#wire.arrivalMs(fromPeer, toPeer, this.#time.nowMs);
    const listenerProc = conn.listenerProc ?? this.#listening(conn.listenerPeer)?.proc;
    const procStall = Math.max(
      this.#procStalledUntil.get(`${conn.dialerProc.id}~${conn.listenerPeer}`) ?? 0,
      listenerProc === undefined ? 0 : this.#procStalledUntil.get(`${listenerProc.id}~${conn.dialerPeer}`) ?? 0,
    );
    return Math.max(at, procStall, this.#stalledUntil.get(`${conn.dialerPeer}>${conn.listenerPeer}`) ?? 0);
  }

  #dial(proc: SimProcess, to: number): RawSocket {
    const conn: SimConn = { net: this, dialerPeer: proc.peer, listenerPeer: to, dialerProc: proc, listenerProc: null, broken: false };
    const dialer = new SimSocket(proc, conn, false);
    this.#track(dialer);
    const synAt = this.#arrival(conn, proc.peer, to);
    this.#kernel(synAt, () => {
      const target = this.#listening(to);
      if (target === undefined || !target.proc.alive) {
        // Nothing listens there: the host answers with a reset.
        proc.at(this.#wire.arrivalMs(to, proc.peer, this.#time.nowMs), () => dialer.ended(true));
        return;
      }
      // The kernel completes the TCP handshake; the process accepts when it runs (if it lives).
      this.#pending(target.proc).add(dialer);
      target.proc.at(this.#time.nowMs, () => this.#accept(dialer, target));
    });
    return dialer;
  }

  /** The SYN reached the listening process: it accepts, and the dialer hears the answer. */
  #accept(dialer: SimSocket, target: Listening): void | false {
    this.#pending(target.proc).delete(dialer);
    dialer.conn.listenerProc = target.proc;
    const back = this.#arrival(dialer.conn, dialer.conn.listenerPeer, dialer.conn.dialerPeer);
    if (dialer.closed || target.accept === null || this.#listening(dialer.conn.listenerPeer) !== target) {
      dialer.proc.at(back, () => dialer.ended(true));
      return false; // refused by the kernel: nothing of the process ran
    }
    const accepted = new SimSocket(target.proc, dialer.conn, true);
    accepted.peerEnd = dialer;
    dialer.peerEnd = accepted;
    this.#track(accepted);
    target.accept(accepted, `p${dialer.conn.dialerPeer}`);
    dialer.proc.at(back, () => dialer.opened());
  }

  /** One message on its way; in link mode the connection may break under it instead. */
  transmit(from: SimSocket, data: Uint8Array): void {
    const to = from.peerEnd;
    if (to === null) return;
    const conn = from.conn;
    if (this.#wire.breakChance > 0 && this.#rng.chance(this.#wire.breakChance)) {
      this.log(from.proc.peer, `socket p${conn.dialerPeer}->p${conn.listenerPeer} broke under a message`);
      conn.broken = true;
      from.proc.at(this.#time.nowMs, () => from.ended(false));
      to.proc.at(this.#time.nowMs, () => to.ended(false));
      return;
    }
    const at = this.#arrival(conn, from.proc.peer, to.proc.peer);
    to.proc.at(at, () => (conn.broken ? false : to.message(data)));
  }

  /** A FIN after everything sent on that end. */
  fin(from: SimSocket): void {
    const to = from.peerEnd;
    if (to === null || from.conn.broken) return;
    const at = this.#arrival(from.conn, from.proc.peer, to.proc.peer);
    to.proc.at(at, () => to.ended(false));
  }
}
