/**
 * What a CLI command costs beyond starting Node: `skep version`, `skep --help` and `skep list`
 * on the built bundle (`dist/skep.mjs`), side by side with `node -e 0` in one run. `list` runs
 * against a throw-away Skep home in which `skep serve` runs and one stdio echo workload is
 * started, so it has a row to show.
 *
 * The commands run in interleaved rounds (node, version, --help, list, node, ...) so that the
 * noise of a shared machine lands on all of them alike. Per command: the wall time (spawn →
 * exit) and the CPU time of the child (user + system, from this process's `cutime`/`cstime` in
 * /proc/self/stat, in clock ticks), as p50/p90, and the p50s' difference to bare Node.
 * Targets: version within 80 ms of bare Node, list within 150 ms, --help within 100 ms (wall,
 * p50). Also the size of dist/skep.mjs and of what `version` loads (the bundle and the chunks
 * it imports statically).
 *
 * BENCH_RUNS (default 30) sets the rounds; SKEP_BENCH_BUNDLE measures another build of
 * skep.mjs (a copy of dist/ from before a change) instead of bundling the sources.
 * Prints one JSON object on stdout; progress goes to stderr.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort } from '../test/helpers/net.js';
import { bundleCli, cli, root, startWorkload } from './lib/workloads.js';

const RUNS = Number(process.env['BENCH_RUNS'] ?? 30);
const WARMUP = 3;
const TARGETS_OVER_NODE_MS = { version: 80, help: 100, list: 150 };

const log = (msg: string): void => {
  process.stderr.write(`[cli.bench] ${msg}\n`);
};

/** Clock ticks per second of /proc times (`getconf CLK_TCK`; 100 on Linux). */
function clockTicks(): number {
  const out = spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' });
  const ticks = Number(out.stdout?.trim());
  return Number.isFinite(ticks) && ticks > 0 ? ticks : 100;
}

/** CPU time of this process's waited-for children so far (user + system), in ticks. */
function childrenCpuTicks(): number {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  // Fields after the command name (which may hold spaces): state is field 3, cutime 16, cstime 17.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[13]) + Number(fields[14]);
}

function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return Math.round((sorted[i] ?? 0) * 10) / 10;
}

const mean = (values: number[]): number =>
  Math.round((values.reduce((a, b) => a + b, 0) / Math.max(1, values.length)) * 10) / 10;

/** The bundle and the chunks it imports statically: what every command loads before it runs. */
function staticClosure(entry: string): { files: number; bytes: number } {
  const seen = new Set<string>();
  const visit = (file: string): void => {
    if (seen.has(file)) return;
    seen.add(file);
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(/^(?:import|export)\s[^;]*?["'](\.\.?\/[^"']+\.mjs)["'];/gm))
      visit(resolve(dirname(file), m[1] as string));
  };
  visit(entry);
  let bytes = 0;
  for (const file of seen) bytes += statSync(file).size;
  return { files: seen.size, bytes };
}

/** Starts `skep serve` on a free port in `env`'s home; resolves once `/health` answers 204. */
async function startServe(bundle: string, env: NodeJS.ProcessEnv): Promise<ChildProcess> {
  const port = await freePort();
  const child = spawn(process.execPath, [bundle, 'serve', '--port', String(port)], { env, stdio: 'ignore' });
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`skep serve exited with ${child.exitCode}`);
    try {
      if ((await fetch(`http://127.0.0.1:${port}/health`)).status === 204) return child;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error('skep serve did not become healthy in 30 s');
    await sleep(20);
  }
}

async function main(): Promise<void> {
  const given = process.env['SKEP_BENCH_BUNDLE'];
  if (given === undefined) {
    log('bundling the CLI');
    bundleCli();
  }
  const bundle = resolve(given ?? join(root, 'dist/skep.mjs'));
  const home = mkdtempSync(join(tmpdir(), 'skep-bench-cli-'));
  const env = { ...process.env, SKEP_HOME: home, SKEP_LOG_LEVEL: 'silent' };
  let serve: ChildProcess | undefined;
  try {
    serve = await startServe(bundle, env);
    await startWorkload(env, home, 'bench-echo', {});
    const commands: Record<string, string[]> = {
      node: ['-e', '0'],
      version: [bundle, 'version'],
      help: [bundle, '--help'],
      list: [bundle, 'list'],
    };
    for (const [name, args] of Object.entries(commands)) {
      const check = spawnSync(process.execPath, args, { env, encoding: 'utf8' });
      if (check.status !== 0) throw new Error(`${name} exited ${check.status}: ${check.stderr}`);
      if (name === 'list' && !check.stdout.includes('bench-echo')) throw new Error('list shows no workload');
    }
    const msPerTick = 1000 / clockTicks();
    const wall: Record<string, number[]> = {};
    const cpu: Record<string, number[]> = {};
    for (let round = 0; round < WARMUP + RUNS; round++) {
      for (const [name, args] of Object.entries(commands)) {
        const ticks = childrenCpuTicks();
        const started = performance.now();
        spawnSync(process.execPath, args, { env, stdio: 'ignore' });
        const elapsed = performance.now() - started;
        if (round < WARMUP) continue;
        (wall[name] ??= []).push(elapsed);
        (cpu[name] ??= []).push((childrenCpuTicks() - ticks) * msPerTick);
      }
      if (round >= WARMUP && (round - WARMUP + 1) % 10 === 0) log(`round ${round - WARMUP + 1}/${RUNS}`);
    }
    const nodeWall = quantile(wall['node'] ?? [], 0.5);
    const nodeCpu = quantile(cpu['node'] ?? [], 0.5);
    const results: Record<string, unknown> = {};
    for (const name of Object.keys(commands)) {
      const w = wall[name] ?? [];
      const c = cpu[name] ?? [];
      results[name] = {
        wall_ms: { p50: quantile(w, 0.5), p90: quantile(w, 0.9) },
        cpu_ms: { p50: quantile(c, 0.5), p90: quantile(c, 0.9), mean: mean(c) },
        ...(name === 'node'
          ? {}
          : {
              over_node_ms: {
                wall_p50: Math.round((quantile(w, 0.5) - nodeWall) * 10) / 10,
                cpu_p50: Math.round((quantile(c, 0.5) - nodeCpu) * 10) / 10,
              },
            }),
      };
    }
    const met = Object.fromEntries(
      Object.entries(TARGETS_OVER_NODE_MS).map(([name, limit]) => [
        name,
        quantile(wall[name] ?? [], 0.5) - nodeWall <= limit,
      ]),
    );
    process.stdout.write(
      `${JSON.stringify({
        runs: RUNS,
        commands: results,
        bundle_bytes: statSync(bundle).size,
        version_loads: staticClosure(bundle),
        targets_wall_p50_over_node_ms: TARGETS_OVER_NODE_MS,
        targets_met: met,
        cpu_tick_ms: msPerTick,
        node: process.version,
      })}\n`,
    );
  } finally {
    cli(env, ['rm', 'bench-echo']);
    if (serve !== undefined && serve.exitCode === null) {
      serve.kill('SIGTERM');
      await once(serve, 'exit');
    }
    rmSync(home, { recursive: true, force: true });
  }
}

await main();
