/**
 * The span recorder (`src/dataplane/middleware/telemetry/spans.ts`): its protobuf decodes — with an independent
 * protobufjs schema (test/helpers/otlp.ts) — to exactly what the OpenTelemetry SDK's own
 * serializer produces for the same span; W3C `traceparent` parsing (Trace Context §3.2);
 * ParentBased(TraceIdRatio) sampling; batching, the queue limit and the final flush; work
 * spans (INTERNAL children of a request's span, `work-spans.ts`).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, TraceFlags, trace } from '@opentelemetry/api';
import { TraceState } from '@opentelemetry/core';
import { ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { silentLogger } from '../../../src/shared/index.js';
import {
  parseTraceparent,
  RecordedWorkSpan,
  SpanRecorder,
  STATUS_ERROR,
  STATUS_OK,
} from '../../../src/dataplane/middleware/telemetry/spans.js';
import {
  bindRequestSpan,
  NO_SPAN,
  requestSpan,
} from '../../../src/dataplane/middleware/telemetry/work-spans.js';
import { decodeTraces } from '../../helpers/otlp.js';

const TRACE = '0af7651916cd43dd8448eb211c80319c';
const PARENT = 'b7ad6b7169203331';
const RESOURCE = { 'service.name': 'thv-echo', 'host.name': 'box', team: 'tools' };
const SCOPE = { name: 'github.com/stacklok/toolhive/pkg/telemetry' };
const START_MS = 1795480043123.456;
const END_MS = 1795480043125.789;

/** A recorder whose exports are collected; `now` returns the given times in turn. */
function recorder(options: { rate?: number; batchSize?: number; maxQueue?: number; times?: number[] } = {}) {
  const sent: { bytes: Uint8Array; spans: number }[] = [];
  const times = [...(options.times ?? [])];
  const rec = new SpanRecorder({
    samplingRate: options.rate ?? 1,
    resource: RESOURCE,
    scope: SCOPE,
    logger: silentLogger,
    batchSize: options.batchSize ?? 512,
    maxQueue: options.maxQueue ?? 2048,
    delayMs: 60_000,
    now: () => times.shift() ?? Date.now(),
    send: async (bytes, spans) => {
      sent.push({ bytes, spans });
    },
  });
  return { rec, sent };
}

test('the recorder’s bytes decode to the SDK serializer’s for the same span (ids, parent, trace state, times, attributes, status, flags, resource, scope)', async () => {
  const { rec, sent } = recorder({ times: [START_MS, END_MS] });
  const parent = parseTraceparent(`00-${TRACE}-${PARENT}-01`, 'vendor=a,other=b');
  const span = rec.start(parent);
  const w = rec.open(span, 'tools/call echo');
  assert.ok(w);
  w.stringAttr(9, 'mcp.method.name', 'tools/call');
  w.stringAttr(9, 'gen_ai.tool.call.arguments', 'message=héllo ✓ 😀');
  w.stringAttr(9, 'long', 'x'.repeat(300));
  w.intAttr(9, 'http.response.status_code', 200);
  w.intAttr(9, 'big', 2 ** 40);
  w.doubleAttr(9, 'http.duration_ms', 2.333);
  w.boolAttr(9, 'mcp.is_batch', false);
  rec.close(span, STATUS_ERROR, 'boom');
  await rec.shutdown();
  assert.equal(sent.length, 1);
  assert.equal(sent[0]?.spans, 1);

  // The same span through the SDK.
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes(RESOURCE),
    spanProcessors: [new SimpleSpanProcessor(exporter)],
    idGenerator: { generateTraceId: () => TRACE, generateSpanId: () => span.spanId },
  });
  const ctx = trace.setSpanContext(ROOT_CONTEXT, {
    traceId: TRACE,
    spanId: PARENT,
    traceFlags: TraceFlags.SAMPLED,
    isRemote: true,
    traceState: new TraceState('vendor=a,other=b'),
  });
  const sdkSpan = provider
    .getTracer(SCOPE.name)
    .startSpan('tools/call echo', { kind: SpanKind.SERVER, startTime: START_MS }, ctx);
  sdkSpan.setAttributes({
    'mcp.method.name': 'tools/call',
    'gen_ai.tool.call.arguments': 'message=héllo ✓ 😀',
    long: 'x'.repeat(300),
    'http.response.status_code': 200,
    big: 2 ** 40,
    'http.duration_ms': 2.333,
    'mcp.is_batch': false,
  });
  sdkSpan.setStatus({ code: SpanStatusCode.ERROR, message: 'boom' });
  sdkSpan.end(END_MS);
  const theirs = decodeTraces(
    ProtobufTraceSerializer.serializeRequest(exporter.getFinishedSpans()) as Uint8Array,
  );
  const ours = decodeTraces(sent[0]?.bytes ?? new Uint8Array());
  assert.deepEqual(ours, theirs);
  const s = ours[0];
  assert.equal(s?.traceId, TRACE);
  assert.equal(s?.parentSpanId, PARENT);
  assert.equal(s?.spanId, span.spanId);
  assert.equal(s?.kind, 2);
  assert.equal(s?.flags, 0x301, 'sampled, has is_remote, remote parent');
  // ms with µs precision as nanoseconds (a double's last digits aside).
  const drift = (s?.endNanos ?? 0n) - 1795480043125789000n;
  assert.ok(drift < 1000n && drift > -1000n, String(s?.endNanos));
  assert.equal(s?.resource['team'], 'tools');
  await provider.shutdown();
});

test('a root span: new trace and span ids (32/16 hex), no parent, flags 0x101; traceparent for the next hop', async () => {
  const { rec, sent } = recorder();
  const a = rec.start(undefined);
  const b = rec.start(undefined);
  assert.match(a.traceId, /^[0-9a-f]{32}$/);
  assert.match(a.spanId, /^[0-9a-f]{16}$/);
  assert.notEqual(a.traceId, b.traceId);
  assert.equal(a.traceparent(), `00-${a.traceId}-${a.spanId}-01`);
  const w = rec.open(a, 'tools/list');
  assert.ok(w);
  rec.close(a, STATUS_OK);
  await rec.shutdown();
  const [decoded] = decodeTraces(sent[0]?.bytes ?? new Uint8Array());
  assert.equal(decoded?.parentSpanId, '');
  assert.equal(decoded?.flags, 0x101);
  assert.equal(decoded?.traceId, a.traceId);
  assert.deepEqual(decoded?.status, { code: 1, message: '' });
});

test('W3C Trace Context §3.2: traceparent parsing', () => {
  const ok = parseTraceparent(`00-${TRACE}-${PARENT}-01`, ' rojo=00f067aa0ba902b7 ');
  assert.equal(ok?.flags, 1);
  assert.equal(ok?.state, 'rojo=00f067aa0ba902b7');
  assert.equal(ok?.t0, 0x0af76519);
  assert.equal(ok?.s1, 0x69203331);
  assert.equal(parseTraceparent(`00-${TRACE}-${PARENT}-00`)?.flags, 0);
  // The ids come back as written: words with the high bit set, leading zeros, bytes 00 to ff.
  for (const [trace, span] of [
    ['ffffffff80000000000000017fffffff', '00000001ffffffff'],
    ['000102030405060708090a0b0c0d0e0f', 'f0e1d2c3b4a59687'],
  ] as const) {
    const parsed = parseTraceparent(`00-${trace}-${span}-01`);
    assert.equal(parsed?.traceId, trace);
    assert.equal(parsed?.spanId, span);
  }
  // A later version may append fields; version 00 may not.
  assert.ok(parseTraceparent(`01-${TRACE}-${PARENT}-01-extra`));
  for (const bad of [
    `ff-${TRACE}-${PARENT}-01`,
    `00-${TRACE}-${PARENT}-01-extra`,
    `00-${'0'.repeat(32)}-${PARENT}-01`,
    `00-${TRACE}-${'0'.repeat(16)}-01`,
    `00-${TRACE.toUpperCase()}-${PARENT}-01`,
    `00-${TRACE}-${PARENT}`,
    'garbage',
    42,
    undefined,
  ])
    assert.equal(parseTraceparent(bad), undefined, String(bad));
  assert.equal(
    parseTraceparent(`00-${TRACE}-${PARENT}-01`, 'x'.repeat(600))?.state,
    undefined,
    'oversized tracestate',
  );
});

test('ParentBased(TraceIdRatio): a parent decides; roots follow the rate', () => {
  const none = recorder({ rate: 0 }).rec;
  assert.equal(none.start(undefined).sampled, false);
  assert.equal(
    none.start(parseTraceparent(`00-${TRACE}-${PARENT}-01`)).sampled,
    true,
    'a sampled parent is followed',
  );
  const all = recorder({ rate: 1 }).rec;
  assert.equal(
    all.start(parseTraceparent(`00-${TRACE}-${PARENT}-00`)).sampled,
    false,
    'so is an unsampled one',
  );
  assert.equal(all.start(undefined).sampled, true);
  const half = recorder({ rate: 0.5 }).rec;
  let kept = 0;
  for (let i = 0; i < 4000; i++) if (half.start(undefined).sampled) kept++;
  assert.ok(kept > 1600 && kept < 2400, `kept ${kept} of 4000 at 0.5`);
  // An unsampled span is not written, and its traceparent says so.
  const span = none.start(undefined);
  assert.equal(none.open(span, 'x'), undefined);
  assert.match(span.traceparent(), /-00$/);
});

test('batching: a full batch is sent at once; one export at a time; past the queue limit spans are dropped; shutdown flushes', async () => {
  const sent: number[] = [];
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const rec = new SpanRecorder({
    samplingRate: 1,
    resource: RESOURCE,
    scope: SCOPE,
    logger: silentLogger,
    batchSize: 2,
    maxQueue: 3,
    delayMs: 60_000,
    send: async (bytes, spans) => {
      sent.push(decodeTraces(bytes).length);
      assert.equal(decodeTraces(bytes).length, spans);
      await gate;
    },
  });
  const one = () => {
    const s = rec.start(undefined);
    const w = rec.open(s, 'x');
    if (w !== undefined) rec.close(s, STATUS_OK);
  };
  one();
  one(); // batch of 2: sent, export in flight (held by the gate)
  assert.deepEqual(sent, [2]);
  one();
  one();
  one(); // 3 queued while the first export is in flight
  one(); // the queue is full: dropped
  assert.equal(rec.dropped, 1);
  release();
  await rec.shutdown();
  assert.deepEqual(sent, [2, 3]);
  const s = rec.start(undefined);
  assert.equal(rec.open(s, 'after'), undefined, 'nothing is recorded after shutdown');
});

test('work spans: INTERNAL children of the request span and of each other, local parents, attributes, Ok and Error', async () => {
  const { rec, sent } = recorder();
  const server = rec.start(parseTraceparent(`00-${TRACE}-${PARENT}-01`, 'vendor=a'));
  const request: { workSpan: object | undefined } = { workSpan: undefined };
  assert.equal(requestSpan(request), NO_SPAN, 'an unbound request has no span');
  bindRequestSpan(request, new RecordedWorkSpan(rec, server));
  const root = requestSpan(request);
  assert.equal(root.traceparent, server.traceparent());
  let stepParent: string | undefined;
  const value = await root.run(
    'workflow deploy',
    { 'workflow.name': 'deploy', 'workflow.step_count': 2 },
    async (run) => {
      run.set('workflow.status', 'completed');
      run.set('ratio', 0.5);
      run.set('dry', false);
      await assert.rejects(
        run.run('workflow.step ask', { 'workflow.step.type': 'elicitation' }, async (step) => {
          stepParent = step.traceparent;
          throw new Error('the user cancelled');
        }),
        /the user cancelled/,
      );
      await run.run('workflow.step each', {}, async (step) => {
        step.fail('2 iterations failed');
      });
      return 42;
    },
  );
  assert.equal(value, 42, 'run returns what the work returns');
  await rec.shutdown();
  const spans = decodeTraces(sent[0]?.bytes ?? new Uint8Array());
  const byName = new Map(spans.map((x) => [x.name, x]));
  assert.deepEqual([...byName.keys()].sort(), ['workflow deploy', 'workflow.step ask', 'workflow.step each']);
  const run = byName.get('workflow deploy')!;
  const ask = byName.get('workflow.step ask')!;
  const each = byName.get('workflow.step each')!;
  assert.equal(run.parentSpanId, server.spanId, 'the run is a child of the request span');
  assert.equal(ask.parentSpanId, run.spanId);
  assert.equal(each.parentSpanId, run.spanId);
  for (const x of spans) {
    assert.equal(x.traceId, TRACE);
    assert.equal(x.kind, 1, 'INTERNAL');
    assert.equal(x.flags, 0x101, 'sampled, has is_remote, local parent');
    assert.ok(x.endNanos >= x.startNanos);
  }
  assert.equal(stepParent, `00-${TRACE}-${ask.spanId}-01`, 'calls inside a span name it as their parent');
  assert.deepEqual(run.attributes, {
    'workflow.name': 'deploy',
    'workflow.step_count': 2,
    'workflow.status': 'completed',
    ratio: 0.5,
    dry: false,
  });
  assert.deepEqual(run.status, { code: 1, message: '' });
  assert.deepEqual(ask.status, { code: 2, message: 'the user cancelled' });
  assert.deepEqual(ask.attributes, { 'workflow.step.type': 'elicitation' });
  assert.deepEqual(each.status, { code: 2, message: '2 iterations failed' });
});

test('work spans: nothing is recorded under an unsampled request or without telemetry; the work still runs', async () => {
  const { rec, sent } = recorder({ rate: 0 });
  const server = rec.start(undefined);
  const root = new RecordedWorkSpan(rec, server);
  const inner = await root.run('workflow x', {}, async (run) => run.traceparent);
  assert.match(
    inner ?? '',
    new RegExp(`^00-${server.traceId}-[0-9a-f]{16}-00$`),
    'the trace goes on, unsampled',
  );
  await rec.shutdown();
  assert.equal(sent.length, 0);
  let ran = false;
  await NO_SPAN.run('workflow x', { a: 1 }, async (run) => {
    ran = true;
    assert.equal(run.traceparent, undefined);
  });
  assert.ok(ran);
});
