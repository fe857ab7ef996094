#!/usr/bin/env node
// Bundles the CLI into dist/skep.mjs and the workload runner into dist/runner.mjs (options
// and the reasons for them: scripts/bundle-config.mjs).
import { rmSync } from 'node:fs';
import { build } from 'esbuild';
import { cliBuild, runnerBuild } from './bundle-config.mjs';

// Chunk names carry content hashes: clear the old ones so dist/ holds only this build.
rmSync('dist/chunks', { recursive: true, force: true });
await Promise.all([build(cliBuild), build(runnerBuild)]);
