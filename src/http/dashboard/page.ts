/**
 * The dashboard's HTML: a static shell. Every value is filled in by the script with
 * textContent, so nothing a client sends (owners, meta, lock names) is ever parsed as HTML.
 */
import { limits } from '../../limits.js';

/** GET / */
export const dashboardHtml = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>lamport-lock</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="dashboard/style.css">
<script src="dashboard/app.js" defer></script>
</head>
<body>
<header>
  <h1>lamport-lock</h1>
  <span class="crumb">cluster <b id="cluster-name">?</b></span>
  <span class="crumb">peer <b id="peer-id">?</b></span>
  <span class="crumb" title="fingerprint of what every peer's config must hold equal: lamport-peer --check-config FILE prints a file's">config <b id="fingerprint" class="mono">?</b></span>
  <span class="crumb">clock <b id="clock">?</b></span>
  <span class="crumb">grants here <b id="grant-rate">?</b> <span id="grant-rate-seen" class="dim"></span></span>
  <span id="lease" class="badge">lease ?</span>
  <span id="stream" class="badge warn">connecting</span>
</header>
<div id="superseded" class="banner" hidden>
  <b>Superseded:</b> <span id="superseded-why"></span>
</div>
<div id="refused" class="banner" hidden>
  <b>Refused links:</b> peers whose configuration, secret or version differs from this one's are kept out of the cluster until an operator makes them match.
  <ul id="refused-links"></ul>
</div>
<div id="degraded" class="banner" hidden>
  <b>Degraded:</b> every grant, on every peer, waits for the peers below until they come back or a majority evicts them.
  <ul id="degraded-peers"></ul>
</div>
<main>
  <section id="peers-section">
    <h2>Peers <span id="view-epoch" class="dim"></span></h2>
    <table id="peers">
      <thead><tr><th>peer</th><th title="given when the member was added, never given again: the low bits of its tokens">ordinal</th><th title="voter, learner (requests nothing yet) or leaving">state</th><th>link</th><th>RTT</th><th>last heard</th><th>incarnation</th><th>lease</th><th>last ts</th></tr></thead>
      <tbody></tbody>
    </table>
  </section>
  <section id="locks-section">
    <h2>Locks <span id="locks-count" class="dim"></span></h2>
    <p id="no-locks" class="dim">No lock is held or requested.</p>
    <div id="locks"></div>
  </section>
  <section id="timeline-section">
    <h2>Timeline <span class="dim">(up to the last ${limits.dashboardTimelineMs / 60_000} minutes per lock, newest lock first: holds as bars, waits as thin bars, a hold that ended other than by its release in red; hover for who, when and why)</span></h2>
    <p id="no-timeline" class="dim">Nothing held or waited for in that time.</p>
    <div id="timeline"></div>
  </section>
  <section id="activity-section">
    <h2>Recent grants and ends <span class="dim">(newest first; the last <span id="activity-max">${limits.dashboardActivityMax}</span>, recorded by the peer whether or not this page is open)</span></h2>
    <table id="activity">
      <thead><tr><th>time</th><th>event</th><th>lock</th><th>peer</th><th>owner</th><th>mode</th><th>token</th><th>reason</th></tr></thead>
      <tbody></tbody>
    </table>
  </section>
</main>
<footer class="dim">Live over server-sent events from <code>/v1/events</code>. Holders and waiters are this peer's view of the cluster-wide queues; grants and ends marked <i>local</i> are exact, the others are seen in the queues.</footer>
</body>
</html>
`;
