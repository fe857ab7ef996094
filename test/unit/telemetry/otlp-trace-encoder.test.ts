/**
 * The hand-written OTLP trace encoder against the SDK's own `ProtobufTraceSerializer`: the
 * same spans (SDK spans, every field kind a proxy span uses plus events, links, trace state,
 * negative and float numbers, arrays, long strings) decode — with an independent protobufjs
 * schema (test/helpers/otlp.ts) — to the same message.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, TraceFlags } from '@opentelemetry/api';
import { TraceState } from '@opentelemetry/core';
import { ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { encodeTraceRequest } from '../../../src/telemetry/otlp-trace-encoder.js';
import { decodeTraces } from '../../helpers/otlp.js';

function sdkSpans() {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': 'thv-echo', 'deployment.env': 'test', n: 3 }),
    spanProcessors: [new SimpleSpanProcessor(exporter)],
  });
  const tracer = provider.getTracer('github.com/stacklok/toolhive/pkg/telemetry', '1.2.3');
  const other = provider.getTracer('other-scope');
  const parent = trace.setSpanContext(ROOT_CONTEXT, {
    traceId: '0af7651916cd43dd8448eb211c80319c',
    spanId: 'b7ad6b7169203331',
    traceFlags: TraceFlags.SAMPLED,
    isRemote: true,
    traceState: new TraceState('vendor=a,other=b'),
  });
  const s1 = tracer.startSpan('tools/call echo', { kind: SpanKind.SERVER }, parent);
  s1.setAttributes({
    'mcp.method.name': 'tools/call',
    'jsonrpc.request.id': '7',
    'http.response.status_code': 200,
    'http.duration_ms': 1.25,
    negative: -42,
    'mcp.is_batch': false,
    list: ['a', 'b'],
    numbers: [1, 2.5],
    long: 'x'.repeat(300),
    unicode: 'héllo ✓ 😀',
  });
  s1.addEvent('something', { at: 'x' });
  s1.addLink({
    context: { traceId: 'a'.repeat(32), spanId: 'b'.repeat(16), traceFlags: 1 },
    attributes: { l: 1 },
  });
  s1.setStatus({ code: SpanStatusCode.ERROR, message: 'boom' });
  s1.end();
  const s2 = tracer.startSpan('POST /mcp');
  s2.setStatus({ code: SpanStatusCode.OK });
  s2.end();
  const s3 = other.startSpan('sse.connection_established', { kind: SpanKind.CLIENT });
  s3.end();
  // A span of ~19 KB (the SDK keeps 128 attributes): lengths above 127 and 16383 bytes.
  const s4 = tracer.startSpan('big', { kind: SpanKind.INTERNAL });
  for (let i = 0; i < 128; i++) s4.setAttribute(`k${i}`, `value-${i}-${'y'.repeat(140)}`);
  s4.end();
  return exporter.getFinishedSpans();
}

test('encodeTraceRequest decodes to the same message as the SDK serializer (ids, times, attributes, status, events, links, scopes, flags)', () => {
  const spans = sdkSpans();
  const ours = decodeTraces(encodeTraceRequest(spans));
  const theirs = decodeTraces(ProtobufTraceSerializer.serializeRequest(spans) as Uint8Array);
  assert.equal(ours.length, 4);
  assert.deepEqual(ours, theirs);
  const first = ours.find((s) => s.name === 'tools/call echo');
  assert.equal(first?.parentSpanId, 'b7ad6b7169203331');
  assert.equal(first?.traceId, '0af7651916cd43dd8448eb211c80319c');
  assert.equal(first?.kind, 2, 'SPAN_KIND_SERVER');
  assert.equal(first?.flags, 0x301, 'sampled, has is_remote, remote parent');
  assert.deepEqual(first?.status, { code: 2, message: 'boom' });
  assert.equal(first?.attributes['negative'], -42);
  assert.equal(first?.attributes['http.duration_ms'], 1.25);
  assert.equal(first?.attributes['unicode'], 'héllo ✓ 😀');
  assert.equal(first?.resource['service.name'], 'thv-echo');
  assert.equal(first?.scope.version, '1.2.3');
  assert.equal(ours.find((s) => s.name === 'big')?.attributes['k127'], `value-127-${'y'.repeat(140)}`);
});

test('encodeTraceRequest: an empty batch is an empty request', () => {
  assert.equal(encodeTraceRequest([]).length, 0);
  assert.deepEqual(decodeTraces(encodeTraceRequest([])), []);
});
