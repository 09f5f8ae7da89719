/**
 * Fencing tokens end to end: why a lock alone is not enough, and how a resource makes it
 * safe. Starts a 3-peer cluster, then:
 *   1. client A takes the lock (token tA) and "pauses" (think: a long GC) past its TTL;
 *   2. the lock expires, client B takes it (token tB > tA) and writes with tB;
 *   3. A wakes up, still believing it holds the lock, and writes with tA.
 * The storage rejects A's write because tA is lower than the highest token it has seen.
 *
 * Run: npm run build && node dist/examples/fencing.js
 */
import { LockClient } from '../src/client/lock-client.js';
import { LocalCluster } from '../src/tools/local-cluster.js';

/** The resource side: remembers the highest token seen and refuses anything lower. */
export class FencedStore {
  #highest = -1n;
  #value = '';

  /** Writes `value` if `token` is not lower than any token seen; returns whether it did. */
  write(token: bigint, value: string): boolean {
    if (token < this.#highest) return false;
    this.#highest = token;
    this.#value = value;
    return true;
  }

  get value(): string {
    return this.#value;
  }
}

async function main(): Promise<void> {
  const cluster = await LocalCluster.start({ peers: 3, heartbeatMs: 100, leaseMs: 1000, evictMs: 3000 });
  try {
    const store = new FencedStore();
    const a = new LockClient({ peer: cluster.url('a') });
    const b = new LockClient({ peer: cluster.url('b') });
    const holdA = await a.acquire('invoice-42', { ttlMs: 300, owner: 'client-A' });
    console.log(`A holds invoice-42 with token ${holdA.token}; A now pauses for 1 s (its TTL is 300 ms)`);
    await new Promise((r) => setTimeout(r, 1000));
    const holdB = await b.acquire('invoice-42', { timeoutMs: 5000, owner: 'client-B' });
    console.log(`B holds invoice-42 with token ${holdB.token}`);
    console.log(`B writes with ${holdB.token}: ${store.write(holdB.token, 'written by B') ? 'accepted' : 'REJECTED'}`);
    console.log(`A wakes up and writes with ${holdA.token}: ${store.write(holdA.token, 'written by A') ? 'accepted' : 'rejected (stale token)'}`);
    await a.release('invoice-42', holdA.id).catch((err: Error) => console.log(`A's release: ${err.message}`));
    await b.release('invoice-42', holdB.id);
    console.log(`store holds: "${store.value}"`);
    a.close();
    b.close();
    if (store.value !== 'written by B') process.exitCode = 1;
  } finally {
    await cluster.stop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
