/**
 * What one `npx://` server costs (`src/dataplane/runtime/npm-store.ts`), through the built CLI with the
 * default sandbox: @modelcontextprotocol/server-filesystem from the npm registry, run as two
 * workloads (`skep run … --volume DIR -- DIR`).
 *
 * - Start: wall time of `skep run` for the first workload (resolve + install into the package
 *   store + start) and for the second (resolve + start from the store). Target: second ≤ 3 s.
 * - Memory: the summed RSS (`VmRSS`, Linux /proc) of a workload's process tree — the runner,
 *   bwrap and the server — after one tool call, against the runner's own RSS plus a bare
 *   `node <bin file> DIR` of the same server (initialized, one `tools/list`). Target: tree ≤
 *   runner + bare server + 10 MB. (Summed RSS counts shared pages once per process: an upper
 *   bound.)
 * - Disk: growth of the Skep home when the second workload starts (its sandbox home, logs,
 *   state). Target ≤ 5 MB.
 * - The npx path as it was (`npx -y -- <spec>`, an `npm exec` process between the runner and
 *   the server, the package in the workload's own npm cache): the same package as a `file:`
 *   tarball, which still takes that path, two workloads too.
 *
 * Needs bwrap, the registry and `dist/` (bundled first). Prints one JSON object.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { probeBwrap, selectBin, storeKey } from '../src/dataplane/runtime/index.js';
import { cli, openBenchHome } from './lib/workloads.js';

const PACKAGE = '@modelcontextprotocol/server-filesystem';
const MB = 1024 * 1024;
const log = (msg: string) => process.stderr.write(`workloads: ${msg}\n`);

function rssBytes(pid: number): number {
  try {
    const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kb === undefined ? 0 : Number(kb) * 1024;
  } catch {
    return 0;
  }
}

function children(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8')
      .trim()
      .split(/\s+/)
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
}

function tree(pid: number): { pid: number; argv: string[]; rss: number }[] {
  const out: { pid: number; argv: string[]; rss: number }[] = [];
  const walk = (p: number) => {
    let argv: string[];
    try {
      argv = readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0').filter(Boolean);
    } catch {
      return;
    }
    out.push({ pid: p, argv, rss: rssBytes(p) });
    for (const c of children(p)) walk(c);
  };
  walk(pid);
  return out;
}

/** The pid of `skep runner <name>` (its command line names it). */
function runnerPid(name: string): number {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const argv = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      const at = argv.indexOf('runner');
      if (at >= 0 && argv[at + 1] === name) return Number(entry);
    } catch {
      // gone
    }
  }
  throw new Error(`no runner process for ${name}`);
}

function duBytes(path: string): number {
  let st;
  try {
    st = statSync(path);
  } catch {
    return 0;
  }
  if (!st.isDirectory()) return st.size;
  return readdirSync(path).reduce((sum, name) => sum + duBytes(join(path, name)), 0);
}

const round = (bytes: number) => Math.round((bytes / MB) * 10) / 10;

/** A bare `node <file> <dir>` of the server: initialized, one tools/list answered. */
async function bareServer(file: string, dir: string): Promise<{ child: ChildProcess; rss: number }> {
  const child = spawn(process.execPath, [file, dir], { stdio: ['pipe', 'pipe', 'ignore'] });
  const answers = new Promise<void>((resolve, reject) => {
    let buffered = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      buffered += chunk.toString('utf8');
      if (buffered.includes('"id":2')) resolve();
    });
    child.once('exit', () => reject(new Error('the bare server exited')));
  });
  const send = (msg: unknown) => child.stdin?.write(`${JSON.stringify(msg)}\n`);
  send({
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench', version: '1' } },
  });
  send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  send({ jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} });
  await answers;
  return { child, rss: rssBytes(child.pid as number) };
}

async function main(): Promise<void> {
  const probe = probeBwrap('bwrap');
  if (!probe.ok) throw new Error(`the workloads bench needs bubblewrap: ${probe.reason}`);
  const version = JSON.parse(
    execFileSync('npm', ['view', PACKAGE, 'version', '--json'], { encoding: 'utf8' }),
  ) as string;
  const bench = await openBenchHome('workloads', log);
  const served = mkdtempSync(join(tmpdir(), 'skep-bench-served-'));
  const scratch = mkdtempSync(join(tmpdir(), 'skep-bench-npx-'));
  const bare: ChildProcess[] = [];
  try {
    const run = (name: string, image: string) => {
      const t0 = performance.now();
      const r = cli(bench.env, ['run', image, '--name', name, '--volume', served, '--', served]);
      const ms = Math.round(performance.now() - t0);
      if (r.status !== 0) throw new Error(`skep run ${name} failed: ${r.stdout}${r.stderr}`);
      bench.started(name);
      const call = cli(bench.env, ['mcp', 'call', name, 'list_allowed_directories']);
      if (call.status !== 0) throw new Error(`skep mcp call ${name} failed: ${call.stdout}${call.stderr}`);
      return ms;
    };
    const measure = (name: string) => {
      const runner = runnerPid(name);
      const procs = tree(runner);
      return {
        runner_mb: round(rssBytes(runner)),
        tree_mb: round(procs.reduce((s, p) => s + p.rss, 0)),
        processes: procs.map((p) => `${p.argv.slice(0, 2).join(' ').slice(-60)} ${round(p.rss)} MB`),
      };
    };

    // The store path.
    log(`store path: ${PACKAGE}@${version}, two workloads`);
    const firstMs = run('fs-1', `npx://${PACKAGE}`);
    const homeAfterFirst = duBytes(bench.home);
    const secondMs = run('fs-2', `npx://${PACKAGE}`);
    const extraDisk = duBytes(bench.home) - homeAfterFirst;
    const mem = measure('fs-2');
    const entry = join(bench.home, 'cache', 'npm-packages', storeKey(PACKAGE, version));
    const manifest = JSON.parse(
      readFileSync(join(entry, 'node_modules', PACKAGE, 'package.json'), 'utf8'),
    ) as { bin?: unknown };
    const binFile = join(entry, 'node_modules', PACKAGE, selectBin(PACKAGE, manifest.bin).file);
    const server = await bareServer(binFile, served);
    bare.push(server.child);
    const baseline = mem.runner_mb + round(server.rss);
    for (const name of ['fs-1', 'fs-2']) cli(bench.env, ['rm', name]);

    // The npx path as it was, through a file: tarball of the same version.
    log('npx path: the same package as a file: tarball, two workloads');
    execFileSync('npm', ['pack', `${PACKAGE}@${version}`, '--pack-destination', scratch], {
      stdio: 'ignore',
    });
    const tarball = join(scratch, readdirSync(scratch).find((f) => f.endsWith('.tgz')) as string);
    const npxFirstMs = run('npx-1', `npx://file:${tarball}`);
    const npxHomeAfterFirst = duBytes(bench.home);
    const npxSecondMs = run('npx-2', `npx://file:${tarball}`);
    const npxExtraDisk = duBytes(bench.home) - npxHomeAfterFirst;
    const npxMem = measure('npx-2');

    const result = {
      package: `${PACKAGE}@${version}`,
      load_average: readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' '),
      store: {
        first_start_ms: firstMs,
        second_start_ms: secondMs,
        tree_rss_mb: mem.tree_mb,
        runner_rss_mb: mem.runner_mb,
        bare_server_rss_mb: round(server.rss),
        runner_plus_bare_server_mb: Math.round(baseline * 10) / 10,
        tree_over_baseline_mb: Math.round((mem.tree_mb - baseline) * 10) / 10,
        disk_per_extra_workload_mb: round(extraDisk),
        processes: mem.processes,
      },
      npx_path_as_before: {
        first_start_ms: npxFirstMs,
        second_start_ms: npxSecondMs,
        tree_rss_mb: npxMem.tree_mb,
        runner_rss_mb: npxMem.runner_mb,
        tree_over_baseline_mb: Math.round((npxMem.tree_mb - npxMem.runner_mb - round(server.rss)) * 10) / 10,
        disk_per_extra_workload_mb: round(npxExtraDisk),
        processes: npxMem.processes,
      },
      targets: {
        second_start_le_3000_ms: secondMs <= 3000,
        tree_le_runner_plus_server_plus_10_mb: mem.tree_mb <= baseline + 10,
        disk_per_extra_workload_le_5_mb: extraDisk <= 5 * MB,
      },
    };
    process.stdout.write(`${JSON.stringify(result)}\n`);
  } finally {
    for (const child of bare) child.kill();
    await bench.close();
    rmSync(served, { recursive: true, force: true });
    rmSync(scratch, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`workloads bench failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
