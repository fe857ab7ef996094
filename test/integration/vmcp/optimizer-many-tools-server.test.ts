/**
 * The many-tools fixture server (test/fixtures/mcp/many-tools-server.mjs, for the vMCP
 * "10 backends × 50 tools" benchmark) through the official SDK client over stdio, and the
 * optimizer's find → resolveCall → real tools/call round trip over what it lists.
 */
import assert from 'node:assert/strict';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import {
  createOptimizer,
  type FindToolOutput,
  type McpTool,
} from '../../../src/dataplane/vmcp/optimizer/index.js';
import { syntheticTools } from '../../fixtures/mcp/synthetic-tools.mjs';

const SERVER = join(dirname(fileURLToPath(import.meta.url)), '../../fixtures/mcp/many-tools-server.mjs');

async function connect(env: Record<string, string>): Promise<Client> {
  const client = new Client({ name: 'many-tools-test', version: '1.0.0' });
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: [SERVER],
      env: Object.assign({ PATH: process.env['PATH'] ?? '' }, env),
      stderr: 'ignore',
    }),
  );
  return client;
}

describe('many-tools fixture server', () => {
  const clients: Client[] = [];
  after(async () => {
    for (const c of clients) await c.close();
  });

  it('lists MANY_TOOLS_COUNT tools from MANY_TOOLS_OFFSET, and answers calls', async () => {
    const client = await connect({
      MANY_TOOLS_COUNT: '50',
      MANY_TOOLS_OFFSET: '100',
      MANY_TOOLS_NAME: 'backend-3',
    });
    clients.push(client);
    assert.equal(client.getServerVersion()?.name, 'backend-3');
    const { tools } = await client.listTools();
    assert.deepEqual(
      tools.map((t) => t.name),
      syntheticTools(150)
        .slice(100)
        .map((t) => t.name),
    );
    const result = await client.callTool({ name: tools[0]!.name, arguments: { id: '7' } });
    assert.deepEqual(result.content, [
      { type: 'text', text: JSON.stringify({ tool: tools[0]!.name, arguments: { id: '7' } }) },
    ]);
    const unknown = await client.callTool({ name: 'nope', arguments: {} });
    assert.equal(unknown.isError, true);
  });

  it('find_tool → call_tool → the real tool, over 500 listed tools', async () => {
    const client = await connect({ MANY_TOOLS_COUNT: '500' });
    clients.push(client);
    const { tools } = await client.listTools();
    assert.equal(tools.length, 500);
    const optimizer = createOptimizer();
    await optimizer.index(tools as McpTool[]);
    const found = (await optimizer.find({ tool_description: 'refund a payment' }))
      .structuredContent as unknown as FindToolOutput;
    assert.equal(found.tools[0]!.name, 'stripe_refund_payment');
    const resolved = optimizer.resolveCall({
      tool_name: found.tools[0]!.name,
      parameters: { payment_intent_id: 'pi_1', reason: 'duplicate' },
    });
    assert.ok(resolved.ok);
    const result = await client.callTool({ name: resolved.name, arguments: resolved.arguments });
    assert.deepEqual(JSON.parse((result.content as { text: string }[])[0]!.text), {
      tool: 'stripe_refund_payment',
      arguments: { payment_intent_id: 'pi_1', reason: 'duplicate' },
    });
  });

  it('refuses a bad MANY_TOOLS_COUNT', async () => {
    await assert.rejects(connect({ MANY_TOOLS_COUNT: 'many' }));
  });
});
