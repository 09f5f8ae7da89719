/**
 * The dashboard script's timeline (part of GET /dashboard/app.js, inside its one function
 * scope: it uses the script's `el`, `byId`, `fmtMs` and `fmtTime`, and the script sets
 * `peerOffsetMs` and calls `addTimeline` and `drawTimeline`).
 */
import { limits } from '../../limits.js';

/** The timeline's part of the dashboard script. */
export const dashboardTimeline = String.raw`  // The timeline: per lock, the holds and waits of the last minutes, built from the same
  // activity lines as the table (a local hold's end is exact; other peers' holds are seen in
  // the queues). Segments are keyed by token; an open one runs to now. Redrawn at every
  // push of the peer (at least once a second), in the peer's time.
  var timelineMs = ${limits.dashboardTimelineMs};
  var timelineLocksMax = ${limits.dashboardTimelineLocksMax};
  var lanes = {};
  var peerOffsetMs = 0;

  function lane(lock) {
    if (!lanes[lock]) lanes[lock] = { segs: [], last: 0 };
    return lanes[lock];
  }

  function openSeg(a, kind) {
    var l = lane(a.lock);
    for (var i = l.segs.length - 1; i >= 0; i--) if (l.segs[i].token === a.token && l.segs[i].kind === kind && l.segs[i].to === null) return;
    l.segs.push({ kind: kind, token: a.token, owner: a.owner, peer: a.peer, local: a.local, from: a.at, to: null, reason: null });
  }

  function closeSeg(a, kind, reason) {
    var l = lane(a.lock);
    for (var i = l.segs.length - 1; i >= 0; i--) {
      var s = l.segs[i];
      if (s.token === a.token && s.kind === kind && s.to === null) {
        s.to = a.at;
        s.reason = reason;
        return true;
      }
    }
    return false;
  }

  function addTimeline(a) {
    lane(a.lock).last = Math.max(lane(a.lock).last, a.at);
    if (a.type === 'queued') openSeg(a, 'wait');
    else if (a.type === 'granted' || a.type === 'held') {
      closeSeg(a, 'wait', null);
      openSeg(a, 'hold');
    } else if (a.type === 'ended' || a.type === 'gone') {
      if (!closeSeg(a, 'hold', a.reason)) closeSeg(a, 'wait', a.reason);
    } else if (a.type === 'left') closeSeg(a, 'wait', 'left the queue');
  }

  function drawTimeline() {
    var now = Date.now() + peerOffsetMs;
    var oldest = now - timelineMs;
    var earliest = now;
    var names = Object.keys(lanes).filter(function (n) {
      var l = lanes[n];
      l.segs = l.segs.filter(function (s) { return s.to === null || s.to >= oldest; });
      l.segs.forEach(function (s) { earliest = Math.min(earliest, s.from); });
      if (l.segs.length === 0) delete lanes[n];
      return l.segs.length > 0;
    });
    names.sort(function (x, y) { return lanes[y].last - lanes[x].last; });
    // The scale spans what there is to draw: from 10 s up to the whole window.
    var span = Math.min(timelineMs, Math.max(10000, now - earliest));
    var from = now - span;
    var box = byId('timeline');
    var rows = [];
    if (names.length > 0) {
      var axis = el('div', 'tl-row tl-axis dim');
      axis.appendChild(el('div', 'tl-name', ''));
      var scale = el('div', 'tl-scale');
      scale.appendChild(el('span', null, '\u2212' + fmtMs(span)));
      scale.appendChild(el('span', null, 'now'));
      axis.appendChild(scale);
      rows.push(axis);
    }
    names.slice(0, timelineLocksMax).forEach(function (name) {
      var row = el('div', 'tl-row');
      row.dataset.lock = name;
      row.appendChild(el('div', 'tl-name mono', name));
      var track = el('div', 'tl-track');
      lanes[name].segs.forEach(function (s) {
        var start = Math.max(s.from, from);
        var end = s.to === null ? now : s.to;
        var lost = s.kind === 'hold' && s.reason !== null && s.reason !== 'released';
        var bar = el('div', 'tl-' + s.kind + (s.local ? ' local' : '') + (lost ? ' lost' : '') + (s.to === null ? ' open' : ''));
        bar.dataset.owner = s.owner;
        bar.dataset.peer = s.peer;
        if (s.reason !== null) bar.dataset.reason = s.reason;
        bar.style.left = (100 * (start - from) / span) + '%';
        bar.style.width = Math.max(0.3, 100 * (end - start) / span) + '%';
        bar.title = (s.kind === 'hold' ? 'held by ' : 'waited: ') + (s.owner === '' ? '—' : s.owner) + ' on peer ' + s.peer + ' (token ' + s.token + ')\n' +
          fmtTime(s.from) + ' → ' + (s.to === null ? 'now' : fmtTime(s.to)) + ', ' + fmtMs(end - s.from) +
          (s.reason !== null ? '\nended: ' + s.reason : '');
        track.appendChild(bar);
      });
      row.appendChild(track);
      rows.push(row);
    });
    box.replaceChildren.apply(box, rows);
    byId('no-timeline').hidden = rows.length > 0;
  }
`;
