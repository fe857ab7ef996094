/**
 * The probe fixture (`test/fixtures/mcp/probe-server.mjs`) and how tests talk to it: through
 * a workload's proxy with the official MCP SDK client, or straight over a started server's
 * stdio with raw JSON-RPC lines (for runtime-level tests without a proxy).
 */
import { dirname, join } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { ApiContext } from '../../../src/control/app/index.js';
import { workloadEndpoint } from '../workloads/helpers.js';

export const PROBE_SERVER = join(
  dirname(fileURLToPath(import.meta.url)),
  '..',
  '..',
  'fixtures',
  'mcp',
  'probe-server.mjs',
);

/** A connected SDK client on workload `name`'s proxy, by its working URL (with the access token). */
export async function probeClient(
  ctx: Pick<ApiContext, 'workloads'>,
  name: string,
): Promise<{
  call(name: string, args?: Record<string, unknown>): Promise<string>;
  close(): Promise<void>;
}> {
  const client = new Client({ name: 'skep-probe-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(workloadEndpoint(ctx, name))));
  return {
    async call(name, args = {}) {
      const result = (await client.callTool({ name, arguments: args })) as {
        content: { type: string; text?: string }[];
      };
      return result.content.map((c) => c.text ?? '').join('');
    },
    close: () => client.close(),
  };
}

/** Raw JSON-RPC over a started stdio server: initialize once, then call tools. */
export function stdioProbe(stdio: { stdin: Writable; stdout: Readable }) {
  let buffered = '';
  let nextId = 1;
  const waiting = new Map<number, { resolve: (result: unknown) => void; reject: (err: Error) => void }>();
  let ended: Error | undefined;
  // A server that exits (it could not load its modules, say) fails the pending calls with a
  // clear error instead of leaving them pending until the test runner gives up.
  stdio.stdout.on('end', () => {
    ended = new Error('the server closed its stdout (it exited); see its log');
    for (const w of waiting.values()) w.reject(ended);
    waiting.clear();
  });
  stdio.stdout.setEncoding('utf8');
  stdio.stdout.on('data', (chunk: string) => {
    buffered += chunk;
    for (let nl = buffered.indexOf('\n'); nl >= 0; nl = buffered.indexOf('\n')) {
      const line = buffered.slice(0, nl);
      buffered = buffered.slice(nl + 1);
      if (line.trim() === '') continue;
      const msg = JSON.parse(line) as { id?: number; result?: unknown; error?: unknown };
      if (msg.id !== undefined) waiting.get(msg.id)?.resolve(msg.result ?? msg.error);
    }
  });
  const request = (method: string, params: unknown) =>
    new Promise<unknown>((resolve, reject) => {
      if (ended !== undefined) {
        reject(ended);
        return;
      }
      const id = nextId++;
      waiting.set(id, { resolve, reject });
      stdio.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
    });
  let ready: Promise<void> | undefined;
  const init = () =>
    (ready ??= request('initialize', {
      protocolVersion: '2025-06-18',
      capabilities: {},
      clientInfo: { name: 'skep-test', version: '1' },
    }).then(() => {
      stdio.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n`);
    }));
  return {
    async call(name: string, args: Record<string, unknown> = {}): Promise<string> {
      await init();
      const result = (await request('tools/call', { name, arguments: args })) as {
        content?: { text?: string }[];
      };
      return (result.content ?? []).map((c) => c.text ?? '').join('');
    },
  };
}
