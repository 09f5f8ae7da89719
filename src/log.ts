/**
 * Logging: pino JSON lines, every line tagged with `component` and `peer` (docs/style.md
 * convention 14). Pretty output when stderr is a terminal and pino-pretty is installed.
 */
import { pino } from 'pino';
import type { Logger } from 'pino';

export type { Logger } from 'pino';

/** Log levels accepted by --log-level. */
export const logLevels = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** The root logger of a peer process. */
export function createLogger(opts: { level: string; peer: string; pretty?: boolean }): Logger {
  const pretty = opts.pretty ?? process.stderr.isTTY === true;
  const base = { peer: opts.peer };
  if (pretty) {
    return pino({ level: opts.level, base, transport: { target: 'pino-pretty', options: { destination: 2, colorize: true } } });
  }
  return pino({ level: opts.level, base }, pino.destination({ dest: 2, sync: false }));
}

/** A logger that drops everything, for tests and library use. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
