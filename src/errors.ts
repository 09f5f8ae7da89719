/**
 * Operating errors: one class, one code enum, one place that maps codes to HTTP status
 * (docs/style.md convention 7). Programmer errors are assertions (assert.ts), never these.
 */
export const ErrorCode = {
  ConfigInvalid: 'ERR_CONFIG_INVALID',
  ConfigMismatch: 'ERR_CONFIG_MISMATCH',
  FrameInvalid: 'ERR_FRAME_INVALID',
  FrameTooLarge: 'ERR_FRAME_TOO_LARGE',
  HandshakeRefused: 'ERR_HANDSHAKE_REFUSED',
  LinkGap: 'ERR_LINK_GAP',
  LinkBufferFull: 'ERR_LINK_BUFFER_FULL',
  BadRequest: 'ERR_BAD_REQUEST',
  NotFound: 'ERR_NOT_FOUND',
  NotHeld: 'ERR_NOT_HELD',
  Timeout: 'ERR_TIMEOUT',
  Unreachable: 'ERR_UNREACHABLE',
  LimitExceeded: 'ERR_LIMIT_EXCEEDED',
  ShuttingDown: 'ERR_SHUTTING_DOWN',
  NotReady: 'ERR_NOT_READY',
  PeerError: 'ERR_PEER',
  Evicted: 'ERR_EVICTED',
  LeaseLost: 'ERR_LEASE_LOST',
  Superseded: 'ERR_SUPERSEDED',
  Removed: 'ERR_REMOVED',
  ChangeRefused: 'ERR_CHANGE_REFUSED',
  Storage: 'ERR_STORAGE',
  UnsupportedMediaType: 'ERR_UNSUPPORTED_MEDIA_TYPE',
  BodyTooLarge: 'ERR_BODY_TOO_LARGE',
  HostRefused: 'ERR_HOST_REFUSED',
  OriginRefused: 'ERR_ORIGIN_REFUSED',
  Unauthorized: 'ERR_UNAUTHORIZED',
  AdminRequired: 'ERR_ADMIN_REQUIRED',
  WatchBehind: 'ERR_WATCH_BEHIND',
  ClockAhead: 'ERR_CLOCK_AHEAD',
} as const;

/** One of the stable error codes listed in the README. */
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

/** The only error class for operating errors: a stable `code` and a sentence. */
export class LockError extends Error {
  override readonly name = 'LockError';
  readonly code: ErrorCode;
  readonly details: Readonly<Record<string, unknown>>;

  constructor(code: ErrorCode, message: string, details: Readonly<Record<string, unknown>> = {}) {
    super(message);
    this.code = code;
    this.details = details;
  }
}

/** HTTP status for each code; the HTTP layer and the client both read this one table. */
export const httpStatusOf: Readonly<Record<ErrorCode, number>> = {
  ERR_CONFIG_INVALID: 500,
  ERR_FRAME_INVALID: 400,
  ERR_FRAME_TOO_LARGE: 413,
  ERR_HANDSHAKE_REFUSED: 403,
  ERR_LINK_GAP: 500,
  ERR_LINK_BUFFER_FULL: 503,
  ERR_BAD_REQUEST: 400,
  ERR_NOT_FOUND: 404,
  ERR_NOT_HELD: 404,
  ERR_TIMEOUT: 423,
  ERR_UNREACHABLE: 503,
  ERR_LIMIT_EXCEEDED: 429,
  ERR_SHUTTING_DOWN: 503,
  ERR_NOT_READY: 503,
  ERR_CONFIG_MISMATCH: 503,
  ERR_PEER: 502,
  ERR_EVICTED: 503,
  ERR_LEASE_LOST: 503,
  ERR_SUPERSEDED: 503,
  ERR_REMOVED: 503,
  // 409 Conflict: the change does not apply to the agreed view as it is, or the cluster cannot take it now.
  ERR_CHANGE_REFUSED: 409,
  ERR_STORAGE: 503,
  ERR_UNSUPPORTED_MEDIA_TYPE: 415,
  ERR_BODY_TOO_LARGE: 413,
  // 421 Misdirected Request: this server does not serve the name the client used.
  ERR_HOST_REFUSED: 421,
  ERR_ORIGIN_REFUSED: 403,
  ERR_UNAUTHORIZED: 401,
  ERR_ADMIN_REQUIRED: 403,
  // Sent as the last event of a watch stream, never as a status: the stream had started.
  ERR_WATCH_BEHIND: 503,
  // Logged when a peer's clock is refused (a peer-link error), never an answer to a client.
  ERR_CLOCK_AHEAD: 502,
};

/** True when `value` is a LockError with the given code. */
export function isLockError(value: unknown, code?: ErrorCode): value is LockError {
  return value instanceof LockError && (code === undefined || value.code === code);
}
