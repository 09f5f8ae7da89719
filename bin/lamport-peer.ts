#!/usr/bin/env node
/**
 * lamport-peer: one peer of a lamport-lock cluster (docs/design.md section 7), built with the
 * protocol levels of transport/codec.ts `protocolLevels`. The flags and the start are in
 * bin/peer-main.ts.
 */
import { hideBin } from 'yargs/helpers';
import { runPeerMain } from './peer-main.js';

await runPeerMain(hideBin(process.argv));
