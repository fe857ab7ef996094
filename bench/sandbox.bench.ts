/**
 * The cost of the bubblewrap sandbox (docs/sandbox.md): the same stdio server (the echo fixture)
 * started by the process runtime unsandboxed, sandboxed with the default profile (host network),
 * sandboxed with `network.mode: none`, and sandboxed with an outbound allow-list (which adds the
 * in-sandbox relay and the runner's filtering proxy) — the relay in perl (the default) and, with no
 * perl on the server's PATH, in Node (the fallback). Start-to-ready is `start()` → the server's
 * answer to `initialize`, rounds interleaved so a noisy machine skews all variants alike. Then the
 * proxy (`startProxy`, as the runner hosts it) in front of each, tools/call latency at concurrency
 * 1. Also the sandbox alone: `/bin/true` start-to-exit through the runtime. Target: ≤ 50 ms added
 * at the median start; proxy c1 p50 unchanged within noise. Prints one JSON object. Needs bwrap.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool } from 'undici';
import { startProxy } from '../src/dataplane/proxy/index.js';
import {
  type PermissionProfile,
  ProcessRuntime,
  probeBwrap,
  type ServerHandle,
} from '../src/dataplane/runtime/index.js';
import { definedOnly } from '../src/shared/index.js';

const ROUNDS = Number(process.env['BENCH_RUNS'] ?? 15);
const CALLS = Number(process.env['BENCH_CALLS'] ?? 500);
/** Pause after each stop, ms (see the start phase). */
const SETTLE_MS = 300;
const ECHO = join(import.meta.dirname, 'fixtures', 'echo-server.mjs');
const TRUE = ['/usr/bin/true', '/bin/true'].find((p) => existsSync(p)) ?? '/bin/true';
const INIT = {
  jsonrpc: '2.0',
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench', version: '1' } },
};

interface Variant {
  name: string;
  sandbox: 'off' | 'bwrap';
  profile?: PermissionProfile;
  /** The server's PATH, when not the runner's. */
  path?: string;
}

const ALLOW_LIST: PermissionProfile = {
  network: { outbound: { allow_host: ['example.com'], allow_port: [443] } },
};
/** A PATH with no perl on it (the server is named by its full path): the Node relay. */
const NO_PERL = mkdtempSync(join(tmpdir(), 'skep-bench-noperl-'));

const VARIANTS: Variant[] = [
  { name: 'unsandboxed', sandbox: 'off' },
  { name: 'sandboxed_host_network', sandbox: 'bwrap' },
  { name: 'sandboxed_network_none', sandbox: 'bwrap', profile: { network: { mode: 'none' } } },
  { name: 'sandboxed_allow_list', sandbox: 'bwrap', profile: ALLOW_LIST },
  { name: 'sandboxed_allow_list_node_relay', sandbox: 'bwrap', profile: ALLOW_LIST, path: NO_PERL },
];

function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  const m = s.length % 2 === 1 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
  return Math.round(m * 10) / 10;
}

function percentile(sorted: number[], p: number): number {
  return Math.round((sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? 0) * 1000) / 1000;
}

/** Writes `initialize` and resolves at the first line the server answers. */
function initialized(handle: ServerHandle): Promise<void> {
  const stdio = handle.stdio;
  if (stdio === undefined) throw new Error('no stdio');
  return new Promise((resolve) => {
    const onData = (chunk: Buffer) => {
      if (chunk.includes(10)) {
        stdio.stdout.off('data', onData);
        resolve();
      }
    };
    stdio.stdout.on('data', onData);
    stdio.stdin.write(`${JSON.stringify({ ...INIT, id: 1 })}\n`);
  });
}

async function main(): Promise<void> {
  const probe = probeBwrap('bwrap');
  if (!probe.ok) throw new Error(`the sandbox bench needs bubblewrap: ${probe.reason}`);
  const dir = mkdtempSync(join(tmpdir(), 'skep-bench-sbx-'));
  const paths = {
    configDir: join(dir, 'c'),
    stateDir: join(dir, 's'),
    dataDir: join(dir, 'd'),
    cacheDir: join(dir, 'k'),
  };
  const runtimes = {
    off: new ProcessRuntime({ logMaxBytes: 1 << 20, logFiles: 1 }),
    bwrap: new ProcessRuntime({ logMaxBytes: 1 << 20, logFiles: 1, sandbox: { setting: 'bwrap', paths } }),
  };
  const start = (v: Variant, i: number) =>
    runtimes[v.sandbox].start({
      name: `${v.name}-${i}`,
      image: `cmd://${process.execPath}`,
      args: [ECHO],
      env: v.path === undefined ? {} : { PATH: v.path },
      transport: 'stdio',
      logFile: join(dir, `${v.name}.log`),
      ...definedOnly({ permissionProfile: v.profile }),
    });
  try {
    // Start-to-ready, interleaved rounds in a shuffled order (one warm-up round first: disk
    // caches, JIT), with a pause after each stop: the kernel tears a network namespace down
    // asynchronously, and that work would otherwise be charged to whichever start follows.
    const startMs: Record<string, number[]> = Object.fromEntries(VARIANTS.map((v) => [v.name, []]));
    let seed = 7;
    const shuffled = () =>
      VARIANTS.map((v) => ({ v, k: (seed = (seed * 1103515245 + 12345) % 2 ** 31) }))
        .sort((a, b) => a.k - b.k)
        .map((x) => x.v);
    for (let round = -1; round < ROUNDS; round++) {
      for (const v of shuffled()) {
        const t0 = performance.now();
        const handle = await start(v, round);
        await initialized(handle);
        const ms = performance.now() - t0;
        await handle.stop();
        if (round >= 0) startMs[v.name]?.push(ms);
        await sleep(SETTLE_MS);
      }
    }
    const startToReady = Object.fromEntries(
      VARIANTS.map((v) => [v.name, { median_ms: median(startMs[v.name] ?? []) }]),
    );
    const base = median(startMs['unsandboxed'] ?? []);
    const added = Object.fromEntries(
      VARIANTS.filter((v) => v.sandbox === 'bwrap').map((v) => [
        v.name,
        Math.round((median(startMs[v.name] ?? []) - base) * 10) / 10,
      ]),
    );

    // The sandbox alone: `true` started through the runtime until it exits (no Node start to
    // drown it in noise), same interleaving.
    const trueMs: Record<string, number[]> = Object.fromEntries(VARIANTS.map((v) => [v.name, []]));
    for (let round = -1; round < ROUNDS; round++) {
      for (const v of shuffled()) {
        const t0 = performance.now();
        const handle = await runtimes[v.sandbox].start({
          name: `true-${v.name}`,
          image: `cmd://${TRUE}`,
          args: [],
          env: v.path === undefined ? {} : { PATH: v.path },
          transport: 'stdio',
          logFile: join(dir, 'true.log'),
          ...definedOnly({ permissionProfile: v.profile }),
        });
        await handle.exited;
        if (round >= 0) trueMs[v.name]?.push(performance.now() - t0);
        await sleep(SETTLE_MS);
      }
    }
    const startToExitTrue = Object.fromEntries(
      VARIANTS.map((v) => [v.name, { median_ms: median(trueMs[v.name] ?? []) }]),
    );

    // Proxy c1 latency in front of each: all four up at once, one call to each in turn, so
    // the machine's load drifts over all of them alike.
    const targets: { name: string; call: (i: number) => Promise<void>; close: () => Promise<void> }[] = [];
    for (const v of VARIANTS) {
      const handle = await start(v, 1000);
      const stdio = handle.stdio;
      if (stdio === undefined) throw new Error('no stdio');
      const proxy = await startProxy({
        port: 0,
        upstream: { kind: 'stdio', stdin: stdio.stdin, stdout: stdio.stdout },
      });
      const pool = new Pool(`http://127.0.0.1:${proxy.port}`, { connections: 1 });
      const headers: Record<string, string> = {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      };
      const init = await pool.request({
        path: '/mcp',
        method: 'POST',
        headers,
        body: JSON.stringify({ ...INIT, id: 0 }),
      });
      await init.body.text();
      const sid = init.headers['mcp-session-id'];
      if (typeof sid === 'string') headers['mcp-session-id'] = sid;
      headers['mcp-protocol-version'] = '2025-06-18';
      targets.push({
        name: v.name,
        async call(i) {
          const res = await pool.request({
            path: '/mcp',
            method: 'POST',
            headers,
            body: `{"jsonrpc":"2.0","id":${i + 1},"method":"tools/call","params":{"name":"echo","arguments":{"message":"m${i}"}}}`,
          });
          await res.body.text();
          if (res.statusCode !== 200) throw new Error(`HTTP ${res.statusCode}`);
        },
        async close() {
          await pool.close();
          await proxy.close();
          await handle.stop();
        },
      });
    }
    const times: Record<string, number[]> = Object.fromEntries(VARIANTS.map((v) => [v.name, []]));
    try {
      for (let i = 0; i < CALLS + 50; i++) {
        for (const target of i % 2 === 0 ? targets : [...targets].reverse()) {
          const t0 = performance.now();
          await target.call(i);
          if (i >= 50) times[target.name]?.push(performance.now() - t0);
        }
      }
    } finally {
      for (const target of targets) await target.close();
    }
    const proxyC1 = Object.fromEntries(
      VARIANTS.map((v) => {
        const sorted = [...(times[v.name] ?? [])].sort((a, b) => a - b);
        return [v.name, { p50_ms: percentile(sorted, 0.5), p99_ms: percentile(sorted, 0.99) }];
      }),
    );
    process.stdout.write(
      `${JSON.stringify({
        rounds: ROUNDS,
        start_to_ready: startToReady,
        start_to_exit_of_true: startToExitTrue,
        added_at_median_ms: added,
        target_added_ms: 50,
        proxy_c1: proxyC1,
        calls: CALLS,
      })}\n`,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
    rmSync(NO_PERL, { recursive: true, force: true });
  }
}

await main();
