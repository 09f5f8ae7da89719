/**
 * One message socket between two peers, whatever its role: bytes <-> checked frames, the
 * handshake deadline, the silence watchdog (half-open detection) and the heartbeat at each
 * tick of its mesh, and closing with a logged, coded reason. Also exponential backoff with jitter for dials.
 * Time and timers come from the process's Env, the socket from its Network.
 *
 * Why a watchdog rather than TCP keepalive: a stalled middlebox or a paused peer keeps
 * the TCP connection "up" for minutes; docs/design.md section 4 wants the socket closed after
 * three silent heartbeat intervals so the dial loop resumes (MQTT's rule: no resend on a
 * live socket, only on a new one).
 */
import type { Logger } from 'pino';
import { assert } from '../assert.js';
import type { Env, Timer } from '../env.js';
import { ErrorCode, LockError } from '../errors.js';
import type { Frame, PayloadGuard } from './codec.js';
import { decodeFrame, encodeFrame } from './codec.js';
import { knownEvictedOf, knownOf, refuseReasonOf, shapeOf } from './handshake.js';
import { limits } from '../limits.js';
import type { RawSocket } from './network.js';

/** What a FrameSocket needs from its owner. */
export interface FrameSocketOptions<P> {
  readonly sock: RawSocket;
  readonly env: Env;
  readonly isPayload: PayloadGuard<P>;
  readonly logger: Logger;
  /** The socket is cut if the handshake is not done within this. */
  readonly handshakeMsMax: number;
  /**
   * Logs and counts a failure (a refusal, a malformed frame) before the socket tells the
   * other side and closes; the mesh's is rate-limited (docs/design.md section 4, "Strangers on the peer port").
   * Default: one warning per failure.
   */
  readonly onFail?: ((reason: string, err: LockError) => void) | undefined;
}

/** WebSocket close codes by error code: policy violation, protocol error, too big. */
function closeCodeOf(err: LockError): number {
  if (err.code === ErrorCode.FrameTooLarge) return 1009;
  if (err.code === ErrorCode.HandshakeRefused) return 1008;
  return 1002;
}

/** A message socket speaking checked frames; the owner sets `onFrame` and `onClose`. */
export class FrameSocket<P> {
  /** Called for every well-formed frame; a LockError thrown here closes this socket. */
  onFrame: (frame: Frame<P>) => void = () => undefined;
  /** Called once, when the socket stops being usable (closed by either side or cut). */
  onClose: () => void = () => undefined;
  /** Monotonic time of the last frame heard (or of the socket's creation). */
  lastHeardMs: number;

  readonly #sock: RawSocket;
  readonly #env: Env;
  readonly #isPayload: PayloadGuard<P>;
  readonly #log: Logger;
  readonly #onFail: ((reason: string, err: LockError) => void) | undefined;
  #closed = false;
  #onOpen: (() => void) | null = null;
  #silenceMsMax = 0;
  #deadline: Timer | null;
  /** Says this socket's heartbeat is due, at each tick of its mesh (`tick`). */
  #heartbeat: (() => void) | null = null;

  constructor(options: FrameSocketOptions<P>) {
    this.#sock = options.sock;
    this.#env = options.env;
    this.#isPayload = options.isPayload;
    this.#log = options.logger;
    this.#onFail = options.onFail;
    this.lastHeardMs = this.#env.monoMs();
    this.#deadline = this.#env.after(options.handshakeMsMax, () => this.terminate('handshake not finished in time'));
    this.#sock.handle({
      onOpen: () => this.#onOpen?.(),
      onMessage: (data, binary) => this.#onMessage(data, binary),
      onError: (err) => this.#onError(err),
      onClose: () => this.#finish(),
    });
  }

  /** True until the socket is closed, cut, or failed. */
  get open(): boolean {
    return !this.#closed;
  }

  /** Runs `listener` once the (outbound) socket is open. */
  onOpen(listener: () => void): void {
    this.#onOpen = listener;
  }

  /**
   * The handshake is done: from now on a tick (`tick`) that finds the socket silent for
   * `silenceMsMax` or longer cuts it.
   */
  established(silenceMsMax: number): void {
    assert(silenceMsMax > 0, 'silence bound is positive');
    this.#env.clear(this.#deadline);
    this.#deadline = null;
    this.#silenceMsMax = silenceMsMax;
    this.lastHeardMs = this.#env.monoMs();
  }

  /** Calls `due()` at every tick from now on, while the socket is open: its owner sends the heartbeat. */
  startHeartbeat(due: () => void): void {
    assert(this.#heartbeat === null, 'one heartbeat per socket');
    this.#heartbeat = due;
  }

  /**
   * One heartbeat interval passed (the mesh ticks every socket at once, one timer for all:
   * docs/design.md section 4, "Heartbeats and echoes"): a socket silent too long is cut (the
   * silence watchdog), an open one sends its heartbeat.
   */
  tick(): void {
    if (this.#closed) return;
    const silentMs = this.#env.monoMs() - this.lastHeardMs;
    if (this.#silenceMsMax > 0 && silentMs >= this.#silenceMsMax) {
      this.#log.info({ silentMs: Math.round(silentMs) }, 'connection silent too long: presumed half-open, cutting it');
      this.terminate('silent');
      return;
    }
    this.#heartbeat?.();
  }

  /** Encodes and sends one frame; returns the bytes handed to the socket (0 if closed). */
  send(frame: Frame<P>): number {
    if (this.#closed || !this.#sock.isOpen) return 0;
    const bytes = encodeFrame(frame);
    this.#sock.send(bytes);
    return bytes.length;
  }

  /** Sends bytes already encoded by `encodeFrame`. */
  sendEncoded(bytes: Uint8Array): boolean {
    if (this.#closed || !this.#sock.isOpen) return false;
    this.#sock.send(bytes);
    return true;
  }

  /** Logs the coded error, tells the other side why (refuse frame), and closes. */
  fail(err: LockError): void {
    if (this.#closed) return;
    const reason = refuseReasonOf(err) ?? err.code;
    if (this.#onFail !== undefined) this.#onFail(reason, err);
    else this.#log.warn({ code: err.code, reason, details: err.details }, `closing connection: ${err.message}`);
    const known = knownOf(err);
    const shape = shapeOf(err);
    const about = known === undefined ? {} : knownEvictedOf(err) ? { known, knownEvicted: true as const } : { known };
    this.send({ t: 'refuse', reason, message: err.message.slice(0, limits.refuseMessageCharsMax), ...about, ...(shape === undefined ? {} : { shape }) });
    this.close(closeCodeOf(err), reason);
  }

  /** Graceful close: what was sent still arrives; the socket is cut if the other side dawdles. */
  close(code: number, reason: string): void {
    if (this.#closed) return;
    this.#sock.close(code, reason);
    this.#finish();
  }

  /** Cuts the connection at once: for half-open sockets and shutdown. */
  terminate(why: string): void {
    if (this.#closed) return;
    this.#log.debug({ why }, 'cutting connection');
    this.#sock.terminate();
    this.#finish();
  }

  #onMessage(data: Uint8Array, binary: boolean): void {
    if (this.#closed) return;
    this.lastHeardMs = this.#env.monoMs();
    try {
      if (!binary) throw new LockError(ErrorCode.FrameInvalid, 'text frame: peers speak binary msgpack');
      this.onFrame(decodeFrame(data, this.#isPayload));
    } catch (err) {
      if (!(err instanceof LockError)) throw err;
      this.fail(err);
    }
  }

  #onError(err: { readonly code?: string | undefined; readonly message: string }): void {
    // `ws` reports protocol violations (bad opcode, payload over maxPayload) here, then closes.
    const code = err.code === 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH' ? ErrorCode.FrameTooLarge : ErrorCode.FrameInvalid;
    const level = err.code !== undefined && err.code.startsWith('WS_ERR') ? 'warn' : 'debug';
    this.#log[level]({ code, cause: err.code ?? err.message }, `connection error: ${err.message}`);
    this.#finish();
  }

  #finish(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#env.clear(this.#deadline);
    this.#deadline = null;
    this.#heartbeat = null;
    this.onClose();
  }
}

/** Exponential backoff between dial attempts, with jitter so peers do not dial in step. */
export class Backoff {
  readonly #minMs: number;
  readonly #maxMs: number;
  readonly #random: () => number;
  #attempt = 0;

  constructor(random: () => number, minMs: number = limits.backoffMsMin, maxMs: number = limits.backoffMsMax) {
    assert(0 < minMs && minMs <= maxMs, 'backoff bounds are ordered');
    this.#minMs = minMs;
    this.#maxMs = maxMs;
    this.#random = random;
  }

  /** Delay before the next attempt: half fixed, half random ("equal jitter"). */
  next(): number {
    const ceilingMs = Math.min(this.#maxMs, this.#minMs * 2 ** Math.min(this.#attempt, 30));
    this.#attempt++;
    return ceilingMs / 2 + (this.#random() * ceilingMs) / 2;
  }

  /** A handshake succeeded: the next failure starts from the minimum again. */
  reset(): void {
    this.#attempt = 0;
  }
}
