/**
 * Audit through a real workload: a run configuration with `audit_config.logFile` imported
 * like `skep run --from-config`, its runner run in this process (the pipeline built from the
 * run configuration, the proxy, server-everything as a stdio child), and the official MCP SDK
 * client over streamable HTTP and the legacy SSE transport. The audit file's lines are parsed
 * and checked field by field once the runner stopped (stopping flushes the writer).
 */
import assert from 'node:assert/strict';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CreateMessageRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { AUDIT_LINE_KEYS } from '../../fixtures/audit-keys.js';
import { tempHome } from '../../helpers/home.js';
import { MCP_CLIENT, PROXY_AUDIENCE, startIdp } from '../auth/harness.js';
import {
  everythingBody,
  inProcessManager,
  runInProcess,
  waitFor,
  workloadEndpoint,
} from '../workloads/helpers.js';

type Line = Record<string, unknown> & {
  type: string;
  outcome: string;
  component: string;
  source: { type: string; value: string; extra: Record<string, string> };
  subjects: Record<string, string>;
  target: Record<string, string>;
  metadata?: { extra: Record<string, unknown> };
  data?: { request?: unknown; response?: unknown };
  delegation?: Record<string, unknown>;
};

interface Audited {
  /** The working URL of its `/mcp` (or `path`): with the access token unless it has inbound auth. */
  url(path?: string): string;
  file: string;
  /** Stops the runner (the pipeline closes, the audit writer flushes) and returns the file's lines. */
  stop(): Promise<Line[]>;
}

/** Imports server-everything with `extra` run-configuration fields and runs it in-process. */
async function auditedWorkload(
  t: TestContext,
  name: string,
  extra: Record<string, unknown>,
): Promise<Audited> {
  const { ctx, manager } = inProcessManager(t);
  await manager.create(everythingBody('template'));
  const template = manager.exportConfig('template');
  await manager.createFromConfig({ ...template, ...extra }, { name });
  const controller = new AbortController();
  const done = runInProcess(ctx, name, controller.signal);
  t.after(async () => {
    controller.abort();
    await done;
  });
  await waitFor(`${name} to be running`, () => {
    const row = manager.rows.get(name);
    if (row?.status === 'error') throw new Error(`${name}: ${row.statusContext}`);
    return row?.status === 'running' ? true : undefined;
  });
  const file = (extra['audit_config'] as { logFile: string }).logFile;
  return {
    url: (path) => workloadEndpoint(manager, name, path),
    file,
    async stop() {
      controller.abort();
      assert.equal(await done, 0);
      const text = readFileSync(file, 'utf8');
      assert.ok(text.endsWith('\n'));
      return text
        .trimEnd()
        .split('\n')
        .map((line) => JSON.parse(line) as Line);
    },
  };
}

function checkKeyOrder(line: Line): void {
  const keys = Object.keys(line);
  const expected = AUDIT_LINE_KEYS.filter((k) => keys.includes(k));
  assert.deepEqual(keys, expected, `key order of ${line.type}`);
  assert.deepEqual(Object.keys(line.source), ['type', 'value', 'extra']);
  const sorted = (o: Record<string, unknown> | undefined) =>
    o === undefined || assert.deepEqual(Object.keys(o), Object.keys(o).toSorted());
  sorted(line.subjects);
  sorted(line.target);
  sorted(line.source.extra);
  sorted(line.metadata?.extra);
}

function only(lines: Line[], what: string, match: (l: Line) => boolean): Line {
  const found = lines.filter(match);
  assert.equal(found.length, 1, `one ${what} event, found ${found.length}`);
  return found[0] as Line;
}

const call = (name: string) => (l: Line) => l.type === 'mcp_tool_call' && l.target['name'] === name;

async function streamableClient(
  t: TestContext,
  url: string,
  token?: string,
  sampling = false,
): Promise<Client> {
  const client = new Client(
    { name: 'audit-streamable', version: '1.2.3' },
    sampling ? { capabilities: { sampling: {} } } : {},
  );
  const init = token === undefined ? {} : { requestInit: { headers: { authorization: `Bearer ${token}` } } };
  await client.connect(new StreamableHTTPClientTransport(new URL(url), init));
  t.after(() => client.close());
  return client;
}

test(
  'audit file: every exchange over streamable HTTP and legacy SSE, field by field, 0600; X-Forwarded-For ignored without trust_proxy_headers',
  { timeout: 180_000 },
  async (t) => {
    const dir = tempHome(t, 'skep-audit-').dir;
    const file = join(dir, 'audit.log');
    const w = await auditedWorkload(t, 'audited', {
      audit_config: { logFile: file, includeRequestData: true, includeResponseData: true, maxDataSize: 2048 },
    });

    const client = await streamableClient(t, w.url(), undefined, true);
    client.setRequestHandler(CreateMessageRequestSchema, () => {
      throw new Error('this client refuses to sample');
    });
    const tools = await client.listTools();
    assert.ok(tools.tools.length > 3);
    await client.callTool({ name: 'echo', arguments: { message: 'hello audit' } });
    const invalid = await client.callTool({ name: 'get-sum', arguments: { a: 'one', b: 2 } });
    assert.equal(invalid.isError, true);
    const longName = `no-such-tool-${'x'.repeat(3000)}`;
    const missing = await client.callTool({ name: longName, arguments: {} });
    assert.equal(missing.isError, true);
    // The server asks this client for a sampling on the call's SSE stream; the client refuses,
    // and the tool's isError result arrives SSE-framed.
    const sampled = await client.callTool({ name: 'trigger-sampling-request', arguments: { prompt: 'hi' } });
    assert.equal(sampled.isError, true);
    await assert.rejects(client.request({ method: 'no/such-method', params: {} }, z.object({})));

    // A hand-made request with proxy headers the configuration does not trust.
    const ping = await fetch(w.url(), {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-session-id': client.transport?.sessionId ?? '',
        'x-forwarded-for': '203.0.113.7',
        'x-real-ip': '198.51.100.2',
        'x-request-id': 'req-42',
        'user-agent': 'audit-probe/1',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 'p-1', method: 'ping' }),
    });
    assert.equal(ping.status, 200);
    await ping.text();

    const legacy = new Client({ name: 'audit-legacy', version: '0.9' });
    await legacy.connect(new SSEClientTransport(new URL(w.url('/sse'))));
    await legacy.callTool({ name: 'echo', arguments: { message: 'over sse' } });
    const legacyInvalid = await legacy.callTool({ name: 'get-sum', arguments: { a: 'one', b: 2 } });
    assert.equal(legacyInvalid.isError, true);
    await legacy.close();
    await client.close();

    const accessToken = new URL(w.url()).searchParams.get('skep_token') as string;
    assert.match(accessToken, /^[0-9a-f]{64}$/, 'the clients presented the access token');
    const lines = await w.stop();
    assert.equal(statSync(file).mode & 0o777, 0o600, 'the audit file is created 0600');
    assert.ok(!readFileSync(file, 'utf8').includes(accessToken), 'the access token is never audited');
    for (const line of lines) {
      checkKeyOrder(line);
      assert.equal(line['level'], 'AUDIT');
      assert.equal(line['msg'], 'audit_event');
      assert.match(
        String(line['audit_id']),
        /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
      );
      assert.match(String(line['logged_at']), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);
      assert.equal(line.component, 'audited', 'component is the workload name');
      assert.equal(line.source.type, 'network');
      assert.equal(line.source.value, '127.0.0.1');
      // No inbound authentication: every caller is the local user (ToolHive's synthetic local user).
      assert.match(line.subjects['user'] ?? '', /^Local User: /);
      assert.equal(line.delegation, undefined);
    }
    assert.equal(new Set(lines.map((l) => l['audit_id'])).size, lines.length, 'audit ids are unique');

    const inits = lines.filter((l) => l.type === 'mcp_initialize');
    assert.equal(inits.length, 2, 'one initialize per client');
    const init = only(inits, 'streamable initialize', (l) => l.target['name'] === 'audit-streamable');
    assert.equal(init.outcome, 'success');
    assert.deepEqual(init.target, {
      endpoint: '/mcp',
      method: 'initialize',
      name: 'audit-streamable',
      type: 'endpoint',
    });
    assert.equal(
      (init.data?.request as { method: string }).method,
      'initialize',
      'the whole JSON-RPC request',
    );
    assert.ok((init.data?.response as { result: { serverInfo: unknown } }).result.serverInfo);
    assert.equal(init.metadata?.extra['transport'], 'http');
    assert.equal(typeof init.metadata?.extra['duration_ms'], 'number');
    assert.ok((init.metadata?.extra['response_size_bytes'] as number) > 0);

    const initialized = lines.filter((l) => l.target['method'] === 'notifications/initialized');
    assert.equal(initialized.length, 2);
    for (const l of initialized) {
      assert.equal(l.type, 'mcp_request');
      assert.equal(l.outcome, 'success');
    }

    const list = only(lines, 'tools/list', (l) => l.type === 'mcp_tools_list');
    assert.equal(list.outcome, 'success');
    assert.equal(list.data?.response, undefined, 'a tools/list answer over maxDataSize is not recorded');
    assert.equal(list.metadata?.extra['response_size_bytes'], 0);
    assert.ok(list.data?.request !== undefined);

    const echo = only(lines, 'streamable echo', (l) => call('echo')(l) && l.target['endpoint'] === '/mcp');
    assert.equal(echo.outcome, 'success');
    assert.deepEqual(echo.target, { endpoint: '/mcp', method: 'tools/call', name: 'echo', type: 'tool' });
    assert.deepEqual((echo.data?.request as { params: unknown }).params, {
      name: 'echo',
      arguments: { message: 'hello audit' },
    });
    assert.match(JSON.stringify(echo.data?.response), /hello audit/);

    const sums = lines.filter(call('get-sum'));
    assert.equal(sums.length, 2);
    for (const sum of sums) {
      assert.equal(sum.outcome, 'application_error', `isError on ${sum.target['endpoint']}`);
      assert.equal(sum.metadata?.extra['tool_error'], true);
      assert.match(String(sum.metadata?.extra['tool_error_message']), /Input validation error/);
      assert.equal(sum.metadata?.extra['jsonrpc_error_code'], undefined);
    }
    const legacySum = only(sums, 'legacy get-sum', (l) => l.target['endpoint'] === '/messages');
    assert.equal(legacySum.metadata?.extra['transport'], 'sse');

    const big = only(lines, 'long-name call', call(longName));
    assert.equal(big.outcome, 'application_error', 'found in an answer far over 512 bytes');
    assert.equal(String(big.metadata?.extra['tool_error_message']).length, 256);
    assert.equal(big.data, undefined, 'request and answer over maxDataSize are not recorded');

    const sampling = only(lines, 'sampling call', call('trigger-sampling-request'));
    assert.equal(sampling.outcome, 'application_error', 'found in an SSE-framed answer');

    const unknown = only(lines, 'unknown method', (l) => l.target['method'] === 'no/such-method');
    assert.equal(unknown.type, 'mcp_request');
    assert.equal(unknown.outcome, 'application_error');
    assert.equal(unknown.metadata?.extra['jsonrpc_error_code'], -32601);
    assert.equal(typeof unknown.metadata?.extra['jsonrpc_error_message'], 'string');

    const pinged = only(lines, 'ping', (l) => l.type === 'mcp_ping');
    assert.equal(pinged.source.value, '127.0.0.1', 'X-Forwarded-For is not trusted by default');
    assert.deepEqual(pinged.source.extra, { request_id: 'req-42', user_agent: 'audit-probe/1' });
    assert.deepEqual(pinged.target, { endpoint: '/mcp', method: 'ping', name: 'ping', type: 'endpoint' });

    const legacyEcho = only(
      lines,
      'legacy echo',
      (l) => call('echo')(l) && l.target['endpoint'] === '/messages',
    );
    assert.equal(legacyEcho.outcome, 'success');
    assert.match(JSON.stringify(legacyEcho.data?.response), /over sse/, 'the answer that came on the stream');

    const streams = lines.filter((l) => l.type === 'sse_connection');
    const legacyStream = only(streams, 'legacy stream', (l) => l.target['endpoint'] === '/sse');
    assert.equal(legacyStream.outcome, 'success');
    assert.deepEqual(legacyStream.target, { endpoint: '/sse', method: 'GET', type: 'sse_endpoint' });
    assert.equal(legacyStream.metadata?.extra['transport'], 'sse');
    assert.equal(typeof legacyStream.metadata?.extra['user_agent'], 'string');
    const mcpStream = only(streams, 'streamable GET stream', (l) => l.target['endpoint'] === '/mcp');
    assert.equal(mcpStream.metadata?.extra['transport'], 'streamable-http');
  },
);

test(
  'audit with OIDC: the 401s are audited as denied (anonymous), a real token names the caller and its delegation; trust_proxy_headers believes X-Forwarded-For; filters and maxDataSize apply',
  { timeout: 180_000 },
  async (t) => {
    const idp = await startIdp(t, {
      name: 'Ada Lovelace',
      client_version: '7.1',
      act: {
        sub: 'agent-2',
        iss: 'https://agents.example',
        act: { sub: 'agent-1', act: { sub: 'agent-0' } },
      },
    });
    const dir = tempHome(t, 'skep-audit-').dir;
    const file = join(dir, 'audit.log');
    const w = await auditedWorkload(t, 'guarded', {
      oidc_config: {
        issuer: idp.issuer,
        audience: PROXY_AUDIENCE,
        insecureAllowHTTP: true,
        resourceURL: PROXY_AUDIENCE,
      },
      trust_proxy_headers: true,
      audit_config: {
        logFile: file,
        component: 'guarded-mcp',
        includeRequestData: true,
        maxDataSize: 160,
        maxDelegationDepth: 2,
        // The allowlist names sse_connection (the reference refuses that name); the denylist wins.
        eventTypes: ['mcp_tool_call', 'mcp_tools_list', 'sse_connection'],
        excludeEventTypes: ['mcp_tools_list'],
      },
    });
    const url = w.url();

    const denied = await fetch(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'x-forwarded-for': '203.0.113.7, 10.0.0.1',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo' } }),
    });
    assert.equal(denied.status, 401);
    await denied.text();
    const deniedStream = await fetch(url, {
      headers: { accept: 'text/event-stream', 'x-real-ip': '198.51.100.2' },
    });
    assert.equal(deniedStream.status, 401);
    await deniedStream.text();

    const token = await idp.clientToken(PROXY_AUDIENCE);
    const client = await streamableClient(t, url, token);
    await client.listTools();
    await client.callTool({ name: 'echo', arguments: { message: 'small' } });
    await client.callTool({ name: 'echo', arguments: { message: 'large '.repeat(40) } });
    await client.close();

    const lines = await w.stop();
    for (const line of lines) {
      checkKeyOrder(line);
      assert.equal(line.component, 'guarded-mcp', 'the configured component wins over the workload name');
    }
    assert.deepEqual(
      [...new Set(lines.map((l) => l.type))].sort(),
      ['mcp_tool_call', 'sse_connection'],
      'only the allowed types; mcp_tools_list is excluded although allowed',
    );

    // Audit sits outside auth, so the 401 is audited. Skep's proxy parses before the pipeline,
    // so the refused request is typed by its method (the reference types it http_request).
    const refused = only(
      lines,
      'refused call',
      (l) => l.outcome === 'denied' && l.target['method'] === 'tools/call',
    );
    assert.equal(refused.type, 'mcp_tool_call');
    assert.deepEqual(refused.subjects, { user: 'anonymous' });
    assert.equal(refused.source.value, '203.0.113.7', 'X-Forwarded-For with trust_proxy_headers');
    assert.equal(refused.delegation, undefined);

    const refusedStream = only(
      lines,
      'refused stream',
      (l) => l.type === 'sse_connection' && l.outcome === 'denied',
    );
    assert.equal(refusedStream.source.value, '198.51.100.2', 'X-Real-IP with trust_proxy_headers');
    assert.deepEqual(refusedStream.subjects, { user: 'anonymous' });

    const calls = lines.filter((l) => call('echo')(l) && l.outcome === 'success');
    assert.equal(calls.length, 2);
    for (const c of calls) {
      assert.deepEqual(c.subjects, { client_version: '7.1', user: 'Ada Lovelace', user_id: MCP_CLIENT.id });
      assert.deepEqual(c.delegation, {
        chain: [{ iss: 'https://agents.example', sub: 'agent-2' }, { sub: 'agent-1' }],
        truncated: true,
        omitted: 1,
        malformed: false,
      });
      assert.equal(c.source.value, '127.0.0.1');
      assert.equal(c.metadata?.extra['response_size_bytes'], undefined, 'response data is off');
    }
    const small = calls.find((c) => JSON.stringify(c.data?.request).includes('"small"'));
    assert.ok(small, 'a request within maxDataSize is recorded');
    assert.equal(
      calls.filter((c) => c.data === undefined).length,
      1,
      'a request over maxDataSize is left out, not truncated',
    );
  },
);
