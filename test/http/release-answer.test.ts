/**
 * The answer to a release that leaves others waiting leaves after the frames that tell the
 * other peers (issue 15, a hot lock's handoffs): the mesh frames its queues in a
 * `setImmediate` queued while the release steps the core, and the answer is written in one
 * queued after it. A release nobody waits behind is answered at once. This stub runtime
 * queues its "frames" as the mesh does and says whether others wait.
 */
import { ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { HttpApi } from '../../src/http/api.js';
import { silentLogger } from '../../src/log.js';
import type { PeerRuntime } from '../../src/runtime/peer.js';
import { post } from './post.js';

let api: HttpApi | null = null;
afterEach(async () => {
  vi.restoreAllMocks();
  const a = api;
  api = null;
  if (a !== null) {
    a.closeAll();
    await a.close();
  }
});

/** A runtime whose release queues its frames for the end of the turn and reports `othersWait`. */
function releasing(othersWait: boolean, order: string[]): PeerRuntime {
  const stub = {
    release(): boolean {
      setImmediate(() => order.push('frames'));
      return othersWait;
    },
  };
  return stub as unknown as PeerRuntime;
}

describe('the answer to a release', () => {
  it.each([
    [true, '/v1/locks/x/release', ['frames', 'answer']],
    [true, '/v1/release', ['frames', 'answer']],
    [false, '/v1/locks/x/release', ['answer', 'frames']],
  ] as const)('with others waiting %s (%s): %j', async (othersWait, path, expected) => {
    const order: string[] = [];
    const writeHead = ServerResponse.prototype.writeHead;
    vi.spyOn(ServerResponse.prototype, 'writeHead').mockImplementation(function (this: ServerResponse, ...args: Parameters<typeof writeHead>) {
      order.push('answer');
      return writeHead.apply(this, args);
    });
    api = new HttpApi(releasing(othersWait, order), silentLogger());
    const bound: AddressInfo = await api.listen('127.0.0.1', 0);
    const res = await post(bound.port, path, { id: 'h1' });
    expect(res).toEqual({ status: 200, text: JSON.stringify({ released: true }) });
    expect(order).toEqual(expected);
  });
});
