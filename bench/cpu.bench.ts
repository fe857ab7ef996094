/**
 * CPU per call: what a proxied `tools/call` costs every process on its path, for the proxy
 * without middleware, each middleware stage alone, all of them, and the virtual MCP — against
 * floors measured in the same run. CPU time is read from the kernel's accounting of each
 * process (bench/lib/cpu.ts: per-thread schedstat, ns resolution; /proc/<pid>/stat utime +
 * stime as a cross-check), before and after each round, divided by the calls. Unlike p50 on a
 * shared machine, it does not move with the load (latency and throughput are printed as context).
 *
 * Targets (all on one echo backend, bench/fixtures/echo-server.mjs):
 *   direct           the bench process writes JSON-RPC lines to an echo child (no HTTP)
 *   http-floor       bare node:http answering tools/call itself (bench/fixtures/http-floor.mjs)
 *   relay            bare relay (node:http in, undici keep-alive out, nothing parsed) in its own
 *                    process, in front of a `backend` echo workload: the floor of one more hop
 *   webhook-post     the bench POSTing a webhook-sized body to the webhook receiver: the
 *                    client-side CPU of a bare POST (bench process) and the receiver's
 *   none ... all     `skep run --from-config` workloads (built CLI, detached runners): no
 *                    middleware; authz (Cedar, 10 policies); audit to a file (default fields,
 *                    and with request data) and to the runner's log (`audit-log`); telemetry
 *                    (OTLP traces + metrics, sampling 1.0, to a loopback sink); rate limit
 *                    (memory; Redis); one validating webhook; all
 *   vmcp             a virtual MCP workload over the `backend` workload's group (the same
 *                    backend as the relay's; `none` serves only its own calls)
 *   vmcp-floor       the floor of a virtual MCP in Node, in its own process in front of the same
 *                    backend: each body parsed, its own sessions, a call routed by tool name and
 *                    re-serialised onto one backend session, the answer's id swapped back
 *                    unparsed (`aggregatorScript`)
 *   guardrails       the default guardrails (`guardrails_config: {}`: own secrets and
 *                    credential formats redacted in results); also with 1 KB answers
 *                    (`none-1k`/`guardrails-1k`, the added CPU) and 1 MB answers
 *                    (`none-1m`/`guardrails-1m`, throughput side by side; BENCH_CPU_CALLS_1M calls),
 *                    these four on two more workloads of the same configurations
 *
 * Every target runs `BENCH_CPU_ROUNDS` rounds (default 15), interleaved (the order rotates per
 * round), each of `BENCH_CPU_CALLS` calls (default 1,500) at concurrency 1 and
 * `BENCH_CPU_CALLS_C32` (default 4,000) at 32 (32 sessions), after `BENCH_CPU_PREWARM`
 * (default 500) unmeasured calls; medians over rounds are reported, with each round's figure.
 * `BENCH_CPU_NONE_REPLICAS` (default 2) `none` runners are measured, and how far apart they
 * are (`none_replicas`) is the run's resolution. Then, after every
 * process has idled `BENCH_CPU_IDLE_S` (default 30) seconds, the `none` runner's CPU over its
 * next 1,000 and 1,000 calls (`none_after_idle`).
 *
 * After the rounds, `BENCH_CPU_PAIRED_ROUNDS` (default 10; 0 skips them) paired rounds measure
 * each stage's added CPU a second way: its runner and the `none` runner driven at the same
 * time, the difference taken within each pair (`paired_concurrent`, see `pairedConcurrent`),
 * with `none#2` against `none` as the control; and the virtual MCP against the bare relay and
 * its floor, and the floor against the relay, by the ratio within each pair (`vmcp_cpu_ratios`).
 * `--perf=vmcp,vmcp-floor,relay` compares the virtual MCP with both, function by function.
 * With `BENCH_CPU_TWIN_CLI` (another build's CLI), `none#2` and `vmcp#2` run that build: the
 * control is then the A/B of the runner's code, in µs, and `vmcp2_vs_vmcp` the vMCP's, as a ratio.
 *
 * `npm run bench -- cpu --cpu-prof[=label,...]` starts those workloads' runners (default `none`)
 * with `--cpu-prof`; each profile is written when its runner stops, and its path is printed.
 * V8's profiler samples wall time, so on a shared CPU it also counts time a runner waited.
 *
 * `npm run bench -- cpu --perf[=label,...]` (default `none`) records those runners with Linux
 * `perf` (on-CPU samples, see bench/lib/perf.ts) during their measured c32 phases, and adds
 * `perf`: each one's CPU per call by category (garbage collection, kernel, JavaScript by source)
 * and its costliest functions (`BENCH_CPU_PERF_TOP` of them, default 15), and each category's
 * difference from `none`. Sampling adds a few % to the runners' CPU in such a run.
 *
 * Every runner runs one full garbage collection after the warm-up (through its inspector, see
 * bench/lib/full-gc.ts; `BENCH_CPU_FULL_GC=0` skips it): every runner that has served a while
 * has run one, and a runner may behave differently from then on (one did, see
 * docs/performance.md, "Why a runner got slower after its first full GC").
 *
 * `npm run bench -- cpu --heap-survivors[=label,...]` (default `none`) records, before the
 * rounds, an extra c32 phase of those runners with V8's sampling heap profiler, counting only
 * what outlived young-generation GCs (bench/lib/heap-survivors.ts), and adds `heap_survivors`:
 * bytes per call and the allocating functions; the profiles are written for DevTools.
 *
 * `BENCH_CPU_RUNNER_FLAGS` adds Node flags to every runner (`--trace-gc`); the runners' logs, with
 * what they printed, are then kept and their folder printed.
 *
 * Every figure derived per round (ratios, added CPU, latency context) is reported as the median
 * over rounds, its range, and a 95 % confidence interval of the median (`median_ci`, from order
 * statistics, no assumption about the rounds' distribution). `targets_met` compares the medians
 * with the targets; `targets_resolved` says whether the run can tell: `met` or `missed` when the
 * whole interval is on one side of the target, else `unresolved`.
 *
 * Prints one JSON object on stdout; progress goes to stderr.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { Pool } from 'undici';
import { startRedis, type RedisInstance } from '../test/helpers/redis.js';
import {
  commandOf,
  cpuPhase,
  type CpuPhase,
  descendantsOf,
  median,
  medianInterval,
  memoryOf,
  summarize,
} from './lib/cpu.js';
import { fullGcIn } from './lib/full-gc.js';
import { type HeapSurvivors, recordHeapSurvivors } from './lib/heap-survivors.js';
import { authzConfig, startOtlpSink, startWebhookReceiver, webhookEnvelope } from './lib/middleware.js';
import {
  PERF_NODE_FLAGS,
  PERF_TOP,
  type PerfBreakdown,
  perfBreakdowns,
  PerfRecorder,
  perfUnavailable,
} from './lib/perf.js';
import {
  cli,
  MCP_POST_HEADERS,
  openBenchHome,
  root,
  round,
  runnerPidOf,
  session,
  startLoopbackServer,
  startWorkload,
} from './lib/workloads.js';

const log = (msg: string): void => {
  process.stderr.write(`[cpu.bench] ${msg}\n`);
};

const CALLS = Number(process.env['BENCH_CPU_CALLS'] ?? 1500);
/**
 * Calls of a c32 phase. Fewer calls in more rounds beat more calls in fewer: on this kind of
 * shared VM one round of a process can cost 30 % more per call than the next, for seconds at a
 * time, whatever the round's length. With 3 rounds of 12,000 calls, four `none` runners of one
 * run were up to 18 % apart (5 rounds: 6 %); with 15 rounds of 4,000, within 3 %.
 */
const CALLS_C32 = Number(process.env['BENCH_CPU_CALLS_C32'] ?? 4000);
/**
 * Unmeasured calls made right before each target's measured phases: between its rounds a
 * target sits idle while the others run, and the first calls after a pause cost more
 * (reported on its own as `none_after_idle`, not mixed into the steady state).
 */
const PREWARM = Number(process.env['BENCH_CPU_PREWARM'] ?? 500);
/** The pause before the `none_after_idle` figure, s. */
const IDLE_S = Number(process.env['BENCH_CPU_IDLE_S'] ?? 30);
const ROUNDS = Number(process.env['BENCH_CPU_ROUNDS'] ?? 15);
/**
 * Rounds of the paired measurement (`pairedConcurrent`): each stage's runner and the `none`
 * runner driven at the same time. 0 leaves it out.
 */
const PAIRED_ROUNDS = Number(process.env['BENCH_CPU_PAIRED_ROUNDS'] ?? 10);

/** The targets for the CPU a stage adds per call, µs (the webhook's is relative, below). */
const STAGE_LIMITS_US: Readonly<Record<string, number>> = {
  authz: 15,
  audit: 10,
  'audit-log': 10,
  telemetry: 15,
  'ratelimit-memory': 3,
};
/** A validating webhook may add the bare POST's client CPU plus this, µs. */
const WEBHOOK_OVER_POST_US = 10;
/** The default guardrails may add this per 1 KB answer, µs. */
const GUARDRAILS_1K_LIMIT_US = 10;
const WARMUP = Number(process.env['BENCH_WARMUP'] ?? 3000);
const CONCURRENCY = [1, 32] as const;
const ECHO = join(root, 'bench/fixtures/echo-server.mjs');
/** The labels a `--flag=a,b` option names; `--flag` alone: `none`; absent: none. */
function labelsOf(flag: string): Set<string> {
  const arg = process.argv.slice(2).find((a) => a === flag || a.startsWith(`${flag}=`));
  if (arg === undefined) return new Set();
  return new Set(arg.includes('=') ? arg.slice(flag.length + 1).split(',') : ['none']);
}
/** Labels whose runners are profiled (`--cpu-prof=none,audit`). */
const PROFILED = labelsOf('--cpu-prof');
/** Labels whose runners are recorded with perf (`--perf=none,authz`). */
const PERF = labelsOf('--perf');
/** Labels whose runners' young-GC survivors are profiled (`--heap-survivors=none,audit`). */
const SURVIVORS = labelsOf('--heap-survivors');
/** One full GC in every runner after the warm-up (bench/lib/full-gc.ts); `BENCH_CPU_FULL_GC=0`: none. */
const FULL_GC_FIRST = process.env['BENCH_CPU_FULL_GC'] !== '0';
/** Node flags added to every runner, e.g. `--trace-gc` (its output goes to the runner's log). */
const EXTRA_RUNNER_FLAGS = (process.env['BENCH_CPU_RUNNER_FLAGS'] ?? '').split(' ').filter((f) => f !== '');
const ONLY = process.env['BENCH_CPU_ONLY']?.split(',').filter((x) => x !== '');
/**
 * Pin the bench (the client) to the first CPU and every measured process to the last
 * (`BENCH_CPU_PIN=0`: leave placement to the scheduler). Left to the scheduler, where the
 * processes land (on one CPU or not, so whether each wake-up crosses CPUs) differs from run
 * to run: the same floor server measured 25 µs per call in one quiet run and 34 µs in the
 * next. Pinned, every target runs in the same placement: in two runs the floor measured
 * 27.24 and 27.27 µs, the bare relay 72.9 and 72.6.
 */
const PIN = process.env['BENCH_CPU_PIN'] !== '0' && cpus().length >= 2;
/** Calls per phase of the 1 MB targets: about 40 ms each, most of a round's time even at 60. */
const CALLS_1M = Number(process.env['BENCH_CPU_CALLS_1M'] ?? 60);
/**
 * `none` runners in the run (`none`, `none#2`, ...; default 2). How far runners of the same
 * configuration, measured in the same rounds, are apart (`none_replicas`) is the resolution of
 * the run: a stage's added CPU smaller than that is not resolved. The ratios and added-CPU
 * figures use their mean in each round.
 */
const NONE_REPLICAS = Math.max(1, Number(process.env['BENCH_CPU_NONE_REPLICAS'] ?? 2));
/**
 * Node flags for the `none#2` runner only (`BENCH_CPU_NONE2_FLAGS="--memory-reducer"`): an A/B
 * of runner flags measured in the same rounds. `none#2` then stays out of the `none` mean.
 */
const NONE2_FLAGS = (process.env['BENCH_CPU_NONE2_FLAGS'] ?? '').split(' ').filter((f) => f !== '');
/**
 * Node flags for a second virtual MCP runner (`BENCH_CPU_VMCP2_FLAGS="--max-semi-space-size=8"`),
 * measured as `vmcp#2` in the same rounds as `vmcp`: an A/B of the vMCP runner's flags.
 */
const VMCP2_FLAGS = (process.env['BENCH_CPU_VMCP2_FLAGS'] ?? '').split(' ').filter((f) => f !== '');
/**
 * Another build's CLI for the second runner of `none` and of the virtual MCP
 * (`BENCH_CPU_TWIN_CLI=../base/dist/skep.mjs`, from a checkout of the commit to compare with,
 * built; a CLI starts the runner beside it): `none#2` and `vmcp#2` then run that build's code,
 * measured side by side with `none` and `vmcp`, an A/B of the runner's code. `none#2` then stays
 * out of the `none` mean; the paired control (`none#2` − `none`) is the difference in µs.
 */
const TWIN_CLI = process.env['BENCH_CPU_TWIN_CLI'];
const VMCP2 = VMCP2_FLAGS.length > 0 || TWIN_CLI !== undefined;
/** Whether `none#2` is the other side of an A/B (flags or code), not a replica of `none`. */
const NONE2_AB = NONE2_FLAGS.length > 0 || TWIN_CLI !== undefined;
/** The `none` runners: `none`, and `none#2`, ... when there are replicas. */
const isNone = (label: string): boolean => label === 'none' || label.startsWith('none#');
/** The `none` runners whose mean is the `none` of the ratios and added-CPU figures. */
const isNoneBaseline = (label: string): boolean => isNone(label) && !(label === 'none#2' && NONE2_AB);
/** Concurrent callers in the "c32" phase of the 1 MB targets. */
const BIG_CALLERS = 4;

/** Plain prose (no e-mail, card, phone or credential shapes) cut to `bytes`: a tool's text answer. */
function prose(bytes: number): string {
  const words =
    'the server answered with a list of open issues sorted by age and a short summary of each one ';
  return words.repeat(Math.ceil(bytes / words.length)).slice(0, bytes);
}
const ANSWER_SIZES = { '1k': prose(1000), '1m': prose(1_000_000) } as const;

/** The bare relay (its own process): node:http in, an undici keep-alive pool out, nothing parsed. */
const relayScript = (backendPort: number): string => `
const http = require('node:http');
const { Pool } = require('undici');
const pool = new Pool('http://127.0.0.1:${backendPort}', { connections: 64, pipelining: 1, keepAliveTimeout: 60000 });
const RELAYED = ['content-type', 'accept', 'mcp-session-id', 'mcp-protocol-version'];
const pick = (h) => { const o = {}; for (const n of RELAYED) { const v = h[n]; if (typeof v === 'string') o[n] = v; } return o; };
const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    pool.request({ method: req.method, path: req.url, headers: pick(req.headers), body: Buffer.concat(chunks) })
      .then(async (a) => { const b = Buffer.from(await a.body.arrayBuffer()); res.writeHead(a.statusCode, pick(a.headers)); res.end(b); })
      .catch(() => { res.writeHead(502).end(); });
  });
});
server.keepAliveTimeout = 60000;
server.listen(Number(process.argv[1]), '127.0.0.1', () => console.log('ready'));
`;

/**
 * The floor of a virtual MCP in Node (its own process): what an aggregator must do per call and
 * nothing more. node:http in; each POST body parsed (the tool's name routes the call); its own
 * sessions (an `initialize` answered here with a session id, a call on an unknown session
 * refused); a `tools/call` routed by name and sent, re-serialised with an id of its own, on the
 * one session it opened to the backend at start, through the bare relay's undici pool; the
 * backend's answer not parsed, its id swapped back by a regular expression. No
 * authentication, no Host/Origin checks, no limits, no answer validation, no list cache.
 */
const aggregatorScript = (backendPort: number, backendPath: string): string => `
const http = require('node:http');
const { randomUUID } = require('node:crypto');
const { Pool } = require('undici');
const path = ${JSON.stringify(backendPath)};
const pool = new Pool('http://127.0.0.1:${backendPort}', { connections: 64, pipelining: 1, keepAliveTimeout: 60000 });
const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
const routes = new Map([['echo', 'echo']]);
const sessions = new Set();
let seq = 0;
const answer = (res, status, text, extra) => {
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...extra });
  res.end(text);
};
const post = (body) => pool.request({ method: 'POST', path, headers, body }).then(async (r) => ({ r, text: await r.body.text() }));
const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    let m;
    try { m = JSON.parse(Buffer.concat(chunks).toString()); } catch { return answer(res, 400, '{}'); }
    if (m.method === 'initialize') {
      const sid = randomUUID();
      sessions.add(sid);
      return answer(res, 200, JSON.stringify({ jsonrpc: '2.0', id: m.id, result: { protocolVersion: '2025-06-18', capabilities: { tools: {} }, serverInfo: { name: 'floor', version: '1' } } }), { 'mcp-session-id': sid });
    }
    if (!sessions.has(req.headers['mcp-session-id'])) return answer(res, 404, '{}');
    if (m.id === undefined) { res.writeHead(202); return res.end(); }
    const name = m.method === 'tools/call' ? routes.get(m.params.name) : undefined;
    if (name === undefined) return answer(res, 200, JSON.stringify({ jsonrpc: '2.0', id: m.id, error: { code: -32601, message: 'unknown' } }));
    m.params.name = name;
    const n = ++seq;
    post(JSON.stringify({ jsonrpc: '2.0', id: n, method: m.method, params: m.params }))
      .then(({ text }) => answer(res, 200, text.replace('"id":' + n, '"id":' + JSON.stringify(m.id))))
      .catch(() => { res.writeHead(502).end(); });
  });
});
server.keepAliveTimeout = 60000;
post(JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'floor', version: '1' } } }))
  .then(({ r }) => {
    headers['mcp-session-id'] = r.headers['mcp-session-id'];
    headers['mcp-protocol-version'] = '2025-06-18';
    return post('{"jsonrpc":"2.0","method":"notifications/initialized"}');
  })
  .then(() => server.listen(Number(process.argv[1]), '127.0.0.1', () => console.log('ready')));
`;

/**
 * The floor of a stdio proxy in Node (its own process): node:http in, one echo child on pipes
 * out, each POST body written to the child as one line with its id swapped for a relay id by a
 * regular expression, the answer's id swapped back, nothing parsed, no sessions.
 */
const stdioRelayScript = (echo: string): string => `
const http = require('node:http');
const { spawn } = require('node:child_process');
const child = spawn(process.execPath, [${JSON.stringify(echo)}], { stdio: ['pipe', 'pipe', 'inherit'] });
const pending = new Map();
let seq = 0;
let tail = '';
child.stdout.setEncoding('utf8');
child.stdout.on('data', (chunk) => {
  let s = tail + chunk;
  let nl;
  while ((nl = s.indexOf('\\n')) !== -1) {
    const line = s.slice(0, nl);
    s = s.slice(nl + 1);
    const m = /"id":"r(\\d+)"/.exec(line);
    const p = m === null ? undefined : pending.get(Number(m[1]));
    if (p === undefined) continue;
    pending.delete(Number(m[1]));
    const out = line.replace(m[0], '"id":' + p.id);
    p.res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(out) });
    p.res.end(out);
  }
  tail = s;
});
child.stdin.write('{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"floor","version":"1"}}}\\n');
const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const text = Buffer.concat(chunks).toString();
    const m = /"id":(\\d+)/.exec(text);
    const n = ++seq;
    pending.set(n, { res, id: m === null ? 'null' : m[1] });
    child.stdin.write(text.replace(/"id":\\d+/, '"id":"r' + n + '"') + '\\n');
  });
});
server.keepAliveTimeout = 60000;
server.listen(Number(process.argv[1]), '127.0.0.1', () => console.log('ready'));
`;

interface Target {
  label: string;
  /** Calls per phase when not BENCH_CPU_CALLS (the 1 MB answers). */
  calls?: number;
  /** Processes whose CPU is measured (name → pid); the first is the one the targets are about. */
  pids: Record<string, number>;
  c1: Array<() => Promise<void>>;
  c32: Array<() => Promise<void>>;
  close(): Promise<void>;
}

/** 32 MCP sessions on `url` (a workload's endpoint, token in its query); `payload` sizes the answers. */
async function mcpTarget(
  label: string,
  url: string,
  pids: Record<string, number>,
  payload = '',
): Promise<Target> {
  const u = new URL(url);
  const pool = new Pool(u.origin, { connections: 64, keepAliveTimeout: 60_000 });
  const c32 = await Promise.all(
    Array.from({ length: 32 }, () => session(pool, u.pathname + u.search, false, payload)),
  );
  return { label, pids, c1: [c32[0]!], c32, close: () => pool.close() };
}

/** Stateless callers POSTing `body(n)` to `origin` + `path`; `check` validates the answer. */
function postTarget(
  label: string,
  origin: string,
  path: string,
  body: (n: number) => string,
  check: (text: string) => boolean,
  pids: Record<string, number>,
): Target {
  const pool = new Pool(origin, { connections: 64, keepAliveTimeout: 60_000 });
  let n = 0;
  const call = async (): Promise<void> => {
    const res = await pool.request({ path, method: 'POST', headers: MCP_POST_HEADERS, body: body(++n) });
    const text = await res.body.text();
    if (res.statusCode !== 200 || !check(text)) throw new Error(`${label}: HTTP ${res.statusCode}: ${text}`);
  };
  return { label, pids, c1: [call], c32: Array.from({ length: 32 }, () => call), close: () => pool.close() };
}

/** The echo child spoken to over its stdin/stdout by the bench process. */
async function directTarget(): Promise<Target> {
  const child = spawn(process.execPath, [ECHO], { stdio: ['pipe', 'pipe', 'inherit'] });
  const waiting = new Map<number, (line: string) => void>();
  let nextId = 1;
  createInterface({ input: child.stdout }).on('line', (line) => {
    const id = Number(/"id":(\d+)/.exec(line)?.[1] ?? -1);
    waiting.get(id)?.(line);
    waiting.delete(id);
  });
  const send = (method: string, params: unknown): Promise<string> =>
    new Promise((resolve) => {
      const id = nextId++;
      waiting.set(id, resolve);
      child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
    });
  await send('initialize', {
    protocolVersion: '2025-06-18',
    capabilities: {},
    clientInfo: { name: 'bench', version: '1' },
  });
  const call = async (): Promise<void> => {
    const line = await send('tools/call', { name: 'echo', arguments: { message: 'hello' } });
    if (!line.includes('hello')) throw new Error(`direct: ${line}`);
  };
  return {
    label: 'direct',
    pids: { server: child.pid! },
    c1: [call],
    c32: Array.from({ length: 32 }, () => call),
    close: async () => void child.kill('SIGKILL'),
  };
}

async function startFloorServer(): Promise<{ port: number; child: ChildProcess }> {
  const child = spawn(process.execPath, [join(root, 'bench/fixtures/http-floor.mjs'), '0'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout.once('data', (d: Buffer) => resolve(Number(/listening (\d+)/.exec(d.toString())?.[1])));
    child.once('exit', (code) => reject(new Error(`http floor exited ${code}`)));
  });
  return { port, child };
}

/** The echo child below a runner: the node process running echo-server.mjs (not its bwrap sandbox). */
function serverPidOf(runner: number): number {
  const pid = descendantsOf(runner).find((p) => {
    const cmd = commandOf(p);
    return cmd.includes('echo-server.mjs') && !/^\S*bwrap /.test(cmd);
  });
  if (pid === undefined) throw new Error(`no echo server below runner ${runner}`);
  return pid;
}

/** Sets the CPU affinity of every thread of `pid` (`taskset -a -p`); false when it cannot. */
function pin(pid: number, cpu: number): boolean {
  const done = spawnSync('taskset', ['-a', '-p', '-c', String(cpu), String(pid)], { encoding: 'utf8' });
  return done.status === 0;
}

/**
 * The bench on CPU 0, every measured process (and what it started) on the last CPU, except
 * `outside`: services a stage calls (the webhook receiver of the workloads), which join the
 * bench on CPU 0, so that the runner calls its receiver across CPUs just as the bench calls
 * the `webhook-post` floor's receiver (both sides on one CPU add a wake-up each way per call).
 */
function pinAll(targets: readonly Target[], outside: readonly number[]): void {
  const last = cpus().length - 1;
  if (!pin(process.pid, 0)) throw new Error('taskset failed: run with BENCH_CPU_PIN=0 to skip pinning');
  const measured = new Set<number>();
  for (const t of targets)
    for (const pid of Object.values(t.pids)) for (const p of [pid, ...descendantsOf(pid)]) measured.add(p);
  for (const pid of outside) {
    measured.delete(pid);
    if (!pin(pid, 0)) log(`could not pin pid ${pid}`);
  }
  for (const pid of measured) if (!pin(pid, last)) log(`could not pin pid ${pid}`);
  log(
    `pinned: the bench and ${outside.length} called service(s) on CPU 0, ${measured.size} measured processes on CPU ${last}`,
  );
}

async function main(): Promise<void> {
  const load = loadavg();
  const machine = {
    cores: cpus().length,
    cpu_model: cpus()[0]?.model ?? 'unknown',
    load_average_at_start: load.map((x) => round(x, 2)),
    node: process.version,
    pinning: PIN
      ? { bench_cpu: 0, measured_cpu: cpus().length - 1, workloads_webhook_receiver_cpu: 0 }
      : 'off (BENCH_CPU_PIN=0)',
  };
  log(`machine: ${machine.cores} cores, load ${machine.load_average_at_start.join(' ')}`);
  const bench = await openBenchHome('cpu', log);
  const closers: Array<() => Promise<void> | void> = [];
  const targets: Target[] = [];
  const profDir = PROFILED.size === 0 ? undefined : mkdtempSync(join(tmpdir(), 'skep-cpu-prof-'));
  const profiledRunners = new Map<string, number>();
  if (PERF.size > 0) {
    const why = perfUnavailable();
    if (why !== undefined) throw new Error(`--perf: ${why}`);
  }
  /** The runner of each label recorded with perf, and the calls it served while recorded. */
  const perfRunners = new Map<string, number>();
  const perfCalls = new Map<number, number>();
  let recorder: PerfRecorder | undefined;
  /** Node flags of the runner of `label`: profilers' flags where asked for. */
  const runnerFlags = (label: string): string[] => [
    ...(PROFILED.has(label) ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : []),
    ...(PERF.has(label) ? PERF_NODE_FLAGS : []),
    ...EXTRA_RUNNER_FLAGS,
  ];
  try {
    // One receiver for the workloads' webhooks, one for the bare POST (see `pinAll`).
    const receiver = await startWebhookReceiver();
    closers.push(() => void receiver.child.kill());
    const postReceiver = await startWebhookReceiver();
    closers.push(() => void postReceiver.child.kill());
    const sink = await startOtlpSink();
    closers.push(() => void sink.child.kill());
    let redis: RedisInstance | undefined;
    try {
      redis = await startRedis();
      closers.push(() => redis!.stop());
    } catch (err) {
      log(
        `no Redis (${(err as Error).message.split('\n')[0]}): the ratelimit-redis configuration is skipped`,
      );
    }
    const webhook = receiver.config;
    const authz = authzConfig();
    const telemetry = sink.config;
    const limit = { maxTokens: 1_000_000_000, refillPeriod: '1s' };
    const configs: Record<string, Record<string, unknown>> = {
      none: {},
      authz,
      audit: { audit_config: { logFile: join(bench.home, 'audit.log') } },
      'audit-data': {
        audit_config: { logFile: join(bench.home, 'audit-data.log'), includeRequestData: true },
      },
      // No logFile: to the runner's own log, what `audit_config: {}` does.
      'audit-log': { audit_config: {} },
      telemetry,
      'ratelimit-memory': { rate_limit_config: { shared: limit } },
      webhook,
      guardrails: { guardrails_config: {} },
      all: {
        ...authz,
        audit_config: { logFile: join(bench.home, 'audit-all.log') },
        ...telemetry,
        rate_limit_config: { shared: limit },
        ...webhook,
      },
    };
    if (redis !== undefined)
      configs['ratelimit-redis'] = {
        middleware_configs: [
          {
            type: 'ratelimit',
            parameters: {
              namespace: 'bench',
              server_name: 'bench-ratelimit-redis',
              config: { shared: limit },
              redis_addr: redis.addr,
              redis_db: 1,
            },
          },
        ],
      };
    const extraPids = (label: string): Record<string, number> => ({
      ...(label === 'webhook' || label === 'all' ? { webhook_receiver: receiver.child.pid! } : {}),
      ...(label === 'telemetry' || label === 'all' ? { otlp_sink: sink.child.pid! } : {}),
      ...(label === 'ratelimit-redis' && redis !== undefined ? { redis: redis.proc.pid! } : {}),
    });
    cli(bench.env, ['group', 'create', 'bench']);
    const wanted = (label: string) => ONLY === undefined || ONLY.includes(label) || label === 'none';

    // Floors.
    targets.push(await directTarget());
    const floor = await startFloorServer();
    closers.push(() => void floor.child.kill());
    targets.push(
      postTarget(
        'http-floor',
        `http://127.0.0.1:${floor.port}`,
        '/mcp',
        (n) =>
          `{"jsonrpc":"2.0","id":${n},"method":"tools/call","params":{"name":"echo","arguments":{"message":"hello"}}}`,
        (t) => t.includes('hello'),
        { server: floor.child.pid! },
      ),
    );
    const stdioRelay = await startLoopbackServer(stdioRelayScript(ECHO), 'stdio relay');
    closers.push(() => void stdioRelay.child.kill());
    targets.push(
      postTarget(
        'stdio-relay',
        `http://127.0.0.1:${stdioRelay.port}`,
        '/mcp',
        (n) =>
          `{"jsonrpc":"2.0","id":${n},"method":"tools/call","params":{"name":"echo","arguments":{"message":"hello"}}}`,
        (t) => t.includes('hello'),
        { relay: stdioRelay.child.pid!, server: descendantsOf(stdioRelay.child.pid!)[0]! },
      ),
    );
    targets.push(
      postTarget(
        'webhook-post',
        `http://127.0.0.1:${postReceiver.port}`,
        '/validate',
        webhookEnvelope,
        (t) => t.includes('"allowed":true'),
        { webhook_receiver: postReceiver.child.pid! },
      ),
    );

    // Workloads.
    const runners: Record<string, number> = {};
    for (const [label, extra] of Object.entries(configs)) {
      if (!wanted(label)) continue;
      log(`starting workload ${label}`);
      const w = await startWorkload(bench.env, bench.home, `bench-${label}`, extra, runnerFlags(label));
      bench.started(w.name);
      const runner = runnerPidOf(w.name);
      if (runner === undefined) throw new Error(`no runner process for ${w.name}`);
      if (PROFILED.has(label)) profiledRunners.set(label, runner);
      if (PERF.has(label)) perfRunners.set(label, runner);
      runners[label] = runner;
      const pids = { runner, server: serverPidOf(runner), ...extraPids(label) };
      targets.push(await mcpTarget(label, w.url, pids));
      for (let i = 2; label === 'none' && i <= NONE_REPLICAS; i++) {
        const twinFlags = [...runnerFlags(label), ...(i === 2 ? NONE2_FLAGS : [])];
        const twin = await startWorkload(
          bench.env,
          bench.home,
          `bench-none-${i}`,
          extra,
          twinFlags,
          i === 2 ? TWIN_CLI : undefined,
        );
        bench.started(twin.name);
        const twinRunner = runnerPidOf(twin.name);
        if (twinRunner === undefined) throw new Error(`no runner process for ${twin.name}`);
        targets.push(
          await mcpTarget(`none#${i}`, twin.url, { runner: twinRunner, server: serverPidOf(twinRunner) }),
        );
      }
      // The same two configurations with larger answers (guardrails read every answer's text),
      // on workloads of their own, so that relaying 1 MB answers cannot change what the
      // small-answer targets measure (in one run, a `none` runner that also served them used
      // 15 % more CPU per small call than a second `none` runner that did not).
      if ((label === 'none' || label === 'guardrails') && wanted('guardrails')) {
        const sized = await startWorkload(bench.env, bench.home, `bench-${label}-sized`, extra, []);
        bench.started(sized.name);
        const sizedRunner = runnerPidOf(sized.name);
        if (sizedRunner === undefined) throw new Error(`no runner process for ${sized.name}`);
        const sizedPids = { runner: sizedRunner, server: serverPidOf(sizedRunner) };
        targets.push(await mcpTarget(`${label}-1k`, sized.url, sizedPids, ANSWER_SIZES['1k']));
        // 4 callers, not 32: 32 MB of requests queued at once exceed the stdio bridge's bounded
        // buffer, which answers "not keeping up" (by design) instead of growing.
        const big = await mcpTarget(`${label}-1m`, sized.url, sizedPids, ANSWER_SIZES['1m']);
        targets.push({ ...big, c32: big.c32.slice(0, BIG_CALLERS), calls: CALLS_1M });
      }
    }
    // The backend of the bare relay and of the virtual MCP: a workload of its own (in the vMCP's
    // group), so that their traffic and the vMCP's own requests (health checks, list refreshes)
    // never land on the `none` runner the stages are compared with.
    log('starting the backend workload of the relay and the vMCP');
    const backendWorkload = await startWorkload(bench.env, bench.home, 'bench-backend', { group: 'bench' });
    bench.started(backendWorkload.name);
    const backendRunner = runnerPidOf(backendWorkload.name);
    if (backendRunner === undefined) throw new Error('no runner process for the backend workload');
    runners['backend'] = backendRunner;
    {
      const relay = await startLoopbackServer(
        relayScript(backendWorkload.port),
        'bare relay',
        PERF.has('relay') ? PERF_NODE_FLAGS : [],
      );
      closers.push(() => void relay.child.kill());
      if (PERF.has('relay')) perfRunners.set('relay', relay.child.pid!);
      const u = new URL(backendWorkload.url);
      targets.push(
        await mcpTarget('relay', `http://127.0.0.1:${relay.port}${u.pathname}${u.search}`, {
          relay: relay.child.pid!,
          backend_runner: backendRunner,
          server: serverPidOf(backendRunner),
        }),
      );
      const aggregator = await startLoopbackServer(
        aggregatorScript(backendWorkload.port, `${u.pathname}${u.search}`),
        'virtual MCP floor',
        PERF.has('vmcp-floor') ? PERF_NODE_FLAGS : [],
      );
      closers.push(() => void aggregator.child.kill());
      if (PERF.has('vmcp-floor')) perfRunners.set('vmcp-floor', aggregator.child.pid!);
      targets.push(
        await mcpTarget('vmcp-floor', `http://127.0.0.1:${aggregator.port}/mcp`, {
          relay: aggregator.child.pid!,
          backend_runner: backendRunner,
          server: serverPidOf(backendRunner),
        }),
      );
    }
    const vmcpTwins = wanted('vmcp') ? (VMCP2 ? ['vmcp', 'vmcp#2'] : ['vmcp']) : [];
    for (const label of vmcpTwins) {
      log(`starting workload ${label}`);
      const w = await startWorkload(
        bench.env,
        bench.home,
        label === 'vmcp' ? 'bench-vmcp' : 'bench-vmcp-2',
        {
          group: 'bench',
          image: '',
          cmd_args: [],
          vmcp: { aggregation: { conflictResolutionConfig: { prefixOnlyConflicts: true } } },
        },
        label === 'vmcp' ? runnerFlags('vmcp') : [...runnerFlags('vmcp'), ...VMCP2_FLAGS],
        label === 'vmcp' ? undefined : TWIN_CLI,
      );
      bench.started(w.name);
      const runner = runnerPidOf(w.name);
      if (runner === undefined) throw new Error(`no runner process for the ${label} workload`);
      if (label === 'vmcp' && PROFILED.has('vmcp')) profiledRunners.set('vmcp', runner);
      if (label === 'vmcp' && PERF.has('vmcp')) perfRunners.set('vmcp', runner);
      const backend = runners['backend'];
      targets.push(
        await mcpTarget(label, w.url, {
          vmcp_runner: runner,
          backend_runner: backend,
          server: serverPidOf(backend),
        }),
      );
    }
    for (const t of targets) closers.push(() => t.close());
    if (PIN) pinAll(targets, [receiver.child.pid!]);

    for (const t of targets) {
      log(`warming up ${t.label}`);
      const warm = t.calls === undefined ? WARMUP : Math.max(32, Math.ceil(t.calls / 4));
      await cpuPhase(t.c32, warm, {});
      await cpuPhase(t.c1, Math.ceil(warm / 4), {});
    }
    if (FULL_GC_FIRST) {
      // Every runner after its first full GC, the state a long-running runner is in.
      const runnerPids = new Set<number>();
      for (const t of targets)
        for (const [proc, pid] of Object.entries(t.pids))
          if (proc === 'runner' || proc.endsWith('_runner')) runnerPids.add(pid);
      for (const pid of runnerPids) await fullGcIn(pid);
      log(`one full GC run in each of ${runnerPids.size} runners`);
    }
    const survivors: Record<string, HeapSurvivors> = {};
    if (SURVIVORS.size > 0) {
      const dir = mkdtempSync(join(tmpdir(), 'skep-heap-survivors-'));
      for (const label of SURVIVORS) {
        const t = targets.find((x) => x.label === label);
        const pid = t?.pids[label === 'vmcp' ? 'vmcp_runner' : 'runner'];
        if (t === undefined || pid === undefined) {
          log(`--heap-survivors: no runner for ${label} in this run`);
          continue;
        }
        // An unmeasured c32 phase of its own: the profiler costs the runner CPU.
        log(`--heap-survivors: recording ${label} over ${CALLS_C32} calls at c32`);
        const file = join(dir, `${label}.heapprofile`);
        survivors[label] = await recordHeapSurvivors(
          pid,
          () => cpuPhase(t.c32, CALLS_C32, {}),
          CALLS_C32,
          file,
        );
      }
      log(`heap survivor profiles: ${dir}`);
    }
    if (perfRunners.size > 0) {
      const missing = [...PERF].filter((l) => !perfRunners.has(l));
      if (missing.length > 0) log(`--perf: no runner for ${missing.join(', ')} in this run`);
      recorder = await PerfRecorder.start([...perfRunners.values()], PIN ? 0 : undefined);
      log(`perf records ${[...perfRunners.keys()].join(', ')} during their measured c32 phases`);
    }
    const rounds = new Map<string, { c1: CpuPhase[]; c32: CpuPhase[] }>();
    for (let r = 0; r < ROUNDS; r++) {
      // Rotate who goes first, so no target always follows the same one.
      const order = targets.map((_, i) => targets[(i + r * 3) % targets.length]!);
      log(`round ${r + 1}/${ROUNDS}`);
      for (const t of order) {
        const entry = rounds.get(t.label) ?? { c1: [], c32: [] };
        rounds.set(t.label, entry);
        if (t.calls === undefined) await cpuPhase(t.c32, PREWARM, {});
        entry.c1.push(await cpuPhase(t.c1, t.calls ?? CALLS, t.pids));
        const perfPid = perfRunners.get(t.label);
        if (perfPid !== undefined) await recorder!.enable();
        entry.c32.push(await cpuPhase(t.c32, t.calls ?? CALLS_C32, t.pids));
        if (perfPid !== undefined) {
          await recorder!.disable();
          perfCalls.set(perfPid, (perfCalls.get(perfPid) ?? 0) + (t.calls ?? CALLS_C32));
        }
      }
    }
    const perf = recorder === undefined ? undefined : await perfReport(recorder, perfRunners, perfCalls);
    const postClient = median(rounds.get('webhook-post')?.c32.map((p) => p.client_cpu_us) ?? []);
    const paired =
      PAIRED_ROUNDS > 0 ? await pairedConcurrent(targets, postClient + WEBHOOK_OVER_POST_US) : undefined;
    // Each runner's (and relay's) resident set after the rounds, while it is still warm.
    const memoryAfterRounds = new Map(
      targets.map((t) => [
        t.label,
        Object.fromEntries(
          Object.entries(t.pids)
            .filter(([proc]) => proc === 'runner' || proc.endsWith('_runner') || proc === 'relay')
            .map(([proc, pid]) => [proc, memoryOf(pid)]),
        ),
      ]),
    );
    // The first calls after a pause, which the rounds leave out: every process idle, then
    // each `none` runner's first 1,000 calls at c32 and the 1,000 after them.
    const noneTargets = targets.filter((t) => isNone(t.label));
    log(`idle ${IDLE_S} s, then ${noneTargets.map((t) => t.label).join(', ')} at c32`);
    const memoryBeforeIdle = new Map(noneTargets.map((t) => [t.label, memoryOf(t.pids['runner']!)]));
    await new Promise((r) => setTimeout(r, IDLE_S * 1000));
    const afterIdle: Record<string, Record<string, unknown>> = {};
    for (const t of noneTargets) {
      const memoryAfterIdle = memoryOf(t.pids['runner']!);
      const first = await cpuPhase(t.c32, 1000, t.pids);
      const next = await cpuPhase(t.c32, 1000, t.pids);
      afterIdle[t.label] = {
        first_1000_calls_runner_cpu_us: first.cpu_us['runner'],
        next_1000_calls_runner_cpu_us: next.cpu_us['runner'],
        steady_state_runner_cpu_us: round(
          median(rounds.get(t.label)!.c32.map((p) => p.cpu_us['runner'] ?? Number.NaN)),
          2,
        ),
        runner_memory_before_idle: memoryBeforeIdle.get(t.label),
        runner_memory_after_idle: memoryAfterIdle,
      };
    }
    const results: Record<string, Record<string, Record<string, unknown>>> = {};
    for (const t of targets) {
      const r = rounds.get(t.label)!;
      results[t.label] = {
        c1: summarize(r.c1),
        c32: summarize(r.c32),
        memory_after_rounds: memoryAfterRounds.get(t.label) ?? {},
      };
    }
    const derived = derive(rounds);
    const out: Record<string, unknown> = {
      machine,
      setup: {
        calls_per_round: { c1: CALLS, c32: CALLS_C32 },
        unmeasured_calls_before_each_target: PREWARM,
        full_gc_in_every_runner_after_warmup: FULL_GC_FIRST,
        rounds: ROUNDS,
        concurrency: CONCURRENCY,
        cpu_source:
          'per-thread /proc/<pid>/task/*/schedstat (ns); *_ticks: /proc/<pid>/stat utime+stime (clock ticks); runs_per_call: schedstat timeslices (times scheduled in, ~wake-ups)',
        note: 'skep run --from-config (dist/runner.mjs, detached), stdio echo child; medians of interleaved rounds; webhook-post client CPU is the bench process (its loop included)',
        ...(TWIN_CLI !== undefined ? { none2_and_vmcp2_cli: TWIN_CLI } : {}),
        ...(VMCP2_FLAGS.length > 0 ? { vmcp2_node_flags: VMCP2_FLAGS } : {}),
      },
      results,
      ...derived,
      none_after_idle: {
        idle_s: IDLE_S,
        ...afterIdle['none'],
        ...(noneTargets.length > 1 ? { by_runner: afterIdle } : {}),
      },
    };
    if (NONE_REPLICAS > 1)
      out['none_replicas'] = {
        ...(NONE2_FLAGS.length > 0 ? { none2_node_flags: NONE2_FLAGS } : {}),
        ...replicaSpread(rounds),
      };
    if (profDir !== undefined) out['cpu_profile_dir'] = profDir;
    if (perf !== undefined) out['perf'] = perf;
    if (paired !== undefined) out['paired_concurrent'] = paired;
    if (Object.keys(survivors).length > 0) out['heap_survivors'] = survivors;
    process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
  } finally {
    for (const close of closers.reverse()) {
      try {
        await close();
      } catch {
        // best effort
      }
    }
    if (EXTRA_RUNNER_FLAGS.length > 0 || NONE2_FLAGS.length > 0) {
      // The runners' logs (with what those flags printed) outlive the bench's home.
      const logs = mkdtempSync(join(tmpdir(), 'skep-cpu-logs-'));
      cpSync(join(bench.home, 'data', 'logs'), logs, { recursive: true });
      log(`runner logs: ${logs}`);
    }
    await bench.close();
    if (recorder !== undefined) {
      await recorder.stop().catch(() => undefined);
      recorder.remove();
    }
    // The JIT symbol maps V8 wrote for perf.
    for (const pid of perfRunners.values()) rmSync(`/tmp/perf-${pid}.map`, { force: true });
    if (profDir !== undefined) {
      // A runner writes its profile when it exits (after `skep rm`).
      const deadline = Date.now() + 15_000;
      for (const [label, pid] of profiledRunners) {
        const mine = () => readdirSync(profDir).filter((f) => f.includes(`.${pid}.`));
        while (mine().length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
        const files = mine();
        log(
          files.length > 0
            ? `${label} runner CPU profile: ${join(profDir, files[0]!)} (${readFileSync(join(profDir, files[0]!)).length} bytes)`
            : `no CPU profile of the ${label} runner in ${profDir} (did the runner exit?)`,
        );
      }
    }
  }
}

/** Each `none` runner's median CPU per call and how far the slowest is above the fastest. */
function replicaSpread(rounds: Map<string, { c1: CpuPhase[]; c32: CpuPhase[] }>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const c of ['c1', 'c32'] as const) {
    const each: Record<string, number> = {};
    const perRound: Record<string, number[]> = {};
    for (const [label, r] of rounds)
      if (isNone(label)) {
        perRound[label] = r[c].map((p) => round(p.cpu_us['runner'] ?? Number.NaN, 1));
        each[label] = round(median(r[c].map((p) => p.cpu_us['runner'] ?? Number.NaN)), 2);
      }
    const xs = Object.values(each);
    out[c] = {
      runner_cpu_us: each,
      slowest_over_fastest: round(Math.max(...xs) / Math.min(...xs), 3),
      per_round: perRound,
    };
  }
  return out;
}

/** The `perf` section: each recorded runner's breakdown, and each category's difference from `none`. */
async function perfReport(
  recorder: PerfRecorder,
  runners: Map<string, number>,
  calls: Map<number, number>,
): Promise<Record<string, unknown>> {
  await recorder.stop();
  log('reading the perf recording');
  const byPid = await perfBreakdowns(recorder.dataFile, calls);
  const runnersOut: Record<string, PerfBreakdown> = {};
  const functions = new Map<string, Map<string, number>>();
  for (const [label, pid] of runners) {
    const b = byPid.get(pid);
    if (b === undefined) continue;
    const { js_functions, ...breakdown } = b;
    runnersOut[label] = breakdown;
    functions.set(label, js_functions);
  }
  /**
   * `labels`' runners against the recorded runner `base`, by category and by function; undefined
   * when `base` was not recorded or nothing is compared with it.
   */
  const compare = (base: string, labels: string[]) => {
    const floor = runnersOut[base];
    if (floor === undefined || labels.length === 0) return undefined;
    const categories: Record<string, Record<string, number>> = {};
    const fns: Record<string, Array<[string, number]>> = {};
    for (const label of labels) {
      const b = runnersOut[label]!;
      fns[label] = functionsAdded(functions.get(label)!, functions.get(base)!, PERF_TOP);
      const keys = new Set([
        ...Object.keys(b.categories_us_per_call),
        ...Object.keys(floor.categories_us_per_call),
      ]);
      const diff: Record<string, number> = { total: round(b.cpu_us_per_call - floor.cpu_us_per_call, 1) };
      for (const k of keys)
        diff[k] = round((b.categories_us_per_call[k] ?? 0) - (floor.categories_us_per_call[k] ?? 0), 2);
      categories[label] = diff;
    }
    return { categories, fns };
  };
  // The virtual MCP against the bare relay and its floor (when recorded), the rest against `none`.
  const isVmcp = (label: string) => label.startsWith('vmcp');
  const labels = Object.keys(runnersOut);
  const vsRelay = compare('relay', labels.filter(isVmcp));
  const vsFloor = compare(
    'vmcp-floor',
    labels.filter((l) => isVmcp(l) && l !== 'vmcp-floor'),
  );
  const vsNone = compare(
    'none',
    labels.filter((l) => l !== 'none' && l !== 'relay' && (vsRelay === undefined || !isVmcp(l))),
  );
  return {
    note: "perf record -e cpu-clock (on-CPU samples) with call chains, during the measured c32 phases only; µs of runner CPU per call (the bare relay's and the vMCP floor's, `--perf=relay,vmcp-floor`, are their processes'); a sample counts as gc:young (scavenge), gc:full (mark-compact, its marking and sweeping) or gc:other when a collection is on its stack, else kernel, else the source of its nearest JavaScript frame (js:skep, js:node:<module>, js:<package>), else native",
    runners: runnersOut,
    ...(vsNone === undefined
      ? {}
      : {
          added_vs_none_us_per_call: vsNone.categories,
          js_functions_added_vs_none_us_per_call: vsNone.fns,
        }),
    ...(vsRelay === undefined
      ? {}
      : {
          added_vs_relay_us_per_call: vsRelay.categories,
          js_functions_added_vs_relay_us_per_call: vsRelay.fns,
        }),
    ...(vsFloor === undefined
      ? {}
      : {
          added_vs_vmcp_floor_us_per_call: vsFloor.categories,
          js_functions_added_vs_vmcp_floor_us_per_call: vsFloor.fns,
        }),
  };
}

/** The `n` JavaScript functions whose CPU per call grew the most from `base` to `runner`. */
function functionsAdded(
  runner: Map<string, number>,
  base: Map<string, number>,
  n: number,
): Array<[string, number]> {
  const names = new Set([...runner.keys(), ...base.keys()]);
  return [...names]
    .map((name): [string, number] => [name, (runner.get(name) ?? 0) - (base.get(name) ?? 0)])
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([name, us]) => [name, round(us, 2)]);
}

/**
 * Each stage's added CPU, measured with its runner and the `none` runner driven at the same
 * time. In the rounds above a stage and `none` are measured seconds apart, and on a shared VM
 * the machine's speed drifts over seconds (one phase's CPU per call correlates with the next
 * one's at 0.34–0.56 in five full runs, and up to 0.4 a dozen phases later), so the difference
 * of two phases carries that drift. Here, in each of `PAIRED_ROUNDS` rounds, every stage target's c32
 * phase runs concurrently with one of `none` (of `none-1k` for the 1 KB answers' targets; the
 * 1 MB ones are left out): both runners on the measured CPU, both driven by this process, which
 * of the two starts first alternating by round. The stage's added CPU is the difference within
 * that pair. `none#2` paired with `none` the same way is the control:
 * what two identical runners measured side by side differ by. Each runner gets about half the
 * CPU and half the calls per second it gets alone, so the CPU per call of both is higher than in
 * the rounds above; their difference is the stage's.
 */
async function pairedConcurrent(
  targets: Target[],
  webhookLimit: number,
): Promise<Record<string, unknown> | undefined> {
  const byLabel = new Map(targets.map((t) => [t.label, t]));
  const none = byLabel.get('none');
  if (none === undefined) return undefined;
  // Each runner target against the `none` of its answers' size: the 1 KB ones against `none-1k`
  // (a workload of their own); the 1 MB ones, measured by throughput, are left out.
  const baselineOf = (t: Target): Target | undefined =>
    t.label.endsWith('-1k') ? byLabel.get('none-1k') : none;
  const pairs: Pair[] = targets
    .filter(
      (t) =>
        t.calls === undefined &&
        t.pids['runner'] !== undefined &&
        baselineOf(t) !== undefined &&
        baselineOf(t) !== t,
    )
    .map((t) => ({
      key: t.label,
      target: t,
      base: baselineOf(t)!,
      procs: ['runner', 'runner'],
      ratio: false,
    }));
  // The virtual MCP and its floors, by the ratio of their CPU per call (both in front of the
  // one backend workload, which serves the two at once); and an A/B of the virtual MCP's runner
  // flags or code (`BENCH_CPU_VMCP2_FLAGS`, `BENCH_CPU_TWIN_CLI`): `vmcp#2` against `vmcp`.
  // The floors' process is `relay`.
  const ratioPairs: Array<[key: string, target: string, base: string]> = [
    ['vmcp_vs_bare_relay', 'vmcp', 'relay'],
    ['vmcp_floor_vs_bare_relay', 'vmcp-floor', 'relay'],
    ['vmcp_vs_vmcp_floor', 'vmcp', 'vmcp-floor'],
    ['vmcp2_vs_vmcp', 'vmcp#2', 'vmcp'],
  ];
  const procOf = (label: string) =>
    label.startsWith('vmcp') && label !== 'vmcp-floor' ? 'vmcp_runner' : 'relay';
  for (const [key, targetLabel, baseLabel] of ratioPairs) {
    const target = byLabel.get(targetLabel);
    const base = byLabel.get(baseLabel);
    if (target !== undefined && base !== undefined)
      pairs.push({ key, target, base, procs: [procOf(targetLabel), procOf(baseLabel)], ratio: true });
  }
  if (pairs.length === 0) return undefined;
  const figures = new Map<string, number[]>(pairs.map((p) => [p.key, []]));
  const noneCpu: number[] = [];
  const callsPerSecond: number[] = [];
  for (let r = 0; r < PAIRED_ROUNDS; r++) {
    log(`paired round ${r + 1}/${PAIRED_ROUNDS}`);
    const order = pairs.map((_, i) => pairs[(i + r) % pairs.length]!);
    for (const { key, target: t, base, procs, ratio } of order) {
      await Promise.all([cpuPhase(base.c32, PREWARM, {}), cpuPhase(t.c32, PREWARM, {})]);
      const measureBase = () => cpuPhase(base.c32, CALLS_C32, base.pids);
      const measureTarget = () => cpuPhase(t.c32, CALLS_C32, t.pids);
      const [a, b] =
        r % 2 === 0
          ? await Promise.all([measureBase(), measureTarget()])
          : await Promise.all([measureTarget(), measureBase()]).then(([x, y]) => [y, x] as const);
      const [tp, bp] = procs;
      figures
        .get(key)!
        .push(ratio ? round(b.cpu_us[tp]! / a.cpu_us[bp]!, 3) : round(b.cpu_us[tp]! - a.cpu_us[bp]!, 2));
      if (base === none) {
        noneCpu.push(a.cpu_us['runner']!);
        callsPerSecond.push(a.calls_per_s);
      }
    }
  }
  const stats: Record<string, Stat & { per_round: number[] }> = {};
  for (const [key, xs] of figures) stats[key] = { ...statOf(xs), per_round: xs };
  const isRatio = (key: string) => pairs.find((p) => p.key === key)!.ratio;
  const limits: Record<string, number> = {
    ...STAGE_LIMITS_US,
    webhook: webhookLimit,
    'guardrails-1k': GUARDRAILS_1K_LIMIT_US,
  };
  const resolved: Record<string, string> = {};
  for (const [label, limit] of Object.entries(limits))
    if (stats[label] !== undefined)
      resolved[`${label}_added_le_${round(limit, 2)}_us`] = verdict(stats[label], limit);
  if (stats['vmcp_vs_bare_relay'] !== undefined)
    resolved['vmcp_cpu_vs_relay_le_1_2'] = verdict(stats['vmcp_vs_bare_relay'], 1.2);
  const ratios = Object.fromEntries(Object.entries(stats).filter(([k]) => isRatio(k)));
  return {
    note:
      'c32 phases of each stage runner and the none runner (none-1k for the 1 KB answers) driven at the ' +
      "same time, on the same CPU; added CPU = the stage runner's CPU per call minus the none runner's in " +
      'the same pair; none#2 against none is the control. The virtual MCP, its floor and the bare relay are ' +
      'paired the same way, by the ratio of their CPU per call',
    rounds: PAIRED_ROUNDS,
    calls_per_phase: CALLS_C32,
    none_runner_cpu_us_per_call: statOf(noneCpu),
    none_calls_per_s: statOf(callsPerSecond),
    control_none2_minus_none: stats['none#2'],
    added_runner_cpu_us_per_call: Object.fromEntries(
      Object.entries(stats).filter(([k]) => k !== 'none#2' && !isRatio(k)),
    ),
    ...(Object.keys(ratios).length > 0 ? { vmcp_cpu_ratios: ratios } : {}),
    targets_resolved: resolved,
  };
}

/** Two targets of the paired rounds: the figure is `target`'s `procs[0]` against `base`'s `procs[1]`. */
interface Pair {
  key: string;
  target: Target;
  base: Target;
  procs: [string, string];
  /** The ratio of their CPU per call; else the difference, µs. */
  ratio: boolean;
}

/** A per-round figure over the rounds: median, range, and the median's 95 % interval. */
interface Stat {
  median: number;
  min: number;
  max: number;
  median_ci: { low: number; high: number; coverage: number } | undefined;
}

/** Median, range and the median's confidence interval (`medianInterval`) of per-round values. */
function statOf(xs: number[]): Stat {
  const ok = xs.filter((x) => !Number.isNaN(x));
  const ci = medianInterval(ok);
  const r2 = (x: number) => round(x, 2);
  return {
    median: r2(median(ok)),
    min: r2(Math.min(...ok)),
    max: r2(Math.max(...ok)),
    median_ci:
      ci === undefined ? undefined : { low: r2(ci.low), high: r2(ci.high), coverage: r2(ci.coverage) },
  };
}

/** Whether a run resolves a figure against its upper limit: by where the median's interval lies. */
function verdict(st: Stat, limit: number): 'met' | 'missed' | 'unresolved' {
  const ci = st.median_ci;
  if (ci === undefined) return 'unresolved';
  if (ci.high <= limit) return 'met';
  if (ci.low > limit) return 'missed';
  return 'unresolved';
}

/**
 * Ratios against the floors, added CPU per stage, and the targets. Each figure is
 * computed per round from that round's own measurements (paired: a stage against the `none`
 * of the same round), then the median over rounds is reported with the range.
 */
function derive(rounds: Map<string, { c1: CpuPhase[]; c32: CpuPhase[] }>): Record<string, unknown> {
  const n = Math.min(...[...rounds.values()].map((r) => r.c1.length));
  const perRound = (f: (i: number) => number): number[] => Array.from({ length: n }, (_, i) => f(i));
  const one = (label: string, c: 'c1' | 'c32', proc: string, i: number): number =>
    rounds.get(label)?.[c][i]?.cpu_us[proc] ?? Number.NaN;
  const noneLabels = [...rounds.keys()].filter(isNoneBaseline);
  /** A target's CPU in round `i`; for `none`, the mean of the `none` runners of that round. */
  const cpu = (label: string, c: 'c1' | 'c32', proc: string, i: number): number =>
    label === 'none'
      ? noneLabels.reduce((sum, l) => sum + one(l, c, proc, i), 0) / noneLabels.length
      : one(label, c, proc, i);
  const client = (label: string, c: 'c1' | 'c32', i: number): number =>
    rounds.get(label)?.[c][i]?.client_cpu_us ?? Number.NaN;
  const p50 = (label: string, i: number): number => rounds.get(label)?.c1[i]?.p50_ms ?? Number.NaN;
  const r2 = (x: number) => round(x, 2);
  const stat = statOf;
  const floors: Record<string, unknown> = {};
  const ratios: Record<string, unknown> = {};
  const added: Record<string, unknown> = {};
  /**
   * Each added CPU divided by the HTTP floor's CPU of the same run (medians): a machine twice
   * as slow doubles both, so this compares runs on different machines where µs do not.
   */
  const inFloors: Record<string, Record<string, number>> = {};
  const targets: Record<string, unknown> = {};
  const verdicts: Record<string, unknown> = {};
  for (const c of CONCURRENCY.map((x) => `c${x}` as const)) {
    floors[c] = {
      http_floor_server_cpu_us: stat(perRound((i) => cpu('http-floor', c, 'server', i))),
      bare_relay_cpu_us: stat(perRound((i) => cpu('relay', c, 'relay', i))),
      stdio_relay_cpu_us: stat(perRound((i) => cpu('stdio-relay', c, 'relay', i))),
      vmcp_floor_cpu_us: stat(perRound((i) => cpu('vmcp-floor', c, 'relay', i))),
      webhook_post_client_cpu_us: stat(perRound((i) => client('webhook-post', c, i))),
      webhook_post_receiver_cpu_us: stat(perRound((i) => cpu('webhook-post', c, 'webhook_receiver', i))),
      direct_stdio_server_cpu_us: stat(perRound((i) => cpu('direct', c, 'server', i))),
    };
    const runnerVsFloor = stat(
      perRound((i) => cpu('none', c, 'runner', i) / cpu('http-floor', c, 'server', i)),
    );
    const vmcpVsRelay = stat(perRound((i) => cpu('vmcp', c, 'vmcp_runner', i) / cpu('relay', c, 'relay', i)));
    ratios[c] = {
      runner_none_vs_http_floor: runnerVsFloor,
      runner_none_vs_stdio_relay: stat(
        perRound((i) => cpu('none', c, 'runner', i) / cpu('stdio-relay', c, 'relay', i)),
      ),
      runner_none_vs_bare_relay: stat(
        perRound((i) => cpu('none', c, 'runner', i) / cpu('relay', c, 'relay', i)),
      ),
      vmcp_runner_vs_bare_relay: vmcpVsRelay,
      vmcp_floor_vs_bare_relay: stat(
        perRound((i) => cpu('vmcp-floor', c, 'relay', i) / cpu('relay', c, 'relay', i)),
      ),
      vmcp_runner_vs_vmcp_floor: stat(
        perRound((i) => cpu('vmcp', c, 'vmcp_runner', i) / cpu('vmcp-floor', c, 'relay', i)),
      ),
      ...(rounds.has('vmcp#2')
        ? {
            vmcp2_runner_vs_bare_relay: stat(
              perRound((i) => cpu('vmcp#2', c, 'vmcp_runner', i) / cpu('relay', c, 'relay', i)),
            ),
            vmcp2_runner_vs_vmcp_runner: stat(
              perRound((i) => cpu('vmcp#2', c, 'vmcp_runner', i) / cpu('vmcp', c, 'vmcp_runner', i)),
            ),
          }
        : {}),
    };
    const stages: Record<string, Stat> = {};
    for (const label of rounds.keys()) {
      if (
        [
          'direct',
          'http-floor',
          'stdio-relay',
          'webhook-post',
          'relay',
          'vmcp-floor',
          'none',
          'vmcp',
          'vmcp#2',
        ].includes(label)
      )
        continue;
      if (isNone(label)) continue;
      // Sized answers are compared with `none` at the same size, below.
      if (/-1[km]$/.test(label)) continue;
      stages[label] = stat(perRound((i) => cpu(label, c, 'runner', i) - cpu('none', c, 'runner', i)));
    }
    if (rounds.has('guardrails-1k'))
      stages['guardrails_1k_answer'] = stat(
        perRound((i) => cpu('guardrails-1k', c, 'runner', i) - cpu('none-1k', c, 'runner', i)),
      );
    added[c] = stages;
    const floorMedian = median(perRound((i) => cpu('http-floor', c, 'server', i)));
    inFloors[c] = Object.fromEntries(
      Object.entries(stages).map(([label, st]) => [label, round(st.median / floorMedian, 3)]),
    );
    const postClient = median(perRound((i) => client('webhook-post', c, i)));
    const limits: Record<string, number> = {
      ...STAGE_LIMITS_US,
      webhook: postClient + WEBHOOK_OVER_POST_US,
      guardrails_1k_answer: GUARDRAILS_1K_LIMIT_US,
    };
    const checks: Array<[string, Stat | undefined, number]> = [
      ['runner_none_vs_http_floor_le_1_25', runnerVsFloor, 1.25],
      ...Object.entries(limits).map(([label, limit]): [string, Stat | undefined, number] => [
        `${label}_added_le_${r2(limit)}_us`,
        stages[label],
        limit,
      ]),
      ['vmcp_cpu_vs_relay_le_1_2', vmcpVsRelay, 1.2],
    ];
    const present = checks.filter(([, st]) => st !== undefined && !Number.isNaN(st.median));
    targets[c] = Object.fromEntries(present.map(([name, st, limit]) => [name, st!.median <= limit]));
    verdicts[c] = Object.fromEntries(present.map(([name, st, limit]) => [name, verdict(st!, limit)]));
  }
  // 1 MB answers: throughput with and without the default guardrails, side by side.
  const big: Record<string, unknown> = {};
  if (rounds.has('guardrails-1m'))
    for (const c of CONCURRENCY.map((x) => `c${x}` as const)) {
      const key = c === 'c1' ? 'c1' : `c${BIG_CALLERS}`;
      const perSecond = (label: string) =>
        stat(perRound((i) => rounds.get(label)?.[c][i]?.calls_per_s ?? NaN));
      big[key] = {
        none_calls_per_s: perSecond('none-1m'),
        guardrails_calls_per_s: perSecond('guardrails-1m'),
        guardrails_vs_none: stat(
          perRound(
            (i) =>
              (rounds.get('guardrails-1m')?.[c][i]?.calls_per_s ?? NaN) /
              (rounds.get('none-1m')?.[c][i]?.calls_per_s ?? NaN),
          ),
        ),
        added_runner_cpu_ms_per_call: stat(
          perRound((i) => (cpu('guardrails-1m', c, 'runner', i) - cpu('none-1m', c, 'runner', i)) / 1000),
        ),
      };
    }
  const overhead = stat(perRound((i) => (p50('none', i) - p50('http-floor', i) - p50('direct', i)) * 1000));
  const vmcpLatency = stat(perRound((i) => p50('vmcp', i) / p50('relay', i)));
  return {
    floors,
    ratios,
    added_runner_cpu_us_per_call: added,
    added_runner_cpu_in_http_floors: inFloors,
    ...(Object.keys(big).length > 0 ? { guardrails_1mb_answers: big } : {}),
    latency_context_c1: {
      own_latency_overhead_us: overhead,
      target_own_latency_overhead_us: 50,
      vmcp_p50_vs_bare_relay: vmcpLatency,
      target_vmcp_p50_vs_bare_relay: 1.15,
    },
    targets_met: {
      ...targets,
      own_latency_overhead_le_50_us: overhead.median <= 50,
      vmcp_p50_vs_relay_le_1_15: vmcpLatency.median <= 1.15,
    },
    targets_resolved: {
      note:
        'met: the whole 95 % interval of the median is within the target; missed: all of it is beyond; ' +
        'unresolved: the target lies inside it, and this run cannot tell',
      ...verdicts,
      own_latency_overhead_le_50_us: verdict(overhead, 50),
      vmcp_p50_vs_relay_le_1_15: verdict(vmcpLatency, 1.15),
    },
  };
}

if (!existsSync(join(root, 'package.json'))) throw new Error('run from the repository');
await main();
