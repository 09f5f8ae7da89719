/**
 * A TCP fault proxy for transport tests (node:net). It forwards 127.0.0.1:port to a target
 * set later (so meshes with port 0 can be wired through it), and the test drives faults:
 * cut every connection (optionally in the middle of the next chunk, so mid-frame), stall
 * (stop forwarding without closing: a half-open path), and resume.
 */
import { createConnection, createServer } from 'node:net';
import type { AddressInfo, Server, Socket } from 'node:net';

interface Pair {
  readonly client: Socket;
  readonly upstream: Socket;
}

/** One listening proxy in front of one target port. */
export class TcpProxy {
  /** Target port; connections arriving before it is set are cut. */
  target = 0;
  /** Connections cut by `killAll` so far (pairs). */
  kills = 0;
  /** Kills that cut a chunk in half. */
  midChunkKills = 0;
  /** Kill events that cut at least one connection (a mid-chunk kill counts once). */
  killEvents = 0;

  readonly #server: Server;
  readonly #pairs = new Set<Pair>();
  #stalled = false;
  #cutNextChunk = false;

  private constructor(server: Server) {
    this.#server = server;
    server.on('connection', (client) => this.#onConnection(client));
  }

  /** A proxy listening on 127.0.0.1 with a free port. */
  static async start(): Promise<TcpProxy> {
    const server = createServer({ noDelay: true });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
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
    this.#stalled = true;
    for (const pair of this.#pairs) {
      pair.client.pause();
      pair.upstream.pause();
    }
  }

  /** Forwards again. */
  resume(): void {
    this.#stalled = false;
    for (const pair of this.#pairs) {
      pair.client.resume();
      pair.upstream.resume();
    }
  }

  /** Cuts everything and stops listening. */
  async close(): Promise<void> {
    for (const pair of [...this.#pairs]) this.#destroy(pair);
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  #onConnection(client: Socket): void {
    if (this.target === 0) {
      client.destroy();
      return;
    }
    const upstream = createConnection({ host: '127.0.0.1', port: this.target, noDelay: true });
    const pair: Pair = { client, upstream };
    this.#pairs.add(pair);
    this.#forward(pair, client, upstream);
    this.#forward(pair, upstream, client);
    if (this.#stalled) {
      client.pause();
      upstream.pause();
    }
  }

  #forward(pair: Pair, from: Socket, to: Socket): void {
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
          if (!this.#stalled) from.resume();
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
