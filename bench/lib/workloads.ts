/**
 * What the pipeline benchmarks (policy, ops) share: the built CLI (`dist/skep.mjs`, bundled
 * first), stdio echo workloads started with `skep run --from-config`, MCP sessions over one
 * undici pool per workload, and interleaved rounds of sequential `tools/call`s at concurrency
 * 1 and 32 whose medians are reported — so that machine noise lands on every workload alike.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Pool } from 'undici';
import { freePort } from '../../test/helpers/net.js';

const here = dirname(fileURLToPath(import.meta.url));
export const root = join(here, '../..');
const ECHO = join(here, '../fixtures/echo-server.mjs');

/** Rounds and calls per phase, from the environment (`BENCH_ROUNDS`, `BENCH_CALLS_C1`, ...). */
export const SETTINGS = {
  rounds: Number(process.env['BENCH_ROUNDS'] ?? 3),
  callsC1: Number(process.env['BENCH_CALLS_C1'] ?? 2000),
  callsC32: Number(process.env['BENCH_CALLS'] ?? 8000),
  warmup: Number(process.env['BENCH_WARMUP'] ?? 1000),
};

const INIT_BODY = JSON.stringify({
  jsonrpc: '2.0',
  id: 0,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench', version: '1' } },
});

/**
 * Runs the built CLI (`skepCli`: another build's `skep.mjs`, whose runners are then that build's:
 * a CLI starts the `runner.mjs` beside it).
 */
export function cli(
  env: NodeJS.ProcessEnv,
  args: string[],
  nodeFlags: string[] = [],
  skepCli = join(root, 'dist/skep.mjs'),
): { status: number | null; stdout: string; stderr: string } {
  // Node flags of the CLI are passed on to the runners it starts (e.g. --cpu-prof).
  const r = spawnSync(process.execPath, [...nodeFlags, skepCli, ...args], {
    env,
    encoding: 'utf8',
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** Bundles the CLI and runner into `dist/` (the benchmarks measure the built runner). */
export function bundleCli(): void {
  const built = spawnSync(process.execPath, ['scripts/bundle.mjs'], { cwd: root, stdio: 'inherit' });
  if (built.status !== 0) throw new Error('bundling the CLI failed');
}

/** A fresh SKEP_HOME for one bench run, and the workloads started in it. */
export interface BenchHome {
  readonly home: string;
  /** The CLI's environment: this home, logs silent. */
  readonly env: NodeJS.ProcessEnv;
  /** Records a workload to remove on `close`. */
  readonly started: (name: string) => void;
  /** Removes the recorded workloads, then the home. */
  close(): Promise<void>;
}

/** Bundles the CLI (the benchmarks measure the built runner) and makes a fresh SKEP_HOME. */
export async function openBenchHome(tag: string, log: (msg: string) => void): Promise<BenchHome> {
  log('bundling the CLI');
  bundleCli();
  const home = await mkdtemp(join(tmpdir(), `skep-bench-${tag}-`));
  const env = { ...process.env, SKEP_HOME: home, SKEP_LOG_LEVEL: 'silent' };
  const names: string[] = [];
  return {
    home,
    env,
    started: (name) => void names.push(name),
    async close() {
      for (const name of names) cli(env, ['rm', name]);
      await rm(home, { recursive: true, force: true });
    },
  };
}

/**
 * A loopback HTTP server in its own process (the bench process is the client): `script` runs
 * with `node -e`, listens on the port given as its argument and prints a line when ready.
 */
export async function startLoopbackServer(
  script: string,
  what: string,
  nodeFlags: readonly string[] = [],
): Promise<{ port: number; child: ChildProcess }> {
  const port = await freePort();
  const child = spawn(process.execPath, [...nodeFlags, '-e', script, String(port)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve, reject) => {
    child.stdout?.once('data', () => resolve());
    child.once('exit', (code) => reject(new Error(`${what} exited ${code}`)));
  });
  return { port, child };
}

/** A running workload: its port, the working URL its owner's clients get (with the access token). */
export interface StartedWorkload {
  name: string;
  port: number;
  url: string;
}

/**
 * Starts an echo workload with `extra` run-configuration fields; resolves once it runs.
 * `nodeFlags` go to the CLI that starts it, which passes them on to the workload's runner;
 * `skepCli`, another build's CLI, starts that build's runner.
 */
export async function startWorkload(
  env: NodeJS.ProcessEnv,
  dir: string,
  name: string,
  extra: Record<string, unknown>,
  nodeFlags: string[] = [],
  skepCli?: string,
): Promise<StartedWorkload> {
  const file = join(dir, `${name}.json`);
  writeFileSync(
    file,
    JSON.stringify({
      name,
      image: `cmd://${process.execPath}`,
      cmd_args: [ECHO],
      transport: 'stdio',
      ...extra,
    }),
  );
  const run = cli(env, ['run', '--from-config', file, '--json'], nodeFlags, skepCli);
  if (run.status !== 0) throw new Error(`skep run ${name} failed: ${run.stderr}`);
  // Lines of V8's traces, when asked for (`--trace-gc`: `[pid:0x…] …`, `--trace-opt`:
  // `[marking …]`), come among the JSON's; a line of the JSON object never starts with `[`.
  const json = run.stdout
    .split('\n')
    .filter((line) => !line.startsWith('['))
    .join('\n');
  const { port, url } = JSON.parse(json) as { port: number; url: string };
  const deadline = Date.now() + 30_000;
  for (;;) {
    const list = JSON.parse(cli(env, ['list', '--json']).stdout) as {
      workloads: { name: string; status: string }[];
    };
    if (list.workloads.find((w) => w.name === name)?.status === 'running') break;
    if (Date.now() > deadline) throw new Error(`${name} did not become running`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return { name, port, url };
}

/** The pid of the detached runner of workload `name` (its command line ends `runner <name>`). */
export function runnerPidOf(name: string): number | undefined {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmd = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replace(/\0$/, '');
      if (cmd.includes('runner.mjs') && cmd.endsWith(`runner\0${name}`)) return Number(entry);
    } catch {
      // gone
    }
  }
  return undefined;
}

/** User + system CPU time a process has used, µs (`/proc/<pid>/stat`, fields 14 and 15). */
export function cpuMicrosOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]);
  return (ticks * 1e6) / CLOCK_TICKS;
}

/** USER_HZ: the unit of /proc's CPU times (100 on every Linux ABI Node runs on). */
const CLOCK_TICKS = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;

/** The headers of an MCP POST (streamable HTTP) before a session exists. */
export const MCP_POST_HEADERS = {
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
} as const;

/**
 * Opens a stateful MCP session on the server behind `pool` (initialize, then
 * notifications/initialized) and returns the headers of the session's later requests. `who`
 * names the server in errors.
 */
export async function openMcpSession(
  pool: Pool,
  who: string,
  path = '/mcp',
): Promise<Record<string, string>> {
  const headers: Record<string, string> = { ...MCP_POST_HEADERS };
  const init = await pool.request({ path, method: 'POST', headers, body: INIT_BODY });
  await init.body.text();
  const sid = init.headers['mcp-session-id'];
  if (typeof sid !== 'string') throw new Error(`${who}: no Mcp-Session-Id (HTTP ${init.statusCode})`);
  headers['mcp-session-id'] = sid;
  headers['mcp-protocol-version'] = '2025-06-18';
  const note = await pool.request({
    path,
    method: 'POST',
    headers,
    body: '{"jsonrpc":"2.0","method":"notifications/initialized"}',
  });
  await note.body.text();
  return headers;
}

/**
 * Opens a session on the workload at `path` (its MCP endpoint, with the access token's query)
 * and returns a function making one `tools/call` (with a different message each time when
 * `fresh`, so no answer can be remembered; `payload` appended to the message).
 */
export async function session(
  pool: Pool,
  path: string,
  fresh = false,
  payload = '',
): Promise<() => Promise<void>> {
  const headers = await openMcpSession(pool, 'workload', path);
  let id = 1;
  const prefix = Math.random().toString(36).slice(2, 8);
  // `payload` (plain text, echoed back) makes the answer that size.
  const tail = payload === '' ? '' : JSON.stringify(` ${payload}`).slice(1, -1);
  return async () => {
    const n = id++;
    const message = fresh ? `hello-${prefix}-${n}` : 'hello';
    const res = await pool.request({
      path,
      method: 'POST',
      headers,
      body: `{"jsonrpc":"2.0","id":${n},"method":"tools/call","params":{"name":"echo","arguments":{"message":"${message}${tail}"}}}`,
    });
    const text = await res.body.text();
    if (res.statusCode !== 200 || !text.includes('hello'))
      throw new Error(`HTTP ${res.statusCode}: ${text.slice(0, 200)}`);
  };
}

export interface Phase {
  p50_ms: number;
  p99_ms: number;
  calls_per_s: number;
  /** CPU the measured process (the workload's runner) used per call, µs; NaN without one. */
  cpu_us_per_call: number;
}

export const round = (n: number, digits: number): number => Number(n.toFixed(digits));

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? Number.NaN;
};

/**
 * `total` calls spread over the callers, each sequential: latency percentiles and calls/s,
 * and the CPU process `pid` (the runner serving them) spent per call.
 */
export async function phase(calls: Array<() => Promise<void>>, total: number, pid?: number): Promise<Phase> {
  const latencies: number[] = [];
  let next = 0;
  const cpuBefore = pid === undefined ? Number.NaN : cpuMicrosOf(pid);
  const started = process.hrtime.bigint();
  await Promise.all(
    calls.map(async (call) => {
      while (next < total) {
        next++;
        const t0 = process.hrtime.bigint();
        await call();
        latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
      }
    }),
  );
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const cpu = pid === undefined ? Number.NaN : cpuMicrosOf(pid) - cpuBefore;
  latencies.sort((a, b) => a - b);
  return {
    p50_ms: round(percentile(latencies, 50), 4),
    p99_ms: round(percentile(latencies, 99), 4),
    calls_per_s: Math.round(total / seconds),
    cpu_us_per_call: round(cpu / total, 2),
  };
}

export type Summary = Record<string, Record<string, number>>;

/**
 * Starts one workload per entry of `configs` (label → run-configuration fields), opens 32
 * sessions on each, warms them up, measures them in interleaved rounds and returns the
 * medians per label. `fresh(label)` says which workloads get a different argument per call.
 */
export async function measureWorkloads(
  env: NodeJS.ProcessEnv,
  dir: string,
  configs: Record<string, Record<string, unknown>>,
  options: {
    log: (msg: string) => void;
    started: (name: string) => void;
    fresh?: (label: string) => boolean;
    /**
     * More endpoints measured in the same interleaved rounds (label → MCP endpoint URL), made
     * once the workloads run (e.g. a bare relay in front of one of them, as a floor).
     */
    more?: (workloads: Record<string, StartedWorkload>) => Promise<Record<string, string>>;
  },
): Promise<{ summary: Summary; ports: Record<string, number> }> {
  const targets: Array<{
    label: string;
    c1: Array<() => Promise<void>>;
    c32: Array<() => Promise<void>>;
    pool: Pool;
    pid: number | undefined;
  }> = [];
  const ports: Record<string, number> = {};
  try {
    const started: Record<string, StartedWorkload> = {};
    const endpoints: Array<[label: string, url: string, pid: number | undefined]> = [];
    for (const [label, extra] of Object.entries(configs)) {
      options.log(`starting workload ${label}`);
      const w = await startWorkload(env, dir, `bench-${label}`, extra);
      options.started(w.name);
      ports[label] = w.port;
      started[label] = w;
      endpoints.push([label, w.url, runnerPidOf(w.name)]);
    }
    if (options.more !== undefined)
      for (const [label, url] of Object.entries(await options.more({ ...started })))
        endpoints.push([label, url, undefined]);
    for (const [label, url, pid] of endpoints) {
      const target = new URL(url);
      const pool = new Pool(target.origin, { connections: 64, keepAliveTimeout: 60_000 });
      const fresh = options.fresh?.(label) ?? false;
      const path = target.pathname + target.search;
      const c32 = await Promise.all(Array.from({ length: 32 }, () => session(pool, path, fresh)));
      targets.push({ label, pool, c1: [c32[0] as () => Promise<void>], c32, pid });
      await phase(c32, SETTINGS.warmup);
    }
    const rounds: Record<string, { c1: Phase[]; c32: Phase[] }> = {};
    for (let r = 0; r < SETTINGS.rounds; r++) {
      for (const t of targets) {
        options.log(`round ${r + 1}/${SETTINGS.rounds}: ${t.label}`);
        const entry = (rounds[t.label] ??= { c1: [], c32: [] });
        entry.c1.push(await phase(t.c1, SETTINGS.callsC1, t.pid));
        entry.c32.push(await phase(t.c32, SETTINGS.callsC32, t.pid));
      }
    }
    const summary: Summary = {};
    for (const [label, r] of Object.entries(rounds)) {
      summary[label] = {
        c1_p50_ms: median(r.c1.map((p) => p.p50_ms)),
        c1_p99_ms: median(r.c1.map((p) => p.p99_ms)),
        c1_calls_per_s: median(r.c1.map((p) => p.calls_per_s)),
        c32_p50_ms: median(r.c32.map((p) => p.p50_ms)),
        c32_p99_ms: median(r.c32.map((p) => p.p99_ms)),
        c32_calls_per_s: median(r.c32.map((p) => p.calls_per_s)),
        c1_runner_cpu_us_per_call: median(r.c1.map((p) => p.cpu_us_per_call)),
        c32_runner_cpu_us_per_call: median(r.c32.map((p) => p.cpu_us_per_call)),
      };
    }
    return { summary, ports };
  } finally {
    for (const t of targets) await t.pool.close();
  }
}

/** `label` against `none`: p50 added at concurrency 1, throughput kept at concurrency 32. */
export function versus(
  summary: Summary,
  label: string,
): { added_c1_p50_ms: number; c32_throughput_kept: number } {
  const none = summary['none'] ?? {};
  const s = summary[label] ?? {};
  return {
    added_c1_p50_ms: round((s['c1_p50_ms'] ?? 0) - (none['c1_p50_ms'] ?? 0), 4),
    c32_throughput_kept: round((s['c32_calls_per_s'] ?? 0) / (none['c32_calls_per_s'] ?? 1), 3),
  };
}
