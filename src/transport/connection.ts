/**
 * One WebSocket between two peers, whatever its role: bytes <-> checked frames, the
 * handshake deadline, the silence watchdog (half-open detection), the heartbeat ticker,
 * and closing with a logged, coded reason. Also the dial helpers: exponential backoff with
 * jitter, and a client socket with every `ws` option set explicitly (STYLE.md 15).
 *
 * Why a watchdog rather than TCP keepalive: a stalled middlebox or a paused peer keeps
 * the TCP connection "up" for minutes; DESIGN section 4 wants the socket closed after
 * three silent heartbeat intervals so the dial loop resumes (MQTT's rule: no resend on a
 * live socket, only on a new one).
 */
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import WebSocket from 'ws';
import { assert } from '../assert.js';
import { ErrorCode, LockError } from '../errors.js';
import { limits } from '../limits.js';
import type { Frame, PayloadGuard } from './codec.js';
import { decodeFrame, encodeFrame } from './codec.js';
import { refuseReasonOf } from './handshake.js';

/** Monotonic milliseconds: durations never jump with the wall clock. */
export const monotonicMs = (): number => performance.now();

/** How long a closing socket may take to finish its close handshake before it is cut. */
const closeGraceMs = 1000;

/** What a FrameSocket needs from its owner. */
export interface FrameSocketOptions<P> {
  readonly ws: WebSocket;
  readonly isPayload: PayloadGuard<P>;
  readonly logger: Logger;
  /** The socket is cut if the handshake is not done within this. */
  readonly handshakeMsMax: number;
}

/** WebSocket close codes by error code: policy violation, protocol error, too big. */
function closeCodeOf(err: LockError): number {
  if (err.code === ErrorCode.FrameTooLarge) return 1009;
  if (err.code === ErrorCode.HandshakeRefused) return 1008;
  return 1002;
}

function toBuffer(data: WebSocket.RawData): Buffer {
  if (Buffer.isBuffer(data)) return data;
  if (Array.isArray(data)) return Buffer.concat(data);
  return Buffer.from(data);
}

/** A ws socket speaking checked frames; the owner sets `onFrame` and `onClose`. */
export class FrameSocket<P> {
  /** Called for every well-formed frame; a LockError thrown here closes this socket. */
  onFrame: (frame: Frame<P>) => void = () => undefined;
  /** Called once, when the socket stops being usable (closed by either side or cut). */
  onClose: () => void = () => undefined;
  /** Monotonic time of the last frame heard (or of the socket's creation). */
  lastHeardMs = monotonicMs();

  readonly #ws: WebSocket;
  readonly #isPayload: PayloadGuard<P>;
  readonly #log: Logger;
  #closed = false;
  #silenceMsMax = 0;
  #deadline: NodeJS.Timeout | null;
  #watchdog: NodeJS.Timeout | null = null;
  #ticker: NodeJS.Timeout | null = null;

  constructor(options: FrameSocketOptions<P>) {
    this.#ws = options.ws;
    this.#isPayload = options.isPayload;
    this.#log = options.logger;
    this.#deadline = setTimeout(() => this.terminate('handshake not finished in time'), options.handshakeMsMax);
    this.#ws.on('message', (data, isBinary) => this.#onMessage(data, isBinary));
    this.#ws.on('error', (err) => this.#onError(err));
    this.#ws.on('close', () => this.#finish());
  }

  /** True until the socket is closed, cut, or failed. */
  get open(): boolean {
    return !this.#closed;
  }

  /** Runs `listener` once the (client) socket is open. */
  onOpen(listener: () => void): void {
    this.#ws.once('open', listener);
  }

  /** The handshake is done: from now on silence longer than `silenceMsMax` cuts the socket. */
  established(silenceMsMax: number): void {
    assert(silenceMsMax > 0, 'silence bound is positive');
    if (this.#deadline !== null) clearTimeout(this.#deadline);
    this.#deadline = null;
    this.#silenceMsMax = silenceMsMax;
    this.lastHeardMs = monotonicMs();
    this.#armWatchdog();
  }

  /** Sends `make()` every `intervalMs` while the socket is open. */
  startHeartbeat(intervalMs: number, make: () => Frame<P>): void {
    assert(this.#ticker === null, 'one heartbeat ticker per socket');
    this.#ticker = setInterval(() => this.send(make()), intervalMs);
  }

  /** Encodes and sends one frame; returns the bytes handed to the socket (0 if closed). */
  send(frame: Frame<P>): number {
    if (this.#closed || this.#ws.readyState !== WebSocket.OPEN) return 0;
    const bytes = encodeFrame(frame);
    this.#ws.send(bytes);
    return bytes.length;
  }

  /** Sends bytes already encoded by `encodeFrame`. */
  sendEncoded(bytes: Buffer): boolean {
    if (this.#closed || this.#ws.readyState !== WebSocket.OPEN) return false;
    this.#ws.send(bytes);
    return true;
  }

  /** Logs the coded error, tells the other side why (refuse frame), and closes. */
  fail(err: LockError): void {
    if (this.#closed) return;
    const reason = refuseReasonOf(err) ?? err.code;
    this.#log.warn({ code: err.code, reason, details: err.details }, `closing connection: ${err.message}`);
    this.send({ t: 'refuse', reason, message: err.message.slice(0, 1024) });
    this.close(closeCodeOf(err), reason);
  }

  /** Graceful close; cut after a grace period if the other side does not answer. */
  close(code: number, reason: string): void {
    if (this.#closed) return;
    if (this.#ws.readyState === WebSocket.OPEN) {
      this.#ws.close(code, reason.slice(0, 120));
      setTimeout(() => this.#ws.terminate(), closeGraceMs).unref();
    } else {
      this.#ws.terminate();
    }
    this.#finish();
  }

  /** Cuts the TCP connection at once: for half-open sockets and shutdown. */
  terminate(why: string): void {
    if (this.#closed) return;
    this.#log.debug({ why }, 'cutting connection');
    this.#ws.terminate();
    this.#finish();
  }

  #onMessage(data: WebSocket.RawData, isBinary: boolean): void {
    if (this.#closed) return;
    this.lastHeardMs = monotonicMs();
    try {
      if (!isBinary) throw new LockError(ErrorCode.FrameInvalid, 'text frame: peers speak binary msgpack');
      this.onFrame(decodeFrame(toBuffer(data), this.#isPayload));
    } catch (err) {
      if (!(err instanceof LockError)) throw err;
      this.fail(err);
    }
  }

  #onError(err: Error & { code?: string }): void {
    // `ws` reports protocol violations (bad opcode, payload over maxPayload) here, then closes.
    const code = err.code === 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH' ? ErrorCode.FrameTooLarge : ErrorCode.FrameInvalid;
    const level = err.code !== undefined && err.code.startsWith('WS_ERR') ? 'warn' : 'debug';
    this.#log[level]({ code, cause: err.code ?? err.message }, `connection error: ${err.message}`);
    this.#finish();
  }

  #armWatchdog(): void {
    const dueMs = this.lastHeardMs + this.#silenceMsMax - monotonicMs();
    this.#watchdog = setTimeout(() => this.#checkSilence(), Math.max(1, Math.ceil(dueMs)));
  }

  #checkSilence(): void {
    if (this.#closed) return;
    const silentMs = monotonicMs() - this.lastHeardMs;
    if (silentMs < this.#silenceMsMax) {
      this.#armWatchdog();
      return;
    }
    this.#log.info({ silentMs: Math.round(silentMs) }, 'connection silent too long: presumed half-open, cutting it');
    this.terminate('silent');
  }

  #finish(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const timer of [this.#deadline, this.#watchdog]) if (timer !== null) clearTimeout(timer);
    if (this.#ticker !== null) clearInterval(this.#ticker);
    this.#deadline = this.#watchdog = this.#ticker = null;
    this.onClose();
  }
}

/** Exponential backoff between dial attempts, with jitter so peers do not dial in step. */
export class Backoff {
  readonly #minMs: number;
  readonly #maxMs: number;
  readonly #random: () => number;
  #attempt = 0;

  constructor(minMs: number = limits.backoffMsMin, maxMs: number = limits.backoffMsMax, random: () => number = Math.random) {
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

/** PEM material for wss, already read from the configured files. */
export interface TlsMaterial {
  readonly cert: Buffer;
  readonly key: Buffer;
  readonly ca?: Buffer;
}

/** A client socket to a peer, every limit explicit; with TLS material it presents our cert. */
export function openClientSocket(url: string, handshakeMsMax: number, tls: TlsMaterial | null): WebSocket {
  const base = { maxPayload: limits.frameBytesMax, perMessageDeflate: false, handshakeTimeout: handshakeMsMax, followRedirects: false };
  if (tls === null) return new WebSocket(url, base);
  const ca = tls.ca === undefined ? {} : { ca: tls.ca };
  return new WebSocket(url, { ...base, cert: tls.cert, key: tls.key, ...ca });
}
