/**
 * The processes the benchmark starts: every one is spawned into a temp dir, logged to a
 * file there, and stopped again on success, on failure and on SIGINT. Nothing here talks
 * to a host other than 127.0.0.1.
 */
import { spawn, spawnSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { createWriteStream, mkdtempSync, rmSync, readFileSync, existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { getPriority, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';

/** How long a stopped process gets between SIGTERM and SIGKILL. */
const stopGraceMs = 5000;

/** One process the group started. */
export interface Proc {
  readonly label: string;
  readonly child: ChildProcess;
  readonly pid: number;
  readonly logPath: string;
  /** Resolves with the exit code (or signal name) once the process is gone. */
  readonly exited: Promise<string>;
}

/** Options of one spawn. */
export interface SpawnOptions {
  readonly label: string;
  readonly command: string;
  readonly args: readonly string[];
  readonly cwd?: string;
  readonly env?: NodeJS.ProcessEnv;
  /** Opens a Node IPC channel to the child (for `node` children that use process.send). */
  readonly ipc?: boolean;
  /**
   * A server under test (a lamport-lock peer, an etcd member, redis, a floor process): it runs
   * at the group's `serverNice`, the load generators at the benchmark's own priority.
   */
  readonly server?: boolean;
  /** Runs at this nice value (absolute), whatever `server` says. */
  readonly nice?: number;
}

/**
 * The nice value deploy/lamport-peer.service runs a peer at (its `Nice=`, read from that file,
 * its one home), above the other processes of its host (docs/operations.md, "systemd").
 */
export const deployedPeerNice = unitNice();

/** `Nice=` of the systemd unit shipped in deploy/ (0 when it sets none). */
function unitNice(): number {
  // From dist/bench/ when built, from bench/ when read as source.
  const unit = ['../../deploy/lamport-peer.service', '../deploy/lamport-peer.service'].map((rel) => fileURLToPath(new URL(rel, import.meta.url))).find((path) => existsSync(path));
  if (unit === undefined) throw new Error('deploy/lamport-peer.service not found: the benchmark runs from a checkout of the repository');
  const nice = /^Nice=(-?\d+)\s*$/m.exec(readFileSync(unit, 'utf8'))?.[1];
  return nice === undefined ? 0 : Number(nice);
}

/** Every process the benchmark started, and the temp dir they live in. */
export class ProcessGroup {
  readonly dir: string;
  private readonly procs: Proc[] = [];
  private keepDir = false;
  private stopping = false;
  /** The nice value servers are started at (`server: true`); 0 by default, the priority of the load generators. */
  readonly serverNice: number;
  /** Why a server's priority could not be set (the first refusal), or null. */
  private niceRefused: string | null = null;
  /** The processes started through `nice`, with the value each should run at, checked when stopped. */
  private readonly reniced = new Map<Proc, number>();

  constructor(opts: { serverNice?: number } = {}) {
    this.dir = mkdtempSync(join(tmpdir(), 'lamport-bench-'));
    this.serverNice = opts.serverNice ?? 0;
  }

  /** Why a process did not run at the nice value it was started at (the first one found), or null. */
  niceRefusal(): string | null {
    return this.niceRefused;
  }

  /**
   * Spawns a process with stdout and stderr going to `<dir>/<label>.log`. A process with a
   * nice value of its own (`nice`, or `serverNice` for a server) starts through `nice`, so that
   * every thread it makes runs at it (a setpriority after the spawn reaches only the threads
   * the process has not made yet).
   */
  spawn(opts: SpawnOptions): Proc {
    if (this.stopping) throw new Error(`not starting ${opts.label}: the benchmark is stopping`);
    const logPath = join(this.dir, `${opts.label}.log`);
    const log = createWriteStream(logPath);
    // `nice -n` adds to the benchmark's own niceness; the values asked for are absolute.
    const target = opts.nice ?? (opts.server === true ? this.serverNice : undefined);
    const increment = target === undefined ? 0 : target - getPriority();
    const reniced = increment !== 0;
    const [command, args] = reniced ? ['nice', ['-n', String(increment), opts.command, ...opts.args]] : [opts.command, [...opts.args]];
    const child = spawn(command, args, {
      cwd: opts.cwd ?? this.dir,
      env: opts.env ?? process.env,
      stdio: opts.ipc === true ? ['ignore', 'pipe', 'pipe', 'ipc'] : ['ignore', 'pipe', 'pipe'],
    });
    child.stdout?.pipe(log);
    child.stderr?.pipe(log);
    const exited = new Promise<string>((resolve) => {
      child.once('exit', (code, signal) => resolve(signal ?? String(code)));
      child.once('error', (err) => resolve(`spawn error: ${err.message}`));
    });
    const proc: Proc = { label: opts.label, child, pid: child.pid ?? -1, logPath, exited };
    this.procs.push(proc);
    if (reniced) this.reniced.set(proc, target ?? 0);
    return proc;
  }

  /** Notes a process that does not run at the nice value it was started at (`nice` could not set it: no permission). */
  private verifyNice(proc: Proc): void {
    const target = this.reniced.get(proc);
    if (target === undefined || this.niceRefused !== null) return;
    try {
      const nice = getPriority(proc.pid);
      if (nice !== target) this.niceRefused = `${proc.label} ran at nice ${nice} (raising a priority needs CAP_SYS_NICE)`;
    } catch {
      // Gone already: nothing to check.
    }
  }

  /** Stops one process: SIGTERM, then SIGKILL after the grace period. */
  async stop(proc: Proc): Promise<void> {
    if (proc.child.exitCode !== null || proc.child.signalCode !== null) return;
    this.verifyNice(proc);
    proc.child.kill('SIGTERM');
    const killed = await Promise.race([proc.exited.then(() => true), sleep(stopGraceMs).then(() => false)]);
    if (!killed) {
      proc.child.kill('SIGKILL');
      await proc.exited;
    }
  }

  /** Stops every process still running, newest first, then removes the temp dir. */
  async stopAll(): Promise<void> {
    this.stopping = true;
    const running = [...this.procs].reverse();
    await Promise.all(running.map((p) => this.stop(p)));
    if (!this.keepDir) rmSync(this.dir, { recursive: true, force: true });
  }

  /** Last resort on process exit: SIGKILL whatever is left, synchronously. */
  killAllNow(): void {
    for (const p of this.procs) {
      if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
    }
  }

  /** Keeps the temp dir (logs) after stopAll, so a failure can be read. */
  keepLogs(): void {
    this.keepDir = true;
  }
}

/** Last `lineCount` lines of a log file, for error messages. */
export function logTail(path: string, lineCount = 15): string {
  if (!existsSync(path)) return '(no log)';
  const lines = readFileSync(path, 'utf8').trimEnd().split('\n');
  return lines.slice(-lineCount).join('\n');
}

/**
 * Free TCP ports on 127.0.0.1, found by listening on port 0. All probe sockets stay open
 * until every port is known, so one call never returns the same port twice.
 */
export async function freePorts(count: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from({ length: count }, () =>
      new Promise<ReturnType<typeof createServer>>((resolve, reject) => {
        const server = createServer();
        server.once('error', reject);
        server.listen(0, '127.0.0.1', () => resolve(server));
      }),
    ),
  );
  const ports = servers.map((s) => {
    const addr = s.address();
    if (addr === null || typeof addr === 'string') throw new Error('port probe has no address');
    return addr.port;
  });
  await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
  return ports;
}

/** Whether an executable can be found on PATH (or at an absolute path). */
export function commandExists(command: string): boolean {
  const found = spawnSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' });
  return found.status === 0;
}

/** First line of `command args` output, or null when it cannot run. */
export function commandOutput(command: string, args: readonly string[]): string | null {
  const out = spawnSync(command, [...args], { encoding: 'utf8', timeout: 10_000 });
  if (out.status !== 0) return null;
  return out.stdout.trim();
}

/**
 * Raises the open-files limit of a process (soft and hard) with `prlimit`, which needs
 * root or CAP_SYS_RESOURCE. Returns the soft limit now in force.
 */
export function raiseFileLimit(pid: number, filesMax: number): number {
  spawnSync('prlimit', ['--pid', String(pid), `--nofile=${filesMax}:${filesMax}`], { stdio: 'ignore', timeout: 10_000 });
  return fileLimitOf(pid);
}

/** Soft open-files limit of a process, read from /proc. */
export function fileLimitOf(pid: number): number {
  const text = readFileSync(`/proc/${pid}/limits`, 'utf8');
  const line = text.split('\n').find((l) => l.startsWith('Max open files'));
  const soft = line?.split(/\s{2,}/)[1];
  return soft === undefined ? 0 : Number(soft);
}

/** Resident set size of a process in bytes (VmRSS of /proc/PID/status), or null. */
export function rssBytesOf(pid: number): number | null {
  try {
    const text = readFileSync(`/proc/${pid}/status`, 'utf8');
    const match = /^VmRSS:\s+(\d+)\s+kB/m.exec(text);
    return match?.[1] === undefined ? null : Number(match[1]) * 1024;
  } catch {
    return null;
  }
}

/**
 * Polls `check` every `intervalMs` until it returns true or `timeoutMs` passes; a bounded
 * loop. Returns whether it became true.
 */
export async function waitUntil(check: () => Promise<boolean>, timeoutMs: number, intervalMs = 100): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check().catch(() => false)) return true;
    await sleep(intervalMs);
  }
  return false;
}
