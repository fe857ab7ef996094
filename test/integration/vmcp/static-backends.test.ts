/**
 * Issue 21 (the VirtualMCPServer pod): a virtual workload whose config lists static
 * `backends[]` — what the operator writes for a pod, where no store lists the group — serves
 * those backends instead of its group's workloads: a Skep workload's proxy (probed at
 * `/health`) and a remote server reached directly (`type: entry`, probed for any HTTP answer),
 * which demands an API key that only the backend's inline `header_injection` strategy sends.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';
import { addGroup, callText, connect, lab, team, toolNames, virtual } from './helpers.js';

const API_KEY = 'static-backend-key-41c2';

/** A stateless streamable-HTTP MCP server (official SDK) that answers only with the right key. */
async function startRemote(): Promise<{ url: string; keys: string[]; server: Server }> {
  const keys: string[] = [];
  const server = createServer((req, res) => {
    keys.push(String(req.headers['x-api-key'] ?? ''));
    if (req.headers['x-api-key'] !== API_KEY) {
      res.writeHead(401, { 'content-type': 'text/plain' }).end('missing or wrong X-Api-Key\n');
      return;
    }
    const mcp = new McpServer({ name: 'remote', version: '1.0.0' });
    mcp.registerTool('whoami', { inputSchema: { who: z.string() } }, async ({ who }) => ({
      content: [{ type: 'text' as const, text: `remote says hi to ${who}` }],
    }));
    const transport = new StreamableHTTPServerTransport({});
    res.on('close', () => void transport.close());
    void mcp.connect(transport).then(() => transport.handleRequest(req, res));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/mcp`, keys, server };
}

test(
  'a virtual workload with static backends serves them, with per-backend auth',
  { timeout: 120_000 },
  async (t) => {
    const remote = await startRemote();
    t.after(() => new Promise<void>((resolve) => remote.server.close(() => resolve())));
    const l = lab(t);
    await addGroup(l, 'base');
    await addGroup(l, 'hubs');
    await team(l, 'alpha', 'base');
    // `hubs` has no other workload: every backend comes from the list.
    await virtual(
      l,
      'hub',
      'hubs',
      {
        backends: [
          { name: 'alpha', url: `http://127.0.0.1:${l.port('alpha')}/mcp`, transport: 'streamable-http' },
          { name: 'remote', url: remote.url, transport: 'streamable-http', type: 'entry' },
        ],
        outgoingAuth: {
          source: 'inline',
          backends: {
            remote: {
              type: 'header_injection',
              headerInjection: { headerName: 'X-Api-Key', headerValueEnv: 'REMOTE_KEY' },
            },
          },
        },
      },
      { env_vars: { REMOTE_KEY: API_KEY } },
    );
    // The runner reports running once the first probes and auth builds are done.
    assert.equal(l.manager.rows.get('hub')?.statusContext, 'serving 2 backends (alpha, remote)');
    const client = await connect(t, l.port('hub'));
    const names = await toolNames(client);
    assert.ok(names.includes('alpha_search') && names.includes('remote_whoami'), names.join(','));
    assert.equal(await callText(client, 'alpha_search', { query: 'q' }), 'alpha found q');
    assert.equal(await callText(client, 'remote_whoami', { who: 'ann' }), 'remote says hi to ann');
    // The health probe reached the entry without the key (any HTTP answer counts); every MCP
    // request carried it.
    assert.ok(remote.keys.includes(''), 'the reachability probe reached the remote server');
    assert.ok(remote.keys.filter((k) => k === API_KEY).length >= 2, remote.keys.join(','));
  },
);
