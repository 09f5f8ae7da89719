/**
 * What every benchmarked lock service offers the scenarios: sessions that acquire and
 * release named exclusive locks. One session is one client (one worker).
 */

/** The three systems of the comparison. */
export type SystemName = 'lamport-lock' | 'etcd' | 'redis';

/** The systems in the order the tables show them. */
export const systemNames: readonly SystemName[] = ['lamport-lock', 'etcd', 'redis'];

/** One granted lock, as the client saw it. */
export interface Grant {
  readonly lock: string;
  /** What release needs: the hold id, the etcd lock key, or the Redis value. */
  readonly handle: string;
  /** Fencing token, when the system gives one (lamport-lock token, etcd key revision). */
  readonly token: bigint | null;
  /** Attempts that found the lock taken before this one succeeded (polling clients only). */
  readonly failedPolls: number;
}

/** One client of a lock service. */
export interface LockSession {
  /** Waits up to `timeoutMs` for the lock; rejects when not granted in time. */
  acquire(lock: string, timeoutMs: number): Promise<Grant>;
  release(grant: Grant): Promise<void>;
  close(): Promise<void>;
}

/** A running lock service the benchmark can open clients on. */
export interface LockSystem {
  readonly name: SystemName;
  /** How clients talk to it, for the report ("etcd v3 Lock RPC via grpc-gateway ..."). */
  readonly clientNote: string;
  /** Opens client number `worker`; clients are spread over the members by this number. */
  openSession(worker: number): Promise<LockSession>;
  /** Stops the service and everything it started. */
  stop(): Promise<void>;
}
