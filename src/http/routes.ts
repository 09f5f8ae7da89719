/**
 * Every route of the local HTTP API (docs/design.md section 6), by method and path template
 * as the OpenAPI description (openapi.ts) names them. The router of api.ts dispatches on this table alone, so
 * the spec can be checked against it (test/http/openapi.test.ts).
 */

/**
 * One route: a method and a path whose `{name}` (a lock or election name) or `{id}` (a member
 * id) is one percent-encoded path segment.
 */
export interface RouteSpec {
  readonly method: 'GET' | 'POST' | 'DELETE';
  readonly path: string;
}

/** The API's routes; the dashboard and /metrics are served beside them (`HttpApi.route`). */
export const apiRoutes = [
  { method: 'GET', path: '/healthz' },
  { method: 'GET', path: '/readyz' },
  { method: 'GET', path: '/v1/openapi.json' },
  { method: 'GET', path: '/v1/cluster' },
  { method: 'GET', path: '/v1/members' },
  // Changes of the agreed view (docs/reconfiguration.md), administrative: handler.ts `#change`.
  { method: 'POST', path: '/v1/members' },
  { method: 'DELETE', path: '/v1/members/{id}' },
  { method: 'POST', path: '/v1/members/{id}/promote' },
  { method: 'POST', path: '/v1/members/{id}/retire' },
  { method: 'POST', path: '/v1/cluster/level' },
  { method: 'GET', path: '/v1/locks' },
  { method: 'GET', path: '/v1/watch' },
  { method: 'POST', path: '/v1/acquire' },
  { method: 'POST', path: '/v1/release' },
  { method: 'POST', path: '/v1/refresh' },
  { method: 'GET', path: '/v1/locks/{name}' },
  { method: 'GET', path: '/v1/locks/{name}/watch' },
  { method: 'POST', path: '/v1/locks/{name}/acquire' },
  { method: 'POST', path: '/v1/locks/{name}/release' },
  { method: 'POST', path: '/v1/locks/{name}/refresh' },
  { method: 'POST', path: '/v1/locks/{name}/force-release' },
  { method: 'GET', path: '/v1/elections/{name}' },
  { method: 'GET', path: '/v1/elections/{name}/observe' },
  { method: 'POST', path: '/v1/elections/{name}/campaign' },
  { method: 'POST', path: '/v1/elections/{name}/proclaim' },
  { method: 'POST', path: '/v1/elections/{name}/resign' },
] as const satisfies readonly RouteSpec[];

/** `METHOD /path/{name}`: the key of a route's handler. */
export type RouteKey = KeyOf<(typeof apiRoutes)[number]>;
type KeyOf<R> = R extends { readonly method: infer M extends string; readonly path: infer P extends string } ? `${M} ${P}` : never;

interface Compiled {
  readonly route: (typeof apiRoutes)[number];
  readonly pattern: RegExp;
}

const compiled: readonly Compiled[] = apiRoutes.map((route) => ({
  route,
  pattern: new RegExp(`^${route.path.replace(/[.]/g, '\\.').replace(/\{(?:name|id)\}/g, '([^/]+)')}$`),
}));

/** What a path matched: a route and its raw `{name}` or `{id}` segment; or the methods its template takes; or nothing. */
export type RouteMatch = { readonly key: RouteKey; readonly segment: string | undefined } | { readonly template: string; readonly methods: string[] } | null;

/** The route of `method` and `path` (a decoded path, no query). */
export function matchRoute(method: string, path: string): RouteMatch {
  let other: { template: string; methods: string[] } | null = null;
  for (const c of compiled) {
    const m = c.pattern.exec(path);
    if (m === null) continue;
    if (c.route.method === method) return { key: `${c.route.method} ${c.route.path}` as RouteKey, segment: m[1] };
    other ??= { template: c.route.path, methods: [] };
    other.methods.push(c.route.method);
  }
  return other;
}
