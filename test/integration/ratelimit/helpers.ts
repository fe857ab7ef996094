/**
 * Helpers for the rate-limit integration tests: the official MCP SDK client, and the way a
 * 429 surfaces through it (the transport's HTTP error, whose message carries the body).
 */
import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

/**
 * An SDK client of the proxy at `url`, over its `/mcp` or (`sse`) legacy `/sse`. `url` is the
 * proxy's origin or a workload's working URL, whose query (the access token) is kept.
 */
export async function sdkClient(t: TestContext, url: string, sse = false): Promise<Client> {
  const client = new Client({ name: 'ratelimit-test', version: '1.0.0' });
  const endpoint = new URL(url);
  endpoint.pathname = sse ? '/sse' : '/mcp';
  await client.connect(sse ? new SSEClientTransport(endpoint) : new StreamableHTTPClientTransport(endpoint));
  t.after(() => client.close());
  return client;
}

export type CallOutcome = { ok: true; text: string } | { ok: false; status: number; body: unknown };

/** Calls `echo`; a refusal is returned with the HTTP status and the JSON body the SDK reports. */
export async function echo(client: Client, message: string): Promise<CallOutcome> {
  try {
    const result = (await client.callTool({ name: 'echo', arguments: { message } })) as {
      content: { text: string }[];
    };
    return { ok: true, text: result.content[0]?.text ?? '' };
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    const status = /HTTP (\d{3})/.exec(message)?.[1] ?? String((err as { code?: unknown }).code);
    const json = message.slice(message.indexOf('{'));
    return { ok: false, status: Number(status), body: JSON.parse(json) as unknown };
  }
}

/** The body the reference (ToolHive) sends for a limited call. */
export function limitedBody(retryAfterSeconds: number): Record<string, unknown> {
  return {
    jsonrpc: '2.0',
    error: { code: 429, message: 'Rate limit exceeded', data: { retryAfterSeconds } },
  };
}

/** Asserts `outcome` is the reference's 429 (the id is the SDK's, so it is checked for presence only). */
export function assertLimited(outcome: CallOutcome, retryAfterSeconds: number): void {
  assert.equal(outcome.ok, false, 'the call was not limited');
  if (outcome.ok) return;
  assert.equal(outcome.status, 429);
  const { id, ...rest } = outcome.body as { id?: unknown };
  assert.ok(typeof id === 'number' || typeof id === 'string', 'the error carries the request id');
  assert.deepEqual(rest, limitedBody(retryAfterSeconds));
}
