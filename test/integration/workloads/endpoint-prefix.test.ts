/**
 * `endpoint_prefix` through a real runner (in this process) over server-everything on stdio:
 * behind a path-stripping relay (an ingress serving the workload under `/team-a`), the official
 * MCP SDK SSE client opens `/team-a/sse`, is told to POST to `/team-a/messages?session_id=…`
 * (MCP 2024-11-05 "HTTP with SSE" endpoint event) and works. A prefix that is not a path, and
 * one on a server with no SSE endpoint event, are refused by name before anything is stored.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { isSkepError } from '../../../src/shared/index.js';
import { startPathRelay } from '../../helpers/path-relay.js';
import { lab } from '../vmcp/helpers.js';
import { EVERYTHING_ENTRY } from './helpers.js';

const everything = (extra: Record<string, unknown>) => ({
  schema_version: 'v0.1.0',
  name: 'prefixed',
  image: `cmd://${process.execPath}`,
  cmd_args: [EVERYTHING_ENTRY, 'stdio'],
  transport: 'stdio',
  ...extra,
});

test(
  'endpoint_prefix: the SDK SSE client works through a path-stripping ingress, posting under the prefix',
  { timeout: 120_000 },
  async (t) => {
    const l = lab(t);
    await l.manager.createFromConfig(everything({ endpoint_prefix: '/team-a' }));
    await l.run('prefixed');
    // The workload's own URL carries its access token in the query; the relay keeps the query.
    const direct = new URL(l.url('prefixed', '/sse'));
    const relay = await startPathRelay(t, '/team-a', direct.origin);

    const client = new Client({ name: 'endpoint-prefix-test', version: '1.0.0' });
    await client.connect(new SSEClientTransport(new URL(`${relay.url}/sse${direct.search}`)));
    t.after(() => client.close());
    const result = (await client.callTool({ name: 'echo', arguments: { message: 'via ingress' } })) as {
      content: Array<{ text: string }>;
    };
    assert.equal(result.content[0]?.text, 'Echo: via ingress');
    assert.ok(
      relay.paths.some((p) => p.startsWith('/team-a/messages?session_id=')),
      `the client posted under the prefix: ${relay.paths.join(', ')}`,
    );
    assert.ok(
      !relay.paths.some((p) => !p.startsWith('/team-a/')),
      `nothing reached the relay outside the prefix: ${relay.paths.join(', ')}`,
    );
  },
);

test('endpoint_prefix: not a path, or on a streamable-HTTP server, is refused by name and nothing is stored', async (t) => {
  const l = lab(t);
  for (const [extra, code, message] of [
    [{ endpoint_prefix: 'team-a' }, 'invalid_config', /endpoint_prefix must be a path starting with '\/'/],
    [{ endpoint_prefix: '/a?b=c' }, 'invalid_config', /endpoint_prefix must be a path without a query/],
    [{ endpoint_prefix: '//evil.example' }, 'invalid_config', /endpoint_prefix must not start with '\/\/'/],
    [
      { endpoint_prefix: '/team-a', transport: 'streamable-http', target_port: 9 },
      'unsupported_field',
      /^endpoint_prefix is not supported for a streamable-HTTP server: .*remove it/,
    ],
  ] as const) {
    await assert.rejects(
      l.manager.createFromConfig(everything(extra)),
      (err) => isSkepError(err) && err.code === code && err.status === 400 && message.test(err.message),
      JSON.stringify(extra),
    );
  }
  assert.equal(l.manager.rows.get('prefixed'), undefined, 'a refused import stores nothing');
});
