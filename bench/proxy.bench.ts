/**
 * Head-to-head MCP proxy benchmark. One backend — bench/fixtures/echo-server.mjs, a
 * minimal deterministic stdio MCP server — reached five ways, in one run, with the same lean
 * keep-alive client (an undici Pool, one POST per call, JSON or SSE answers both accepted):
 *
 *   direct       the bench process writes JSON-RPC lines to the child's stdin (no HTTP)
 *   http-floor   a bare node:http server that answers tools/call itself (no child)
 *   skep         the product: `skep run` — a detached workload runner (dist/runner.mjs)
 *                hosting Skep's proxy in front of one echo child (measured: runner + child)
 *   skep-proxy-only  the proxy library alone in front of one echo child (no runner)
 *   supergateway --stdio ... --outputTransport streamableHttp --stateful
 *   mcp-proxy    --server stream (stateful streamable HTTP)
 *
 * Session semantics: every worker (1 at c=1, 32 at c=32) initializes its own MCP session
 * (initialize + notifications/initialized, Mcp-Session-Id) before timing starts, then makes
 * sequential tools/call requests on it. Latency is per call (p50/p99); throughput is calls
 * per second over the timed window. Memory is read from /proc every 100 ms over the whole
 * measurement, which ends with an untimed soak (BENCH_SOAK_S seconds at concurrency 32), because
 * a proxy's heap keeps growing well past a few thousand calls: the RSS sum and the PSS sum of
 * the process tree (peak and end), RSS per process, and the tree's footprint with shared pages
 * counted once (see `uniqueFootprint`). The bench process itself is excluded.
 *
 * Prints one JSON object on stdout; progress goes to stderr.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { closeSync, openSync, readdirSync, readFileSync, readSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { Pool } from 'undici';
import { definedOnly } from '../src/shared/index.js';
import { MCP_POST_HEADERS, openMcpSession } from './lib/workloads.js';
import { freePort } from '../test/helpers/net.js';

const require = createRequire(import.meta.url);
const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..');
const ECHO = join(here, 'fixtures/echo-server.mjs');
const WARMUP_CALLS = Number(process.env['BENCH_WARMUP'] ?? 2000);
const TIMED_CALLS = Number(process.env['BENCH_CALLS'] ?? 10000);
const CONCURRENCY = [1, 32];
const SOAK_MS = Number(process.env['BENCH_SOAK_S'] ?? 10) * 1000;
const INTERLEAVED_ROUNDS = Number(process.env['BENCH_FLOOR_ROUNDS'] ?? 6);
const INTERLEAVED_CALLS = 3000;

const log = (msg: string): void => {
  process.stderr.write(`[proxy.bench] ${msg}\n`);
};

// ---- process tree RSS ----

function childrenOf(): Map<number, number[]> {
  const map = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const list = map.get(ppid) ?? [];
      list.push(Number(entry));
      map.set(ppid, list);
    } catch {
      // the process went away
    }
  }
  return map;
}

/**
 * Memory of a process tree, in bytes. RSS counts pages shared between the processes (the
 * Node binary itself is ~40 MB of them) once per process; PSS splits shared pages among
 * their users, so the PSS sum is what the tree really costs the machine. Both are reported.
 */
function treeMemory(pid: number): { rss: number; pss: number; byProcess: Map<string, number> } {
  const kids = childrenOf();
  let rss = 0;
  let pss = 0;
  const byProcess = new Map<string, number>();
  const stack = [pid];
  while (stack.length > 0) {
    const p = stack.pop()!;
    try {
      const rollup = readFileSync(`/proc/${p}/smaps_rollup`, 'utf8');
      const processRss = Number(/^Rss:\s+(\d+) kB/m.exec(rollup)?.[1] ?? 0) * 1024;
      rss += processRss;
      pss += Number(/^Pss:\s+(\d+) kB/m.exec(rollup)?.[1] ?? 0) * 1024;
      const label = processLabel(p);
      byProcess.set(label, (byProcess.get(label) ?? 0) + processRss);
    } catch {
      // gone
    }
    stack.push(...(kids.get(p) ?? []));
  }
  return { rss, pss, byProcess };
}

/**
 * The physical memory a process tree occupies, in bytes: every resident page of every process,
 * a page shared by several of them (the Node binary's code, libraries) counted once — what the
 * tree costs the machine when it runs alone, as a cgroup would count it. Read from
 * /proc/<pid>/pagemap, whose page frame numbers only root may see; undefined otherwise.
 */
function uniqueFootprint(pid: number): number | undefined {
  const kids = childrenOf();
  const frames = new Set<number>();
  const entries = Buffer.alloc(8 * 4096);
  const stack = [pid];
  let sawFrame = false;
  while (stack.length > 0) {
    const p = stack.pop()!;
    stack.push(...(kids.get(p) ?? []));
    let smaps: string;
    let fd: number;
    try {
      smaps = readFileSync(`/proc/${p}/smaps`, 'utf8');
      fd = openSync(`/proc/${p}/pagemap`, 'r');
    } catch {
      continue; // gone
    }
    try {
      // Only mappings with resident pages (V8 reserves gigabytes it never touches).
      let range: [number, number] = [0, 0];
      for (const line of smaps.split('\n')) {
        const header = /^([0-9a-f]+)-([0-9a-f]+) /.exec(line);
        if (header !== null) range = [parseInt(header[1]!, 16) / 4096, parseInt(header[2]!, 16) / 4096];
        if (!line.startsWith('Rss:') || /^Rss:\s+0 kB/.test(line)) continue;
        for (let page = range[0]; page < range[1];) {
          const count = Math.min(4096, range[1] - page);
          let read = 0;
          try {
            read = readSync(fd, entries, 0, count * 8, page * 8);
          } catch {
            break; // a special mapping ([vsyscall]) cannot be read
          }
          for (let i = 0; i + 8 <= read; i += 8) {
            const high = entries.readUInt32LE(i + 4);
            if ((high & 0x80000000) === 0) continue; // not present
            const frame = (high & 0x7fffff) * 2 ** 32 + entries.readUInt32LE(i);
            if (frame !== 0) sawFrame = true;
            frames.add(frame);
          }
          page += count;
        }
      }
    } finally {
      closeSync(fd);
    }
  }
  return sawFrame ? frames.size * 4096 : undefined;
}

/** A short name for a process of a tree: the script it runs (`runner.mjs runner x`, `echo-server.mjs`). */
function processLabel(pid: number): string {
  const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8')
    .split('\0')
    .filter((a) => a !== '');
  const script = args.slice(1).find((a) => !a.startsWith('-')) ?? args[0] ?? String(pid);
  const rest = script.includes('runner.mjs') ? ' (runner)' : '';
  return `${script.slice(script.lastIndexOf('/') + 1)}${rest}`;
}

// ---- targets ----

interface Target {
  name: string;
  notes: string;
  /** Root of the process tree to measure. */
  pid: number;
  /** Opens a session and returns a function making one tools/call. */
  session(): Promise<(message: string) => Promise<string>>;
  stop(): Promise<void>;
}

function waitForPort(child: ChildProcess, pattern: RegExp, what: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${what} did not start`)), 30_000);
    let seen = '';
    const onData = (chunk: Buffer): void => {
      seen += chunk.toString();
      const m = pattern.exec(seen);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', (code) => reject(new Error(`${what} exited (${code}): ${seen.slice(-500)}`)));
  });
}

async function waitForListen(port: number, child: ChildProcess, what: string): Promise<void> {
  const { connect } = await import('node:net');
  const deadline = Date.now() + 30_000;
  child.stdout?.resume();
  child.stderr?.resume();
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${what} exited (${child.exitCode})`);
    const ok = await new Promise<boolean>((resolve) => {
      const s = connect(port, '127.0.0.1', () => {
        s.destroy();
        resolve(true);
      });
      s.on('error', () => resolve(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${what} did not start listening on ${port}`);
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const done = new Promise((r) => child.once('exit', r));
  // Kill the whole group (the proxy and its echo child).
  try {
    process.kill(-child.pid!, 'SIGKILL');
  } catch {
    child.kill('SIGKILL');
  }
  await done;
}

function directTarget(): Target {
  const child = spawn(process.execPath, [ECHO], { stdio: ['pipe', 'pipe', 'inherit'] });
  const waiting = new Map<number, (line: string) => void>();
  let nextId = 1;
  createInterface({ input: child.stdout }).on('line', (line) => {
    const m = /"id":(\d+)/.exec(line);
    const id = m ? Number(m[1]) : -1;
    waiting.get(id)?.(line);
    waiting.delete(id);
  });
  const call = (method: string, params: unknown): Promise<string> =>
    new Promise((resolve) => {
      const id = nextId++;
      waiting.set(id, resolve);
      child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
    });
  let initialized: Promise<string> | undefined;
  return {
    name: 'direct',
    notes: 'stdio to the echo child from the bench process; one shared stdio session',
    pid: child.pid!,
    async session() {
      initialized ??= call('initialize', {
        protocolVersion: '2025-06-18',
        capabilities: {},
        clientInfo: { name: 'bench', version: '1' },
      });
      await initialized;
      return (message) => call('tools/call', { name: 'echo', arguments: { message } });
    },
    async stop() {
      await stopChild(child);
    },
  };
}

function dataOf(body: string): string {
  if (body.startsWith('{') || body.startsWith('[')) return body;
  // An SSE answer: the response is the last data line.
  const lines = body.split('\n').filter((l) => l.startsWith('data:'));
  return (lines[lines.length - 1] ?? '').slice(5).trim();
}

async function httpTarget(
  name: string,
  notes: string,
  command: string[],
  pattern: RegExp,
  fixedPort: number | undefined,
  stateful: boolean,
): Promise<Target> {
  const child = spawn(process.execPath, command, {
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
    cwd: root,
  });
  const port = fixedPort ?? (await waitForPort(child, pattern, name));
  if (fixedPort !== undefined) await waitForListen(port, child, name);
  return sessionTarget(name, notes, port, child.pid!, stateful, () => stopChild(child));
}

/** A target reached over streamable HTTP at `port`, measured as the process tree of `pid`. */
function sessionTarget(
  name: string,
  notes: string,
  port: number,
  pid: number,
  stateful: boolean,
  stopServer: () => Promise<void>,
  path = '/mcp',
): Target {
  const origin = `http://127.0.0.1:${port}`;
  const pool = new Pool(origin, { connections: 64, pipelining: 1, keepAliveTimeout: 60_000 });
  return {
    name,
    notes,
    pid,
    async session() {
      const headers = stateful ? await openMcpSession(pool, name, path) : { ...MCP_POST_HEADERS };
      let id = 1;
      return async (message) => {
        const res = await pool.request({
          path,
          method: 'POST',
          headers,
          body: `{"jsonrpc":"2.0","id":${id++},"method":"tools/call","params":{"name":"echo","arguments":{"message":${JSON.stringify(message)}}}}`,
        });
        const text = dataOf(await res.body.text());
        if (res.statusCode !== 200) throw new Error(`${name}: HTTP ${res.statusCode}: ${text.slice(0, 200)}`);
        return text;
      };
    },
    async stop() {
      await pool.close();
      await stopServer();
    },
  };
}

/**
 * The product path: `skep run cmd://node echo-server.mjs` with the built CLI, so the echo
 * child runs under a real detached workload runner (`dist/runner.mjs`: supervisor, proxy,
 * store, secrets) — the process tree measured is the whole workload, runner + server.
 */
async function workloadTarget(): Promise<Target> {
  const built = spawnSync(process.execPath, ['scripts/bundle.mjs'], { cwd: root, stdio: 'inherit' });
  if (built.status !== 0) throw new Error('bundling the CLI failed');
  const home = await mkdtemp(join(tmpdir(), 'skep-bench-home-'));
  const env = { ...process.env, SKEP_HOME: home, SKEP_LOG_LEVEL: 'silent' };
  const cli = (args: string[]) =>
    spawnSync(process.execPath, [join(root, 'dist/skep.mjs'), ...args], { env, encoding: 'utf8' });
  const name = 'bench-echo';
  const run = cli(['run', `cmd://${process.execPath}`, '--name', name, '--json', '--', ECHO]);
  if (run.status !== 0) throw new Error(`skep run failed: ${run.stderr}`);
  // The URL the owner's clients get: its query carries the workload's access token.
  const { port, url } = JSON.parse(run.stdout) as { port: number; url: string };
  const deadline = Date.now() + 30_000;
  for (;;) {
    const list = cli(['list', '--json']);
    const w = (JSON.parse(list.stdout) as { workloads: { name: string; status: string }[] }).workloads.find(
      (x) => x.name === name,
    );
    if (w?.status === 'running') break;
    if (Date.now() > deadline) throw new Error(`workload did not become running: ${list.stdout}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  const runnerPid = findProcess((cmd) => cmd.includes('runner.mjs') && cmd.endsWith(`runner\0${name}`));
  if (runnerPid === undefined) throw new Error('cannot find the workload runner process');
  return sessionTarget(
    'skep',
    'skep run: detached runner (dist/runner.mjs) hosting the proxy, one stdio echo child shared by all sessions; stateful streamable HTTP',
    port,
    runnerPid,
    true,
    async () => {
      cli(['rm', name]);
      const until = Date.now() + 15_000;
      while (Date.now() < until) {
        try {
          process.kill(runnerPid, 0);
        } catch {
          break;
        }
        await new Promise((r) => setTimeout(r, 100));
      }
      await rm(home, { recursive: true, force: true });
    },
    new URL(url).pathname + new URL(url).search,
  );
}

/** First pid whose NUL-separated command line satisfies `match`. */
function findProcess(match: (cmdline: string) => boolean): number | undefined {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmd = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replace(/\0$/, '');
      if (match(cmd)) return Number(entry);
    } catch {
      // gone
    }
  }
  return undefined;
}

/** Bundles the Skep proxy launcher to plain JS so the measured process carries no TS loader. */
async function bundleSkep(dir: string): Promise<string> {
  const out = join(dir, 'skep-proxy.mjs');
  const esbuild = (await import('esbuild')) as typeof import('esbuild');
  await esbuild.build({
    entryPoints: [join(here, 'fixtures/skep-proxy.ts')],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    // Keep dynamic imports lazy, as they are when the runner loads the compiled modules.
    splitting: true,
    outdir: dir,
    entryNames: 'skep-proxy',
    outExtension: { '.js': '.mjs' },
    logLevel: 'silent',
  });
  return out;
}

// ---- measurement ----

interface Phase {
  concurrency: number;
  calls: number;
  p50_ms: number;
  p99_ms: number;
  mean_ms: number;
  calls_per_s: number;
  errors: number;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** `total` calls at `concurrency` (or, with `untilMs`, as many as fit in that time). */
async function phase(
  target: Target,
  concurrency: number,
  total: number,
  record: boolean,
  untilMs?: number,
): Promise<Phase> {
  const calls = await Promise.all(Array.from({ length: concurrency }, () => target.session()));
  const latencies: number[] = [];
  let errors = 0;
  let issued = 0;
  const started = performance.now();
  const more = untilMs === undefined ? () => issued < total : () => performance.now() - started < untilMs;
  await Promise.all(
    calls.map(async (call, w) => {
      while (more()) {
        issued++;
        const message = `w${w}-${issued}`;
        const t0 = performance.now();
        try {
          const reply = await call(message);
          if (!reply.includes(`"text":"${message}"`)) errors++;
        } catch (err) {
          errors++;
          if (errors < 3) log(`${target.name}: ${(err as Error).message}`);
        }
        if (record) latencies.push(performance.now() - t0);
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const round = (n: number): number => Math.round(n * 1000) / 1000;
  return {
    concurrency,
    calls: issued,
    p50_ms: round(percentile(latencies, 50)),
    p99_ms: round(percentile(latencies, 99)),
    mean_ms: round(latencies.reduce((a, b) => a + b, 0) / Math.max(1, latencies.length)),
    calls_per_s: Math.round(issued / elapsed),
    errors,
  };
}

function megabytes(byProcess: Map<string, number>): Record<string, number> {
  return Object.fromEntries([...byProcess].map(([label, bytes]) => [label, Math.round(bytes / 1048576)]));
}

async function measure(target: Target): Promise<Record<string, unknown>> {
  let peak = treeMemory(target.pid);
  const peakByProcess = new Map<string, number>();
  const sample = (): void => {
    const now = treeMemory(target.pid);
    peak = { rss: Math.max(peak.rss, now.rss), pss: Math.max(peak.pss, now.pss), byProcess: peakByProcess };
    for (const [label, rss] of now.byProcess)
      peakByProcess.set(label, Math.max(peakByProcess.get(label) ?? 0, rss));
  };
  const sampler = setInterval(sample, 100);
  try {
    const phases: Phase[] = [];
    for (const c of CONCURRENCY) {
      await phase(target, c, WARMUP_CALLS, false);
      phases.push(await phase(target, c, TIMED_CALLS, true));
      log(`${target.name} c=${c}: p50 ${phases.at(-1)!.p50_ms} ms, ${phases.at(-1)!.calls_per_s} calls/s`);
    }
    // The timed phases are the benchmark; the soak then shows where memory settles.
    const timedRss = treeMemory(target.pid).rss;
    const timedUnique = uniqueFootprint(target.pid);
    const soak = await phase(target, 32, 0, false, SOAK_MS);
    log(`${target.name} soak: ${soak.calls} calls at c=32 in ${SOAK_MS / 1000} s`);
    const end = treeMemory(target.pid);
    sample();
    const unique = uniqueFootprint(target.pid);
    return {
      notes: target.notes,
      phases,
      rss_mb_end: Math.round(end.rss / 1048576),
      rss_mb_peak: Math.round(peak.rss / 1048576),
      pss_mb_end: Math.round(end.pss / 1048576),
      pss_mb_peak: Math.round(peak.pss / 1048576),
      rss_mb_after_timed: Math.round(timedRss / 1048576),
      unique_mb_after_timed: timedUnique === undefined ? null : Math.round(timedUnique / 1048576),
      soak_calls: soak.calls,
      unique_mb_end: unique === undefined ? null : Math.round(unique / 1048576),
      rss_mb_end_by_process: megabytes(end.byProcess),
      rss_mb_peak_by_process: megabytes(peakByProcess),
    };
  } finally {
    clearInterval(sampler);
  }
}

async function main(): Promise<void> {
  // Inside the repository so the bundle resolves packages from node_modules.
  await mkdir(join(root, 'node_modules/.cache'), { recursive: true });
  const dir = await mkdtemp(join(root, 'node_modules/.cache/skep-bench-'));
  const results: Record<string, unknown> = {};
  let floorRounds: Awaited<ReturnType<typeof interleaved>>;
  try {
    const skepJs = await bundleSkep(dir);
    const supergateway = join(dirname(require.resolve('supergateway/package.json')), 'dist/index.js');
    const mcpProxy = join(dirname(require.resolve('mcp-proxy/package.json')), 'dist/bin/mcp-proxy.mjs');
    const echoCmd = `${process.execPath} ${ECHO}`;
    const makers: Array<() => Promise<Target>> = [
      async () => directTarget(),
      () =>
        httpTarget(
          'http-floor',
          'bare node:http answering tools/call itself; no session, no child',
          [join(here, 'fixtures/http-floor.mjs'), '0'],
          /listening (\d+)/,
          undefined,
          false,
        ),
      () => workloadTarget(),
      () =>
        httpTarget(
          'skep-proxy-only',
          'src/dataplane/proxy startProxy alone (no runner), one stdio echo child shared by all sessions; stateful streamable HTTP',
          [skepJs, '0', '--', process.execPath, ECHO],
          /listening (\d+)/,
          undefined,
          true,
        ),
      async () => {
        const port = await freePort();
        return httpTarget(
          'supergateway',
          'supergateway --stdio --outputTransport streamableHttp --stateful (spawns one child per session)',
          [
            supergateway,
            '--stdio',
            echoCmd,
            '--outputTransport',
            'streamableHttp',
            '--stateful',
            '--port',
            String(port),
            '--logLevel',
            'none',
          ],
          /$^/,
          port,
          true,
        );
      },
      async () => {
        const port = await freePort();
        return httpTarget(
          'mcp-proxy',
          'mcp-proxy --server stream (stateful streamable HTTP; one child per session)',
          [
            mcpProxy,
            '--port',
            String(port),
            '--host',
            '127.0.0.1',
            '--server',
            'stream',
            '--',
            process.execPath,
            ECHO,
          ],
          /$^/,
          port,
          true,
        );
      },
    ];
    // BENCH_TARGETS=skep,direct measures only those (all by default).
    const only = process.env['BENCH_TARGETS']?.split(',').filter((x) => x !== '');
    for (const make of makers) {
      let target: Target | undefined;
      try {
        target = await make();
        if (only !== undefined && !only.includes(target.name)) {
          await target.stop();
          target = undefined;
          continue;
        }
        log(`measuring ${target.name}`);
        results[target.name] = await measure(target);
      } catch (err) {
        const name = target?.name ?? 'target';
        log(`${name} failed: ${(err as Error).message}`);
        results[name] = { error: (err as Error).message };
      } finally {
        await target?.stop();
      }
    }
    if (
      (only === undefined || (only.includes('skep') && only.includes('http-floor'))) &&
      INTERLEAVED_ROUNDS > 0
    )
      floorRounds = await interleaved(makers[1]!, makers[2]!);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  const summary = {
    ...versus(results),
    ...definedOnly({ latency_c1_vs_http_floor_interleaved: floorRounds }),
  };
  process.stdout.write(
    `${JSON.stringify({ backend: 'bench/fixtures/echo-server.mjs', warmup_calls: WARMUP_CALLS, timed_calls: TIMED_CALLS, soak_s: SOAK_MS / 1000, node: process.version, results, versus: summary })}\n`,
  );
}

/**
 * The floor ratio measured fairly on a noisy machine: the HTTP floor and Skep run side by side
 * and take turns, `INTERLEAVED_ROUNDS` rounds of `INTERLEAVED_CALLS` sequential calls each (who
 * goes first alternates); each round gives p50(skep) / p50(floor), and the median is reported.
 */
async function interleaved(
  makeFloor: () => Promise<Target>,
  makeSkep: () => Promise<Target>,
): Promise<{ rounds: number[]; median: number } | undefined> {
  let floor: Target | undefined;
  let skep: Target | undefined;
  try {
    floor = await makeFloor();
    skep = await makeSkep();
    log(`interleaving ${floor.name} and ${skep.name} at c=1, ${INTERLEAVED_ROUNDS} rounds`);
    const p50 = async (target: Target) => (await phase(target, 1, INTERLEAVED_CALLS, true)).p50_ms;
    await phase(floor, 1, WARMUP_CALLS, false);
    await phase(skep, 1, WARMUP_CALLS, false);
    const rounds: number[] = [];
    for (let r = 0; r < INTERLEAVED_ROUNDS; r++) {
      let floorP50: number;
      let skepP50: number;
      if (r % 2 === 0) {
        floorP50 = await p50(floor);
        skepP50 = await p50(skep);
      } else {
        skepP50 = await p50(skep);
        floorP50 = await p50(floor);
      }
      rounds.push(Math.round((skepP50 / floorP50) * 100) / 100);
    }
    const sorted = [...rounds].sort((a, b) => a - b);
    const mid = sorted.length / 2;
    const median = sorted.length % 2 === 1 ? sorted[Math.floor(mid)]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
    return { rounds, median: Math.round(median * 100) / 100 };
  } catch (err) {
    log(`interleaved floor rounds failed: ${(err as Error).message}`);
    return undefined;
  } finally {
    await floor?.stop();
    await skep?.stop();
  }
}

interface Measured {
  phases: Phase[];
  rss_mb_peak: number;
  pss_mb_peak: number;
  unique_mb_end: number | null;
}

/**
 * Skep against the others, on the project's proxy targets: latency at concurrency 1 (p50) and
 * throughput at 1 and 32 against the best peer, latency against the HTTP floor, and the
 * workload's memory. Ratios are > 1 when Skep is better (or, for the floor, slower).
 */
function versus(results: Record<string, unknown>): Record<string, unknown> {
  const measured = (name: string) => {
    const r = results[name] as Partial<Measured> | undefined;
    return r?.phases === undefined ? undefined : (r as Measured);
  };
  const skep = measured('skep');
  if (skep === undefined) return {};
  const round = (n: number) => Math.round(n * 100) / 100;
  const peers = ['supergateway', 'mcp-proxy'].flatMap((name) => {
    const r = measured(name);
    return r === undefined ? [] : [{ name, r }];
  });
  const best = (pick: (r: Measured) => number, lowerIsBetter: boolean) =>
    peers.reduce<{ name: string; value: number } | undefined>((acc, { name, r }) => {
      const value = pick(r);
      if (acc === undefined || (lowerIsBetter ? value < acc.value : value > acc.value))
        return { name, value };
      return acc;
    }, undefined);
  const out: Record<string, unknown> = {
    workload_rss_mb_peak: skep.rss_mb_peak,
    workload_pss_mb_peak: skep.pss_mb_peak,
    workload_unique_mb_end: skep.unique_mb_end,
  };
  const floor = measured('http-floor');
  if (floor !== undefined)
    out['latency_c1_vs_http_floor'] = round(skep.phases[0]!.p50_ms / floor.phases[0]!.p50_ms);
  const latency = best((r) => r.phases[0]!.p50_ms, true);
  if (latency !== undefined)
    out['latency_c1_vs_best_peer'] = {
      peer: latency.name,
      times_faster: round(latency.value / skep.phases[0]!.p50_ms),
    };
  for (const [i, c] of CONCURRENCY.entries()) {
    const rate = best((r) => r.phases[i]!.calls_per_s, false);
    if (rate !== undefined)
      out[`throughput_c${c}_vs_best_peer`] = {
        peer: rate.name,
        times: round(skep.phases[i]!.calls_per_s / rate.value),
      };
  }
  return out;
}

await main();
