/**
 * Operations at the proxy (issue 18): what telemetry and a rate limit cost a real workload.
 * Two workloads started with the built CLI (`skep run --from-config`, detached runners, one
 * stdio echo child each — bench/fixtures/echo-server.mjs), measured side by side in one run:
 *
 *   none   no middleware
 *   ops    telemetry with sampling 1.0 (every call is a span) exporting traces and metrics
 *          over OTLP/HTTP to a loopback sink (a separate process answering 200), `/metrics`
 *          enabled, plus a shared rate limit that never limits (checked on every call)
 *
 * Each worker opens its own MCP session, then makes sequential `tools/call` requests. The
 * targets are measured in interleaved rounds (none, ops, none, ...) so that machine noise
 * lands on both alike; the median of the rounds is reported. Targets from the issue: ops
 * keeps ≥ 85 % of the throughput at concurrency 32 and adds ≤ 0.05 ms to p50 at
 * concurrency 1. The sink's counters show that the spans were exported, not dropped.
 *
 * Prints one JSON object on stdout; progress goes to stderr.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Pool } from 'undici';
import { freePort } from '../test/helpers/net.js';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..');
const ECHO = join(here, 'fixtures/echo-server.mjs');
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 3);
const CALLS_C1 = Number(process.env['BENCH_CALLS_C1'] ?? 2000);
const CALLS_C32 = Number(process.env['BENCH_CALLS'] ?? 8000);
const WARMUP = Number(process.env['BENCH_WARMUP'] ?? 1000);

const log = (msg: string): void => {
  process.stderr.write(`[ops.bench] ${msg}\n`);
};

const INIT_BODY = JSON.stringify({
  jsonrpc: '2.0',
  id: 0,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench', version: '1' } },
});

/**
 * The OTLP/HTTP sink in its own process (the bench process is the client): answers every
 * export 200 with an empty body (a valid empty Export*ServiceResponse) and counts requests
 * and bytes per path; `GET /stats` reports them.
 */
const SINK = `
const http = require('node:http');
const stats = {};
http.createServer((req, res) => {
  if (req.method === 'GET') {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(stats));
    return;
  }
  const s = (stats[req.url] ??= { requests: 0, bytes: 0 });
  req.on('data', (c) => { s.bytes += c.length; });
  req.on('end', () => {
    s.requests++;
    res.writeHead(200, { 'content-type': 'application/x-protobuf' });
    res.end();
  });
}).listen(Number(process.argv[1]), '127.0.0.1', () => console.log('ready'));
`;

interface Workload {
  name: string;
  port: number;
}

function cli(
  env: NodeJS.ProcessEnv,
  args: string[],
): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [join(root, 'dist/skep.mjs'), ...args], { env, encoding: 'utf8' });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

async function startWorkload(
  env: NodeJS.ProcessEnv,
  dir: string,
  name: string,
  extra: Record<string, unknown>,
): Promise<Workload> {
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
  const run = cli(env, ['run', '--from-config', file, '--json']);
  if (run.status !== 0) throw new Error(`skep run ${name} failed: ${run.stderr}`);
  const port = (JSON.parse(run.stdout) as { port: number }).port;
  const deadline = Date.now() + 30_000;
  for (;;) {
    const list = JSON.parse(cli(env, ['list', '--json']).stdout) as {
      workloads: { name: string; status: string }[];
    };
    if (list.workloads.find((w) => w.name === name)?.status === 'running') break;
    if (Date.now() > deadline) throw new Error(`${name} did not become running`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return { name, port };
}

/** Opens a session on the workload and returns a function making one tools/call. */
async function session(pool: Pool): Promise<() => Promise<void>> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
  };
  const init = await pool.request({ path: '/mcp', method: 'POST', headers, body: INIT_BODY });
  await init.body.text();
  const sid = init.headers['mcp-session-id'];
  if (typeof sid !== 'string') throw new Error(`no session id (HTTP ${init.statusCode})`);
  headers['mcp-session-id'] = sid;
  headers['mcp-protocol-version'] = '2025-06-18';
  const note = await pool.request({
    path: '/mcp',
    method: 'POST',
    headers,
    body: '{"jsonrpc":"2.0","method":"notifications/initialized"}',
  });
  await note.body.text();
  let id = 1;
  return async () => {
    const n = id++;
    const res = await pool.request({
      path: '/mcp',
      method: 'POST',
      headers,
      body: `{"jsonrpc":"2.0","id":${n},"method":"tools/call","params":{"name":"echo","arguments":{"message":"hello"}}}`,
    });
    const text = await res.body.text();
    if (res.statusCode !== 200 || !text.includes('hello'))
      throw new Error(`HTTP ${res.statusCode}: ${text.slice(0, 200)}`);
  };
}

interface Phase {
  p50_ms: number;
  p99_ms: number;
  calls_per_s: number;
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

async function phase(calls: Array<() => Promise<void>>, total: number): Promise<Phase> {
  const latencies: number[] = [];
  let next = 0;
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
  latencies.sort((a, b) => a - b);
  return {
    p50_ms: round(percentile(latencies, 50), 4),
    p99_ms: round(percentile(latencies, 99), 4),
    calls_per_s: Math.round(total / seconds),
  };
}

const round = (n: number, digits: number): number => Number(n.toFixed(digits));
const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? Number.NaN;
};

async function main(): Promise<void> {
  log('bundling the CLI');
  const built = spawnSync(process.execPath, ['scripts/bundle.mjs'], { cwd: root, stdio: 'inherit' });
  if (built.status !== 0) throw new Error('bundling the CLI failed');
  const home = await mkdtemp(join(tmpdir(), 'skep-bench-ops-'));
  const env = { ...process.env, SKEP_HOME: home, SKEP_LOG_LEVEL: 'silent' };
  const sinkPort = await freePort();
  const sink: ChildProcess = spawn(process.execPath, ['-e', SINK, String(sinkPort)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const names: string[] = [];
  try {
    await new Promise<void>((resolve, reject) => {
      sink.stdout?.once('data', () => resolve());
      sink.once('exit', (code) => reject(new Error(`OTLP sink exited ${code}`)));
    });
    const configs: Record<string, Record<string, unknown>> = {
      none: {},
      ops: {
        telemetry_config: {
          endpoint: `127.0.0.1:${sinkPort}`,
          insecure: true,
          samplingRate: '1.0',
          enablePrometheusMetricsPath: true,
        },
        // 10^9 tokens refilled every second: checked on every call, never limiting.
        rate_limit_config: { shared: { maxTokens: 1_000_000_000, refillPeriod: '1s' } },
      },
    };
    const targets: Array<{
      label: string;
      port: number;
      c1: Array<() => Promise<void>>;
      c32: Array<() => Promise<void>>;
      pool: Pool;
    }> = [];
    for (const [label, extra] of Object.entries(configs)) {
      log(`starting workload ${label}`);
      const w = await startWorkload(env, home, `bench-${label}`, extra);
      names.push(w.name);
      const pool = new Pool(`http://127.0.0.1:${w.port}`, { connections: 64, keepAliveTimeout: 60_000 });
      const c32 = await Promise.all(Array.from({ length: 32 }, () => session(pool)));
      targets.push({ label, port: w.port, pool, c1: [c32[0] as () => Promise<void>], c32 });
      await phase(c32, WARMUP);
    }
    const rounds: Record<string, { c1: Phase[]; c32: Phase[] }> = {};
    for (let r = 0; r < ROUNDS; r++) {
      for (const t of targets) {
        log(`round ${r + 1}/${ROUNDS}: ${t.label}`);
        const entry = (rounds[t.label] ??= { c1: [], c32: [] });
        entry.c1.push(await phase(t.c1, CALLS_C1));
        entry.c32.push(await phase(t.c32, CALLS_C32));
      }
    }
    const summary: Record<string, Record<string, number>> = {};
    for (const [label, r] of Object.entries(rounds)) {
      summary[label] = {
        c1_p50_ms: median(r.c1.map((p) => p.p50_ms)),
        c1_p99_ms: median(r.c1.map((p) => p.p99_ms)),
        c1_calls_per_s: median(r.c1.map((p) => p.calls_per_s)),
        c32_p50_ms: median(r.c32.map((p) => p.p50_ms)),
        c32_p99_ms: median(r.c32.map((p) => p.p99_ms)),
        c32_calls_per_s: median(r.c32.map((p) => p.calls_per_s)),
      };
    }
    for (const t of targets) await t.pool.close();
    const none = summary['none'] as Record<string, number>;
    const ops = summary['ops'] as Record<string, number>;
    const added = round((ops['c1_p50_ms'] ?? 0) - (none['c1_p50_ms'] ?? 0), 4);
    const kept = round((ops['c32_calls_per_s'] ?? 0) / (none['c32_calls_per_s'] ?? 1), 3);
    // What the ops workload exported, and its own view of the calls (its /metrics).
    const opsPort = targets.find((t) => t.label === 'ops')?.port;
    const metrics = await (await fetch(`http://127.0.0.1:${opsPort}/metrics`)).text();
    const toolCalls = Number(
      /^toolhive_mcp_tool_calls_total\{[^}]*status="success"[^}]*\} (\d+)$/m.exec(metrics)?.[1] ?? Number.NaN,
    );
    const sinkStats = (await (await fetch(`http://127.0.0.1:${sinkPort}/stats`)).json()) as Record<
      string,
      { requests: number; bytes: number }
    >;
    process.stdout.write(
      `${JSON.stringify(
        {
          setup: {
            rounds: ROUNDS,
            calls_c1: CALLS_C1,
            calls_c32: CALLS_C32,
            note: 'skep run --from-config: detached runners (dist/runner.mjs), stdio echo child; ops = telemetry (OTLP traces+metrics, sampling 1.0, /metrics) + a rate limit that never limits; medians of interleaved rounds',
          },
          results: summary,
          ops_vs_none: {
            added_c1_p50_ms: added,
            c32_throughput_kept: kept,
            target_added_c1_p50_ms: 0.05,
            target_c32_throughput_kept: 0.85,
          },
          targets_met: { ops_c1_p50: added <= 0.05, ops_c32_throughput: kept >= 0.85 },
          exported: {
            tool_calls_counted: toolCalls,
            trace_export_requests: sinkStats['/v1/traces']?.requests ?? 0,
            trace_export_bytes: sinkStats['/v1/traces']?.bytes ?? 0,
            metric_export_requests: sinkStats['/v1/metrics']?.requests ?? 0,
          },
        },
        null,
        2,
      )}\n`,
    );
  } finally {
    for (const name of names) cli(env, ['rm', name]);
    sink.kill();
    await rm(home, { recursive: true, force: true });
  }
}

await main();
