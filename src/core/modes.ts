/**
 * The mode rules of docs/design.md section 3, evaluated on one agreed order. A request is judged
 * against every request ahead of it in the queue, granted or not, so an exclusive request
 * is a barrier: it waits for all earlier requests and all later ones wait for it.
 */
import type { QueuedRequest } from './types.js';

/** What a scan has seen ahead of the current position in a queue. */
export interface Ahead {
  /** Requests ahead. */
  count: number;
  /** Requests ahead that are not shared. */
  nonShared: number;
  /** Requests ahead that are not semaphore requests. */
  nonSemaphore: number;
  /** Sum of the permits of the semaphore requests ahead. */
  permits: number;
}

/** The empty prefix: nothing ahead. */
export function emptyAhead(): Ahead {
  return { count: 0, nonShared: 0, nonSemaphore: 0, permits: 0 };
}

/** Adds one request to a prefix, in place. */
export function addAhead(ahead: Ahead, r: QueuedRequest): void {
  ahead.count += 1;
  if (r.mode !== 'shared') ahead.nonShared += 1;
  if (r.mode !== 'semaphore') ahead.nonSemaphore += 1;
  else ahead.permits += r.permits;
}

/**
 * The mode rule: may `r` be granted given what is ahead of it?
 * exclusive: nothing ahead. shared: only shared ahead. semaphore: only semaphore requests
 * ahead, and their permits plus r's are at most r's own limit (the canal-lock rule).
 */
export function admits(r: QueuedRequest, ahead: Ahead): boolean {
  switch (r.mode) {
    case 'exclusive':
      return ahead.count === 0;
    case 'shared':
      return ahead.nonShared === 0;
    case 'semaphore':
      return ahead.nonSemaphore === 0 && ahead.permits + r.permits <= r.limit;
  }
}

/**
 * True when nothing after this prefix can ever be admitted, so a scan may stop: an
 * exclusive request, or a shared and a semaphore request together, block every mode.
 */
export function blocksAll(ahead: Ahead): boolean {
  return ahead.nonShared > 0 && ahead.nonSemaphore > 0;
}
