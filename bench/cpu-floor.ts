/**
 * Peer CPU per operation against the floor (issue 15): a 3-peer lamport-lock cluster and a
 * 3-process floor (bench/floor-peer.ts: the same message pattern, no algorithm), measured
 * alternately in the same minute, each after a warm-up long enough for the JIT to settle.
 * For each: acquire+release per second with C connections on distinct names, the peers'
 * CPU per acquire+release (utime + stime from /proc/<pid>/stat, all three processes), and
 * the p50 of one connection's acquire+release. Prints the CPU model: figures from one host do
 * not hold on another; the ratios are what to compare.
 *
 * npm run build && node dist/bench/cpu-floor.js [--warmup 10] [--seconds 10] [--rounds 2] [--connections 32] [--profile DIR]
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { closeEndpoint, call, endpoint } from './http-json.js';
import { ProcessGroup, freePorts, waitUntil } from './procs.js';
import type { Proc } from './procs.js';
import { lamportSession, startLamport } from './systems/lamport.js';
import type { LockSession } from './systems/types.js';

function num(name: string, dflt: number): number {
  const i = process.argv.indexOf(`--${name}`);
  const v = i < 0 ? undefined : Number(process.argv[i + 1]);
  return v === undefined || !Number.isFinite(v) ? dflt : v;
}

const warmupS = num('warmup', 10);
const seconds = num('seconds', 10);
const rounds = num('rounds', 2);
const connections = num('connections', 32);
const ticksPerSecond = 100; // CLK_TCK on Linux

function cpuMsOf(pids: readonly number[]): number {
  let ticks = 0;
  for (const pid of pids) {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    ticks += Number(fields[11]) + Number(fields[12]); // utime, stime (fields 14 and 15)
  }
  return (ticks * 1000) / ticksPerSecond;
}

function cpuModel(): string {
  const line = readFileSync('/proc/cpuinfo', 'utf8').split('\n').find((l) => l.startsWith('model name'));
  return `${line?.split(':')[1]?.trim() ?? 'unknown CPU'} x ${readFileSync('/proc/cpuinfo', 'utf8').split('\n').filter((l) => l.startsWith('processor')).length}`;
}

interface System {
  readonly name: string;
  readonly sessions: readonly LockSession[];
  readonly pids: readonly number[];
}

/** Runs `n` loops of acquire+release on distinct names for `ms`; returns the count. */
async function load(sys: System, n: number, ms: number, tag: string): Promise<number> {
  const end = performance.now() + ms;
  let ops = 0;
  await Promise.all(Array.from({ length: n }, async (_, w) => {
    const s = sys.sessions[w % sys.sessions.length];
    if (s === undefined) return;
    for (let i = 0; performance.now() < end; i++) {
      const g = await s.acquire(`${tag}-${w}-${i % 100}`, 5000);
      await s.release(g);
      ops++;
    }
  }));
  return ops;
}

async function p50(sys: System, ms: number): Promise<number> {
  const s = sys.sessions[0];
  if (s === undefined) return NaN;
  const samples: number[] = [];
  const end = performance.now() + ms;
  for (let i = 0; performance.now() < end; i++) {
    const t = performance.now();
    await s.release(await s.acquire(`p50-${i % 100}`, 5000));
    samples.push(performance.now() - t);
  }
  samples.sort((a, b) => a - b);
  return samples[Math.floor(samples.length / 2)] ?? NaN;
}

async function measure(sys: System): Promise<{ opsPerS: number; cpuMsPerOp: number; p50Ms: number }> {
  await load(sys, connections, warmupS * 1000, 'warm');
  const cpu0 = cpuMsOf(sys.pids);
  const ops = await load(sys, connections, seconds * 1000, 'run');
  const cpu1 = cpuMsOf(sys.pids);
  const p = await p50(sys, 3000);
  return { opsPerS: ops / seconds, cpuMsPerOp: (cpu1 - cpu0) / ops, p50Ms: p };
}

async function startFloor(group: ProcessGroup): Promise<{ sys: System; stop: () => Promise<void> }> {
  const ports = await freePorts(6);
  const ws = [ports[0], ports[1], ports[2]].join(',');
  const bin = resolve(fileURLToPath(new URL('.', import.meta.url)), 'floor-peer.js');
  const procs: Proc[] = [0, 1, 2].map((i) => group.spawn({ label: `floor-${i}`, command: process.execPath, args: [bin, '--index', String(i), '--http', String(ports[3 + i]), '--ws', ws] }));
  const eps = [0, 1, 2].map((i) => endpoint('127.0.0.1', ports[3 + i] ?? 0, 256));
  for (const ep of eps) {
    const ok = await waitUntil(async () => (await call(ep, { method: 'GET', path: '/readyz', deadlineMs: 1000 }).catch(() => ({ status: 0 }))).status === 200, 10_000);
    if (!ok) throw new Error('floor not ready');
  }
  return {
    sys: { name: 'floor', sessions: eps.map((ep) => lamportSession(ep)), pids: procs.map((p) => p.pid) },
    stop: async () => {
      eps.forEach(closeEndpoint);
      await Promise.all(procs.map((p) => group.stop(p)));
    },
  };
}

async function main(): Promise<void> {
  const group = new ProcessGroup();
  try {
    const peerBin = resolve(fileURLToPath(new URL('..', import.meta.url)), 'bin/lamport-peer.js');
    // --profile DIR: the peers write V8 CPU profiles there when they stop (open them in Chrome's DevTools).
    const profileAt = process.argv.indexOf('--profile');
    const profileDir = profileAt < 0 ? undefined : process.argv[profileAt + 1];
    const cluster = await startLamport(group, { peerBin, peerCount: 3, ...(profileDir === undefined ? {} : { nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${resolve(profileDir)}`] }) });
    const lamport: System = { name: 'lamport-lock', sessions: await Promise.all([0, 1, 2].map((w) => cluster.openSession(w))), pids: cluster.peers.map((p) => p.proc.pid) };
    const floor = await startFloor(group);
    console.log(`CPU: ${cpuModel()}; ${connections} connections, warm-up ${warmupS} s, ${seconds} s measured, ${rounds} rounds alternating`);
    console.log('| round | system | acquire+release/s | peer CPU ms per op (3 processes) | p50 ms (1 connection) |');
    console.log('|---|---|---|---|---|');
    const results: Record<string, Array<{ opsPerS: number; cpuMsPerOp: number; p50Ms: number }>> = { 'lamport-lock': [], floor: [] };
    for (let r = 1; r <= rounds; r++) {
      for (const sys of [lamport, floor.sys]) {
        const m = await measure(sys);
        results[sys.name]?.push(m);
        console.log(`| ${r} | ${sys.name} | ${m.opsPerS.toFixed(0)} | ${m.cpuMsPerOp.toFixed(3)} | ${m.p50Ms.toFixed(2)} |`);
      }
    }
    const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
    const of = (name: string, k: 'opsPerS' | 'cpuMsPerOp' | 'p50Ms'): number => median((results[name] ?? []).map((m) => m[k]));
    console.log('');
    console.log(`ratios (lamport-lock / floor, medians): CPU per op ${(of('lamport-lock', 'cpuMsPerOp') / of('floor', 'cpuMsPerOp')).toFixed(2)}x, ` +
      `throughput ${(of('lamport-lock', 'opsPerS') / of('floor', 'opsPerS')).toFixed(2)}x, p50 ${(of('lamport-lock', 'p50Ms') / of('floor', 'p50Ms')).toFixed(2)}x`);
    await floor.stop();
    await cluster.stop();
  } finally {
    await group.stopAll();
  }
}

await main();
