/**
 * The short Jepsen-style run of CI (issue 5): about 75 s of faults against 5 real peers,
 * every ordered link through a fault proxy, then the heal and the checks. The seed is
 * printed; `FAULT_SEED=<n> npx vitest run test/fault` replays its fault schedule.
 * The long run is `npm run jepsen -- --minutes 30` (see run.ts).
 *
 * The twin fault (a second process with a live peer's id) is drawn too: before the fix of
 * issue 12, defect 1 it made two valid exclusive holders (`npm run jepsen -- --minutes 3
 * --seed 1`: 13 violations then, 0 now). `FAULT_TWIN=0` leaves it out.
 *
 * The second run draws only replaces, kills and partitions for about a minute
 * (`FAULT_REPLACE_MS`): members are replaced by new hosts with `lamport-lock member replace`
 * while the clients contend, and the checks hold across the changes: a replacement's tokens
 * below the ones granted before it (the fenced registers refuse them, the token order breaks)
 * fail it.
 */
import { describe, expect, it } from 'vitest';
import { testSeed } from '../support/seed.js';
import { runJepsen } from './jepsen.js';
import { faultKinds } from './nemesis.js';

const faultMs = Number(process.env['FAULT_MS'] ?? 75_000);
const replaceMs = Number(process.env['FAULT_REPLACE_MS'] ?? 60_000);
const kinds = process.env['FAULT_TWIN'] === '0' ? faultKinds.filter((k) => k !== 'twin') : faultKinds;

describe('fault run with real processes', () => {
  it('keeps valid holds within their modes, tokens increasing and the fenced registers whole under kills, wipes, pauses, partitions and stalls; nothing stuck after the heal', async () => {
    const seed = testSeed('fault run', 'FAULT_SEED');
    const result = await runJepsen({ seed, faultMs, faultKinds: kinds, log: (line) => process.stdout.write(`${line}\n`) });
    process.stdout.write(`${result.summary.join('\n')}\n`);
    expect(result.violations).toEqual([]);
    expect(result.liveness).toEqual([]);
    // Real work happened: faults of several kinds, grants, accepted fenced writes. (Holds of
    // faulted peers are few per run, since holds are short: checker.test.ts covers them.)
    expect(result.faultsTotal).toBeGreaterThanOrEqual(Math.floor(faultMs / 10_000));
    expect(Object.values(result.faults).filter((n) => n > 0).length).toBeGreaterThanOrEqual(3);
    expect(result.grants).toBeGreaterThanOrEqual(200);
    expect(result.validHolds).toBeGreaterThanOrEqual(100);
    expect(result.writesAccepted).toBeGreaterThanOrEqual(200);
  }, faultMs + 60_000);

  it('replaces dead members by new hosts (member replace) among kills and partitions, the checks holding across the changes', async () => {
    const seed = testSeed('fault run with replaces', 'FAULT_SEED');
    const result = await runJepsen({ seed, faultMs: replaceMs, faultKinds: ['replace', 'kill', 'partition'], log: (line) => process.stdout.write(`${line}\n`) });
    process.stdout.write(`${result.summary.join('\n')}\n`);
    expect(result.violations).toEqual([]);
    expect(result.liveness).toEqual([]); // A replace that did not make its four steps is one.
    expect(result.faults.replace).toBeGreaterThanOrEqual(1);
    const newHosts = result.members.filter((id) => /^e\d+$/.test(id));
    expect(newHosts.length).toBeGreaterThanOrEqual(1);
    // The replacements granted to the clients moved to them: their holds were checked too.
    expect(newHosts.reduce((n, id) => n + (result.grantsByPeer[id] ?? 0), 0)).toBeGreaterThanOrEqual(20);
    expect(result.validHolds).toBeGreaterThanOrEqual(100);
  }, replaceMs + 90_000);
});
