/**
 * How much guardrails inspect of one message (`maxInspectBytes`): a larger answer or call is
 * blocked unread with an error naming the limit (never passed on uninspected), the setting is
 * validated naming the field, shown in the summary when it is not the default, and its
 * ceiling is the most the proxy reads of one message.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  findingEvent,
  Guard,
  GUARDRAILS_BLOCKED,
  type FindingReport,
  parseGuardrailsConfig,
  sizeOver,
} from '../../../src/dataplane/middleware/guardrails/index.js';
import { newRequestContext, PROXY_DEFAULTS } from '../../../src/dataplane/proxy/index.js';
import type { JsonRpcMessage } from '../../../src/protocol/index.js';
import {
  DEFAULT_MAX_INSPECT_BYTES,
  defaultGuardrailsConfig,
  guardrailsSummary,
  MAX_INSPECT_BYTES_CEILING,
} from '../../../src/schemas/validators/index.js';
import { isSkepError } from '../../../src/shared/index.js';

const CREDENTIAL = 'AKIA' + 'IOSFODNN7EXAMPLE';

function call(args: Record<string, unknown>) {
  const json = { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'leak', arguments: args } };
  return newRequestContext({
    method: 'POST',
    path: '/mcp',
    body: { json },
    serverName: 'w',
    backendTransport: 'stdio',
  });
}

function guarded(config: unknown): { guard: Guard; reports: FindingReport[] } {
  const reports: FindingReport[] = [];
  const guard = new Guard({
    config: parseGuardrailsConfig(config),
    secrets: new Map(),
    report: (r) => reports.push(r),
  });
  return { guard, reports };
}

test('sizeOver: UTF-8 bytes over the limit, else undefined; multi-byte text is measured in bytes', () => {
  assert.equal(sizeOver(undefined, 10), undefined);
  assert.equal(sizeOver('abc', 10), undefined);
  assert.equal(sizeOver('a'.repeat(11), 10), 11);
  assert.equal(sizeOver('a'.repeat(10), 10), undefined);
  // Four characters, twelve bytes.
  assert.equal(sizeOver('€€€€', 10), 12);
});

test('an answer over maxInspectBytes is blocked unread: the error names the limit, the event says oversized', () => {
  const { guard, reports } = guarded({ maxInspectBytes: 1024 });
  const built = call({ what: 'x' });
  assert.equal(guard.handle(built.ctx), undefined);
  const hook = built.replyHooks[0];
  assert.ok(hook !== undefined, 'the answer is hooked');
  const big = `${'x'.repeat(2000)} ${CREDENTIAL}`;
  const reply: JsonRpcMessage = { jsonrpc: '2.0', id: 7, result: { content: [{ type: 'text', text: big }] } };
  const text = JSON.stringify(reply);
  void hook(reply, text);
  assert.equal(reply.result, undefined);
  assert.equal(reply.error?.code, GUARDRAILS_BLOCKED);
  assert.equal(
    reply.error?.message,
    `Blocked by guardrails: the answer is ${Buffer.byteLength(text)} bytes, more than guardrails_config.maxInspectBytes (1024) lets guardrails inspect`,
  );
  assert.deepEqual(reply.error?.data, {
    limit: 'maxInspectBytes',
    bytes: Buffer.byteLength(text),
    maxInspectBytes: 1024,
    direction: 'results',
  });
  assert.equal(reports.length, 1);
  const event = findingEvent(reports[0] as FindingReport, 'w', () => 0);
  assert.equal(event.outcome, 'denied');
  assert.deepEqual(event.metadata?.extra['oversized'], { bytes: Buffer.byteLength(text), limit: 1024 });
  assert.equal(event.metadata?.extra['blocked'], true);

  // Under the limit the same answer is inspected (and redacted) as usual.
  const small: JsonRpcMessage = {
    jsonrpc: '2.0',
    id: 7,
    result: { content: [{ type: 'text', text: CREDENTIAL }] },
  };
  const again = call({ what: 'x' });
  guard.handle(again.ctx);
  void again.replyHooks[0]?.(small, JSON.stringify(small));
  assert.deepEqual(small.result, { content: [{ type: 'text', text: '[REDACTED:aws_access_key_id]' }] });
});

test('tool arguments over maxInspectBytes: HTTP 403 naming the limit, before the server sees them', () => {
  const { guard, reports } = guarded({ maxInspectBytes: 1024, credentials: { arguments: 'redact' } });
  const refused = guard.handle(call({ text: 'y'.repeat(1500) }).ctx);
  assert.equal(refused?.status, 403);
  const body = refused?.body as { id: number; error: { code: number; message: string } };
  assert.equal(body.id, 7);
  assert.equal(body.error.code, GUARDRAILS_BLOCKED);
  assert.match(
    body.error.message,
    /the request is \d+ bytes, more than guardrails_config\.maxInspectBytes \(1024\)/,
  );
  assert.equal(reports[0]?.direction, 'arguments');
});

test('maxInspectBytes is validated naming the field; the default is 16 MiB; its ceiling is the proxy’s message limit', () => {
  const refused = (value: unknown, expected: RegExp) =>
    assert.throws(
      () => parseGuardrailsConfig({ maxInspectBytes: value }),
      (err: unknown) => isSkepError(err) && err.code === 'invalid_config' && expected.test(err.message),
    );
  refused(100, /guardrails_config\.maxInspectBytes must be at least 1024/);
  refused(MAX_INSPECT_BYTES_CEILING + 1, /guardrails_config\.maxInspectBytes must be at most 33554432/);
  refused('1MB', /guardrails_config\.maxInspectBytes must be an integer/);
  refused(2048.5, /guardrails_config\.maxInspectBytes must be an integer/);
  assert.equal(parseGuardrailsConfig({}).maxInspectBytes, DEFAULT_MAX_INSPECT_BYTES);
  assert.equal(DEFAULT_MAX_INSPECT_BYTES, 16 * 1024 * 1024);
  assert.equal(MAX_INSPECT_BYTES_CEILING, PROXY_DEFAULTS.maxUpstreamMessageBytes);
});

test('guardrailsSummary names maxInspectBytes only when it is not the default', () => {
  const defaults = defaultGuardrailsConfig();
  assert.equal(
    guardrailsSummary({ ...defaults, maxInspectBytes: DEFAULT_MAX_INSPECT_BYTES }),
    'ownSecrets:redact credentials:redact',
  );
  assert.equal(
    guardrailsSummary({ ...defaults, maxInspectBytes: 65536 }),
    'ownSecrets:redact credentials:redact maxInspectBytes:65536',
  );
  // Nothing on: nothing to bound.
  assert.equal(
    guardrailsSummary({
      ownSecrets: { results: 'off' },
      credentials: { results: 'off' },
      maxInspectBytes: 65536,
    }),
    'off',
  );
});
