/**
 * The dashboard's script (served as GET /dashboard/app.js): one EventSource, no polling
 * and no timers. The browser's EventSource reconnects by itself; the peer pushes state on
 * change and link state every second, and the ages shown are recomputed from the peer's
 * clock at each push. Data is only ever put in the DOM with textContent.
 */

/** GET /dashboard/app.js */
export const dashboardScript = String.raw`'use strict';
(function () {
  var activityMax = 200;
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

  function short(text, max) {
    return text.length > max ? text.slice(0, max - 1) + '\u2026' : text;
  }

  function renderHeader(c) {
    byId('cluster-name').textContent = c.cluster;
    byId('peer-id').textContent = c.id;
    byId('clock').textContent = String(c.clock);
    var lease = byId('lease');
    var valid = c.lease && c.lease.valid && c.synced;
    lease.textContent = valid ? 'lease valid ' + fmtMs(c.lease.valid_for_ms) : (c.synced ? 'no lease' : 'syncing');
    lease.className = 'badge ' + (valid ? 'ok' : 'bad');
    document.title = 'lamport-lock \u00b7 ' + c.id;
  }

  function peerRow(c, p) {
    var tr = el('tr');
    tr.dataset.peer = p.id;
    if (p.self) {
      tr.className = 'self';
      cell(tr, p.id + ' (this peer)');
      cell(tr, '').appendChild(badge('self', 'ok'));
      cell(tr, '\u2014');
      cell(tr, '\u2014');
      cell(tr, c.incarnation, 'inc');
      var valid = c.lease && c.lease.valid && c.synced;
      cell(tr, '').appendChild(badge(valid ? 'valid ' + fmtMs(c.lease.valid_for_ms) : 'none', valid ? 'ok' : 'bad'));
      cell(tr, String(c.clock), 'mono');
      return tr;
    }
    cell(tr, p.id);
    var link = p.evicted ? badge('evicted', 'bad') : p.connected ? badge('up', 'ok') : badge('down', 'bad');
    link.dataset.role = 'link';
    cell(tr, '').appendChild(link);
    cell(tr, fmtMs(p.rtt_ms), 'mono');
    cell(tr, p.last_heard_ms_ago === null ? 'never' : fmtMs(p.last_heard_ms_ago) + ' ago', 'mono');
    cell(tr, p.incarnation === null ? '\u2014' : p.incarnation, 'inc');
    cell(tr, '\u2014', 'dim').title = 'Each peer knows only its own lease: see its dashboard or lamport_lease_valid.';
    cell(tr, String(p.last_ts), 'mono');
    return tr;
  }

  function renderCluster(c, now) {
    renderHeader(c);
    var body = byId('peers').tBodies[0];
    var rows = [];
    for (var i = 0; i < c.peers.length; i++) rows.push(peerRow(c, c.peers[i]));
    body.replaceChildren.apply(body, rows);
    var ages = document.querySelectorAll('[data-since]');
    for (var j = 0; j < ages.length; j++) {
      ages[j].textContent = fmtMs(Math.max(0, now - Number(ages[j].dataset.since)));
    }
  }

  function entryRow(v, role, position, now) {
    var tr = el('tr', v.local ? 'local' : '');
    tr.dataset.role = role;
    tr.dataset.peer = v.peer;
    if (role === 'waiter') cell(tr, String(position), 'mono');
    cell(tr, v.peer);
    cell(tr, v.owner === '' ? '\u2014' : v.owner).dataset.field = 'owner';
    var mode = v.mode === 'semaphore' ? 'sem ' + v.permits + '/' + v.limit : v.mode;
    cell(tr, '').appendChild(badge(mode, 'mode'));
    cell(tr, v.token, 'token');
    var since = cell(tr, v.since === null ? '\u2014' : fmtMs(Math.max(0, now - v.since)), 'mono');
    if (v.since !== null) {
      since.dataset.since = String(v.since);
      since.title = new Date(v.since).toISOString();
    }
    var metaText = v.meta === null || v.meta === undefined ? '' : JSON.stringify(v.meta);
    var meta = cell(tr, short(metaText, 120), 'meta');
    meta.title = metaText;
    meta.dataset.field = 'meta';
    return tr;
  }

  function entryTable(entries, role, now) {
    var table = el('table');
    var head = el('tr');
    var names = role === 'waiter' ? ['#', 'peer', 'owner', 'mode', 'token', 'waiting', 'meta'] : ['peer', 'owner', 'mode', 'token', 'held for', 'meta'];
    for (var i = 0; i < names.length; i++) head.appendChild(el('th', null, names[i]));
    table.appendChild(el('thead')).appendChild(head);
    var body = table.appendChild(el('tbody'));
    for (var j = 0; j < entries.length; j++) body.appendChild(entryRow(entries[j], role, j + 1, now));
    return table;
  }

  function lockCard(l, now) {
    var card = el('article', 'lock');
    card.dataset.lock = l.name;
    var head = card.appendChild(el('div', 'lock-head'));
    head.appendChild(el('h3', null, l.name));
    head.appendChild(el('span', 'counts dim', l.holders.length + ' holding, ' + l.waiters_total + ' waiting'));
    card.appendChild(el('h4', null, 'holders'));
    if (l.holders.length === 0) card.appendChild(el('div', 'dim', 'none: the head of the queue waits for acks'));
    else card.appendChild(entryTable(l.holders, 'holder', now));
    if (l.waiters.length > 0) {
      card.appendChild(el('h4', null, 'queue, in grant order'));
      card.appendChild(entryTable(l.waiters, 'waiter', now));
      if (l.waiters_total > l.waiters.length) card.appendChild(el('div', 'dim', '\u2026 and ' + (l.waiters_total - l.waiters.length) + ' more'));
    }
    return card;
  }

  function renderLocks(s) {
    var cards = [];
    for (var i = 0; i < s.locks.length; i++) cards.push(lockCard(s.locks[i], s.now));
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
    var b = badge(labels[a.type] || a.type, kinds[a.type]);
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
    var body = byId('activity').tBodies[0];
    for (var i = 0; i < items.length; i++) body.insertBefore(activityRow(items[i]), body.firstChild);
    while (body.rows.length > activityMax) body.deleteRow(body.rows.length - 1);
  }

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
      setStream('live', 'ok');
    });
    es.addEventListener('error', function () { setStream(es.readyState === EventSource.CLOSED ? 'disconnected' : 'reconnecting', 'bad'); });
    es.addEventListener('state', function (ev) {
      var s = JSON.parse(ev.data);
      renderLocks(s);
      renderCluster(s.cluster, s.now);
    });
    es.addEventListener('cluster', function (ev) {
      var s = JSON.parse(ev.data);
      renderCluster(s.cluster, s.now);
    });
    es.addEventListener('activity', function (ev) { renderActivity(JSON.parse(ev.data)); });
  }

  start();
})();
`;
