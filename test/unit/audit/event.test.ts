import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseAuditConfig } from '../../../src/dataplane/middleware/audit/config.js';
import {
  applicationError,
  type AuditEvent,
  auditEventType,
  auditLine,
  clientAddress,
  type EventSettings,
  type ExchangeFacts,
  exchangeEvent,
  outcomeForStatus,
  rfc3339,
  streamOpenEvent,
  subjectsOf,
} from '../../../src/dataplane/middleware/audit/event.js';
import { AUDIT_LINE_KEYS, eventKeys } from '../../fixtures/audit-keys.js';

const NOW = Date.UTC(2026, 0, 2, 3, 4, 5, 120);

/** The keys of a tools/call event without data, in the reference's order. */
const EVENT_KEYS = eventKeys('delegation', 'data');

function settings(config: unknown = {}, trustProxyHeaders = false): EventSettings {
  return {
    config: parseAuditConfig(config),
    component: 'github',
    trustProxyHeaders,
    now: () => NOW,
    newId: () => '00000000-0000-4000-8000-000000000000',
  };
}

function facts(overrides: Partial<ExchangeFacts> = {}): ExchangeFacts {
  return {
    httpMethod: 'POST',
    path: '/mcp',
    headers: { 'user-agent': 'test-agent/1', 'x-request-id': 'req-1' },
    remoteAddress: '127.0.0.1',
    mcp: { method: 'tools/call', resourceId: 'weather' },
    claims: { sub: 'u-1', name: 'Ada', email: 'ada@example.com' },
    status: 200,
    durationMs: 12.7,
    reply: { result: { content: [{ type: 'text', text: 'sunny' }] } },
    requestText: '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"weather"}}',
    ...overrides,
  };
}

test('method → type table, and mcp_request for any other parsed method', () => {
  const table: Array<[string, string]> = [
    ['initialize', 'mcp_initialize'],
    ['tools/call', 'mcp_tool_call'],
    ['tools/list', 'mcp_tools_list'],
    ['resources/read', 'mcp_resource_read'],
    ['resources/list', 'mcp_resources_list'],
    ['prompts/get', 'mcp_prompt_get'],
    ['prompts/list', 'mcp_prompts_list'],
    ['notifications/message', 'mcp_notification'],
    ['ping', 'mcp_ping'],
    ['logging/setLevel', 'mcp_logging'],
    ['completion/complete', 'mcp_completion'],
    ['notifications/roots/list_changed', 'mcp_roots_list_changed'],
    ['notifications/initialized', 'mcp_request'],
    ['resources/templates/list', 'mcp_request'],
    ['constructor', 'mcp_request'],
  ];
  for (const [method, type] of table) assert.equal(auditEventType('POST', '/mcp', method), type, method);
});

test('unparsed requests: legacy SSE GET → sse_connection, legacy SSE POST → mcp_request, else http_request', () => {
  assert.equal(auditEventType('GET', '/sse', undefined), 'sse_connection');
  assert.equal(auditEventType('POST', '/messages', undefined), 'mcp_request');
  assert.equal(auditEventType('POST', '/mcp', undefined), 'http_request');
  assert.equal(auditEventType('DELETE', '/mcp', undefined), 'http_request');
});

test('outcome by status', () => {
  const table: Array<[number, string]> = [
    [200, 'success'],
    [202, 'success'],
    [101, 'success'],
    [302, 'success'],
    [401, 'denied'],
    [403, 'denied'],
    [400, 'failure'],
    [404, 'failure'],
    [429, 'failure'],
    [500, 'error'],
    [503, 'error'],
    [0, 'error'],
  ];
  for (const [status, outcome] of table) assert.equal(outcomeForStatus(status), outcome, String(status));
});

test('subjects: user falls back name → preferred_username → email → "anonymous"; client claims; no sub, no user_id', () => {
  assert.deepEqual(subjectsOf({ sub: 's', name: 'N', preferred_username: 'p', email: 'e' }), {
    user: 'N',
    user_id: 's',
  });
  assert.deepEqual(subjectsOf({ sub: 's', preferred_username: 'p', email: 'e' }), {
    user: 'p',
    user_id: 's',
  });
  assert.deepEqual(subjectsOf({ sub: 's', email: 'e', name: '' }), { user: 'e', user_id: 's' });
  assert.deepEqual(subjectsOf({ sub: 's' }), { user: 'anonymous', user_id: 's' });
  assert.deepEqual(subjectsOf(undefined), { user: 'anonymous' });
  assert.deepEqual(subjectsOf({ name: 7 }), { user: 'anonymous' });
  const withClient = subjectsOf({ sub: 's', name: 'N', client_name: 'cli', client_version: '1.2' });
  assert.deepEqual(Object.keys(withClient), ['client_name', 'client_version', 'user', 'user_id']);
});

test('X-Forwarded-For / X-Real-IP are believed only with trust_proxy_headers (better than the reference)', () => {
  const headers = { 'x-forwarded-for': ' 203.0.113.7 , 10.0.0.1', 'x-real-ip': '198.51.100.2' };
  assert.equal(clientAddress(headers, '127.0.0.1', false), '127.0.0.1');
  assert.equal(clientAddress(headers, '127.0.0.1', true), '203.0.113.7');
  assert.equal(clientAddress({ 'x-real-ip': '198.51.100.2' }, '127.0.0.1', true), '198.51.100.2');
  assert.equal(clientAddress({}, '::ffff:127.0.0.1', true), '127.0.0.1');
  assert.equal(clientAddress({}, '::1', false), '::1');
  assert.equal(clientAddress({}, undefined, false), '');
});

test('application errors: a JSON-RPC error (message capped at 256) and a tool result with isError', () => {
  assert.deepEqual(applicationError({ error: { code: -32602, message: 'bad' } }), {
    kind: 'jsonrpc',
    code: -32602,
    message: 'bad',
  });
  const long = applicationError({ error: { code: 1, message: 'x'.repeat(300) } });
  assert.equal(long?.kind === 'jsonrpc' && long.message.length, 256);
  assert.deepEqual(
    applicationError({
      result: {
        isError: true,
        content: [
          { type: 'image', data: '' },
          { type: 'text', text: 'boom' },
        ],
      },
    }),
    { kind: 'tool', message: 'boom' },
  );
  assert.deepEqual(applicationError({ result: { isError: true } }), { kind: 'tool', message: undefined });
  assert.equal(applicationError({ result: { isError: false, content: [] } }), undefined);
  assert.equal(applicationError(undefined), undefined);
});

test('the event of a successful tools/call, field by field, keys in the reference order', () => {
  const event = exchangeEvent(facts(), settings());
  assert.ok(event);
  assert.deepEqual(Object.keys(event), EVENT_KEYS);
  assert.equal(event.audit_id, '00000000-0000-4000-8000-000000000000');
  assert.equal(event.type, 'mcp_tool_call');
  assert.equal(event.logged_at, '2026-01-02T03:04:05.12Z');
  assert.equal(event.outcome, 'success');
  assert.equal(event.component, 'github');
  assert.deepEqual(event.source, {
    type: 'network',
    value: '127.0.0.1',
    extra: { request_id: 'req-1', user_agent: 'test-agent/1' },
  });
  assert.deepEqual(Object.keys(event.source), ['type', 'value', 'extra']);
  assert.deepEqual(event.subjects, { user: 'Ada', user_id: 'u-1' });
  assert.deepEqual(event.target, { endpoint: '/mcp', method: 'tools/call', name: 'weather', type: 'tool' });
  assert.deepEqual(Object.keys(event.target), ['endpoint', 'method', 'name', 'type']);
  assert.deepEqual(event.metadata, { extra: { duration_ms: 12, transport: 'http' } });
  assert.equal(event.data, undefined);
});

test('delegation sits between subjects and target; target.type per method; a list cursor is the name', () => {
  const event = exchangeEvent(
    facts({ claims: { sub: 'u', act: { sub: 'agent' } }, mcp: { method: 'tools/list', resourceId: 'c-2' } }),
    settings(),
  );
  assert.deepEqual(Object.keys(event ?? {}).slice(6, 9), ['subjects', 'delegation', 'target']);
  assert.deepEqual(event?.target, { endpoint: '/mcp', method: 'tools/list', name: 'c-2', type: 'endpoint' });
  const read = exchangeEvent(
    facts({ mcp: { method: 'resources/read', resourceId: 'file:///a' } }),
    settings(),
  );
  assert.equal(read?.target['type'], 'resource');
  const prompt = exchangeEvent(facts({ mcp: { method: 'prompts/get', resourceId: 'p' } }), settings());
  assert.equal(prompt?.target['type'], 'prompt');
  const unparsed = exchangeEvent(facts({ mcp: undefined, status: 401 }), settings());
  assert.equal(unparsed?.type, 'http_request');
  assert.equal(unparsed?.outcome, 'denied');
  assert.deepEqual(unparsed?.target, { endpoint: '/mcp', method: 'POST', type: 'endpoint' });
});

test('application_error from a JSON-RPC error, with jsonrpc_error_code/message in metadata.extra', () => {
  const event = exchangeEvent(
    facts({ reply: { error: { code: -32601, message: 'Method not found' } } }),
    settings(),
  );
  assert.equal(event?.outcome, 'application_error');
  assert.deepEqual(event?.metadata?.extra, {
    duration_ms: 12,
    jsonrpc_error_code: -32601,
    jsonrpc_error_message: 'Method not found',
    transport: 'http',
  });
});

test('application_error from a tool result with isError: tool_error and tool_error_message, no jsonrpc_error_*', () => {
  const reply = { result: { isError: true, content: [{ type: 'text', text: 'the city is unknown' }] } };
  const event = exchangeEvent(facts({ reply }), settings());
  assert.equal(event?.outcome, 'application_error');
  assert.deepEqual(event?.metadata?.extra, {
    duration_ms: 12,
    tool_error: true,
    tool_error_message: 'the city is unknown',
    transport: 'http',
  });
});

test('detection only on a success status, and not when detectApplicationErrors is false', () => {
  const reply = { error: { code: 1, message: 'x' } };
  assert.equal(exchangeEvent(facts({ reply, status: 500 }), settings())?.outcome, 'error');
  assert.equal(
    exchangeEvent(facts({ reply }), settings({ detectApplicationErrors: false }))?.outcome,
    'success',
  );
});

test('data: the whole request and the answer when within maxDataSize; response_size_bytes = captured bytes', () => {
  const event = exchangeEvent(facts(), settings({ includeRequestData: true, includeResponseData: true }));
  assert.deepEqual(event?.data, {
    request: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'weather' } },
    response: { result: { content: [{ type: 'text', text: 'sunny' }] } },
  });
  const responseBytes = Buffer.byteLength(JSON.stringify(facts().reply));
  assert.deepEqual(event?.metadata?.extra, {
    duration_ms: 12,
    response_size_bytes: responseBytes,
    transport: 'http',
  });
  assert.deepEqual(Object.keys(event ?? {}).slice(-2), ['metadata', 'data']);
});

test('data: a body over maxDataSize is left out, not truncated; a non-JSON body is kept as a string', () => {
  const limit = Buffer.byteLength(facts().requestText ?? '');
  const exact = exchangeEvent(facts(), settings({ includeRequestData: true, maxDataSize: limit }));
  assert.ok(exact?.data?.request !== undefined, 'a body of exactly maxDataSize bytes is recorded');
  const over = exchangeEvent(
    facts(),
    settings({ includeRequestData: true, includeResponseData: true, maxDataSize: limit - 1 }),
  );
  assert.equal(over?.data?.request, undefined);
  // Multi-byte characters count as bytes, not characters.
  const wide = exchangeEvent(
    facts({ requestText: 'é'.repeat(6), reply: undefined }),
    settings({ includeRequestData: true, maxDataSize: 11 }),
  );
  assert.equal(wide?.data, undefined);
  const text = exchangeEvent(
    facts({ requestText: 'not json', reply: undefined }),
    settings({ includeRequestData: true, includeResponseData: true }),
  );
  assert.deepEqual(text?.data, { request: 'not json' });
  assert.equal(text?.metadata?.extra['response_size_bytes'], 0);
});

test('filters are applied to the event type', () => {
  assert.equal(exchangeEvent(facts(), settings({ excludeEventTypes: ['mcp_tool_call'] })), undefined);
  assert.equal(exchangeEvent(facts(), settings({ eventTypes: ['mcp_initialize'] })), undefined);
  assert.ok(exchangeEvent(facts(), settings({ eventTypes: ['mcp_tool_call'] })));
});

test('legacy SSE endpoints say transport "sse"', () => {
  const event = exchangeEvent(facts({ path: '/messages' }), settings());
  assert.equal(event?.metadata?.extra['transport'], 'sse');
});

test('stream open: one sse_connection event, target type sse_endpoint, transport and user_agent', () => {
  const event = streamOpenEvent(
    facts({ httpMethod: 'GET', path: '/sse', mcp: undefined, reply: undefined, requestText: undefined }),
    settings(),
  );
  assert.equal(event?.type, 'sse_connection');
  assert.equal(event?.outcome, 'success');
  assert.deepEqual(event?.target, { endpoint: '/sse', method: 'GET', type: 'sse_endpoint' });
  assert.deepEqual(event?.metadata, { extra: { transport: 'sse', user_agent: 'test-agent/1' } });
  const mcpGet = streamOpenEvent(facts({ httpMethod: 'GET', status: 401, claims: undefined }), settings());
  assert.equal(mcpGet?.outcome, 'denied');
  assert.deepEqual(mcpGet?.subjects, { user: 'anonymous' });
  assert.equal(mcpGet?.metadata?.extra['transport'], 'streamable-http');
  assert.equal(streamOpenEvent(facts(), settings({ excludeEventTypes: ['sse_connection'] })), undefined);
});

test("Go's RFC3339Nano: trailing zeros dropped, Z for UTC", () => {
  assert.equal(rfc3339(Date.UTC(2026, 0, 2, 3, 4, 5, 0), true), '2026-01-02T03:04:05Z');
  assert.equal(rfc3339(Date.UTC(2026, 0, 2, 3, 4, 5, 100), true), '2026-01-02T03:04:05.1Z');
  assert.equal(rfc3339(Date.UTC(2026, 0, 2, 3, 4, 5, 7), true), '2026-01-02T03:04:05.007Z');
  const local = rfc3339(NOW, false);
  assert.match(local, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/);
  assert.equal(Date.parse(local), NOW);
});

test('line: time, level AUDIT, msg audit_event, then the event; one line', () => {
  const event = exchangeEvent(facts(), settings());
  assert.ok(event);
  const line = auditLine(event);
  assert.ok(line.endsWith('\n'));
  assert.equal(line.indexOf('\n'), line.length - 1);
  const parsed = JSON.parse(line) as Record<string, unknown>;
  assert.deepEqual(Object.keys(parsed).slice(0, 4), ['time', 'level', 'msg', 'audit_id']);
  assert.equal(parsed['level'], 'AUDIT');
  assert.equal(parsed['msg'], 'audit_event');
  assert.equal(Date.parse(parsed['time'] as string), NOW);
});

/** The line as the slog handler writes it: the prefix, then `JSON.stringify` of the event. */
function stringifiedLine(event: AuditEvent): string {
  const time = rfc3339(Date.parse(event.logged_at), false);
  return `{"time":"${time}","level":"AUDIT","msg":"audit_event",${JSON.stringify(event).slice(1)}\n`;
}

test('line: the same text as JSON.stringify of the event, for any strings, data and extras', () => {
  const awkward = [
    'plain',
    '',
    'quote " and backslash \\',
    'controls \u0000 \u0001 \n \r \t \u001f and DEL \u007f',
    'non-ASCII é ü 中文 and an emoji 😀',
    'lone surrogates \ud800 and \udc00',
    'separators \u2028 \u2029',
    '</script><!--',
  ];
  for (const text of awkward) {
    const reply = { error: { code: -32000, message: text } };
    const event = exchangeEvent(
      facts({
        path: `/mcp${text}`,
        headers: { 'user-agent': text, 'x-request-id': text },
        mcp: { method: 'tools/call', resourceId: text },
        claims: { sub: text, name: text, client_name: text, act: { sub: text } },
        reply,
        requestText: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: text } }),
      }),
      settings({ includeRequestData: true, includeResponseData: true }),
    );
    assert.ok(event);
    assert.equal(auditLine(event), stringifiedLine(event), JSON.stringify(text));
    assert.deepEqual(JSON.parse(auditLine(event)), JSON.parse(stringifiedLine(event)));
  }
  // metadata.extra with every kind of value (guardrails' findings are arrays of objects).
  const event = exchangeEvent(facts(), settings());
  assert.ok(event?.metadata);
  Object.assign(event.metadata.extra, {
    findings: [{ action: 'redact', count: 2 }],
    ratio: 0.25,
    none: null,
    infinite: Number.POSITIVE_INFINITY,
    nan: Number.NaN,
    gone: undefined,
    no: false,
    fn: () => 1,
  });
  assert.equal(auditLine(event), stringifiedLine(event));
  const stream = streamOpenEvent(
    facts({ httpMethod: 'GET', headers: { accept: 'text/event-stream' } }),
    settings(),
  );
  assert.ok(stream);
  assert.equal(auditLine(stream), stringifiedLine(stream));
});

test('line: keys in the wire order whatever order the event object was built in', () => {
  const built = exchangeEvent(facts(), settings({ includeRequestData: true }));
  assert.ok(built);
  // The same event with its keys inserted backwards.
  const reversed = Object.fromEntries(Object.entries(built).reverse()) as unknown as AuditEvent;
  assert.notDeepEqual(Object.keys(reversed), Object.keys(built));
  assert.equal(auditLine(reversed), auditLine(built));
  const keys = AUDIT_LINE_KEYS.filter((key) => key !== 'delegation');
  assert.deepEqual(Object.keys(JSON.parse(auditLine(reversed)) as object), keys);
});
