#!/usr/bin/env node
// Bundles the CLI into dist/skep.mjs and the workload runner into dist/runner.mjs (options
// and the reasons for them: scripts/bundle-config.mjs), and the web UI into dist/ui/
// (scripts/bundle-ui.mjs).
import { rmSync, writeFileSync } from 'node:fs';
import { build } from 'esbuild';
import { cliBuild, runnerBuild } from './bundle-config.mjs';
import { buildUi } from './bundle-ui.mjs';

// Chunk names carry content hashes: clear the old ones so dist/ holds only this build.
rmSync('dist/chunks', { recursive: true, force: true });
await Promise.all([build(cliBuild), build(runnerBuild), buildUi()]);
// When this build was made, for `npm start` (scripts/build-freshness.mjs).
writeFileSync('dist/.built', `${new Date().toISOString()}\n`);
