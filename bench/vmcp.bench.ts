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
 */
import { loadavg } from 'node:os';
import { createOptimizer, type McpTool } from '../src/dataplane/vmcp/optimizer/index.js';
import { syntheticTools } from '../test/fixtures/mcp/synthetic-tools.mjs';
import { measureVmcpEndpoint } from './lib/vmcp-endpoint.js';
import { phase, round } from './lib/workloads.js';

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

const find = await findTool();
const bytes = await definitionBytes();
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
process.stdout.write(`${JSON.stringify(result)}\n`);
