/**
 * Preloaded into a peer (`node --import dist/bench/loop-stalls.js`) by bench/disk-stall.ts: a
 * 10 ms interval timer that writes one JSON line to stderr, `{"loopStallMs": n}`, whenever it
 * fires 50 ms or more late, i.e. whenever the event loop was blocked or busy that long.
 */
const tickMs = 10;
const reportMs = 50;
let last = performance.now();
setInterval(() => {
  const now = performance.now();
  const late = now - last - tickMs;
  last = now;
  if (late >= reportMs) process.stderr.write(`${JSON.stringify({ loopStallMs: Math.round(late) })}\n`);
}, tickMs).unref();
