/**
 * The dashboard in a real browser: Debian's chromium, headless, driven by playwright-core
 * (which never downloads a browser here: executablePath is set), against a 3-peer cluster
 * of lamport-peer processes. Skipped with a note when /usr/bin/chromium is missing.
 *
 * With DASHBOARD_SCREENSHOT=path the last test stages a busy cluster and saves a
 * screenshot there (docs/dashboard.png is made this way).
 */
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TwinPeer } from '../fault/twin-peer.js';
import { waitFor } from '../support/wait.js';
import { acquire, call, release, useTestCluster, waiters } from './helpers.js';

const chromiumPath = process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium';
const hasChromium = existsSync(chromiumPath);
if (!hasChromium) {
  process.stdout.write(`\n[dashboard.test] SKIPPED: no browser at ${chromiumPath}. Install Debian's chromium (apt-get install chromium) or set CHROMIUM_PATH.\n\n`);
}

const launchArgs = ['--no-sandbox', '--headless', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

let browser: Browser;
let page: Page;

/** A CSS attribute selector value, quoted. */
function q(value: string): string {
  return JSON.stringify(value);
}

describe.skipIf(!hasChromium)('dashboard in headless chromium', () => {
  // Started before the browser's hook below runs, and stopped after it closes the browser.
  const cluster = useTestCluster();

  beforeAll(async () => {
    browser = await chromium.launch({ executablePath: chromiumPath, args: launchArgs });
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('console', (m) => {
      if (m.type() === 'error') errors.push(m.text());
    });
    await page.goto(cluster().url('a'));
    await page.waitForSelector('#stream.ok', { timeout: 5000 });
    expect(errors).toEqual([]);
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
  });

  it('shows every peer with its link up and this peer\'s lease', async () => {
    await waitFor('three peer rows', async () => (await page.locator('#peers tbody tr').count()) === 3, 2000);
    expect(await page.textContent('#peer-id')).toBe('a');
    const { cluster: name } = JSON.parse(readFileSync(cluster().configPath, 'utf8')) as { cluster: string };
    expect(name).toMatch(/^test-/);
    expect(await page.textContent('#cluster-name')).toBe(name);
    // Ready means a majority: the second link may come up a moment later. The badge that
    // turned ok is the one read: on a loaded CI host a link may flap after it (once seen
    // 'down' on a second read of the live page).
    for (const id of ['b', 'c']) {
      const badge = await page.waitForSelector(`#peers tr[data-peer=${q(id)}] [data-role=link].ok`, { timeout: 3000 });
      expect(await badge.textContent()).toBe('up');
    }
    expect(await page.getAttribute('#lease', 'class')).toContain('ok');
  });

  it('shows the view\'s epoch and each peer\'s ordinal and state in the agreed view', async () => {
    await waitFor('the epoch shown', async () => (await page.textContent('#view-epoch')) === '(view epoch 0)', 3000);
    for (const [i, id] of ['a', 'b', 'c'].entries()) {
      expect(await page.textContent(`#peers tr[data-peer=${q(id)}] td.ordinal`)).toBe(String(i));
      expect(await page.textContent(`#peers tr[data-peer=${q(id)}] td.member-state`)).toBe('voter');
    }
  });

  it('shows clocks as the counters they are and incarnations as their ids, never as times of day', async () => {
    const before = (await call(cluster().url('a'), '/v1/cluster')).body;
    await waitFor('every incarnation known', async () => !(await page.locator('#peers td.inc').allTextContents()).includes('\u2014'), 3000);
    // The header shows the clock of the last push (at least one a second): the counter itself.
    await waitFor('the header shows the clock as a counter, at least as high as it was', async () => {
      const text = (await page.textContent('#clock')) ?? '';
      return /^\d+$/.test(text) && Number(text) >= Number(before['clock']);
    }, 3000);
    const peers = before['peers'] as Array<Record<string, unknown>>;
    for (const p of peers) {
      const inc = p['self'] === true ? before['incarnation'] : p['incarnation'];
      expect(await page.textContent(`#peers tr[data-peer=${q(String(p['id']))}] td.inc`)).toBe(String(inc));
    }
    const visible = (await page.locator('header, #peers').allTextContents()).join(' ');
    expect(visible).not.toMatch(/\d\d:\d\d:\d\d|ahead|ago\)/);
    expect(await page.getAttribute('#clock', 'title')).toContain('a counter');
  });

  it('marks an all-or-nothing hold on each of its locks with the others it holds', async () => {
    // On peer a: peer c's grants are counted by a later test.
    const grant = await call(cluster().url('a'), '/v1/acquire', { locks: [{ name: 'dash-m1' }, { name: 'dash-m2', mode: 'shared' }], ttl_ms: 30_000 });
    expect(grant.status).toBe(200);
    const badge = (lock: string): string => `article[data-lock=${q(lock)}] tr[data-role=holder][data-peer="a"] [data-role=with]`;
    await page.waitForSelector(badge('dash-m1'), { timeout: 2000 });
    expect(await page.textContent(badge('dash-m1'))).toBe('+ dash-m2');
    expect(await page.textContent(badge('dash-m2'))).toBe('+ dash-m1');
    expect(await page.getAttribute(badge('dash-m1'), 'title')).toBe('one all-or-nothing request: also holds dash-m2');
    expect((await call(cluster().url('a'), '/v1/release', { id: grant.body['id'] })).status).toBe(200);
    await page.waitForSelector('article[data-lock="dash-m1"]', { state: 'detached', timeout: 2000 });
    expect(await page.locator('article[data-lock="dash-m2"]').count()).toBe(0);
  });

  it('shows a lock taken on peer b within a second, then its release', async () => {
    const owner = '<img src=x onerror="window.pwned=1">';
    const holder = `article[data-lock="dash-one"] tr[data-role=holder][data-peer="b"]`;
    const started = Date.now();
    const grant = await acquire(cluster().url('b'), 'dash-one', { owner, meta: { job: '<b>42</b>' }, ttl_ms: 30_000 });
    expect(grant.status).toBe(200);
    await page.waitForSelector(holder, { timeout: 1000 });
    const seenMs = Date.now() - started;
    expect(seenMs).toBeLessThan(1000);
    // Owners and meta are user data: shown as text, never parsed as markup.
    expect(await page.textContent(`${holder} [data-field=owner]`)).toBe(owner);
    expect(await page.textContent(`${holder} [data-field=meta]`)).toBe('{"job":"<b>42</b>"}');
    expect(await page.textContent(`${holder} td.token`)).toBe(grant.body['token']);
    expect(await page.locator('#locks img, #locks b').count()).toBe(0);
    expect(await page.evaluate('window.pwned')).toBeUndefined();
    await page.waitForSelector(`#activity tr[data-type=held][data-lock="dash-one"][data-peer="b"]`, { timeout: 1000 });

    const released = Date.now();
    expect((await release(cluster().url('b'), 'dash-one', grant.body['id'])).status).toBe(200);
    await page.waitForSelector('article[data-lock="dash-one"]', { state: 'detached', timeout: 1000 });
    expect(Date.now() - released).toBeLessThan(1000);
    await page.waitForSelector(`#activity tr[data-type=gone][data-lock="dash-one"][data-peer="b"]`, { timeout: 1000 });
  });

  it('shows when this peer\'s holds expire, and that another peer keeps its own TTLs', async () => {
    const own = await acquire(cluster().url('a'), 'dash-ttl', { owner: 'ttl-a', ttl_ms: 30_000 });
    const other = await acquire(cluster().url('b'), 'dash-ttl-b', { owner: 'ttl-b', ttl_ms: 30_000 });
    const cellOf = (lock: string, peer: string): string => `article[data-lock=${q(lock)}] tr[data-role=holder][data-peer=${q(peer)}] [data-field=expires]`;
    await page.waitForSelector(cellOf('dash-ttl', 'a'), { timeout: 1000 });
    expect(await page.getAttribute(cellOf('dash-ttl', 'a'), 'data-expires')).toBe(String(own.body['expires_at']));
    expect(await page.textContent(cellOf('dash-ttl', 'a'))).toMatch(/^in (2\d|30)\.\d s$/);
    await page.waitForSelector(cellOf('dash-ttl-b', 'b'), { timeout: 1000 });
    expect(await page.textContent(cellOf('dash-ttl-b', 'b'))).toBe('\u2014');
    await release(cluster().url('a'), 'dash-ttl', own.body['id']);
    await release(cluster().url('b'), 'dash-ttl-b', other.body['id']);
  });

  it('records grants and ends while no page is open, and shows a grants-per-second figure', async () => {
    // Nobody has opened peer c's dashboard yet: its activity must still be recorded.
    for (let i = 0; i < 5; i++) {
      const got = await acquire(cluster().url('c'), 'dash-unseen', { owner: `bg-${i}`, ttl_ms: 10_000 });
      await release(cluster().url('c'), 'dash-unseen', got.body['id']);
    }
    const other = await browser.newPage();
    try {
      await other.goto(cluster().url('c'));
      await other.waitForSelector('#stream.ok', { timeout: 5000 });
      await other.waitForSelector(`#activity tr.local[data-type=granted][data-lock="dash-unseen"]`, { timeout: 1000 });
      expect(await other.locator(`#activity tr.local[data-type=ended][data-lock="dash-unseen"]`).count()).toBe(5);
      expect(await other.textContent('#activity-max')).toBe('200');
      // 5 grants in the last 10 s: 0.5/s once their second has passed (pushed every second).
      await waitFor('grants per second shown', async () => (await other.textContent('#grant-rate')) === '0.5/s', 4000);
      expect(await other.textContent('#grant-rate-seen')).toMatch(/^\u2265 \d+(\.\d)?\/s cluster-wide$/);
    } finally {
      await other.close();
    }
  });

  it('lists the waiting queue in grant order and this peer\'s own grants with their end reason', async () => {
    const held = await acquire(cluster().url('a'), 'dash-queue', { owner: 'first', ttl_ms: 30_000 });
    const second = acquire(cluster().url('c'), 'dash-queue', { owner: 'second', timeout_ms: 10_000 });
    // Once b has seen c's request, b's clock is past it: b's request sorts after c's.
    await waitFor('c queued, as a and b see it', async () => (await waiters(cluster().url('a'), 'dash-queue')).length === 1 && (await waiters(cluster().url('b'), 'dash-queue')).length === 1);
    const third = acquire(cluster().url('b'), 'dash-queue', { owner: 'third', timeout_ms: 10_000 });
    const queued = page.locator('article[data-lock="dash-queue"] tr[data-role=waiter]');
    await waitFor('two waiters shown', async () => (await queued.count()) === 2, 2000);
    const order = await Promise.all((await queued.all()).map((row) => row.getAttribute('data-peer')));
    expect(order).toEqual(['c', 'b']);
    await page.waitForSelector(`#activity tr.local[data-type=granted][data-lock="dash-queue"]`, { timeout: 1000 });
    await release(cluster().url('a'), 'dash-queue', held.body['id']);
    await page.waitForSelector(`#activity tr.local[data-type=ended][data-lock="dash-queue"]`, { timeout: 1000 });
    expect(await page.textContent(`#activity tr.local[data-type=ended][data-lock="dash-queue"] td:last-child`)).toBe('released');
    const s = await second;
    await release(cluster().url('c'), 'dash-queue', s.body['id']);
    const t = await third;
    await release(cluster().url('b'), 'dash-queue', t.body['id']);
    await page.waitForSelector('article[data-lock="dash-queue"]', { state: 'detached', timeout: 1000 });
  });

  it('draws a timeline per lock: a wait, then the hold, and a hold that expired in red with its reason', async () => {
    const first = await acquire(cluster().url('a'), 'dash-tl', { owner: 'tl-first', ttl_ms: 30_000 });
    const second = acquire(cluster().url('a'), 'dash-tl', { owner: 'tl-second', ttl_ms: 300, timeout_ms: 10_000 });
    const row = 'div.tl-row[data-lock="dash-tl"]';
    // The page samples the queues at each push: the wait is drawn, still open, before it ends.
    await page.waitForSelector(`${row} .tl-wait.open[data-owner="tl-second"]`, { timeout: 2000 });
    expect((await release(cluster().url('a'), 'dash-tl', first.body['id'])).status).toBe(200);
    expect((await second).status).toBe(200);
    // tl-second's TTL (300 ms) runs out: its hold ends `expired`, drawn in red.
    await page.waitForSelector(`${row} .tl-hold.lost[data-owner="tl-second"][data-reason="expired"]`, { timeout: 3000 });
    expect(await page.locator(`${row} .tl-hold:not(.lost)[data-owner="tl-first"][data-reason="released"]`).count()).toBe(1);
    expect(await page.locator(`${row} .tl-wait[data-owner="tl-second"]`).count()).toBe(1);
    expect(await page.getAttribute(`${row} .tl-hold.lost`, 'title')).toMatch(/^held by tl-second on peer a \(token \d+\)\n.*\nended: expired$/);
    expect(await page.isHidden('#no-timeline')).toBe(true);
    // In the activity list an end other than a release is marked, not a plain "ended".
    const expired = '#activity tr[data-type=ended][data-lock="dash-tl"][data-reason="expired"] .badge';
    expect(await page.textContent(expired)).toBe('ended: expired');
    expect(await page.getAttribute(expired, 'class')).toContain('bad');
    expect(await page.textContent('#activity tr[data-type=ended][data-lock="dash-tl"][data-reason="released"] .badge')).toBe('ended');
  });

  it('shows an election\'s leader and term on its lock', async () => {
    const res = await fetch(`${cluster().url('b')}/v1/elections/dash-election/campaign`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ value: 'svc:1', owner: 'primary-b' }) });
    const reader = res.body?.pipeThrough(new TextDecoderStream()).getReader();
    const grant = JSON.parse(((await reader?.read())?.value ?? '').split('\n')[0] ?? '{}') as Record<string, unknown>;
    const badgeSel = 'article[data-lock="dash-election"] [data-role=leader]';
    await page.waitForSelector(badgeSel, { timeout: 2000 });
    expect(await page.textContent(badgeSel)).toBe(`leader primary-b, term ${String(grant['term'])}`);
    expect(await page.getAttribute(badgeSel, 'title')).toBe('election dash-election: value "svc:1", on peer b');
    expect(await page.locator('article[data-lock="dash-tl"] [data-role=leader], article[data-lock="dash-one"] [data-role=leader]').count()).toBe(0);
    await reader?.cancel();
    await page.waitForSelector('article[data-lock="dash-election"]', { state: 'detached', timeout: 2000 });
  });

  it('shows a stopped peer\'s link as down, and a banner naming it until the majority evicts it', async () => {
    expect(await page.isHidden('#degraded')).toBe(true);
    expect((await acquire(cluster().url('c'), 'dash-evicted', { owner: 'on-c', ttl_ms: 60_000 })).status).toBe(200);
    await page.waitForSelector('div.tl-row[data-lock="dash-evicted"] .tl-hold.open[data-peer="c"]', { timeout: 2000 });
    await cluster().stopPeer('c', 'SIGKILL');
    await page.waitForSelector(`#peers tr[data-peer="c"] [data-role=link].bad`, { timeout: 3000 });
    // Every grant waits for c now: the banner says so, and when its eviction is due.
    const item = '#degraded:not([hidden]) li[data-peer="c"]';
    await page.waitForSelector(item, { timeout: 2000 });
    expect(await page.textContent(item)).toMatch(/^peer c: link down for \d+(\.\d)? (ms|s); eviction due in \d+(\.\d)? (ms|s)$/);
    expect(await page.locator('#degraded li').count()).toBe(1);
    // b's request cannot be granted without c's ack: a's queue admits it, and the page says
    // it is admitted here, not held.
    const waiting = acquire(cluster().url('b'), 'dash-admitted', { owner: 'on-b', timeout_ms: 1500 });
    const admitted = 'article[data-lock="dash-admitted"] tr[data-role=admitted][data-peer="b"] [data-role=pending]';
    await page.waitForSelector(admitted, { timeout: 1000 });
    expect(await page.textContent(admitted)).toBe('admitted here; not granted on b until c acks');
    expect(await page.locator('article[data-lock="dash-admitted"] tr[data-role=holder]').count()).toBe(0);
    expect((await waiting).body['error']).toBe('ERR_UNREACHABLE');
    await page.waitForSelector('#degraded', { state: 'hidden', timeout: 10_000 });
    // c's hold was dropped with its eviction: marked on the timeline and in the list, with the reason.
    await page.waitForSelector('div.tl-row[data-lock="dash-evicted"] .tl-hold.lost[data-peer="c"][data-reason="evicted"]', { timeout: 2000 });
    expect(await page.textContent('#activity tr[data-type=gone][data-lock="dash-evicted"][data-reason="evicted"] .badge')).toBe('ended: evicted');
    expect(await page.textContent(`#peers tr[data-peer="c"] [data-role=link]`)).toBe('evicted');
    cluster().startPeer('c');
    await cluster().waitReady(15_000, ['c']);
    await page.waitForSelector(`#peers tr[data-peer="c"] [data-role=link].ok`, { timeout: 3000 });
  }, 30_000);

  it.skipIf(process.env['DASHBOARD_SCREENSHOT'] === undefined)('saves a screenshot of a busy cluster', async () => {
    const out = process.env['DASHBOARD_SCREENSHOT'] ?? '';
    const [a, b, c] = ['a', 'b', 'c'].map((id) => cluster().url(id)) as [string, string, string];
    await acquire(b, 'billing/nightly-export', { owner: 'cron@host-b', meta: { job: 'export', run: 1182 }, ttl_ms: 120_000 });
    const pending = [
      acquire(c, 'billing/nightly-export', { owner: 'cron@host-c', meta: { job: 'export', run: 1183 }, timeout_ms: 20_000 }),
      acquire(a, 'billing/nightly-export', { owner: 'deploy@host-a', timeout_ms: 20_000 }),
    ];
    await acquire(a, 'db/migrations', { owner: 'deploy@host-a', meta: { release: 'v2.4.1' }, ttl_ms: 120_000 });
    for (const [peer, who] of [[a, 'reader-1'], [c, 'reader-2']] as const) await acquire(peer, 'reports/read', { mode: 'shared', owner: who, ttl_ms: 120_000 });
    for (const [peer, who] of [[b, 'worker-7'], [c, 'worker-9']] as const) await acquire(peer, 'gpu-pool', { limit: 4, permits: 2, owner: who, ttl_ms: 120_000 });
    const brief = await acquire(a, 'cache/rebuild', { owner: 'ops', ttl_ms: 300 });
    expect(brief.status).toBe(200);
    await page.waitForSelector('#activity tr[data-type="ended"][data-lock="cache/rebuild"]', { timeout: 5000 });
    mkdirSync(dirname(out), { recursive: true });
    await page.screenshot({ path: out, fullPage: true });
    process.stdout.write(`[dashboard.test] screenshot saved to ${out}\n`);
    void Promise.allSettled(pending);
  }, 30_000);

  it('shows a banner naming a peer whose config differs, and what differs', async () => {
    expect(await page.isHidden('#refused')).toBe(true);
    expect(await page.textContent('#fingerprint')).toMatch(/^[0-9a-f]{24}$/);
    const shared = (): Record<string, unknown> => JSON.parse(readFileSync(cluster().configPath, 'utf8')) as Record<string, unknown>;
    const restart = async (): Promise<void> => {
      await cluster().stopPeer('c', 'SIGKILL');
      cluster().startPeer('c', { args: ['--accept-config-change'] });
    };
    // c's file lists the same peers in another order: every link refuses it.
    cluster().rewriteConfig('c', (cfg) => ({ ...cfg, peers: [0, 2, 1].map((i) => (cfg['peers'] as unknown[])[i]) }));
    await restart();
    try {
      await page.waitForSelector('#refused:not([hidden])', { timeout: 10_000 });
      await waitFor('the difference named', async () => (await page.textContent('#refused-links'))?.includes('peer c lists the peers [a, c, b]; this peer lists [a, b, c]') === true, 10_000);
    } finally {
      cluster().rewriteConfig('c', () => shared());
      await restart();
    }
    await cluster().waitReady();
  }, 60_000);

  // Last: it leaves peer a a zombie for the rest of the file's cluster.
  it('shows a banner when a second process with this peer\'s id supersedes it', async () => {
    expect(await page.isHidden('#superseded')).toBe(true);
    const twin = await TwinPeer.start(cluster(), 'a');
    try {
      await page.waitForSelector('#superseded:not([hidden])', { timeout: 10_000 });
      expect(await page.textContent('#superseded-why')).toMatch(/^another process runs or ran with this peer id \(incarnation \d+\.\d+, newer than this one\)/);
    } finally {
      await twin.stop();
    }
  }, 30_000);
});
