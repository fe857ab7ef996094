/**
 * A loopback streamable-HTTP MCP server (official SDK, one stateless server per request) with
 * one tool, `whoami`, that answers only requests carrying `X-Api-Key: <key>` (401 otherwise).
 * `seen` records `<METHOD> <X-Api-Key value>` of every request, so a test can tell which ones
 * carried the key.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';

export interface KeyedMcpServer {
  server: Server;
  url: string;
  seen: string[];
  close(): Promise<void>;
}

export async function startKeyedMcpServer(key: string, port = 0): Promise<KeyedMcpServer> {
  const seen: string[] = [];
  const server = createServer((req, res) => {
    seen.push(`${req.method ?? ''} ${String(req.headers['x-api-key'] ?? '')}`);
    if (req.headers['x-api-key'] !== key) {
      res.writeHead(401, { 'content-type': 'text/plain' }).end('missing or wrong X-Api-Key\n');
      return;
    }
    const mcp = new McpServer({ name: 'remote', version: '1.0.0' });
    mcp.registerTool('whoami', { inputSchema: { who: z.string() } }, async ({ who }) => ({
      content: [{ type: 'text' as const, text: `remote says hi to ${who}` }],
    }));
    const transport = new StreamableHTTPServerTransport({});
    res.on('close', () => {
      void transport.close();
      void mcp.close();
    });
    void mcp.connect(transport).then(() => transport.handleRequest(req, res));
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const bound = (server.address() as AddressInfo).port;
  return {
    server,
    url: `http://127.0.0.1:${bound}/mcp`,
    seen,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
