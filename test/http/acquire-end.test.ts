/**
 * A connection-bound hold that ends in the turn of its grant is still told (issue 12,
 * defect 2): the HTTP layer registered its end listener after awaiting the grant, so an end
 * in the same turn found nobody to tell, and the client kept an open connection believing it
 * held the lock. Requests now take their callbacks when made; this stub runtime grants and
 * ends in one turn, as a lease found lapsed by a later frame of the same socket read does.
 */
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { HttpApi } from '../../src/http/api.js';
import { silentLogger } from '../../src/log.js';
import type { RequestCallbacks, RequestHandle } from '../../src/runtime/holds.js';
import type { PeerRuntime } from '../../src/runtime/peer.js';
import { post } from './post.js';

let api: HttpApi | null = null;
afterEach(async () => {
  const a = api;
  api = null;
  if (a !== null) {
    a.closeAll();
    await a.close();
  }
});

/** A runtime that grants every request and ends the hold (lease_lost) in the same turn. */
function grantAndEndAtOnce(): PeerRuntime {
  const stub = {
    request(lock: string, _opts: unknown, cb: RequestCallbacks): RequestHandle {
      const id = 'h1';
      cb.granted({ lock, locks: [{ lock, mode: 'exclusive' }], id, token: 1025n, mode: 'exclusive', peer: 'a', grantedAt: 1, expiresAt: null });
      cb.ended('lease_lost');
      return { id, clientGone: () => undefined };
    },
  };
  return stub as unknown as PeerRuntime;
}

describe('a connection-bound hold that ends in the turn of its grant', () => {
  it('gets the grant line, then the end line, and its connection closes', async () => {
    api = new HttpApi(grantAndEndAtOnce(), silentLogger());
    const bound: AddressInfo = await api.listen('127.0.0.1', 0);
    const res = await post(bound.port, '/v1/locks/x/acquire', { hold: 'connection', ttl_ms: 0 });
    expect(res.status).toBe(200);
    const lines = res.text.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines).toEqual([expect.objectContaining({ id: 'h1', token: '1025' }), { ended: 'lease_lost', id: 'h1' }]);
  });
});
