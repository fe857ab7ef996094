/**
 * `skep serve` cold start (process spawn → first `/health` 204) and idle RSS, on the built
 * CLI bundle (`dist/skep.mjs`, as `npm start` runs it), side by side with bare Node: a `node -e`
 * HTTP server answering `/health` 204, started and polled the same way, in interleaved runs so
 * that the noise of a shared machine lands on both alike. Targets: healthy within 250 ms of bare
 * Node's start (p50), idle RSS ≤ 80 MiB (3 s after healthy, the median of three runs). Also the
 * CPU time each process has used when it first answers (user + system, /proc/<pid>/stat).
 *
 * BENCH_RUNS (default 15) sets the runs; SKEP_BENCH_BUNDLE measures another build of skep.mjs
 * (a copy of dist/ from before a change) instead of bundling the sources. Prints one JSON object.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort } from '../test/helpers/net.js';

const RUNS = Number(process.env['BENCH_RUNS'] ?? 15);

function rssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return Math.round((kb / 1024) * 10) / 10;
}

/** CPU time (user + system) `pid` has used so far, in ms (/proc/<pid>/stat, 100 ticks a second). */
function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may hold spaces): state is field 3, utime 14, stime 15.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

function quantile(sorted: number[], q: number): number {
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return Math.round((sorted[i] ?? 0) * 10) / 10;
}

/** Bare Node: an HTTP server answering `/health` 204, the least a server can do before it is healthy. */
const BARE_NODE = `require('node:http')
  .createServer((req, res) => { res.statusCode = 204; res.end(); })
  .listen(Number(process.argv[1]), '127.0.0.1');`;

/** Polls `/health` on `port` until 204; the time from spawn to that answer. */
async function untilHealthy(child: ChildProcess, port: number, started: number): Promise<number> {
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the server exited with ${child.exitCode}`);
    try {
      const res = await fetch(`http://127.0.0.1:${port}/health`);
      if (res.status === 204) return performance.now() - started;
    } catch {
      // not listening yet
    }
    await sleep(2);
    if (performance.now() - started > 20_000) throw new Error('the server did not become healthy in 20 s');
  }
}

async function oneRun(
  what: 'serve' | 'node',
  bundle: string,
  measureRss: boolean,
): Promise<{ coldMs: number; cpuMs: number; rss?: number }> {
  const home = mkdtempSync(join(tmpdir(), 'skep-bench-'));
  const port = await freePort();
  const started = performance.now();
  const args = what === 'serve' ? [bundle, 'serve', '--port', String(port)] : ['-e', BARE_NODE, String(port)];
  const child = spawn(process.execPath, args, {
    env: { ...process.env, SKEP_HOME: home, SKEP_LOG_LEVEL: 'silent' },
    stdio: 'ignore',
  });
  try {
    const coldMs = await untilHealthy(child, port, started);
    const cpu = cpuMs(child.pid ?? 0);
    if (!measureRss) return { coldMs, cpuMs: cpu };
    await sleep(3000);
    return { coldMs, cpuMs: cpu, rss: rssMiB(child.pid ?? 0) };
  } finally {
    child.kill('SIGTERM');
    await once(child, 'exit');
    rmSync(home, { recursive: true, force: true });
  }
}

const given = process.env['SKEP_BENCH_BUNDLE'];
if (given === undefined) {
  const build = spawnSync(process.execPath, ['scripts/bundle.mjs'], { stdio: 'inherit' });
  if (build.status !== 0) throw new Error('build failed');
}
const bundle = resolve(given ?? 'dist/skep.mjs');
// Warm the OS file cache once.
await oneRun('serve', bundle, false);
await oneRun('node', bundle, false);
const cold: number[] = [];
const bare: number[] = [];
const coldCpu: number[] = [];
const bareCpu: number[] = [];
const rss: number[] = [];
for (let i = 0; i < RUNS; i++) {
  const r = await oneRun('serve', bundle, i < 3);
  cold.push(r.coldMs);
  coldCpu.push(r.cpuMs);
  if (r.rss !== undefined) rss.push(r.rss);
  const b = await oneRun('node', bundle, false);
  bare.push(b.coldMs);
  bareCpu.push(b.cpuMs);
  process.stderr.write(
    `  run ${i + 1}/${RUNS}: serve ${r.coldMs.toFixed(1)} ms, bare node ${bare.at(-1)?.toFixed(1)} ms\n`,
  );
}
cold.sort((a, b) => a - b);
bare.sort((a, b) => a - b);
rss.sort((a, b) => a - b);
coldCpu.sort((a, b) => a - b);
bareCpu.sort((a, b) => a - b);
const overBare = Math.round((quantile(cold, 0.5) - quantile(bare, 0.5)) * 10) / 10;
const idleRss = quantile(rss, 0.5);
process.stdout.write(
  `${JSON.stringify({
    runs: RUNS,
    cold_start_ms: {
      p50: quantile(cold, 0.5),
      p90: quantile(cold, 0.9),
      min: quantile(cold, 0),
      max: quantile(cold, 1),
    },
    bare_node_start_ms: { p50: quantile(bare, 0.5), p90: quantile(bare, 0.9) },
    // CPU time the process had used when /health first answered: less disturbed by a busy machine.
    cpu_at_healthy_ms: { p50: quantile(coldCpu, 0.5), p90: quantile(coldCpu, 0.9) },
    bare_node_cpu_at_healthy_ms: { p50: quantile(bareCpu, 0.5), p90: quantile(bareCpu, 0.9) },
    over_bare_node_p50_ms: overBare,
    idle_rss_mib: idleRss,
    idle_rss_samples_mib: rss,
    targets: { over_bare_node_p50_ms: 250, idle_rss_mib: 80 },
    targets_met: { over_bare_node_p50_ms: overBare <= 250, idle_rss_mib: idleRss <= 80 },
    node: process.version,
  })}\n`,
);
