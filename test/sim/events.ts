/**
 * What the simulator's agenda holds: work for one process (its timers, its sockets' events,
 * its clients' calls), which waits while the process is frozen and vanishes when it dies;
 * work of the world around the processes (the hosts' kernels, the fault plan, the
 * workload); and the start of the liveness phase.
 */
import type { ProcessTask, SimProcess } from './host.js';

/** Anything on the agenda. */
export type SimEvent =
  | { readonly k: 'task'; readonly proc: SimProcess; readonly task: ProcessTask }
  | { readonly k: 'world'; readonly fn: () => void }
  | { readonly k: 'liveness' };

/** Puts world work on the agenda at a virtual time in ms. */
export type ScheduleWorld = (atMs: number, fn: () => void) => void;
