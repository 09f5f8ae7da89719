/**
 * A peer that waits for a configured peer that never came (issue 37, point 5): its 503 names
 * only the peer it waits for, not the peers that answer it. Real peer processes: a, b and c
 * restarted together, none of which meets d again.
 */
import { describe, expect, it } from 'vitest';
import { waitFor } from '../support/wait.js';
import { acquire, useTestCluster } from './helpers.js';

const cluster = useTestCluster({ peers: 4 });

describe('a request that waits for a peer that never started', () => {
  it('names that peer alone in its 503 ERR_UNREACHABLE', async () => {
    const c = cluster();
    for (const id of ['a', 'b', 'c', 'd']) await c.stopPeer(id);
    for (const id of ['a', 'b', 'c']) c.startPeer(id);
    let last: unknown = null;
    // Once b and c have let the new a in, a waits for d alone.
    await waitFor('a 503 naming d alone', async () => {
      const answer = await acquire(c.url('a'), 'never-started', { timeout_ms: 300 }).catch(() => null);
      last = answer?.body['unreachable_peers'];
      return answer?.status === 503 && JSON.stringify(last) === '["d"]';
    }, 20_000, 100).catch((err: unknown) => {
      throw new Error(`${String(err)}; last unreachable_peers: ${JSON.stringify(last)}`);
    });
    const answer = await acquire(c.url('a'), 'never-started', { timeout_ms: 300 });
    expect(answer.body['error']).toBe('ERR_UNREACHABLE');
    expect(answer.body['message']).toBe('not decidable in time: no answer from peer(s) d');
  }, 60_000);
});
