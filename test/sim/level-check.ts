/**
 * What rule P9 promises (docs/reconfiguration.md; docs/operations.md, "Protocol levels"): no
 * peer runs at a protocol level its own binary does not speak, and no peer sends a message its
 * peer cannot read: a stream of a peer's link (either way) is established only with a process
 * whose binary speaks the level the peer runs at. Checked after every task of a process (the only moment its level and its links
 * move), reading it through its PeerInspector only: the level it runs at
 * (`protocolLevel`, Session.level) and its links' status; the binary at the other end is the
 * one the simulator started that process on (SimPeerProcess.levels).
 */
import { compareIncarnation } from '../../src/core/types.js';
import { levelsText, speaks } from '../../src/transport/codec.js';
import type { Checker } from './checker.js';
import type { Cluster, SimPeerProcess } from './cluster.js';

/** Holds every process to P9's promise. */
export class LevelCheck {
  readonly #checker: Checker;
  readonly #cluster: Cluster;
  readonly #now: () => number;

  constructor(checker: Checker, cluster: Cluster, now: () => number) {
    this.#checker = checker;
    this.#cluster = cluster;
    this.#now = now;
  }

  /** After a task of `p`: the level it runs at against its own binary and the binary at the other end of each link up. */
  afterTask(p: SimPeerProcess): void {
    if (!p.proc.alive || p.proc.frozen || !p.runtime.started) return;
    const inspect = p.runtime.inspect;
    const level = inspect.protocolLevel();
    const who = `p${p.proc.peer} (process ${p.proc.id})`;
    if (!speaks(p.levels, level)) {
      this.#checker.levels(this.#now(), `${who} runs at protocol level ${level}; its binary speaks ${levelsText(p.levels)}`);
      return;
    }
    for (const link of inspect.links()) {
      // A stream either way is enough: each carries frames both ways (data one way, acks back).
      if ((!link.streams.out && !link.streams.in) || link.incarnation === null) continue;
      const inc = link.incarnation;
      const q = this.#cluster.processes(link.peer).find((x) => x.proc.alive && x.runtime.started && compareIncarnation(x.runtime.inspect.incarnation, inc) === 0);
      if (q === undefined || speaks(q.levels, level)) continue;
      this.#checker.levels(this.#now(), `${who} runs at protocol level ${level} with a stream up to p${q.proc.peer} (process ${q.proc.id}), whose binary speaks ${levelsText(q.levels)}`);
      return;
    }
  }
}
