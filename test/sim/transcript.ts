/**
 * A readable record of a run: the runtimes' own log lines and the simulator's actions
 * (faults, starts, crashes), each at its virtual time. Recording costs string building, so runs record only when asked; a
 * failing seed is simply run again with the transcript on, which the determinism allows.
 */
import { pino } from 'pino';
import type { Logger } from '../../src/log.js';
import { silentLogger } from '../../src/log.js';

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

/**
 * The runtime's own log, into the transcript: one line per log record, at the virtual time
 * it was written, as `component: message {fields}`. Silent (and free) when not recording.
 */
export function transcriptLogger(transcript: Transcript, time: { nowMs: number }, peer: number, procId: number): Logger {
  if (!transcript.enabled) return silentLogger();
  const destination = {
    write(line: string): void {
      const { level: _level, time: _time, msg, component, ...rest } = JSON.parse(line) as Record<string, unknown>;
      const fields = Object.keys(rest).length === 0 ? '' : ` ${JSON.stringify(rest)}`;
      transcript.add(time.nowMs, peer, `#${procId} ${String(component ?? '')}: ${String(msg)}${fields}`);
    },
  };
  return pino({ level: 'debug', base: null, timestamp: false }, destination);
}
