/**
 * `skep serve` cold start (process spawn → first `/health` 204) and idle RSS, on the built
 * CLI bundle (`dist/skep.mjs`, as `npm start` runs it). Targets: cold start median < 400 ms,
 * idle RSS < 90 MB. Prints one JSON object.
 */
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort } from '../test/helpers/net.js';

const RUNS = Number(process.env['BENCH_RUNS'] ?? 15);

function rssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return Math.round((kb / 1024) * 10) / 10;
}

function quantile(sorted: number[], q: number): number {
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return Math.round((sorted[i] ?? 0) * 10) / 10;
}

async function oneRun(measureRss: boolean): Promise<{ coldMs: number; rss?: number }> {
  const home = mkdtempSync(join(tmpdir(), 'skep-bench-'));
  const port = await freePort();
  const started = performance.now();
  const child = spawn(process.execPath, ['dist/skep.mjs', 'serve', '--port', String(port)], {
    env: { ...process.env, SKEP_HOME: home, SKEP_LOG_LEVEL: 'silent' },
    stdio: 'ignore',
  });
  let coldMs: number;
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`serve exited with ${child.exitCode}`);
      try {
        const res = await fetch(`http://127.0.0.1:${port}/health`);
        if (res.status === 204) {
          coldMs = performance.now() - started;
          break;
        }
      } catch {
        // not listening yet
      }
      await sleep(2);
      if (performance.now() - started > 20_000) throw new Error('serve did not become healthy in 20 s');
    }
    let rss: number | undefined;
    if (measureRss) {
      await sleep(3000);
      rss = rssMiB(child.pid ?? 0);
    }
    return rss === undefined ? { coldMs } : { coldMs, rss };
  } finally {
    child.kill('SIGTERM');
    await once(child, 'exit');
    rmSync(home, { recursive: true, force: true });
  }
}

const build = spawnSync(process.execPath, ['scripts/bundle.mjs'], { stdio: 'inherit' });
if (build.status !== 0) throw new Error('build failed');
await oneRun(false); // warm the OS file cache once
const cold: number[] = [];
let idleRss = 0;
for (let i = 0; i < RUNS; i++) {
  const r = await oneRun(i === 0);
  cold.push(r.coldMs);
  if (r.rss !== undefined) idleRss = r.rss;
  process.stderr.write(`  run ${i + 1}/${RUNS}: ${r.coldMs.toFixed(1)} ms\n`);
}
cold.sort((a, b) => a - b);
process.stdout.write(
  `${JSON.stringify({
    runs: RUNS,
    cold_start_ms: {
      p50: quantile(cold, 0.5),
      p90: quantile(cold, 0.9),
      min: quantile(cold, 0),
      max: quantile(cold, 1),
    },
    idle_rss_mib: idleRss,
    targets: { cold_start_p50_ms: 400, idle_rss_mib: 90 },
    node: process.version,
  })}\n`,
);
