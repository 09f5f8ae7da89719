/**
 * The level a peer runs at is the one its data dir records (src/cluster-memory.ts
 * `runningLevel`, src/server.ts): a binary that speaks a range starts on an older data dir at
 * that data dir's level, without --accept-config-change, and refuses a data dir whose level it
 * does not speak, with a sentence. Ranges are injected: this build speaks one level.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { useTempDirs } from '../support/temp-dirs.js';
import { clusterMemoryPath } from '../../src/cluster-memory.js';
import type { ClusterConfig } from '../../src/config.js';
import { ErrorCode, LockError } from '../../src/errors.js';
import { silentLogger } from '../../src/log.js';
import type { ProtocolLevels } from '../../src/transport/codec.js';
import type { JoinTicket } from '../../src/runtime/view-store.js';
import { loadViewRecord } from '../../src/runtime/view-store.js';
import { startPeerServer } from '../../src/server.js';
import { freePort } from '../../src/tools/local-cluster.js';
import { waitFor } from '../support/wait.js';

const config: ClusterConfig = {
  cluster: 'levels-test', secret: 'test-secret', peers: [{ id: 'a', ws: 'ws://127.0.0.1:0', http: '127.0.0.1:0' }],
  heartbeatMs: 1000, leaseMs: 5000, evictMs: 15000, tls: undefined,
};

const dataDir = useTempDirs('levels');

/** Starts a peer on `dir` with a binary that speaks `levels`, and stops it: the level it ran at. */
async function runOnce(dir: string, levels: ProtocolLevels, acceptConfigChange = false): Promise<number> {
  const server = await startPeerServer({ config, id: 'a', dataDir: dir, levels, acceptConfigChange, logger: silentLogger() });
  try {
    return server.runtime.inspect.cluster().shape.protocol;
  } finally {
    await server.stop();
  }
}

const recorded = (dir: string): unknown => (JSON.parse(readFileSync(clusterMemoryPath(dir), 'utf8')) as { shape: { protocol: unknown } }).shape.protocol;

/** The coded error a start throws, or null. */
async function refusal(dir: string, levels: ProtocolLevels, accept = false): Promise<LockError | null> {
  try {
    await runOnce(dir, levels, accept);
    return null;
  } catch (err) {
    if (err instanceof LockError) return err;
    throw err;
  }
}

describe('the protocol level of a data dir', () => {
  it('a new data dir, or none, runs at the newest level the binary speaks', async () => {
    const dir = dataDir();
    expect(await runOnce(dir, { oldest: 9, newest: 10 })).toBe(10);
    expect(recorded(dir)).toBe(10);
    const server = await startPeerServer({ config, id: 'a', levels: { oldest: 9, newest: 10 }, logger: silentLogger() });
    try {
      expect(server.runtime.inspect.cluster().shape.protocol).toBe(10);
    } finally {
      await server.stop();
    }
  });

  it('a binary that speaks a range starts on an older data dir at its level, with no --accept-config-change', async () => {
    const dir = dataDir();
    expect(await runOnce(dir, { oldest: 9, newest: 9 })).toBe(9);
    expect(await runOnce(dir, { oldest: 9, newest: 10 })).toBe(9);
    expect(recorded(dir)).toBe(9);
    // And back: the older binary still starts on it (downgrade, until the level is raised).
    expect(await runOnce(dir, { oldest: 9, newest: 9 })).toBe(9);
  });

  it('with every peer stopped, --accept-config-change raises an older data dir to the newest level the binary speaks, its agreed view with it', async () => {
    const dir = dataDir();
    expect(await runOnce(dir, { oldest: 9, newest: 9 })).toBe(9);
    expect(await runOnce(dir, { oldest: 9, newest: 10 }, true)).toBe(10);
    expect(recorded(dir)).toBe(10);
    expect(loadViewRecord(dir)?.chain.at(-1)?.level).toBe(10);
    // From then on the older binary is refused: the level was raised.
    expect((await refusal(dir, { oldest: 9, newest: 9 }))?.message).toContain('runs protocol level 10; this binary speaks levels 9 to 9');
  });

  it('a recovery from a lost majority starts the new cluster at the newest level, and refuses to run twice', async () => {
    const dir = dataDir();
    expect(await runOnce(dir, { oldest: 9, newest: 9 })).toBe(9);
    const recover = async (): Promise<number> => {
      const server = await startPeerServer({ config, id: 'a', dataDir: dir, levels: { oldest: 9, newest: 10 }, forceNewCluster: { clockFrom: [] }, logger: silentLogger() });
      try {
        return server.runtime.inspect.cluster().shape.protocol;
      } finally {
        await server.stop();
      }
    };
    expect(await recover()).toBe(10);
    expect(loadViewRecord(dir)?.chain.at(-1)).toMatchObject({ epoch: 1, level: 10, members: [{ id: 'a', state: 'voter' }] });
    // Left on a command line, the flag must not start yet another cluster.
    const again = await recover().then(() => null, (err: unknown) => err);
    expect(again).toMatchObject({ code: ErrorCode.ConfigInvalid, message: expect.stringContaining('this data dir started a new cluster already') as unknown });
    expect(await runOnce(dir, { oldest: 9, newest: 10 })).toBe(10);
  });

  it('a data dir at a level the binary does not speak refuses the start, saying what to do, even with --accept-config-change', async () => {
    const dir = dataDir();
    expect(await runOnce(dir, { oldest: 9, newest: 10 })).toBe(10);
    for (const accept of [false, true]) {
      const err = await refusal(dir, { oldest: 9, newest: 9 }, accept);
      expect(err?.code).toBe(ErrorCode.ConfigInvalid);
      expect(err?.message).toContain('this peer\'s data dir runs protocol level 10; this binary speaks levels 9 to 9. Run a binary that speaks level 10 on this host');
    }
    expect((await refusal(dir, { oldest: 11, newest: 12 }))?.message).toContain('runs protocol level 10; this binary speaks levels 11 to 12');
    expect(recorded(dir)).toBe(10);
  });

  it('a raise while the cluster runs: the view moves, the shape keeps the founding level, a host added later links, and no older binary starts on either data dir', async () => {
    const [wsA, wsD, httpA, httpD] = [await freePort(), await freePort(), await freePort(), await freePort()];
    const a = { id: 'a', ws: `ws://127.0.0.1:${wsA}`, http: `127.0.0.1:${httpA}` };
    const d = { id: 'd', ws: `ws://127.0.0.1:${wsD}`, http: `127.0.0.1:${httpD}` };
    const [dirA, dirD] = [dataDir(), dataDir()];
    const release = { oldest: 9, newest: 10 };
    const next = { oldest: 9, newest: 11 };
    const start = (id: string, dir: string, levels: ProtocolLevels, join?: JoinTicket): ReturnType<typeof startPeerServer> =>
      startPeerServer({ config: { ...config, peers: id === 'a' ? [a] : [a, d] }, id, dataDir: dir, levels, join, logger: silentLogger() });
    await (await start('a', dirA, release)).stop(); // Founded at 10 by this release.
    const serverA = await start('a', dirA, next);
    let serverD: Awaited<ReturnType<typeof startPeerServer>> | undefined;
    try {
      await waitFor('a ready', () => serverA.runtime.ready());
      const raised = await serverA.runtime.changeView({ op: 'level', level: 11 }, { timeoutMs: 10_000 });
      expect(raised.level).toBe(11);
      expect(serverA.runtime.inspect.cluster()).toMatchObject({ protocolLevel: 11, shape: { protocol: 10 } });
      await serverA.runtime.changeView({ op: 'add', id: 'd', ws: d.ws, http: d.http }, { timeoutMs: 10_000 });
      const ticket = serverA.runtime.joinTicket();
      expect(ticket).toMatchObject({ shapeLevel: 10, view: { level: 11 } });
      const old = await start('d', dataDir(), release, ticket).then(() => null, (err: unknown) => err);
      expect(old).toMatchObject({ code: ErrorCode.ConfigInvalid, message: expect.stringContaining('the cluster this host joins runs protocol level 11; this binary speaks levels 9 to 10') as unknown });
      serverD = await start('d', dirD, next, ticket);
      const joined = serverD;
      await waitFor('a and d linked', () => serverA.runtime.inspect.members().members.some((m) => m.id === 'd' && m.connected === true) &&
        joined.runtime.inspect.members().members.some((m) => m.id === 'a' && m.connected === true), 10_000);
      expect(serverD.runtime.inspect.cluster()).toMatchObject({ protocolLevel: 11, shape: { protocol: 10 }, fingerprint: serverA.runtime.inspect.cluster().fingerprint });
    } finally {
      await serverD?.stop();
      await serverA.stop();
    }
    for (const dir of [dirA, dirD]) {
      expect((await refusal(dir, release))?.message).toContain('this peer\'s data dir runs protocol level 11; this binary speaks levels 9 to 10');
    }
  });
});
