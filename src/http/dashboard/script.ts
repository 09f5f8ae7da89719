/**
 * The dashboard's script (served as GET /dashboard/app.js): one EventSource, no polling
 * and no timers. The browser's EventSource reconnects by itself; the peer pushes state on
 * change and link state every second, and the ages and expiries shown are recomputed from
 * the peer's clock at each push. Data is only ever put in the DOM with textContent.
 *
 * Lamport clocks are counters and incarnations are ids: they are shown as such, never as
 * times of day (a clock moved on by messages and restarts would read as clock skew).
 */
import { limits } from '../../limits.js';
import { dashboardTimeline } from './timeline.js';

/** GET /dashboard/app.js; the peer's own activity bound replaces the default at the first state. */
export const dashboardScript = String.raw`'use strict';
(function () {
  var activityMax = ${limits.dashboardActivityMax};
  var byId = function (id) { return document.getElementById(id); };

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }

  function cell(row, text, cls) {
    var td = el('td', cls, text);
    row.appendChild(td);
    return td;
  }

  function badge(text, kind) {
    return el('span', 'badge' + (kind ? ' ' + kind : ''), text);
  }

  function fmtMs(ms) {
    if (ms === null || ms === undefined) return '\u2014';
    if (ms < 1) return ms.toFixed(2) + ' ms';
    if (ms < 1000) return Math.round(ms) + ' ms';
    if (ms < 120000) return (ms / 1000).toFixed(1) + ' s';
    if (ms < 7200000) return Math.round(ms / 60000) + ' min';
    return (ms / 3600000).toFixed(1) + ' h';
  }

  function fmtTime(epochMs) {
    var d = new Date(epochMs);
    var pad = function (n, w) { return String(n).padStart(w, '0'); };
    return pad(d.getHours(), 2) + ':' + pad(d.getMinutes(), 2) + ':' + pad(d.getSeconds(), 2) + '.' + pad(d.getMilliseconds(), 3);
  }

  // A Lamport clock is a counter (seeded above wall-clock ms so that it survives restarts,
  // moved on by every message): shown as the number it is, never as a time of day, which
  // would read as clock skew.
  function counterCell(td, value) {
    td.textContent = value === null || value === undefined ? '\u2014' : String(value);
    td.title = 'Lamport clock: a counter that orders requests, not a time';
    return td;
  }

  // An incarnation is the id of one process of a peer (a new one at each start).
  function incarnationCell(td, inc) {
    td.textContent = inc === null || inc === undefined ? '\u2014' : String(inc);
    td.title = 'incarnation: the id of this process of the peer (a new one at each start)';
    return td;
  }

  function fmtRate(r) {
    return r < 10 ? r.toFixed(1) : String(Math.round(r));
  }

  // This peer's own grants are counted exactly; other peers' grants only when a snapshot of
  // the queues shows them holding, so holds shorter than a push are missed: a lower bound.
  function renderRates(r) {
    if (!r) return;
    var box = byId('grant-rate');
    box.textContent = fmtRate(r.local_grants_per_s) + '/s';
    box.title = 'Grants per second by this peer over the last ' + Math.round(r.window_ms / 1000) + ' s (exact).';
    var seen = byId('grant-rate-seen');
    seen.textContent = '\u2265 ' + fmtRate(r.seen_grants_per_s) + '/s cluster-wide';
    seen.title = 'Grants by every peer as this peer saw them in its queues over the last ' + Math.round(r.window_ms / 1000) +
      ' s; holds shorter than one push (0.1 s) of another peer are missed, so this is a lower bound. Each peer\'s own figure is exact.';
  }

  function short(text, max) {
    return text.length > max ? text.slice(0, max - 1) + '\u2026' : text;
  }

  function renderHeader(c, now) {
    byId('cluster-name').textContent = c.cluster;
    byId('peer-id').textContent = c.id;
    byId('fingerprint').textContent = c.fingerprint || '?';
    counterCell(byId('clock'), c.clock);
    var lease = byId('lease');
    var valid = c.lease && c.lease.valid && c.synced;
    lease.textContent = valid ? 'lease valid ' + fmtMs(c.lease.valid_for_ms) : (c.synced ? 'no lease' : 'syncing');
    lease.className = 'badge ' + (valid ? 'ok' : 'bad');
    document.title = 'lamport-lock \u00b7 ' + c.id;
  }

  function evictionText(due) {
    if (due === null || due === undefined) return 'this peer will not evict it (two peers, or never met): waiting until it returns';
    return due > 0 ? 'eviction due in ' + fmtMs(due) : 'eviction due now, waiting for a majority to confirm';
  }

  // GET /v1/cluster degraded: the peers every grant waits for, pushed with the link state.
  // In the minority this peer evicts nobody: it says so, and that the majority evicts it.
  function renderDegraded(d) {
    var waiting = d && d.waiting_for ? d.waiting_for : [];
    var minority = d && d.minority ? d.minority : null;
    var items = [];
    if (minority) {
      var m = el('li', null, 'this peer has no lease: it is in the minority (hears ' + minority.hears + ' of ' + minority.peers +
        ' peers, itself included; a majority is ' + minority.majority + '). It grants nothing and evicts nobody; the peers on the majority side evict this one.');
      m.dataset.role = 'minority';
      items.push(m);
    }
    for (var i = 0; i < waiting.length; i++) {
      var w = waiting[i];
      var li = el('li', null, 'peer ' + w.peer + ': ' + (w.connected ? 'link up but silent' : 'link down') + ' for ' + fmtMs(w.silent_ms) + '; ' +
        (minority ? 'this peer cannot evict it from the minority' : evictionText(w.eviction_due_in_ms)));
      li.dataset.peer = w.peer;
      items.push(li);
    }
    var list = byId('degraded-peers');
    list.replaceChildren.apply(list, items);
    byId('degraded').hidden = items.length === 0;
  }

  // A member of the agreed view (GET /v1/members): its ordinal and its state.
  function memberCells(tr, p) {
    cell(tr, String(p.ordinal), 'mono ordinal');
    cell(tr, p.state, 'member-state');
  }

  function peerRow(c, p, now) {
    var tr = el('tr');
    tr.dataset.peer = p.id;
    if (p.self) {
      tr.className = 'self';
      cell(tr, p.id + ' (this peer)');
      memberCells(tr, p);
      cell(tr, '').appendChild(badge('self', 'ok'));
      cell(tr, '\u2014');
      cell(tr, '\u2014');
      incarnationCell(cell(tr, '', 'inc'), c.incarnation);
      var valid = c.lease && c.lease.valid && c.synced;
      cell(tr, '').appendChild(badge(valid ? 'valid ' + fmtMs(c.lease.valid_for_ms) : 'none', valid ? 'ok' : 'bad'));
      counterCell(cell(tr, '', 'mono'), c.clock);
      return tr;
    }
    cell(tr, p.id);
    memberCells(tr, p);
    var link = p.evicted ? badge('evicted', 'bad') : p.connected ? badge('up', 'ok') : badge('down', 'bad');
    link.dataset.role = 'link';
    cell(tr, '').appendChild(link);
    cell(tr, fmtMs(p.rtt_ms), 'mono');
    cell(tr, p.last_heard_ms_ago === null ? 'never' : fmtMs(p.last_heard_ms_ago) + ' ago', 'mono');
    incarnationCell(cell(tr, '', 'inc'), p.incarnation);
    cell(tr, '\u2014', 'dim').title = 'Each peer knows only its own lease: see its dashboard or lamport_lease_valid.';
    counterCell(cell(tr, '', 'mono'), p.last_ts);
    return tr;
  }

  function fmtExpiry(expiresAt, now) {
    var left = expiresAt - now;
    return left > 0 ? 'in ' + fmtMs(left) : 'due';
  }

  // GET /v1/cluster superseded: a newer process runs with this peer's id; this one grants nothing.
  function renderSuperseded(why) {
    byId('superseded-why').textContent = why || '';
    byId('superseded').hidden = !why;
  }

  // GET /v1/cluster refused_links: each link refused either way of late, why, and what differs.
  function renderRefused(links) {
    links = links || [];
    var items = links.map(function (r) {
      var who = r.direction === 'by_peer' ? 'peer ' + r.peer + ' refuses this peer' : 'this peer refuses peer ' + r.peer;
      var what = r.differences && r.differences.length > 0 ? r.differences.join('; ') : r.message;
      var li = el('li', '');
      li.textContent = who + ' (' + r.reason + '): ' + what;
      return li;
    });
    byId('refused-links').replaceChildren.apply(byId('refused-links'), items);
    byId('refused').hidden = items.length === 0;
  }

  function renderCluster(c, now, rates) {
    renderHeader(c, now);
    renderSuperseded(c.superseded);
    renderRefused(c.refused_links);
    renderDegraded(c.degraded);
    renderRates(rates);
    byId('view-epoch').textContent = '(view epoch ' + c.epoch + ')';
    var body = byId('peers').tBodies[0];
    var rows = [];
    for (var i = 0; i < c.peers.length; i++) rows.push(peerRow(c, c.peers[i], now));
    body.replaceChildren.apply(body, rows);
    var ages = document.querySelectorAll('[data-since]');
    for (var j = 0; j < ages.length; j++) {
      ages[j].textContent = fmtMs(Math.max(0, now - Number(ages[j].dataset.since)));
    }
    var expiries = document.querySelectorAll('[data-expires]');
    for (var k = 0; k < expiries.length; k++) {
      expiries[k].textContent = fmtExpiry(Number(expiries[k].dataset.expires), now);
    }
  }

  function entryRow(v, role, position, now, lock, groups) {
    var tr = el('tr', v.local ? 'local' : '');
    tr.dataset.role = role;
    tr.dataset.peer = v.peer;
    if (role === 'waiter') cell(tr, String(position), 'mono');
    cell(tr, v.peer);
    cell(tr, v.owner === '' ? '\u2014' : v.owner).dataset.field = 'owner';
    var mode = v.mode === 'semaphore' ? 'sem ' + v.permits + '/' + v.limit : v.mode;
    var modeCell = cell(tr, '');
    modeCell.appendChild(badge(mode, 'mode'));
    // One request naming several locks (all-or-nothing) has one token on each of them.
    var others = (groups[v.token] || []).filter(function (n) { return n !== lock; });
    if (others.length > 0) {
      var with_ = badge('+ ' + others.join(', '), 'mode');
      with_.dataset.role = 'with';
      with_.title = 'one all-or-nothing request: also ' + (role === 'holder' ? 'holds ' : 'waits for ') + others.join(', ');
      modeCell.appendChild(with_);
    }
    // Another peer's request the mode rule admits here, whose peer has not heard every ack
    // yet (as far as this peer knows): admitted here, not granted there.
    if (role === 'holder' && v.waits_for_acks && v.waits_for_acks.length > 0) {
      tr.dataset.role = 'admitted';
      var adm = badge('admitted here; not granted on ' + v.peer + ' until ' + v.waits_for_acks.join(', ') + ' acks', 'warn');
      adm.dataset.role = 'pending';
      modeCell.appendChild(adm);
    }
    cell(tr, v.token, 'token');
    // since: when the request was made, on its requester's clock (the same on every peer).
    var since = cell(tr, fmtMs(Math.max(0, now - v.since)), 'mono');
    since.dataset.since = String(v.since);
    since.dataset.field = 'since';
    since.title = 'requested ' + new Date(v.since).toISOString() + ' (peer ' + v.peer + '\'s clock)' +
      (v.granted_at !== null && v.granted_at !== undefined ? ', granted ' + new Date(v.granted_at).toISOString() : '');
    if (role === 'holder') expiryCell(tr, v, now);
    var metaText = v.meta === null || v.meta === undefined ? '' : JSON.stringify(v.meta);
    var meta = cell(tr, short(metaText, 120), 'meta');
    meta.title = metaText;
    meta.dataset.field = 'meta';
    return tr;
  }

  // A hold's TTL lives on its own peer: this peer knows the expiry of its own holds only.
  function expiryCell(tr, v, now) {
    var td = cell(tr, '', 'mono');
    td.dataset.field = 'expires';
    if (v.expires_at !== null && v.expires_at !== undefined) {
      td.textContent = fmtExpiry(v.expires_at, now);
      td.dataset.expires = String(v.expires_at);
      td.title = 'expires_at ' + v.expires_at + ' = ' + new Date(v.expires_at).toISOString() + ' unless refreshed';
    } else if (v.local) {
      td.textContent = 'no TTL';
      td.title = 'held while its connection stays open';
    } else {
      td.textContent = '\u2014';
      td.className = 'dim';
      td.title = 'the TTL of a hold is kept by its own peer: see the dashboard of peer ' + v.peer;
    }
    return td;
  }

  function entryTable(entries, role, now, lock, groups) {
    var table = el('table');
    var head = el('tr');
    var names = role === 'waiter' ? ['#', 'peer', 'owner', 'mode', 'token', 'waiting', 'meta'] : ['peer', 'owner', 'mode', 'token', 'age', 'expires', 'meta'];
    for (var i = 0; i < names.length; i++) head.appendChild(el('th', null, names[i]));
    table.appendChild(el('thead')).appendChild(head);
    var body = table.appendChild(el('tbody'));
    for (var j = 0; j < entries.length; j++) body.appendChild(entryRow(entries[j], role, j + 1, now, lock, groups));
    return table;
  }

  function lockCard(l, now, groups) {
    var card = el('article', 'lock');
    card.dataset.lock = l.name;
    var head = card.appendChild(el('div', 'lock-head'));
    head.appendChild(el('h3', null, l.name));
    // An election is an exclusive lock whose holders campaigned with meta {value}: say who leads.
    var h0 = l.holders[0];
    if (h0 && h0.mode === 'exclusive' && h0.meta && typeof h0.meta === 'object' && Object.keys(h0.meta).length === 1 && 'value' in h0.meta) {
      var lead = badge('leader ' + (h0.owner === '' ? 'on ' + h0.peer : h0.owner) + ', term ' + h0.token, 'ok');
      lead.dataset.role = 'leader';
      lead.title = 'election ' + l.name + ': value ' + JSON.stringify(h0.meta.value) + ', on peer ' + h0.peer;
      head.appendChild(lead);
    }
    head.appendChild(el('span', 'counts dim', l.holders.length + ' holding, ' + l.waiters_total + ' waiting'));
    card.appendChild(el('h4', null, 'holders'));
    if (l.holders.length === 0) card.appendChild(el('div', 'dim', 'none: the head of the queue waits for acks'));
    else card.appendChild(entryTable(l.holders, 'holder', now, l.name, groups));
    if (l.waiters.length > 0) {
      card.appendChild(el('h4', null, 'queue, in grant order'));
      card.appendChild(entryTable(l.waiters, 'waiter', now, l.name, groups));
      if (l.waiters_total > l.waiters.length) card.appendChild(el('div', 'dim', '\u2026 and ' + (l.waiters_total - l.waiters.length) + ' more'));
    }
    return card;
  }

  // Tokens are (ts, peer): one token on several locks is one all-or-nothing request.
  function tokenGroups(locks) {
    var groups = {};
    locks.forEach(function (l) {
      l.holders.concat(l.waiters).forEach(function (v) { (groups[v.token] = groups[v.token] || []).push(l.name); });
    });
    return groups;
  }

  function renderLocks(s) {
    var cards = [];
    var groups = tokenGroups(s.locks);
    for (var i = 0; i < s.locks.length; i++) cards.push(lockCard(s.locks[i], s.now, groups));
    var box = byId('locks');
    box.replaceChildren.apply(box, cards);
    byId('no-locks').hidden = s.locks_total > 0;
    byId('locks-count').textContent = s.locks_total > s.locks.length ? '(' + s.locks.length + ' of ' + s.locks_total + ' shown)' : '(' + s.locks_total + ')';
  }

  var labels = { granted: 'granted', ended: 'ended', queued: 'queued', left: 'left queue', held: 'holding', gone: 'released' };
  var kinds = { granted: 'ok', ended: 'warn', queued: '', left: 'warn', held: 'ok', gone: '' };

  function activityRow(a) {
    var tr = el('tr', a.local ? 'local' : '');
    tr.dataset.type = a.type;
    tr.dataset.lock = a.lock;
    tr.dataset.peer = a.peer;
    cell(tr, fmtTime(a.at), 'when');
    // A hold that ended other than by its release (lease_lost, expired, evicted...) says so.
    var lost = (a.type === 'ended' || a.type === 'gone') && a.reason !== null && a.reason !== 'released';
    var b = badge(lost ? 'ended: ' + a.reason : labels[a.type] || a.type, lost ? 'bad' : kinds[a.type]);
    if (a.reason !== null) tr.dataset.reason = a.reason;
    var what = cell(tr, '');
    what.appendChild(b);
    if (a.local) what.appendChild(el('span', 'dim', ' local'));
    cell(tr, a.lock, 'mono');
    cell(tr, a.peer);
    cell(tr, a.owner === '' ? '\u2014' : a.owner);
    cell(tr, a.mode);
    cell(tr, a.token, 'token');
    cell(tr, a.reason === null ? '' : a.reason);
    return tr;
  }

  function renderActivity(items) {
    for (var j = 0; j < items.length; j++) addTimeline(items[j]);
    drawTimeline();
    var body = byId('activity').tBodies[0];
    for (var i = 0; i < items.length; i++) body.insertBefore(activityRow(items[i]), body.firstChild);
    while (body.rows.length > activityMax) body.deleteRow(body.rows.length - 1);
  }

${dashboardTimeline}
  function setStream(text, kind) {
    var s = byId('stream');
    s.textContent = text;
    s.className = 'badge ' + kind;
  }

  function start() {
    var es = new EventSource('v1/events');
    es.addEventListener('open', function () {
      // The peer sends its remembered activity first on every (re)connect.
      byId('activity').tBodies[0].replaceChildren();
      lanes = {};
      setStream('live', 'ok');
    });
    es.addEventListener('error', function () { setStream(es.readyState === EventSource.CLOSED ? 'disconnected' : 'reconnecting', 'bad'); });
    es.addEventListener('state', function (ev) {
      var s = JSON.parse(ev.data);
      peerOffsetMs = s.now - Date.now();
      drawTimeline();
      renderLocks(s);
      renderCluster(s.cluster, s.now, s.rates);
      if (s.activity_max) {
        activityMax = s.activity_max;
        byId('activity-max').textContent = String(s.activity_max);
      }
    });
    es.addEventListener('cluster', function (ev) {
      var s = JSON.parse(ev.data);
      peerOffsetMs = s.now - Date.now();
      drawTimeline();
      renderCluster(s.cluster, s.now, s.rates);
    });
    es.addEventListener('activity', function (ev) { renderActivity(JSON.parse(ev.data)); });
  }

  start();
})();
`;
