/**
 * Virtual MCP benchmark. Optimizer part, measured through the module
 * (`src/dataplane/vmcp/optimizer`) on the synthetic tools of test/fixtures/mcp/synthetic-tools.mjs:
 *
 * - find_tool: `optimizer.find()` over 1,000 tools with realistic and random queries, one
 *   caller (target p99 ≤ 2 ms); plus the index build (cold, unchanged list, one tool changed).
 * - tool_definition_bytes: at 200 tools, the bytes of the `tools/list` result an agent
 *   receives without the optimizer (200 definitions) and with it (find_tool + call_tool),
 *   target ≥ 80 % fewer; also the bytes of one typical find_tool answer (up to 8 full
 *   definitions), which the agent receives per search.
 *
 * The endpoint scenarios (tools/call through the virtual endpoint, aggregated tools/list,
 * the real tools/list bytes) come from bench/lib/vmcp-endpoint.ts.
 *
 * - composite: a composite tool of three sequential `tools/call`s of the echo backend, against
 *   the same three calls made one after the other by the client through the same virtual
 *   endpoint, interleaved rounds on the built CLI and real runners: p50 at most the three calls
 *   + 0.3 ms, and the virtual workload's CPU per composite call within 1.2× that of the three
 *   calls (`BENCH_VMCP_COMPOSITE=0` skips it).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'undici';
import { createOptimizer, type McpTool } from '../src/dataplane/vmcp/optimizer/index.js';
import { syntheticTools } from '../test/fixtures/mcp/synthetic-tools.mjs';
import { measureVmcpEndpoint } from './lib/vmcp-endpoint.js';
import { bundleCli, cli, openMcpSession, phase, root, round, runnerPidOf } from './lib/workloads.js';

const COMPOSITE_CALLS = Number(process.env['BENCH_COMPOSITE_CALLS'] ?? 300);
const COMPOSITE_ROUNDS = 5;

/** Composite of three sequential calls vs the three calls made by the client (see the header). */
async function composite(log: (msg: string) => void): Promise<Record<string, unknown>> {
  bundleCli();
  const dir = mkdtempSync(join(tmpdir(), 'skep-bench-composite-'));
  const env: NodeJS.ProcessEnv = Object.assign({}, process.env, { SKEP_HOME: dir });
  try {
    cli(env, ['group', 'create', 'comp']);
    const run = cli(env, [
      'run',
      `cmd://${process.execPath}`,
      '--name',
      'echo',
      '--group',
      'comp',
      '--',
      join(root, 'bench/fixtures/echo-server.mjs'),
    ]);
    if (run.status !== 0) throw new Error(`skep run echo failed: ${run.stderr}`);
    const file = join(dir, 'vmcp.yaml');
    const step = (id: string, after?: string) =>
      `      - {id: ${id}, tool: echo.echo, arguments: {message: hello}${after === undefined ? '' : `, dependsOn: [${after}]`}}`;
    writeFileSync(
      file,
      [
        'aggregation: {conflictResolutionConfig: {prefixOnlyConflicts: true}}',
        'compositeTools:',
        '  - name: three',
        '    description: Three echo calls, one after the other.',
        '    steps:',
        step('s1'),
        step('s2', 's1'),
        step('s3', 's2'),
      ].join('\n'),
    );
    const made = cli(env, ['vmcp', 'comp', '--name', 'comp-hub', '--config', file, '--json']);
    if (made.status !== 0) throw new Error(`skep vmcp failed: ${made.stderr}`);
    const hub = new URL((JSON.parse(made.stdout) as { url: string }).url);
    const path = hub.pathname + hub.search;
    const pid = runnerPidOf('comp-hub');
    const pool = new Pool(hub.origin, { connections: 2 });
    try {
      const headers = await openMcpSession(pool, 'comp-hub', path);
      let id = 1;
      const callTool = async (name: string) => {
        const res = await pool.request({
          path,
          method: 'POST',
          headers,
          body: `{"jsonrpc":"2.0","id":${id++},"method":"tools/call","params":{"name":"${name}","arguments":{"message":"hello"}}}`,
        });
        const text = await res.body.text();
        if (res.statusCode !== 200 || !text.includes('hello') || text.includes('"isError":true'))
          throw new Error(`${name}: HTTP ${res.statusCode}: ${text.slice(0, 200)}`);
      };
      const compositeCall = () => callTool('three');
      const threeCalls = async () => {
        await callTool('echo');
        await callTool('echo');
        await callTool('echo');
      };
      // Warm both paths (sessions to the backend, lists, JIT).
      for (let i = 0; i < 50; i++) {
        await compositeCall();
        await threeCalls();
      }
      const rounds: Array<{
        composite: Awaited<ReturnType<typeof phase>>;
        three: Awaited<ReturnType<typeof phase>>;
      }> = [];
      for (let r = 0; r < COMPOSITE_ROUNDS; r++) {
        log(`composite round ${r + 1}/${COMPOSITE_ROUNDS}`);
        rounds.push({
          composite: await phase([compositeCall], COMPOSITE_CALLS, pid),
          three: await phase([threeCalls], COMPOSITE_CALLS, pid),
        });
      }
      const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;
      const compositeP50 = med(rounds.map((r) => r.composite.p50_ms));
      const threeP50 = med(rounds.map((r) => r.three.p50_ms));
      const compositeCpu = med(rounds.map((r) => r.composite.cpu_us_per_call));
      const threeCpu = med(rounds.map((r) => r.three.cpu_us_per_call));
      const overhead = compositeP50 - threeP50;
      const cpuRatio = compositeCpu / threeCpu;
      return {
        composite_p50_ms: round(compositeP50, 3),
        three_calls_p50_ms: round(threeP50, 3),
        p50_overhead_ms: round(overhead, 3),
        target_p50_overhead_ms: 0.3,
        composite_cpu_us_per_call: round(compositeCpu, 1),
        three_calls_cpu_us: round(threeCpu, 1),
        cpu_ratio: round(cpuRatio, 3),
        target_cpu_ratio: 1.2,
        composite_pass: overhead <= 0.3 && cpuRatio <= 1.2,
      };
    } finally {
      await pool.close();
    }
  } finally {
    cli(env, ['rm', 'comp-hub', 'echo']);
    rmSync(dir, { recursive: true, force: true });
  }
}

const FIND_TOOLS = 1_000;
const BYTES_TOOLS = 200;
const FIND_CALLS = Number(process.env['BENCH_FIND_CALLS'] ?? 20_000);
const WARMUP = 2_000;

const REALISTIC = [
  'send an email to a colleague',
  'post a message to the team channel on Slack',
  'who is on call right now',
  'refund the payment of a customer',
  'show the logs of a kubernetes pod',
  'run a SQL query on postgres',
  'read the contents of a file',
  'create a new GitHub issue for a bug',
  'what is the weather tomorrow in Paris',
  'schedule a meeting with the design team next week',
  'scale the deployment to 5 replicas',
  'turn an address into latitude and longitude',
];

/** Random queries of 2–8 words drawn from the tools' own vocabulary (plus some misses). */
function randomQueries(
  tools: readonly McpTool[],
  count: number,
): { tool_description: string; tool_keywords?: string[] }[] {
  const vocabulary = [
    ...new Set(tools.flatMap((t) => `${t.name} ${t.description ?? ''}`.toLowerCase().split(/[^a-z]+/))),
  ].filter((w) => w.length > 2);
  vocabulary.push('zebra', 'quasar', 'meteor');
  let seed = 42;
  const rand = (): number => {
    seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
    return seed / 2_147_483_648;
  };
  const pick = (): string => vocabulary[Math.floor(rand() * vocabulary.length)]!;
  const out: { tool_description: string; tool_keywords?: string[] }[] = [];
  for (let i = 0; i < count; i++) {
    const words = Array.from({ length: 2 + Math.floor(rand() * 7) }, pick);
    if (i % 4 === 0) out.push({ tool_description: words.join(' '), tool_keywords: [pick(), pick()] });
    else out.push({ tool_description: words.join(' ') });
  }
  for (const q of REALISTIC) out.push({ tool_description: q });
  return out;
}

async function findTool(): Promise<Record<string, unknown>> {
  const tools = syntheticTools(FIND_TOOLS);
  const optimizer = createOptimizer();
  let t0 = performance.now();
  await optimizer.index(tools);
  const cold = performance.now() - t0;
  t0 = performance.now();
  await optimizer.index(structuredClone(tools));
  const unchanged = performance.now() - t0;
  const changed = structuredClone(tools);
  changed[7] = Object.assign({}, changed[7]!, { description: 'A changed description of this tool.' });
  t0 = performance.now();
  await optimizer.index(changed);
  const oneChanged = performance.now() - t0;

  const queries = randomQueries(tools, 1_000);
  let next = 0;
  let returned = 0;
  const call = async (): Promise<void> => {
    const result = await optimizer.find(queries[next++ % queries.length]);
    returned += (result.structuredContent?.['tools'] as unknown[]).length;
  };
  await phase([call], WARMUP);
  returned = 0;
  const cpu0 = process.cpuUsage();
  const measured = await phase([call], FIND_CALLS);
  const cpu = process.cpuUsage(cpu0);
  return {
    tools: FIND_TOOLS,
    index_ms: { cold: round(cold, 2), unchanged: round(unchanged, 2), one_changed: round(oneChanged, 2) },
    calls: FIND_CALLS,
    p50_ms: measured.p50_ms,
    p99_ms: measured.p99_ms,
    calls_per_s: measured.calls_per_s,
    // CPU time per call: less sensitive to a busy machine than wall-time percentiles.
    cpu_us_per_call: round((cpu.user + cpu.system) / FIND_CALLS, 1),
    mean_results: round(returned / FIND_CALLS, 2),
    target_p99_ms: 2,
  };
}

async function definitionBytes(): Promise<Record<string, unknown>> {
  const tools = syntheticTools(BYTES_TOOLS);
  const optimizer = createOptimizer();
  await optimizer.index(tools);
  // What tools/list returns (the JSON-RPC `result`), without and with the optimizer.
  const without = Buffer.byteLength(JSON.stringify({ tools }));
  const withOptimizer = Buffer.byteLength(JSON.stringify({ tools: optimizer.tools() }));
  // One find_tool answer as the agent receives it (the whole CallToolResult), per realistic query.
  const answers: number[] = [];
  for (const q of REALISTIC) {
    answers.push(Buffer.byteLength(JSON.stringify(await optimizer.find({ tool_description: q }))));
  }
  answers.sort((a, b) => a - b);
  const answerMedian = answers[Math.floor(answers.length / 2)]!;
  const reduction = ((without - withOptimizer) / without) * 100;
  return {
    tools: BYTES_TOOLS,
    tools_list_without: without,
    tools_list_with: withOptimizer,
    reduction_percent: round(reduction, 1),
    target_reduction_percent: 80,
    find_answer_median: answerMedian,
    find_answer_max: answers[answers.length - 1],
    // tools/list plus one search: the context an agent needs for its first call.
    reduction_with_one_search_percent: round(((without - withOptimizer - answerMedian) / without) * 100, 1),
  };
}

const skipOptimizer = process.env['BENCH_VMCP_OPTIMIZER'] === '0';
const find = skipOptimizer ? { p99_ms: 0, skipped: true } : await findTool();
const bytes = skipOptimizer ? { reduction_percent: 100, skipped: true } : await definitionBytes();
const result: Record<string, unknown> = {
  find_tool: find,
  tool_definition_bytes: bytes,
  load_average_1m: round(loadavg()[0]!, 2),
  pass: (find['p99_ms'] as number) <= 2 && (bytes['reduction_percent'] as number) >= 80,
};
// Endpoint scenarios (bench/lib/vmcp-endpoint.ts) are merged into `result` here.
if (process.env['BENCH_VMCP_ENDPOINT'] !== '0') {
  const endpoint = await measureVmcpEndpoint((msg) => process.stderr.write(`vmcp bench: ${msg}\n`));
  Object.assign(result, endpoint);
  result['pass'] = result['pass'] === true && endpoint['endpoint_pass'] === true;
}
if (process.env['BENCH_VMCP_COMPOSITE'] !== '0') {
  const c = await composite((msg) => process.stderr.write(`vmcp bench: ${msg}\n`));
  result['composite'] = c;
  result['pass'] = result['pass'] === true && c['composite_pass'] === true;
}
process.stdout.write(`${JSON.stringify(result)}\n`);
