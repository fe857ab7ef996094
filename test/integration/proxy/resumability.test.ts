/**
 * MCP 2025-11-25 "Resumability and Redelivery" for SSE answers to POSTs: event ids
 * `<stream>-<seq>`, a dropped stream keeps collecting the server's messages, and a GET with
 * `Last-Event-ID` replays what the client missed and carries the rest. Real stdio child (the
 * conformance fixture server), raw HTTP so the drop is exact, then the official SDK client
 * resuming on its own after a network cut.
 */
import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { RunningProxy } from '../../../src/dataplane/proxy/index.js';
import { loggedLine, proxyFor, spawnFixture } from './helpers.js';

const ACCEPT = 'application/json, text/event-stream';

interface SseEvent {
  id?: string;
  data: string;
}

/** Reads SSE events from a fetch body until `until` says stop (or the stream ends). */
async function readEvents(
  body: ReadableStream<Uint8Array>,
  until: (events: SseEvent[]) => boolean = () => false,
): Promise<{ events: SseEvent[]; ended: boolean }> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  const events: SseEvent[] = [];
  let buffer = '';
  for (;;) {
    if (until(events)) {
      reader.releaseLock();
      return { events, ended: false };
    }
    const { value, done } = await reader.read();
    if (done) return { events, ended: true };
    buffer += decoder.decode(value, { stream: true });
    let end = buffer.indexOf('\n\n');
    while (end !== -1) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const event: SseEvent = { data: '' };
      for (const line of block.split('\n')) {
        if (line.startsWith('id: ')) event.id = line.slice(4);
        else if (line.startsWith('data: ')) event.data += line.slice(6);
      }
      events.push(event);
      end = buffer.indexOf('\n\n');
    }
  }
}

async function openSession(
  proxy: RunningProxy,
  capabilities: Record<string, unknown> = {},
): Promise<Record<string, string>> {
  const init = await fetch(`${proxy.url}/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: ACCEPT },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities, clientInfo: { name: 'resume', version: '1' } },
    }),
  });
  assert.equal(init.status, 200);
  await init.text();
  const headers = {
    'content-type': 'application/json',
    accept: ACCEPT,
    'mcp-session-id': init.headers.get('mcp-session-id') as string,
    'mcp-protocol-version': '2025-11-25',
  };
  const note = await fetch(`${proxy.url}/mcp`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
  });
  assert.equal(note.status, 202);
  return headers;
}

function callTool(proxy: RunningProxy, headers: Record<string, string>, name: string, signal: AbortSignal) {
  return fetch(`${proxy.url}/mcp`, {
    method: 'POST',
    headers,
    signal,
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 7,
      method: 'tools/call',
      params: { name, arguments: { prompt: 'hi' }, _meta: { progressToken: 'p1' } },
    }),
  });
}

function resume(proxy: RunningProxy, headers: Record<string, string>, lastEventId: string) {
  return fetch(`${proxy.url}/mcp`, {
    method: 'GET',
    headers: { ...headers, accept: 'text/event-stream', 'last-event-id': lastEventId },
  });
}

async function fixtureProxy(t: TestContext): Promise<RunningProxy> {
  return proxyFor(t, spawnFixture(t), { limits: { upstreamInitTimeoutMs: 60_000 } });
}

test('a POST stream dropped mid-call is resumed by GET + Last-Event-ID: the response arrives once, with the next id', async (t) => {
  const proxy = await fixtureProxy(t);
  const headers = await openSession(proxy, { sampling: {} });

  // The server asks the client for a sampling result before it answers: the POST turns into SSE.
  const cut = new AbortController();
  const call = await callTool(proxy, headers, 'test_sampling', cut.signal);
  assert.equal(call.headers.get('content-type'), 'text/event-stream');
  const first = await readEvents(call.body as ReadableStream<Uint8Array>, (e) => e.length === 1);
  const [askEvent] = first.events;
  assert.match(askEvent?.id ?? '', /^\d+-1$/, 'events on a POST stream carry <stream>-<seq> ids');
  const ask = JSON.parse(askEvent?.data ?? '') as { id: number; method: string };
  assert.equal(ask.method, 'sampling/createMessage');

  // The network drops; the client answers the server's request anyway (a separate POST).
  cut.abort();
  const answer = await fetch(`${proxy.url}/mcp`, {
    method: 'POST',
    headers,
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: ask.id,
      result: { role: 'assistant', content: { type: 'text', text: 'sampled' }, model: 'm' },
    }),
  });
  assert.equal(answer.status, 202);

  const resumed = await resume(proxy, headers, askEvent?.id as string);
  assert.equal(resumed.status, 200);
  assert.equal(resumed.headers.get('content-type'), 'text/event-stream');
  const rest = await readEvents(resumed.body as ReadableStream<Uint8Array>);
  assert.equal(rest.ended, true, 'the resumed stream ends after the response');
  assert.equal(rest.events.length, 1);
  const streamNo = (askEvent?.id as string).split('-')[0];
  assert.equal(rest.events[0]?.id, `${streamNo}-2`);
  const final = JSON.parse(rest.events[0]?.data ?? '') as {
    id: number;
    result: { content: { text: string }[] };
  };
  assert.equal(final.id, 7, 'the client’s own request id');
  assert.match(final.result.content[0]?.text ?? '', /sampled/);

  // Delivered: the stream is gone.
  const again = await resume(proxy, headers, askEvent?.id as string);
  assert.equal(again.status, 400);
  assert.match(await again.text(), /cannot be resumed/);
});

test('resuming replays only the events after Last-Event-ID, then carries the live rest', async (t) => {
  const proxy = await fixtureProxy(t);
  const headers = await openSession(proxy);
  const cut = new AbortController();
  const call = await callTool(proxy, headers, 'test_tool_with_progress', cut.signal);
  const first = await readEvents(call.body as ReadableStream<Uint8Array>, (e) => e.length === 1);
  cut.abort();
  const firstId = first.events[0]?.id as string;
  assert.equal(
    (JSON.parse(first.events[0]?.data ?? '') as { params: { progress: number } }).params.progress,
    0,
  );

  const resumed = await resume(proxy, headers, firstId);
  const rest = await readEvents(resumed.body as ReadableStream<Uint8Array>);
  assert.equal(rest.ended, true);
  const [streamNo] = firstId.split('-');
  assert.deepEqual(
    rest.events.map((e) => e.id),
    [`${streamNo}-2`, `${streamNo}-3`, `${streamNo}-4`],
  );
  const messages = rest.events.map((e) => JSON.parse(e.data) as Record<string, unknown>);
  assert.deepEqual(
    messages.slice(0, 2).map((m) => (m['params'] as { progress: number; progressToken: string }).progress),
    [50, 100],
  );
  assert.equal((messages[0]?.['params'] as { progressToken: string }).progressToken, 'p1');
  assert.equal(messages[2]?.['id'], 7);
});

test('a dropped stream waits streamResumeMs; after that, or for an unknown stream, resuming is a clear 400', async (t) => {
  // The proxy logs when it gives up on a dropped stream: the test waits for that, not a clock.
  const { logger, logged: gaveUp } = loggedLine('was not resumed in time');
  const proxy = await proxyFor(t, spawnFixture(t), {
    logger,
    limits: { upstreamInitTimeoutMs: 60_000, streamResumeMs: 200 },
  });
  const headers = await openSession(proxy);
  const unknown = await resume(proxy, headers, '99-1');
  assert.equal(unknown.status, 400);
  assert.match(await unknown.text(), /stream 99 cannot be resumed/);

  const cut = new AbortController();
  const call = await callTool(proxy, headers, 'test_tool_with_progress', cut.signal);
  const first = await readEvents(call.body as ReadableStream<Uint8Array>, (e) => e.length === 1);
  cut.abort();
  await gaveUp;
  const late = await resume(proxy, headers, first.events[0]?.id as string);
  assert.equal(late.status, 400);
  await late.text();

  // The session itself is fine.
  const ping = await fetch(`${proxy.url}/mcp`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'ping' }),
  });
  assert.deepEqual(await ping.json(), { jsonrpc: '2.0', id: 9, result: {} });
});

test('the official SDK client resumes a POST stream cut by the network and gets its result', async (t) => {
  const proxy = await fixtureProxy(t);
  let cuts = 0;
  const resumes: string[] = [];
  // A fetch that cuts the first SSE answer to a POST right after its first event, as a
  // dropped connection would, and records the client's resumption requests.
  const cuttingFetch: typeof fetch = async (input, init) => {
    const headers = new Headers(init?.headers);
    const lastEventId = headers.get('last-event-id');
    if (init?.method === 'GET' && lastEventId !== null) resumes.push(lastEventId);
    const res = await fetch(input, init);
    if (init?.method !== 'POST' || cuts > 0 || res.headers.get('content-type') !== 'text/event-stream')
      return res;
    cuts++;
    const source = (res.body as ReadableStream<Uint8Array>).getReader();
    let seen = '';
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        const { value, done } = await source.read();
        if (done) return controller.close();
        seen += new TextDecoder().decode(value);
        const end = seen.indexOf('\n\n');
        if (end === -1) return controller.enqueue(value);
        controller.enqueue(new TextEncoder().encode(seen.slice(0, end + 2)));
        await source.cancel();
        controller.error(new TypeError('network connection lost'));
      },
    });
    return new Response(body, { status: res.status, headers: res.headers });
  };
  const client = new Client({ name: 'resume-sdk', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${proxy.url}/mcp`), {
      fetch: cuttingFetch,
      reconnectionOptions: {
        initialReconnectionDelay: 50,
        maxReconnectionDelay: 500,
        reconnectionDelayGrowFactor: 2,
        maxRetries: 3,
      },
    }),
  );
  t.after(() => client.close());

  const progress: number[] = [];
  const result = await client.callTool({ name: 'test_tool_with_progress', arguments: {} }, undefined, {
    onprogress: (p) => progress.push(p.progress),
  });
  assert.equal(cuts, 1, 'the first SSE answer was cut');
  assert.equal(resumes.length, 1, `one resumption: ${resumes.join(', ')}`);
  assert.match(resumes[0] ?? '', /^\d+-1$/);
  assert.deepEqual(progress, [0, 50, 100], 'no progress lost or repeated');
  const content = result.content as { type: string; text: string }[];
  assert.equal(content[0]?.type, 'text');
});
