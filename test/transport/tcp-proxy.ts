/**
 * The TCP fault proxy moved to src/tools/tcp-proxy.ts (the fault tests and their long-run
 * script use it too); this re-export keeps the transport tests' imports working, one copy.
 */
export { TcpProxy } from '../../src/tools/tcp-proxy.js';
export type { ProxyDirection, ProxyState } from '../../src/tools/tcp-proxy.js';
