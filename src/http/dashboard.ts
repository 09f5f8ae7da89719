/**
 * The dashboard (GET / on every peer): a static page, its stylesheet and script, and the
 * live feed they read (GET /v1/events). The assets are TypeScript string constants so they
 * ship inside dist/ with the code and need no build step or file lookup.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { HttpApi } from './api.js';
import { DashboardFeed } from './dashboard-events.js';
import type { DashboardFeedOptions, DashboardSource } from './dashboard-events.js';
import { dashboardHtml } from './dashboard/page.js';
import { dashboardScript } from './dashboard/script.js';
import { dashboardCss } from './dashboard/style.js';

/**
 * Same-origin only, no inline script or style: even if an owner string slipped into the
 * DOM as markup, the browser would not run it.
 */
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

function asset(body: string, contentType: string): (req: IncomingMessage, res: ServerResponse) => void {
  const bytes = Buffer.from(body, 'utf8');
  return (_req, res) => {
    res.writeHead(200, {
      'content-type': contentType,
      'content-length': bytes.length,
      'cache-control': 'no-cache',
      'content-security-policy': contentSecurityPolicy,
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'no-referrer',
    });
    res.end(bytes);
  };
}

/** The dashboard's routes: its page and assets, and the feed it reads (not part of the API's description). */
export const dashboardPaths = ['/', '/dashboard/app.js', '/dashboard/style.css', '/v1/events'] as const;

/** Registers GET /, /dashboard/app.js, /dashboard/style.css and /v1/events; returns the feed (to close on stop). */
export function registerDashboard(api: HttpApi, source: DashboardSource, opts: Partial<DashboardFeedOptions> = {}): DashboardFeed {
  const feed = new DashboardFeed(source, opts);
  api.route('/', asset(dashboardHtml, 'text/html; charset=utf-8'));
  api.route('/dashboard/app.js', asset(dashboardScript, 'text/javascript; charset=utf-8'));
  api.route('/dashboard/style.css', asset(dashboardCss, 'text/css; charset=utf-8'));
  api.route('/v1/events', feed.route);
  return feed;
}
