/**
 * `tools_override.<tool>.annotations` through a real runner (in this process) over
 * server-everything on stdio, imported as a run configuration (`skep run --from-config`) and
 * listed with the official MCP SDK client: the override is set over the server's own
 * annotations field by field (MCP 2025-11-25 `ToolAnnotations`), and the tool stays callable.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { callText, connect, lab } from '../vmcp/helpers.js';
import { EVERYTHING_ENTRY } from './helpers.js';

test(
  'tools_override annotations: the SDK client’s tools/list shows them over the server’s own',
  { timeout: 120_000 },
  async (t) => {
    const l = lab(t);
    await l.manager.createFromConfig({
      schema_version: 'v0.1.0',
      name: 'annotated',
      image: `cmd://${process.execPath}`,
      cmd_args: [EVERYTHING_ENTRY, 'stdio'],
      transport: 'stdio',
      tools_override: {
        // server-everything's echo declares readOnlyHint, destructiveHint, idempotentHint and
        // openWorldHint; the override changes one of them and adds a title.
        echo: { annotations: { openWorldHint: true, title: 'Say it back' } },
        'get-sum': { name: 'add', annotations: { idempotentHint: false } },
      },
    });
    await l.run('annotated');
    const client = await connect(t, l.url('annotated'));
    const tools = new Map((await client.listTools()).tools.map((x) => [x.name, x]));

    assert.deepEqual(tools.get('echo')?.annotations, {
      readOnlyHint: true,
      destructiveHint: false,
      idempotentHint: true,
      openWorldHint: true,
      title: 'Say it back',
    });
    assert.deepEqual(tools.get('add')?.annotations, {
      readOnlyHint: true,
      destructiveHint: false,
      idempotentHint: false,
      openWorldHint: false,
    });
    assert.ok(!tools.has('get-sum'), 'the renamed tool is listed under its new name only');
    assert.equal(await callText(client, 'echo', { message: 'hi' }), 'Echo: hi');
    assert.equal(await callText(client, 'add', { a: 2, b: 3 }), 'The sum of 2 and 3 is 5.');
  },
);
