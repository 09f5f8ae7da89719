/**
 * CPU time of processes and the name of the host's CPU (issue 15): figures from one host do
 * not hold on another, so every report that gives CPU per operation names the CPU it ran on.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';

/** Clock ticks per second of /proc/<pid>/stat (CLK_TCK; 100 on every Linux we know of). */
function clockTicksPerSecond(): number {
  const out = spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8', timeout: 5000 });
  const ticks = out.status === 0 ? Number(out.stdout.trim()) : Number.NaN;
  return Number.isInteger(ticks) && ticks > 0 ? ticks : 100;
}

const ticksPerSecond = clockTicksPerSecond();

/**
 * CPU milliseconds of one process from /proc/<pid>/stat: utime + stime (fields 14 and 15),
 * every thread including exited ones, but in whole clock ticks (10 ms).
 */
function statCpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // The command name (field 2) may hold spaces; the fields after it are counted from its ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / ticksPerSecond;
}

/**
 * CPU milliseconds of one process from the scheduler: the first field of every thread's
 * /proc/<pid>/task/<tid>/schedstat, in nanoseconds. A thread that exits takes its time with
 * it, which a Node process's long-lived threads (JS, GC helpers, libuv's pool) do not do.
 * Null when the kernel does not expose schedstat.
 */
function schedCpuMs(pid: number): number | null {
  let ns = 0;
  let seen = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    let text: string;
    try {
      text = readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8');
    } catch {
      continue; // the thread ended between the listing and the read, or no schedstat
    }
    ns += Number(text.split(' ')[0]);
    seen++;
  }
  return seen === 0 ? null : ns / 1e6;
}

/** Where cpuMsOf reads: the scheduler's nanoseconds where the kernel has them, else clock ticks. */
export const cpuTimeSource: string = existsSync('/proc/self/task') && existsSync(`/proc/self/task/${process.pid}/schedstat`)
  ? 'the scheduler\'s run time of every thread (/proc/<pid>/task/*/schedstat, ns)'
  : 'utime + stime of /proc/<pid>/stat (every thread, 10 ms ticks)';

const useSchedstat = cpuTimeSource.includes('schedstat');

/** CPU milliseconds the processes have used so far (see cpuTimeSource). */
export function cpuMsOf(pids: readonly number[]): number {
  let ms = 0;
  for (const pid of pids) ms += (useSchedstat ? schedCpuMs(pid) : null) ?? statCpuMs(pid);
  return ms;
}

/** Read and write system calls (read, readv, write, writev...) of processes so far. */
export interface IoCalls {
  readonly reads: number;
  readonly writes: number;
}

/**
 * The read- and write-family system calls the processes have made so far (`syscr` and
 * `syscw` of /proc/<pid>/io, every thread); zero where the kernel does not expose them.
 */
export function ioCallsOf(pids: readonly number[]): IoCalls {
  let reads = 0;
  let writes = 0;
  for (const pid of pids) {
    let text: string;
    try {
      text = readFileSync(`/proc/${pid}/io`, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n')) {
      const [key, value] = line.split(':');
      if (key === 'syscr') reads += Number(value);
      if (key === 'syscw') writes += Number(value);
    }
  }
  return { reads, writes };
}

/** A field of the first processor's block in /proc/cpuinfo, or undefined. */
function cpuinfoField(name: string): string | undefined {
  try {
    const line = readFileSync('/proc/cpuinfo', 'utf8').split('\n').find((l) => l.split(':')[0]?.trim() === name);
    return line?.slice(line.indexOf(':') + 1).trim();
  } catch {
    return undefined;
  }
}

/**
 * The host's CPU as the reports name it: "2 × AMD EPYC (family 25 model 17 stepping 1,
 * 2596 MHz, virtual machine, page-table isolation without PCID)". A virtual machine's model
 * name may be as short as "AMD EPYC": family and model still tell the generation. The last two
 * say what makes a system call and a wake-up dear on this host (`syscallCostNotes`).
 */
export function hostCpuName(): string {
  const all = cpus();
  const ids = ['cpu family', 'model', 'stepping'].map(cpuinfoField);
  const mhz = all[0]?.speed || Math.round(Number(cpuinfoField('cpu MHz')));
  const detail = [
    ids.every((v) => v !== undefined) ? `family ${ids[0]} model ${ids[1]} stepping ${ids[2]}` : undefined,
    mhz === undefined || !(mhz > 0) ? undefined : `${mhz} MHz`,
    ...syscallCostNotes(),
  ].filter((d) => d !== undefined);
  return `${all.length} × ${all[0]?.model.trim() ?? 'unknown CPU'}${detail.length === 0 ? '' : ` (${detail.join(', ')})`}`;
}

/**
 * What makes every system call and wake-up dear on this host, which the ratios to the floor
 * depend on (bench/README.md, "Hosts"): a virtual machine (the CPU's `hypervisor` flag), and
 * the kernel's page-table isolation (its Meltdown mitigation) without PCID, under which each
 * system call empties the TLB, so that a process pays again for every page it touches after
 * one. Empty on a host with neither, or where the files cannot be read.
 */
function syscallCostNotes(): string[] {
  const flags = (cpuinfoField('flags') ?? '').split(' ');
  let meltdown = '';
  try {
    meltdown = readFileSync('/sys/devices/system/cpu/vulnerabilities/meltdown', 'utf8');
  } catch {
    // Not Linux, or no such file: nothing to say.
  }
  const notes: string[] = [];
  if (flags.includes('hypervisor')) notes.push('virtual machine');
  if (meltdown.includes('PTI')) notes.push(flags.includes('pcid') ? 'page-table isolation' : 'page-table isolation without PCID');
  return notes;
}

/** The 1-minute load average: how busy the host was besides the benchmark. */
export function loadAverage1m(): number {
  return loadavg()[0] ?? Number.NaN;
}
