/**
 * Who may use the local HTTP API, decided for every request before any route runs
 * (issue 14). A web page must not be able to drive or read the API: a page of another
 * origin is refused by its `Origin` header and its fetch metadata, a page that reaches the
 * peer through a rebound DNS name is refused by its `Host` header. Over a unix socket no
 * browser can reach the peer, and the socket file's mode and group say who may. A token,
 * when configured, is required on every request but the two health probes; administrative
 * operations need the admin token or the unix socket, never the client token alone.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { ErrorCode, LockError } from '../errors.js';
import { headerOf } from './plain.js';
import type { AdmissionRequest } from './plain.js';

/** What a request may do once admitted. */
export type Access = 'client' | 'admin';

/** How a peer's API is reached and guarded. */
export interface AccessOptions {
  /** True when the API listens on a unix domain socket. */
  readonly unix: boolean;
  /** The host the API listens on (TCP): a client may name it in `Host`, besides loopback names. */
  readonly listenHost: string | null;
  /** More names a client may use in `Host` (`name` on the served port, or `name:port`): a published port, a compose service name. */
  readonly allowHosts: readonly string[];
  /** The client token, when one is required. */
  readonly token: string | null;
  /** The admin token, when one is configured. */
  readonly adminToken: string | null;
}

/** Paths any admitted caller may read without a token: a probe learns one bit. */
const probes = new Set(['/healthz', '/readyz']);

/** Fetch metadata values of a request the peer's own pages (or no browser at all) make. */
const ownSites = new Set(['same-origin', 'none']);

/** The streams (server-sent events): a page of another site must not open one, even unread. */
const streamPath = /^\/v1\/(?:events|watch|locks\/[^/]+\/watch|elections\/[^/]+\/observe)$/;

/**
 * Whether a request from another site is a user opening a page in a window (a link to the
 * dashboard): a GET navigation to a document, not to a stream. A frame, an object or an
 * embed (`Sec-Fetch-Dest`) of another site's page is refused: that page loads it unseen,
 * as often as it likes.
 */
function pageOpening(req: AdmissionRequest, path: string): boolean {
  const dest = headerOf(req.headers, 'sec-fetch-dest');
  return req.method === 'GET' && headerOf(req.headers, 'sec-fetch-mode') === 'navigate' && (dest === undefined || dest === 'document') && !streamPath.test(path);
}

const wildcardHosts = new Set(['', '0.0.0.0', '::', '[::]']);

/** True for the names and addresses of this host's loopback interface. */
export function isLoopbackHost(host: string): boolean {
  const h = host.toLowerCase().replace(/^\[|\]$/g, '');
  return h === 'localhost' || h === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

/** Constant-time comparison: equal-length digests, so neither length nor content leaks by timing. */
function sameSecret(given: string, expected: string): boolean {
  return timingSafeEqual(digest(given), digest(expected));
}

/** The credential of an `Authorization` header: a bearer token, or the password of Basic (a browser's prompt). */
function credentialOf(header: string | undefined): string | null {
  if (header === undefined) return null;
  const bearer = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (bearer !== null) return bearer[1] ?? null;
  const basic = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header);
  if (basic === null) return null;
  const text = Buffer.from(basic[1] ?? '', 'base64').toString('utf8');
  const colon = text.indexOf(':');
  return colon < 0 ? null : text.slice(colon + 1);
}

/** Splits a `Host` header into a lowercase name (IPv6 kept in brackets) and a port (80 when absent). */
function splitHost(header: string): { name: string; port: number } | null {
  const m = /^(\[[0-9a-f:.]+\]|[a-z0-9._-]+)(?::(\d{1,5}))?$/.exec(header.toLowerCase());
  if (m === null) return null;
  return { name: m[1] ?? '', port: m[2] === undefined ? 80 : Number(m[2]) };
}

function bracketed(host: string): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
}

/** The admission check of every request; see the file comment. */
export class AccessPolicy {
  readonly #opts: AccessOptions;
  readonly #names: ReadonlySet<string>;
  readonly #namesWithPort: ReadonlySet<string>;

  constructor(opts: AccessOptions) {
    this.#opts = opts;
    const names = new Set<string>();
    const withPort = new Set<string>();
    if (opts.listenHost !== null && !wildcardHosts.has(opts.listenHost)) names.add(bracketed(opts.listenHost.toLowerCase()));
    for (const entry of opts.allowHosts) {
      const parsed = splitHost(entry);
      if (parsed === null) throw new LockError(ErrorCode.ConfigInvalid, `allowed host ${JSON.stringify(entry)} must be a name or address, optionally with :port`);
      if (/:\d+$/.test(entry)) withPort.add(`${parsed.name}:${parsed.port}`);
      else names.add(parsed.name);
    }
    this.#names = names;
    this.#namesWithPort = withPort;
  }

  /** True when a token guards the API (the peer may then listen beyond loopback). */
  get tokenRequired(): boolean {
    return this.#opts.token !== null;
  }

  /** Admits `req` or throws the coded refusal (421, 403, 401); returns what it may do. */
  admit(req: AdmissionRequest, path: string): Access {
    if (!this.#opts.unix) this.#checkBrowser(req, path);
    const credential = credentialOf(headerOf(req.headers, 'authorization'));
    const admin = this.#opts.adminToken !== null && credential !== null && sameSecret(credential, this.#opts.adminToken);
    if (this.#opts.token !== null && !admin && !probes.has(path)) {
      if (credential === null) throw new LockError(ErrorCode.Unauthorized, 'this peer requires a token: send "Authorization: Bearer <token>" (lamport-lock and the client read it from --token-file or LAMPORT_TOKEN_FILE)');
      if (!sameSecret(credential, this.#opts.token)) throw new LockError(ErrorCode.Unauthorized, 'the token sent does not match this peer\'s token');
    }
    return admin || this.#opts.unix ? 'admin' : 'client';
  }

  /** The last `Host` header admitted, and the local port it came to: a keep-alive client sends the same one. */
  #lastHost: { header: string; port: number } | null = null;

  /** Whether `header` names this peer, reached on local `port`. */
  #named(header: string, port: number): boolean {
    const last = this.#lastHost;
    if (last !== null && last.header === header && last.port === port) return true;
    const host = splitHost(header);
    const named = host !== null && ((host.port === port && (isLoopbackHost(host.name) || this.#names.has(host.name))) || this.#namesWithPort.has(`${host.name}:${host.port}`));
    if (named) this.#lastHost = { header, port };
    return named;
  }

  /** Host names only this peer's addresses; Origin and fetch metadata say the request is not a foreign page's. */
  #checkBrowser(req: AdmissionRequest, path: string): void {
    const header = headerOf(req.headers, 'host') ?? '';
    const port = req.localPort;
    if (!this.#named(header, port)) {
      throw new LockError(ErrorCode.HostRefused, `Host ${JSON.stringify(header)} is not a name this peer serves (a loopback name or address on port ${port}, or one given with --http-allow-host); a DNS name rebound to this host is refused`);
    }
    const origin = headerOf(req.headers, 'origin');
    if (origin !== undefined && origin.toLowerCase() !== `http://${header.toLowerCase()}`) {
      throw new LockError(ErrorCode.OriginRefused, `requests from the web origin ${JSON.stringify(origin)} are refused: only the peer's own pages (http://${header}) may call its API`);
    }
    const site = headerOf(req.headers, 'sec-fetch-site');
    if (site === undefined || ownSites.has(site)) return;
    if (!pageOpening(req, path)) {
      throw new LockError(ErrorCode.OriginRefused, `a ${site} request of a web page is refused: only the peer's own pages may call its API, and another site may only open a page in a window, not a stream or a frame`);
    }
  }
}

/** Guards an administrative operation: the admin token or the unix socket, never the client token alone. */
export function requireAdmin(access: Access, what: string): void {
  if (access !== 'admin') {
    throw new LockError(ErrorCode.AdminRequired, `${what} is an administrative operation: send the admin token (--admin-token-file) or use the peer's unix socket`);
  }
}
