/**
 * Exit codes of `lamport-peer` (README "CLI", docs/operations.md). A supervisor
 * must tell a start that can never succeed (the config is wrong: restarting loops for
 * nothing) from one that may succeed in a moment (the port is still held by the previous
 * process): the systemd unit retries every code but `invalidConfig`.
 */
import { isLockError, ErrorCode } from './errors.js';

/** What each exit of `lamport-peer` means. */
export const peerExitCodes = {
  /** Stopped on SIGTERM or SIGINT after ending its local holds and sending the releases. */
  stopped: 0,
  /** Failed while running, or could not stop cleanly within the stop bound. */
  failed: 1,
  /** Refused to start: invalid config file or flags. Fix them; a restart cannot help. */
  invalidConfig: 2,
  /** Could not start for a reason that may pass (port in use, address not yet up): EX_TEMPFAIL. */
  startFailed: 75,
} as const;

/** The exit code for an error that stopped the peer from starting. */
export function startFailureExitCode(err: unknown): number {
  // A peer removed from the cluster is refused like a bad config: no restart can help.
  return isLockError(err, ErrorCode.ConfigInvalid) || isLockError(err, ErrorCode.Removed) ? peerExitCodes.invalidConfig : peerExitCodes.startFailed;
}
