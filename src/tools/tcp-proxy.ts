/**
 * A TCP fault proxy (node:net), used by the transport tests and by the fault tests of
 * test/fault/. It forwards 127.0.0.1:port to a target set later (so meshes with port 0 can
 * be wired through it), and the test drives faults: cut every connection (optionally in
 * the middle of the next chunk, so mid-frame), stall (stop forwarding without closing: a
 * half-open path) in both directions or in one, block (cut everything and refuse new
 * connections: a clean partition), and resume.
 */
import { createConnection, createServer } from 'node:net';
import type { AddressInfo, Server, Socket } from 'node:net';

interface Pair {
  readonly client: Socket;
  readonly upstream: Socket;
}

/** A direction through the proxy: from the dialer to the target, or back. */
export type ProxyDirection = 'toTarget' | 'fromTarget';

/** What the proxy does with traffic right now. */
export type ProxyState = 'open' | 'stalled' | 'stalled-to-target' | 'stalled-from-target' | 'blocked';

/** One listening proxy in front of one target port. */
export class TcpProxy {
  /** Target port; connections arriving before it is set are cut. */
  target = 0;
  /** Connections cut by `killAll` (or `block`) so far (pairs). */
  kills = 0;
  /** Kills that cut a chunk in half. */
  midChunkKills = 0;
  /** Kill events that cut at least one connection (a mid-chunk kill counts once). */
  killEvents = 0;

  readonly #server: Server;
  readonly #pairs = new Set<Pair>();
  readonly #stalled: Record<ProxyDirection, boolean> = { toTarget: false, fromTarget: false };
  #blocked = false;
  #cutNextChunk = false;

  private constructor(server: Server) {
    this.#server = server;
    server.on('connection', (client) => this.#onConnection(client));
  }

  /** A proxy listening on 127.0.0.1 with a free port (or the given one). */
  static async start(port = 0): Promise<TcpProxy> {
    const server = createServer({ noDelay: true });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
    return new TcpProxy(server);
  }

  /** The proxy's own port: what meshes dial. */
  get port(): number {
    return (this.#server.address() as AddressInfo).port;
  }

  /** Live forwarded connections. */
  get connections(): number {
    return this.#pairs.size;
  }

  /** The current fault, for logs and fault-window bookkeeping. */
  get state(): ProxyState {
    if (this.#blocked) return 'blocked';
    if (this.#stalled.toTarget && this.#stalled.fromTarget) return 'stalled';
    if (this.#stalled.toTarget) return 'stalled-to-target';
    if (this.#stalled.fromTarget) return 'stalled-from-target';
    return 'open';
  }

  /** Cuts every connection now; returns how many. */
  killAll(): number {
    const n = this.#pairs.size;
    for (const pair of [...this.#pairs]) this.#destroy(pair);
    this.kills += n;
    if (n > 0) this.killEvents++;
    return n;
  }

  /** The next chunk forwarded (either way) is cut in half, then every connection is cut. */
  killMidChunk(): void {
    this.#cutNextChunk = true;
  }

  /** Stops forwarding in both directions without closing anything. */
  stall(): void {
    this.stallOneWay('toTarget');
    this.stallOneWay('fromTarget');
  }

  /**
   * Stops forwarding one direction without closing anything; the other direction keeps
   * flowing. Bytes are held back, never dropped, so the byte stream stays well-formed.
   */
  stallOneWay(direction: ProxyDirection): void {
    this.#stalled[direction] = true;
    for (const pair of this.#pairs) this.#source(pair, direction).pause();
  }

  /** Cuts every connection and refuses new ones until `resume`: a clean partition. */
  block(): void {
    this.#blocked = true;
    this.killAll();
  }

  /** Forwards again in both directions and accepts connections again. */
  resume(): void {
    this.#blocked = false;
    this.#stalled.toTarget = false;
    this.#stalled.fromTarget = false;
    for (const pair of this.#pairs) {
      pair.client.resume();
      pair.upstream.resume();
    }
  }

  /** Cuts everything and stops listening. */
  async close(): Promise<void> {
    for (const pair of [...this.#pairs]) this.#destroy(pair);
    // Also the half-closed ends of pairs cut mid-chunk, which left #pairs: server.close()
    // waits for every accepted connection (the transport fault test's afterEach timed out).
    for (const sock of [...this.#sockets]) sock.destroy();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  /** Every socket of every pair, until it closes. */
  readonly #sockets = new Set<Socket>();

  #track(sock: Socket): void {
    this.#sockets.add(sock);
    sock.once('close', () => this.#sockets.delete(sock));
  }

  #source(pair: Pair, direction: ProxyDirection): Socket {
    return direction === 'toTarget' ? pair.client : pair.upstream;
  }

  #onConnection(client: Socket): void {
    if (this.target === 0 || this.#blocked) {
      client.destroy();
      return;
    }
    const upstream = createConnection({ host: '127.0.0.1', port: this.target, noDelay: true });
    this.#track(client);
    this.#track(upstream);
    const pair: Pair = { client, upstream };
    this.#pairs.add(pair);
    this.#forward(pair, client, upstream, 'toTarget');
    this.#forward(pair, upstream, client, 'fromTarget');
    if (this.#stalled.toTarget) client.pause();
    if (this.#stalled.fromTarget) upstream.pause();
  }

  #forward(pair: Pair, from: Socket, to: Socket, direction: ProxyDirection): void {
    from.on('data', (chunk: Buffer) => {
      if (this.#cutNextChunk && chunk.length > 1) {
        // Half a chunk reaches the other side, then FIN: the frame it was part of is cut.
        this.#cutNextChunk = false;
        this.#pairs.delete(pair);
        from.destroy();
        to.end(chunk.subarray(0, chunk.length >> 1));
        this.midChunkKills++;
        this.kills++;
        if (this.killAll() === 0) this.killEvents++;
        return;
      }
      if (!to.write(chunk)) {
        from.pause();
        to.once('drain', () => {
          if (!this.#stalled[direction]) from.resume();
        });
      }
    });
    from.on('error', () => this.#destroy(pair));
    from.on('close', () => this.#destroy(pair));
  }

  #destroy(pair: Pair): void {
    if (!this.#pairs.delete(pair)) return;
    pair.client.destroy();
    pair.upstream.destroy();
  }
}
