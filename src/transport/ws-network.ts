/**
 * The production network: WebSocket (`ws`) sockets over TCP, or TLS when the cluster config
 * names certificates (mutual TLS with a CA). Every `ws` option is set explicitly: no
 * compression, no redirects, frames bounded by limits.frameBytesMax, handshake deadlines.
 */
import { readFileSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import type { Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import type { Logger } from 'pino';
import WebSocket, { WebSocketServer } from 'ws';
import { limits } from '../limits.js';
import type { Listener, Network, RawSocket, SocketHandlers } from './network.js';

/** PEM material for wss, already read from the configured files. */
export interface TlsMaterial {
  readonly cert: Buffer;
  readonly key: Buffer;
  readonly ca?: Buffer;
}

/** Reads the PEM files a cluster config names. */
export function readTlsMaterial(tls: { readonly cert: string; readonly key: string; readonly ca?: string | undefined }): TlsMaterial {
  const ca = tls.ca === undefined ? {} : { ca: readFileSync(tls.ca) };
  return { cert: readFileSync(tls.cert), key: readFileSync(tls.key), ...ca };
}

function toBuffer(data: WebSocket.RawData): Buffer {
  if (Buffer.isBuffer(data)) return data;
  if (Array.isArray(data)) return Buffer.concat(data);
  return Buffer.from(data);
}

/** One `ws` socket as a RawSocket. */
class WsSocket implements RawSocket {
  readonly #ws: WebSocket;

  constructor(ws: WebSocket) {
    this.#ws = ws;
  }

  get isOpen(): boolean {
    return this.#ws.readyState === WebSocket.OPEN;
  }

  handle(h: SocketHandlers): void {
    this.#ws.once('open', () => h.onOpen());
    this.#ws.on('message', (data, isBinary) => h.onMessage(toBuffer(data), isBinary));
    this.#ws.on('error', (err: Error & { code?: string }) => h.onError(err));
    this.#ws.on('close', () => h.onClose());
  }

  send(data: Uint8Array): void {
    this.#ws.send(data);
  }

  close(code: number, reason: string): void {
    if (this.#ws.readyState !== WebSocket.OPEN) {
      this.#ws.terminate();
      return;
    }
    this.#ws.close(code, reason.slice(0, 120));
    setTimeout(() => this.#ws.terminate(), limits.wsCloseGraceMs).unref();
  }

  terminate(): void {
    this.#ws.terminate();
  }
}

/** WebSocket listening and dialing, with TLS when material is given. */
export class WsNetwork implements Network {
  readonly #tls: TlsMaterial | null;
  readonly #log: Logger;

  constructor(opts: { tls: TlsMaterial | null; logger: Logger }) {
    this.#tls = opts.tls;
    this.#log = opts.logger;
  }

  async listen(host: string, port: number): Promise<Listener> {
    const server = createServer(this.#tls);
    const wss = new WebSocketServer({ server, maxPayload: limits.frameBytesMax, perMessageDeflate: false, clientTracking: false });
    let onConnection: ((sock: RawSocket, remote: string) => void) | null = null;
    wss.on('connection', (ws, req) => {
      if (onConnection === null) ws.terminate();
      else onConnection(new WsSocket(ws), req.socket.remoteAddress ?? '?');
    });
    wss.on('error', (err) => this.#log.error({ err }, 'listener error'));
    // Every TCP connection, upgraded or not: closing the listener destroys what is left, or
    // server.close() would wait for ever on a socket caught between its upgrade and a mesh.
    const connections = new Set<Socket>();
    server.on('connection', (sock: Socket) => {
      connections.add(sock);
      sock.once('close', () => connections.delete(sock));
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen({ host, port }, () => {
        server.off('error', reject);
        resolve();
      });
    });
    return {
      port: (server.address() as AddressInfo).port,
      accept: (fn) => {
        onConnection = fn;
      },
      close: async () => {
        wss.close();
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeAllConnections();
        for (const sock of connections) sock.destroy();
        await closed;
      },
    };
  }

  dial(url: string): RawSocket {
    const base = { maxPayload: limits.frameBytesMax, perMessageDeflate: false, handshakeTimeout: limits.handshakeMsMax, followRedirects: false };
    const tls = this.#tls;
    if (tls === null) return new WsSocket(new WebSocket(url, base));
    const ca = tls.ca === undefined ? {} : { ca: tls.ca };
    return new WsSocket(new WebSocket(url, { ...base, cert: tls.cert, key: tls.key, ...ca }));
  }
}

function createServer(tls: TlsMaterial | null): Server {
  const server =
    tls === null
      ? createHttpServer()
      : createHttpsServer({ cert: tls.cert, key: tls.key, ...(tls.ca === undefined ? {} : { ca: tls.ca, requestCert: true, rejectUnauthorized: true }) });
  server.headersTimeout = limits.handshakeMsMax;
  server.requestTimeout = limits.handshakeMsMax;
  server.on('request', (_req, res) => res.writeHead(426, { connection: 'close' }).end());
  server.on('clientError', (_err, socket) => socket.destroy());
  return server;
}
