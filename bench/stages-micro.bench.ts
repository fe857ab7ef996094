/**
 * In-process CPU per request of the pipeline stages' own code, without the proxy's sockets or
 * an MCP server: each configuration's stages are built by `buildPipeline` from the same
 * run-configuration fields as `bench/cpu.bench.ts` (Cedar with 10 policies, audit to a file,
 * telemetry at sampling 1.0 exporting over OTLP/HTTP, a rate limit in memory, one validating
 * webhook), and audit with no `logFile` (`audit-log`: to the runner's log, through a runner's
 * line logger and log file), and every request goes through them as the proxy takes it: a
 * request context, each stage's `handle`, the answer through the reply hooks (`HookedTarget`, as the stdio
 * bridge relays it) and the end hooks. `process.cpuUsage()` covers every thread of this
 * process, so the audit file's writes on libuv's pool count, and so do the telemetry
 * exporter's and the webhook client's requests; the OTLP sink and the webhook receiver are
 * processes of their own, as in the cpu bench. Requests go in batches of 32 at once (c32): the
 * 32 are taken through the stages, their answers come a turn of the event loop later, and a
 * turn passes before the next batch, so that each request's state is alive while the others are
 * taken (as in a proxy under load, where young-generation GCs copy it) and timers (the audit
 * writer's batching window, the span exporter's) run as they would under load. The process runs
 * with a runner's V8 flags (`RUNNER_V8_FLAGS`: 2 MiB semi-spaces, single-threaded, ...);
 * `BENCH_STAGES_V8=node` runs it with Node's defaults instead.
 *
 * `webhook-post` is the floor the webhook's target is set against, in the same process: a bare
 * undici POST of a webhook-sized envelope to a receiver of its own, 32 at once, as the cpu
 * bench's `webhook-post` client.
 *
 * What it is for: `npm run bench -- cpu` measures a stage as one runner's CPU minus another's,
 * which carries the two processes' difference; this measures the stage's code alone, against
 * the same path without stages, in rounds that take turns.
 *
 *   npm run bench -- stages-micro
 *   npx tsx bench/stages-micro.bench.ts [calls per round]      (default 50000)
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildPipeline, type Pipeline } from '../src/dataplane/pipeline/index.js';
import { HookedTarget } from '../src/dataplane/proxy/reply-hooks.js';
import { RotatingLogFile } from '../src/dataplane/runtime/log-file.js';
import { newRequestContext } from '../src/dataplane/proxy/request-context.js';
import type { ExchangeEnd } from '../src/dataplane/proxy/types.js';
import { createLineLogger, silentLogger } from '../src/shared/index.js';
import { parseRunConfig, RUNNER_V8_FLAGS } from '../src/workloads/index.js';
import { median } from './lib/cpu.js';
import { Pool } from 'undici';
import { authzConfig, startOtlpSink, startWebhookReceiver, webhookEnvelope } from './lib/middleware.js';
import { countingSink } from './lib/reply-sink.js';
import { round } from './lib/workloads.js';

// The stages run in a runner, under its V8 settings: with its small semi-spaces young-generation
// GCs are frequent, and each copies what the requests in flight keep alive. `BENCH_STAGES_V8=node`
// keeps Node's defaults instead.
const V8_FLAGS = process.env['BENCH_STAGES_V8'] === 'node' ? [] : [...RUNNER_V8_FLAGS];
if (!V8_FLAGS.every((flag) => process.execArgv.includes(flag))) {
  const run = spawnSync(process.execPath, [...V8_FLAGS, ...process.execArgv, ...process.argv.slice(1)], {
    stdio: 'inherit',
  });
  process.exit(run.status ?? 1);
}

const CALLS = Number(process.argv[2] ?? 50_000);
/** `BENCH_STAGES_ONLY=a,b`: only these configurations (with `none` and `webhook-post` always). */
const ONLY = process.env['BENCH_STAGES_ONLY']?.split(',');
const ROUNDS = Number(process.env['BENCH_STAGES_ROUNDS'] ?? 5);
const BATCH = 32;

const dir = mkdtempSync(join(tmpdir(), 'skep-stages-micro-'));
const limit = { maxTokens: 1_000_000_000, refillPeriod: '1s' };
// The webhook stage's receiver, the bare POST's receiver and the OTLP sink: processes of
// their own, so that only the client side of each exchange is counted here.
const receiver = await startWebhookReceiver();
const postReceiver = await startWebhookReceiver();
const otlp = await startOtlpSink();
const CONFIGS: Record<string, Record<string, unknown>> = {
  none: {},
  authz: authzConfig(),
  audit: { audit_config: { logFile: join(dir, 'audit.log') } },
  // Audit with no logFile: to the runner's own log, through the runner's line logger.
  'audit-log': { audit_config: {} },
  telemetry: otlp.config,
  'ratelimit-memory': { rate_limit_config: { shared: limit } },
  webhook: receiver.config,
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

/** The runner's log, as a runner writes it (`src/dataplane/runner/main.ts`), for `audit-log`. */
const runnerLogFile = new RotatingLogFile(join(dir, 'runner.log'), { maxBytes: 1 << 30, files: 1 });
const runnerLog = createLineLogger({
  name: 'runner:bench',
  write: (line) => runnerLogFile.write(line),
  writeBytes: (chunk) => runnerLogFile.write(chunk),
});

/**
 * One request through `pipeline` as the proxy takes it, up to where it waits for the server:
 * a request context, each stage's `handle`. Returns what the server's answer then does (the
 * reply hooks and the end hooks), or undefined when a stage refused the request.
 */
async function open(pipeline: Pipeline, id: number): Promise<(() => void) | undefined> {
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
    if (rejected !== undefined) return undefined;
  }
  return () => {
    const text = answer(id);
    if (built.replyHooks.length === 0) sink.final(text);
    else new HookedTarget(sink, built.replyHooks, built.replyHooksMutate, built.replyGates).final(text);
    fire?.({ status: 200, completed: true, responseBytes: text.length });
  };
}

/** The bare POST: a webhook-sized envelope to its own receiver, its answer read and checked. */
const postPool = new Pool(`http://127.0.0.1:${postReceiver.port}`, {
  connections: 64,
  keepAliveTimeout: 60_000,
});
async function post(n: number): Promise<boolean> {
  const res = await postPool.request({
    path: '/validate',
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: webhookEnvelope(n),
  });
  return res.statusCode === 200 && (await res.body.text()).includes('"allowed":true');
}

/** What a round measures: a pipeline, or the bare POST. */
type Subject = Pipeline | 'webhook-post';

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * `BATCH` requests through `subject` at once. Through a pipeline, all of them are opened, the
 * answers come a turn of the event loop later, and the batch ends a turn after that: as in a
 * proxy under load, every request's state (its context, what its stages keep until the answer)
 * is alive while the others are taken, and young-generation GCs find it there.
 */
async function batchOf(subject: Subject, first: number): Promise<void> {
  if (subject === 'webhook-post') {
    const posts: Promise<boolean>[] = [];
    for (let i = 0; i < BATCH; i++) posts.push(post(first + i));
    for (const ok of await Promise.all(posts)) if (!ok) throw new Error('a bare POST failed');
  } else {
    const opened: Array<Promise<(() => void) | undefined>> = [];
    for (let i = 0; i < BATCH; i++) opened.push(open(subject, first + i));
    const replies = await Promise.all(opened);
    await nextTurn();
    for (const reply of replies) {
      if (reply === undefined) throw new Error('a stage refused a request');
      reply();
    }
  }
  await nextTurn();
}

/** Requests sent to each subject. */
const sent = new Map<Subject, number>();

/** CPU per request over `calls` requests, µs, `BATCH` at a time. */
async function measure(subject: Subject, calls: number): Promise<number> {
  const start = process.cpuUsage();
  let id = 0;
  while (id < calls) {
    await batchOf(subject, id + 1);
    id += BATCH;
  }
  const used = process.cpuUsage(start);
  sent.set(subject, (sent.get(subject) ?? 0) + id);
  return (used.user + used.system) / id;
}

const round2 = (x: number): number => round(x, 2);

const pipelines = new Map<string, Pipeline>();
try {
  for (const [label, extra] of Object.entries(CONFIGS))
    if (ONLY === undefined || label === 'none' || ONLY.includes(label))
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
          { logger: label === 'audit-log' ? runnerLog : silentLogger, secretLookup: async () => undefined },
        ),
      );
  const subjects = new Map<string, Subject>([...pipelines, ['webhook-post', 'webhook-post']]);
  for (const subject of subjects.values()) await measure(subject, Math.ceil(CALLS / 5));
  const rounds = new Map<string, number[]>([...subjects.keys()].map((l) => [l, []]));
  for (let r = 0; r < ROUNDS; r++)
    for (const [label, subject] of subjects) {
      const us = await measure(subject, CALLS);
      rounds.get(label)!.push(us);
      process.stderr.write(`round ${r + 1}/${ROUNDS} ${label}: ${us.toFixed(2)} µs CPU per request\n`);
    }
  // Closing flushes the audit writer and the span exporter: every request must have its audit
  // event (none dropped), and telemetry must have exported.
  for (const pipeline of pipelines.values()) await pipeline.close();
  const auditPipeline = pipelines.get('audit');
  const auditLines =
    auditPipeline === undefined ? 0 : readFileSync(join(dir, 'audit.log'), 'utf8').split('\n').length - 1;
  const audited = auditPipeline === undefined ? 0 : (sent.get(auditPipeline) ?? 0);
  if (auditLines !== audited) throw new Error(`audit: ${auditLines} events written for ${audited} requests`);
  const logPipeline = pipelines.get('audit-log');
  runnerLogFile.close();
  const logLines =
    logPipeline === undefined
      ? 0
      : readFileSync(join(dir, 'runner.log'), 'utf8')
          .split('\n')
          .filter((l) => l.includes('"msg":"audit_event"')).length;
  const logged = logPipeline === undefined ? 0 : (sent.get(logPipeline) ?? 0);
  if (logLines !== logged) throw new Error(`audit-log: ${logLines} events logged for ${logged} requests`);
  const exported = await otlp.stats();
  if (pipelines.has('telemetry') && (exported['/v1/traces']?.requests ?? 0) === 0)
    throw new Error('telemetry: no spans were exported');
  const none = median(rounds.get('none')!);
  const stages: Record<string, unknown> = {};
  for (const [label, xs] of rounds)
    if (label !== 'webhook-post')
      stages[label] = {
        cpu_us_per_request: round2(median(xs)),
        added_us: label === 'none' ? 0 : round2(median(xs) - none),
        by_round: xs.map(round2),
      };
  const postXs = rounds.get('webhook-post')!;
  const postUs = median(postXs);
  const added = (label: string): number => median(rounds.get(label)!) - none;
  const targets = Object.fromEntries(
    Object.entries({
      authz: 15,
      audit: 10,
      'audit-log': 10,
      telemetry: 15,
      'ratelimit-memory': 3,
      webhook: postUs + 10,
    }).filter(([label]) => pipelines.has(label)),
  );
  console.log(
    JSON.stringify({
      calls_per_round: CALLS,
      concurrency: BATCH,
      rounds: ROUNDS,
      v8_flags: V8_FLAGS,
      note: 'in-process: request context, stages, reply and end hooks; the webhook receiver and the OTLP sink are processes of their own (not counted); medians of rounds',
      stages,
      webhook_post: { client_cpu_us_per_request: round2(postUs), by_round: postXs.map(round2) },
      targets_us: Object.fromEntries(Object.entries(targets).map(([k, v]) => [k, round2(v)])),
      targets_met: Object.fromEntries(Object.entries(targets).map(([k, v]) => [k, added(k) <= v])),
      audit_events_written: auditLines,
      audit_events_logged: logLines,
      otlp_exported: exported,
      relayed_chars: relayed(),
    }),
  );
} finally {
  for (const pipeline of pipelines.values()) await pipeline.close();
  await postPool.close();
  for (const child of [receiver.child, postReceiver.child, otlp.child]) child.kill();
  rmSync(dir, { recursive: true, force: true });
}
