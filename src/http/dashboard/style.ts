/** The dashboard's stylesheet (served as GET /dashboard/style.css). */
export const dashboardCss = `:root {
  --bg: #f6f7f9; --card: #fff; --ink: #1d2330; --dim: #6b7385; --line: #e2e5eb;
  --ok: #1f8a4c; --ok-bg: #e3f4ea; --bad: #b4232a; --bad-bg: #fbe5e6; --warn: #8a6100; --warn-bg: #fcf1d6;
  --accent: #2a4d9b;
}
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--ink); background: var(--bg); }
header { display: flex; flex-wrap: wrap; gap: 14px; align-items: center; padding: 10px 20px; background: #1d2330; color: #fff; }
header h1 { font-size: 17px; margin: 0 10px 0 0; letter-spacing: .3px; }
header .crumb { color: #b9c0cf; }
header .crumb b { color: #fff; font-weight: 600; }
.banner { margin: 14px 20px 0; padding: 10px 14px; border: 1px solid var(--bad); border-radius: 8px; background: var(--bad-bg); color: var(--bad); }
.banner[hidden] { display: none; }
.banner ul { margin: 4px 0 0; padding-left: 20px; }
main { padding: 14px 20px; display: grid; gap: 16px; }
section { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 10px 14px 14px; }
h2 { font-size: 15px; margin: 4px 0 10px; }
h3 { font-size: 14px; margin: 0; font-family: ui-monospace, SFMono-Regular, Menlo, monospace; overflow-wrap: anywhere; }
table { width: 100%; border-collapse: collapse; }
th { text-align: left; font-weight: 600; color: var(--dim); font-size: 12px; text-transform: uppercase; letter-spacing: .4px; }
th, td { padding: 4px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
td { overflow-wrap: anywhere; }
tr:last-child td { border-bottom: 0; }
td.token { white-space: nowrap; }
.mono, td.token, td.inc { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 12.5px; }
.dim { color: var(--dim); font-weight: normal; }
.badge { display: inline-block; white-space: nowrap; padding: 1px 8px; border-radius: 10px; font-size: 12px; font-weight: 600; background: #e7e9ee; color: var(--ink); }
.badge.ok { background: var(--ok-bg); color: var(--ok); }
.badge.bad { background: var(--bad-bg); color: var(--bad); }
.badge.warn { background: var(--warn-bg); color: var(--warn); }
.badge.mode { background: #e6ecf8; color: var(--accent); }
#locks { display: grid; gap: 10px; grid-template-columns: repeat(auto-fill, minmax(540px, 1fr)); }
.lock { border: 1px solid var(--line); border-radius: 6px; padding: 8px 10px; }
.lock-head { display: flex; gap: 8px; align-items: baseline; margin-bottom: 6px; }
.lock-head .counts { margin-left: auto; }
.lock h4 { margin: 8px 0 2px; font-size: 12px; color: var(--dim); text-transform: uppercase; letter-spacing: .4px; }
.meta { color: var(--dim); font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 12px; }
tr.self td { background: #f3f6fc; }
tr.local td:first-child { box-shadow: inset 3px 0 0 var(--accent); }
#activity td.when { white-space: nowrap; color: var(--dim); font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 12px; }
#timeline { display: grid; gap: 3px; }
.tl-row { display: grid; grid-template-columns: minmax(120px, 220px) 1fr; gap: 8px; align-items: center; }
.tl-name { font-size: 12px; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.tl-scale { display: flex; justify-content: space-between; font-size: 11px; }
.tl-track { position: relative; height: 16px; background: #f0f2f6; border-radius: 3px; }
.tl-hold, .tl-wait { position: absolute; border-radius: 2px; }
.tl-hold { top: 2px; height: 12px; background: #7fa7e0; }
.tl-hold.local { background: var(--accent); }
.tl-hold.lost { background: var(--bad); }
.tl-wait { top: 7px; height: 3px; background: #c5a44e; }
.tl-hold.open, .tl-wait.open { box-shadow: inset -2px 0 0 #1d2330; }
footer { padding: 0 20px 16px; font-size: 12px; }
`;
