/**
 * Issue 14 section 1, in a real browser: a page served from another origin (a tiny server
 * on 127.0.0.2), and a page of a DNS-rebinding origin (a name Chromium resolves to
 * 127.0.0.1, whose document the test serves itself), try every lock operation and every
 * read of the peer's API. The peer's own API, asked from Node, must show that nothing was
 * acquired, released or refreshed, and the pages must have read nothing; the dashboard,
 * opened from the peer's own origin, must keep working. Skipped like dashboard.test.ts
 * when there is no Chromium.
 */
import { existsSync } from 'node:fs';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, Page } from 'playwright-core';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalCluster } from '../../src/tools/local-cluster.js';
import { waitFor } from '../support/wait.js';
import { acquire, call, holders, release, startTestCluster } from './helpers.js';

const chromiumPath = process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium';
const hasChromium = existsSync(chromiumPath);
if (!hasChromium) {
  process.stdout.write(`\n[browser-origin.test] SKIPPED: no browser at ${chromiumPath}. Install Debian's chromium (apt-get install chromium) or set CHROMIUM_PATH.\n\n`);
}

/** A name only this browser resolves, to 127.0.0.1: what DNS rebinding makes of an attacker's name. */
const rebindName = 'rebind.lamport.test';

let cluster: LocalCluster;
let peer: string;
let peerPort: number;
let foreign: Server;
let foreignOrigin: string;
let browser: Browser;
let page: Page;

/** What a page could learn from one attempt: a status and body it could read, or the error it got. */
interface Seen {
  readonly what: string;
  readonly status?: number;
  readonly body?: string;
  readonly error?: string;
}

/**
 * Runs in the page: every lock operation and read a hostile page would try, aimed at `base`
 * (the peer's URL, or '' for the page's own origin when it is the rebinding one).
 */
async function attack(args: { base: string; victim: string; victimId: string; brief: string; briefId: string }): Promise<Seen[]> {
  const { base, victim, victimId, brief, briefId } = args;
  const seen: Seen[] = [];
  const attempt = async (what: string, url: string, init: RequestInit): Promise<void> => {
    try {
      const res = await fetch(url, init);
      // An opaque (no-cors) answer reads as status 0 and an empty body: nothing leaks.
      seen.push({ what, status: res.status, body: await res.text() });
    } catch (err) {
      seen.push({ what, error: String(err) });
    }
  };
  const text = { 'content-type': 'text/plain' };
  const json = { 'content-type': 'application/json' };
  const mode = base === '' ? 'same-origin' : 'no-cors';
  await attempt('acquire text/plain', `${base}/v1/locks/from-web/acquire`, { method: 'POST', mode, headers: text, body: '{"ttl_ms": 600000, "owner": "a web page"}' });
  await attempt('acquire json', `${base}/v1/locks/from-web-json/acquire`, { method: 'POST', headers: json, body: '{"ttl_ms": 600000, "owner": "a web page"}' });
  await attempt('release', `${base}/v1/locks/${victim}/release`, { method: 'POST', mode, headers: text, body: JSON.stringify({ id: victimId }) });
  await attempt('refresh', `${base}/v1/locks/${brief}/refresh`, { method: 'POST', mode, headers: text, body: JSON.stringify({ id: briefId, ttl_ms: 600000 }) });
  await attempt('read locks', `${base}/v1/locks`, {});
  await attempt('read cluster', `${base}/v1/cluster`, {});
  const events = await new Promise<string>((resolve) => {
    const source = new EventSource(`${base}/v1/events`);
    const done = (what: string): void => {
      source.close();
      resolve(what);
    };
    source.addEventListener('state', (e) => done(`state: ${(e as unknown as { data: string }).data.slice(0, 80)}`));
    source.onerror = () => done('error');
    setTimeout(() => done('nothing within 3 s'), 3000);
  });
  seen.push({ what: 'event stream', body: events });
  return seen;
}

/** Nothing a page saw carries a byte of the peer's state. */
function expectNothingLeaked(seen: readonly Seen[]): void {
  for (const s of seen) {
    const body = s.body ?? '';
    expect(body, s.what).not.toContain('victim');
    expect(body, s.what).not.toContain('"peers"');
    expect(body, s.what).not.toMatch(/^state:/);
    expect(body, s.what).not.toContain('"token"');
  }
}

describe.skipIf(!hasChromium)('a page of another origin in headless chromium', () => {
  beforeAll(async () => {
    cluster = await startTestCluster({ peers: 1 });
    peer = cluster.url('a');
    peerPort = Number(new URL(peer).port);
    foreign = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end('<!doctype html><title>another origin</title><p>a page that wants your locks</p>');
    });
    await new Promise<void>((resolve) => foreign.listen(0, '127.0.0.2', resolve));
    foreignOrigin = `http://127.0.0.2:${(foreign.address() as AddressInfo).port}`;
    browser = await chromium.launch({
      executablePath: chromiumPath,
      args: ['--no-sandbox', '--headless', '--disable-gpu', '--no-first-run', '--disable-background-networking', `--host-resolver-rules=MAP ${rebindName} 127.0.0.1`],
    });
    page = await browser.newPage();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await new Promise((resolve) => foreign?.close(resolve));
    await cluster?.stop();
  });

  /**
   * Two holds for a page to attack: `victim` (a minute of TTL, for release) and `brief`
   * (a second of TTL, for refresh: unless a page extends it, it expires on its own).
   */
  async function targets(tag: string): Promise<{ victim: string; victimId: string; victimToken: unknown; brief: string; briefId: string }> {
    const victim = `victim-${tag}`;
    const brief = `victim-brief-${tag}`;
    const v = await acquire(peer, victim, { ttl_ms: 60_000, owner: 'the rightful holder' });
    const b = await acquire(peer, brief, { ttl_ms: 1000, owner: 'the rightful holder' });
    expect([v.status, b.status]).toEqual([200, 200]);
    return { victim, victimId: String(v.body['id']), victimToken: v.body['token'], brief, briefId: String(b.body['id']) };
  }

  /** The pages changed nothing, as the peer itself reports: no lock of theirs, the victim held, the brief hold expired. */
  async function expectPeerUntouched(t: Awaited<ReturnType<typeof targets>>): Promise<void> {
    await waitFor('the brief hold to expire (a refresh from a page would keep it for ten minutes)', async () => (await holders(peer, t.brief)).length === 0, 5000);
    const locks = await call(peer, '/v1/locks');
    expect((locks.body['locks'] as Array<{ name: string }>).map((l) => l.name)).toEqual([t.victim]);
    const held = await holders(peer, t.victim);
    expect(held).toHaveLength(1);
    expect(held[0]).toMatchObject({ owner: 'the rightful holder', token: t.victimToken });
    expect((await release(peer, t.victim, t.victimId)).status).toBe(200);
  }

  it('refuses every operation and read from a page served by another origin', async () => {
    const t = await targets('foreign');
    await page.goto(`${foreignOrigin}/`);
    const seen = await page.evaluate(attack, { base: peer, ...t, victimToken: undefined });
    expectNothingLeaked(seen);
    expect(seen.find((s) => s.what === 'event stream')?.body).toBe('error');
    await expectPeerUntouched(t);
  });

  it('refuses a page whose name was rebound to the peer\'s address (DNS rebinding)', async () => {
    const t = await targets('rebound');
    const origin = `http://${rebindName}:${peerPort}`;
    // Once the attacker's name is rebound, the page's document and every request it makes
    // go to the peer under that name; the script of the page is what evaluate() runs here.
    // (A document served by the test under that name instead would be a public page to
    // Chromium, whose local-network rules would then block it before the peer could.)
    await page.goto(`${origin}/attack`);
    const seen = await page.evaluate(attack, { base: '', ...t, victimToken: undefined });
    expectNothingLeaked(seen);
    // The rebound page reads its answers (same origin, as it believes): each is the coded refusal.
    for (const what of ['acquire text/plain', 'acquire json', 'release', 'refresh', 'read locks', 'read cluster']) {
      const answer = seen.find((s) => s.what === what);
      expect(answer?.status, what).toBe(421);
      expect(JSON.parse(answer?.body ?? '{}'), what).toMatchObject({ error: 'ERR_HOST_REFUSED' });
    }
    await expectPeerUntouched(t);
  });

  it('keeps the dashboard working from the peer\'s own origin, event stream included', async () => {
    const own = await browser.newPage();
    await own.goto(peer);
    await own.waitForSelector('#stream.ok', { timeout: 5000 });
    const grant = await acquire(peer, 'seen-live', { ttl_ms: 30_000 });
    await own.waitForSelector('article[data-lock="seen-live"] tr[data-role=holder]', { timeout: 2000 });
    expect((await release(peer, 'seen-live', grant.body['id'])).status).toBe(200);
    await own.waitForSelector('article[data-lock="seen-live"]', { state: 'detached', timeout: 2000 });
    await own.close();
  });

  it('opens the dashboard of a peer that requires a token once the browser has it, and still refuses other origins', async () => {
    const token = 'browser-token-0123456789abcdef';
    const guarded = await startTestCluster({ peers: 1, token });
    const context = await browser.newContext({ httpCredentials: { username: 'operator', password: token } });
    try {
      const url = guarded.url('a');
      const auth = { authorization: `Bearer ${token}` };
      expect((await fetch(`${url}/`)).status).toBe(401);
      const own = await context.newPage();
      await own.goto(url);
      await own.waitForSelector('#stream.ok', { timeout: 5000 });
      const grant = await fetch(`${url}/v1/locks/tokened/acquire`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: '{"ttl_ms": 30000}' });
      expect(grant.status).toBe(200);
      await own.waitForSelector('article[data-lock="tokened"] tr[data-role=holder]', { timeout: 2000 });
      // The browser now holds the password for the peer's origin: a foreign page still gets nothing.
      const foreignPage = await context.newPage();
      await foreignPage.goto(`${foreignOrigin}/`);
      const seen = await foreignPage.evaluate(attack, { base: url, victim: 'tokened', victimId: 'unknown', brief: 'tokened', briefId: 'unknown' });
      expectNothingLeaked(seen);
      const locks = (await (await fetch(`${url}/v1/locks`, { headers: auth })).json()) as { locks: Array<{ name: string }> };
      expect(locks.locks.map((l) => l.name)).toEqual(['tokened']);
    } finally {
      await context.close();
      await guarded.stop();
    }
  }, 30_000);
});
