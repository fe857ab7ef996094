/**
 * Application errors in answers the reference cannot see (ToolHive's audit inspects only the
 * first 512 bytes of a body that starts with `{`): a remote HTTP server, reached through the
 * proxy's transparent mode, answers SSE-framed and with bodies far over 512 bytes. The audit
 * stage sees the parsed JSON-RPC answer through `onReply`, so the framing and size do not
 * matter.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { auditStage } from '../../../src/dataplane/pipeline/stages/audit.js';
import { silentLogger } from '../../../src/shared/index.js';
import { parseRunConfig } from '../../../src/workloads/index.js';
import { proxyFor, startHttpUpstream } from '../proxy/helpers.js';

const PADDING = 'p'.repeat(4000);

/** The remote server's answer per tool name. */
function answer(name: string, id: unknown): { sse: boolean; message: Record<string, unknown> } {
  switch (name) {
    case 'sse-error':
      return {
        sse: true,
        message: { jsonrpc: '2.0', id, error: { code: -32050, message: 'quota exceeded' } },
      };
    case 'large-error':
      return {
        sse: false,
        message: { jsonrpc: '2.0', id, error: { code: -32051, message: 'backend failed', data: PADDING } },
      };
    case 'sse-tool-error':
      return {
        sse: true,
        message: {
          jsonrpc: '2.0',
          id,
          result: {
            content: [
              { type: 'text', text: PADDING },
              { type: 'text', text: 'second' },
            ],
            isError: true,
          },
        },
      };
    default:
      return {
        sse: true,
        message: { jsonrpc: '2.0', id, result: { content: [{ type: 'text', text: PADDING }] } },
      };
  }
}

test(
  'application errors in SSE-framed and large remote answers are detected (the reference misses both)',
  { timeout: 60_000 },
  async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'skep-audit-remote-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, 'audit.log');
    const upstream = await startHttpUpstream(t, (req, res) => {
      const body = JSON.parse(req.body) as { id: unknown; params: { name: string } };
      const { sse, message } = answer(body.params.name, body.id);
      if (sse) {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        // A progress notification first, so the answer is the stream's second event.
        res.write(
          `event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 1, progress: 1 } })}\n\n`,
        );
        res.end(`event: message\ndata: ${JSON.stringify(message)}\n\n`);
      } else {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(message));
      }
    });
    const config = parseRunConfig({
      name: 'remote',
      image: '',
      transport: 'streamable-http',
      remote_url: `${upstream.url}/mcp`,
    });
    const stage = await auditStage.create(
      auditStage.fromRunConfig?.({ ...config, audit_config: { logFile: file } }),
      {
        config,
        logger: silentLogger,
        secretLookup: async () => undefined,
      },
    );
    assert.ok(stage);
    const proxy = await proxyFor(t, undefined, {
      middlewares: [stage],
      upstream: { kind: 'http', url: `${upstream.url}/mcp`, transport: 'streamable-http' },
    });

    const names = ['sse-error', 'large-error', 'sse-tool-error', 'sse-success'];
    for (const [i, name] of names.entries()) {
      const res = await fetch(`${proxy.url}/mcp`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: i + 1, method: 'tools/call', params: { name } }),
      });
      assert.equal(res.status, 200);
      const text = await res.text();
      assert.ok(text.length > 512 || text.startsWith('event:'), `${name}: over 512 bytes or SSE-framed`);
    }
    await stage.close?.();

    const events = readFileSync(file, 'utf8')
      .trimEnd()
      .split('\n')
      .map(
        (l) =>
          JSON.parse(l) as {
            outcome: string;
            target: { name: string };
            metadata: { extra: Record<string, unknown> };
          },
      );
    const byName = new Map(events.map((e) => [e.target.name, e]));
    assert.deepEqual(
      names.map((n) => byName.get(n)?.outcome),
      ['application_error', 'application_error', 'application_error', 'success'],
    );
    assert.equal(byName.get('sse-error')?.metadata.extra['jsonrpc_error_code'], -32050);
    assert.equal(byName.get('sse-error')?.metadata.extra['jsonrpc_error_message'], 'quota exceeded');
    assert.equal(byName.get('large-error')?.metadata.extra['jsonrpc_error_code'], -32051);
    assert.equal(byName.get('sse-tool-error')?.metadata.extra['tool_error'], true);
    assert.equal((byName.get('sse-tool-error')?.metadata.extra['tool_error_message'] as string).length, 256);
  },
);
