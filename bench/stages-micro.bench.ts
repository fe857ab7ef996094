/**
 * In-process CPU per request of the pipeline stages' own code, without sockets or child
 * processes: each configuration's stages are built by `buildPipeline` from the same
 * run-configuration fields as `bench/cpu.bench.ts` (Cedar with 10 policies, audit to a file,
 * a rate limit in memory), and every request goes through them as the proxy takes it: a
 * request context, each stage's `handle`, the answer through the reply hooks
 * (`HookedTarget`, as the stdio bridge relays it) and the end hooks. `process.cpuUsage()`
 * covers every thread of this process, so the audit file's writes on libuv's pool count.
 * Requests go in batches of 32, with a turn of the event loop between batches, so that timers
 * (the audit writer's batching window) run as they would under load.
 *
 * What it is for: `npm run bench -- cpu` measures a stage as one runner's CPU minus another's,
 * which carries the two processes' difference; this measures the stage's code alone, against
 * the same path without stages, in rounds that take turns.
 *
 *   npm run bench -- stages-micro
 *   npx tsx bench/stages-micro.bench.ts [calls per round]      (default 50000)
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildPipeline, type Pipeline } from '../src/dataplane/pipeline/index.js';
import { HookedTarget } from '../src/dataplane/proxy/reply-hooks.js';
import { newRequestContext } from '../src/dataplane/proxy/request-context.js';
import type { ExchangeEnd } from '../src/dataplane/proxy/types.js';
import { silentLogger } from '../src/shared/index.js';
import { parseRunConfig } from '../src/workloads/index.js';
import { median } from './lib/cpu.js';
import { authzConfig } from './lib/middleware.js';
import { countingSink } from './lib/reply-sink.js';
import { round } from './lib/workloads.js';

const CALLS = Number(process.argv[2] ?? 50_000);
const ROUNDS = Number(process.env['BENCH_STAGES_ROUNDS'] ?? 5);
const BATCH = 32;

const dir = mkdtempSync(join(tmpdir(), 'skep-stages-micro-'));
const limit = { maxTokens: 1_000_000_000, refillPeriod: '1s' };
const CONFIGS: Record<string, Record<string, unknown>> = {
  none: {},
  authz: authzConfig(),
  audit: { audit_config: { logFile: join(dir, 'audit.log') } },
  'ratelimit-memory': { rate_limit_config: { shared: limit } },
};

const HEADERS = {
  host: '127.0.0.1',
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
  'mcp-session-id': 'bench-session',
};
const request = (id: number) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name: 'echo', arguments: { message: 'hello' } },
});
const answer = (id: number) =>
  `{"jsonrpc":"2.0","id":${id},"result":{"content":[{"type":"text","text":"hello"}]}}`;

const { sink, relayed } = countingSink();

/** One request through `pipeline` as the proxy takes it; false when a stage refused it. */
async function once(pipeline: Pipeline, id: number): Promise<boolean> {
  let fire: ((end: ExchangeEnd) => void) | undefined;
  const json = request(id);
  const built = newRequestContext({
    method: 'POST',
    path: '/mcp',
    headers: HEADERS,
    remoteAddress: '127.0.0.1',
    body: { text: JSON.stringify(json), json },
    serverName: 'bench',
    backendTransport: 'stdio',
    whenEnded: (f) => {
      fire = f;
    },
  });
  for (const mw of pipeline.middlewares) {
    const verdict = mw.handle(built.ctx);
    const rejected = verdict instanceof Promise ? await verdict : verdict;
    if (rejected !== undefined) return false;
  }
  const text = answer(id);
  if (built.replyHooks.length === 0) sink.final(text);
  else new HookedTarget(sink, built.replyHooks, built.replyHooksMutate).final(text);
  fire?.({ status: 200, completed: true, responseBytes: text.length });
  return true;
}

/** Requests sent through each pipeline. */
const sent = new Map<Pipeline, number>();

/** CPU per request over `calls` requests, µs. */
async function measure(pipeline: Pipeline, calls: number): Promise<number> {
  const start = process.cpuUsage();
  let id = 0;
  while (id < calls) {
    for (let i = 0; i < BATCH; i++)
      if (!(await once(pipeline, ++id))) throw new Error('a stage refused a request');
    await new Promise((resolve) => setImmediate(resolve));
  }
  const used = process.cpuUsage(start);
  sent.set(pipeline, (sent.get(pipeline) ?? 0) + id);
  return (used.user + used.system) / id;
}

const round2 = (x: number): number => round(x, 2);

const pipelines = new Map<string, Pipeline>();
try {
  for (const [label, extra] of Object.entries(CONFIGS))
    pipelines.set(
      label,
      await buildPipeline(
        parseRunConfig({
          name: 'bench',
          image: `cmd://${process.execPath}`,
          cmd_args: ['echo-server.mjs'],
          transport: 'stdio',
          ...extra,
        }),
        { logger: silentLogger, secretLookup: async () => undefined },
      ),
    );
  for (const pipeline of pipelines.values()) await measure(pipeline, Math.ceil(CALLS / 5));
  const rounds = new Map<string, number[]>([...pipelines.keys()].map((l) => [l, []]));
  for (let r = 0; r < ROUNDS; r++)
    for (const [label, pipeline] of pipelines) {
      const us = await measure(pipeline, CALLS);
      rounds.get(label)!.push(us);
      process.stderr.write(`round ${r + 1}/${ROUNDS} ${label}: ${us.toFixed(2)} µs CPU per request\n`);
    }
  // Closing flushes the audit writer: every request must have its event (none dropped).
  for (const pipeline of pipelines.values()) await pipeline.close();
  const auditLines = readFileSync(join(dir, 'audit.log'), 'utf8').split('\n').length - 1;
  const audited = sent.get(pipelines.get('audit')!) ?? 0;
  if (auditLines !== audited) throw new Error(`audit: ${auditLines} events written for ${audited} requests`);
  const none = median(rounds.get('none')!);
  const stages: Record<string, unknown> = {};
  for (const [label, xs] of rounds)
    stages[label] = {
      cpu_us_per_request: round2(median(xs)),
      added_us: label === 'none' ? 0 : round2(median(xs) - none),
      by_round: xs.map(round2),
    };
  console.log(
    JSON.stringify({
      calls_per_round: CALLS,
      rounds: ROUNDS,
      note: 'in-process: request context, stages, reply and end hooks; no sockets, no child; medians of rounds',
      stages,
      audit_events_written: auditLines,
      relayed_chars: relayed(),
    }),
  );
} finally {
  for (const pipeline of pipelines.values()) await pipeline.close();
  rmSync(dir, { recursive: true, force: true });
}
