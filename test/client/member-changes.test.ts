/**
 * The typed client's changes of the members (addMember, promoteMember, removeMember,
 * retireMember, raiseLevel) through the real HTTP API: over a stub runtime, each reaches the
 * runtime as the one change it names, with its timeout, and the view made comes back typed;
 * on a real peer, its refusals come back as LockErrors with their codes and sentences.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { LockClient, LockError } from '../../src/client/lock-client.js';
import type { View } from '../../src/client/lock-client.js';
import type { ClusterConfig } from '../../src/config.js';
import type { AgreedView, ViewChange } from '../../src/core/view.js';
import { AccessPolicy } from '../../src/http/access.js';
import { HttpApi } from '../../src/http/api.js';
import { silentLogger } from '../../src/log.js';
import { encodeJoinTicket } from '../../src/runtime/view-store.js';
import type { LockService } from '../../src/runtime/peer.js';
import type { ChangeOptions } from '../../src/runtime/view-change.js';
import type { PeerServer } from '../../src/server.js';
import { startPeerServer } from '../../src/server.js';
import { waitFor } from '../support/wait.js';

const adminToken = 'admin-token-for-the-client-changes';

async function refusal(p: Promise<unknown>): Promise<LockError> {
  const err = await p.then(() => null, (e: unknown) => e);
  if (!(err instanceof LockError)) throw new Error(`expected a LockError, got ${String(err)}`);
  return err;
}

describe('the client\'s changes, over a stub runtime', () => {
  const made: AgreedView = {
    epoch: 2, level: 9, nextOrdinal: 2,
    members: [{ id: 'a', ordinal: 0, ws: 'ws://h:1', http: 'h:2', state: 'voter' }, { id: 'd', ordinal: 1, ws: 'ws://h:3', http: 'h:4', state: 'learner' }],
  };
  const asked: Array<{ change: ViewChange; opts: ChangeOptions }> = [];
  let hang = false;
  const service: Partial<LockService> = {
    changeView: (change, opts) => {
      asked.push({ change, opts });
      return hang ? new Promise<AgreedView>(() => undefined) : Promise.resolve(made);
    },
    joinTicket: () => ({ cluster: 'stub', founders: ['a'], view: made }),
  };
  let api: HttpApi;
  let admin: LockClient;
  beforeAll(async () => {
    api = new HttpApi(service as LockService, silentLogger(), new AccessPolicy({ unix: false, listenHost: null, allowHosts: [], token: null, adminToken }));
    const bound: AddressInfo = await api.listen('127.0.0.1', 0);
    admin = new LockClient({ peer: `http://127.0.0.1:${bound.port}`, token: adminToken });
  });
  afterAll(async () => {
    admin.close();
    api.closeAll();
    await api.close();
  });
  beforeEach(() => {
    asked.length = 0;
    hang = false;
  });

  it('sends each change with its timeout (default: the peer\'s 30 s) and reads the view made', async () => {
    const view: View = {
      epoch: 2, level: 9, nextOrdinal: 2,
      members: [{ id: 'a', ordinal: 0, state: 'voter', ws: 'ws://h:1', http: 'h:2' }, { id: 'd', ordinal: 1, state: 'learner', ws: 'ws://h:3', http: 'h:4' }],
    };
    const added = await admin.addMember({ id: 'd', ws: 'ws://h:3', http: 'h:4' }, { timeoutMs: 5000 });
    // An add answers the join ticket of the host it added, too.
    expect(added).toEqual({ ...view, join: encodeJoinTicket({ cluster: 'stub', founders: ['a'], view: made }) });
    expect(await admin.promoteMember('d')).toEqual(view);
    expect(await admin.removeMember('c', { timeoutMs: 7000 })).toEqual(view);
    expect(await admin.retireMember('c')).toEqual(view);
    expect(await admin.raiseLevel(10, { timeoutMs: 1 })).toEqual(view);
    expect(asked.map((a) => [a.change, a.opts.timeoutMs])).toEqual([
      [{ op: 'add', id: 'd', ws: 'ws://h:3', http: 'h:4' }, 5000],
      [{ op: 'promote', id: 'd' }, 30_000],
      [{ op: 'remove', id: 'c' }, 7000],
      [{ op: 'retire', id: 'c' }, 30_000],
      [{ op: 'level', level: 10 }, 1],
    ]);
  });

  it('gives up a change\'s wait on its signal: ERR_TIMEOUT with reason aborted, and the peer\'s wait is given up too', async () => {
    hang = true;
    const stop = new AbortController();
    const pending = refusal(admin.removeMember('c', { signal: stop.signal }));
    await waitFor('the change asked', () => asked.length === 1);
    stop.abort();
    expect(await pending).toMatchObject({ code: 'ERR_TIMEOUT', message: 'the change of the members aborted by the caller', details: { reason: 'aborted' } });
    await waitFor('the peer\'s signal aborted', () => asked[0]?.opts.signal?.aborted === true, 5000);
  });

  it('refuses an empty member id before sending anything', async () => {
    expect(await refusal(admin.promoteMember(''))).toMatchObject({ code: 'ERR_BAD_REQUEST' });
    expect(asked).toEqual([]);
  });
});

describe('the client\'s changes, on a real peer', () => {
  const dir = mkdtempSync(join(tmpdir(), 'lamport-client-changes-'));
  writeFileSync(join(dir, 'admin'), `${adminToken}\n`, { mode: 0o600 });
  const config: ClusterConfig = {
    cluster: 'client-changes', secret: 'test-secret', peers: [{ id: 'a', ws: 'ws://127.0.0.1:0', http: '127.0.0.1:0' }],
    heartbeatMs: 1000, leaseMs: 5000, evictMs: 15000, tls: undefined,
  };
  let server: PeerServer;
  beforeAll(async () => {
    server = await startPeerServer({ config, id: 'a', logger: silentLogger(), access: { adminTokenFile: join(dir, 'admin') } });
  });
  afterAll(async () => {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('rejects with ERR_ADMIN_REQUIRED without the admin token, and with ERR_CHANGE_REFUSED and its sentence with it', async () => {
    const plain = new LockClient({ peer: server.httpUrl });
    const admin = new LockClient({ peer: server.httpUrl, token: adminToken });
    try {
      expect(await refusal(plain.removeMember('x'))).toMatchObject({ code: 'ERR_ADMIN_REQUIRED', details: { status: 403 } });
      expect(await refusal(admin.addMember({ id: 'a', ws: 'ws://127.0.0.1:1', http: '127.0.0.1:2' })))
        .toMatchObject({ code: 'ERR_CHANGE_REFUSED', message: 'a is a member already (the view at epoch 0)', details: { status: 409, epoch: 0 } });
      expect(await refusal(admin.retireMember('x'))).toMatchObject({ code: 'ERR_CHANGE_REFUSED', message: 'x is not leaving (the view at epoch 0)' });
      expect(await refusal(admin.addMember({ id: 'd', ws: 'http://h:1', http: 'h:2' }))).toMatchObject({ code: 'ERR_BAD_REQUEST', details: { status: 400 } });
    } finally {
      plain.close();
      admin.close();
    }
  });
});
