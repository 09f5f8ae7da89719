/**
 * A change of the agreed view asked for by an operator (`lamport-lock member ...`, the HTTP
 * API's member endpoints): docs/reconfiguration.md, rules P1 and P2. The runtime takes the view
 * lock like any lock, proposes the change on top of the view it holds when granted, waits until
 * the view is chosen and every member passed it back, then releases the lock.
 */
import type { AgreedView, ViewChange } from '../core/view.js';
import { applyChange } from '../core/view.js';
import { ErrorCode, LockError } from '../errors.js';

/** How long a change may take, and who may give up on it. */
export interface ChangeOptions {
  /** From the call to the view chosen and passed back by every member; ERR_TIMEOUT after it. */
  readonly timeoutMs: number;
  readonly signal?: AbortSignal | undefined;
}

/** What the operator's change is checked against before anything is sent: the view as this peer knows it. */
export function checkChange(view: AgreedView, change: ViewChange): AgreedView {
  const next = applyChange(view, change);
  if (typeof next === 'string') throw new LockError(ErrorCode.ChangeRefused, `${next} (the view at epoch ${view.epoch})`, { epoch: view.epoch });
  return next;
}
