/**
 * `tools_override.<tool>.annotations` through a real runner (in this process) over
 * server-everything on stdio, imported as a run configuration (`skep run --from-config`) and
 * listed with the official MCP SDK client: the override is set over the server's own
 * annotations field by field (MCP 2025-11-25 `ToolAnnotations`), and the tool stays callable.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { callText, connect, lab } from '../vmcp/helpers.js';
import { EVERYTHING_ENTRY, workloadApp } from './helpers.js';

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

test('tools_override annotations through the management API: accepted at create, shown, kept by an edit, checked', async (t) => {
  const { app } = await workloadApp(t);
  const inject = (method: 'GET' | 'POST', url: string, payload?: object) =>
    app.inject({ method, url, ...(payload === undefined ? {} : { payload }) });
  const body = {
    name: 'api-annotated',
    image: `cmd://${process.execPath}`,
    cmd_arguments: [EVERYTHING_ENTRY, 'stdio'],
    tools_override: { echo: { annotations: { readOnlyHint: false, title: 'Say it back' } } },
  };
  const created = await inject('POST', '/api/v1beta/workloads', body);
  assert.equal(created.statusCode, 201, created.body);
  const detail = async () =>
    (await inject('GET', '/api/v1beta/workloads/api-annotated')).json<{
      tools_override: Record<string, unknown>;
    }>().tools_override;
  assert.deepEqual(await detail(), body.tools_override);
  // An edit of another field keeps them.
  const edited = await inject('POST', '/api/v1beta/workloads/api-annotated/edit', { env_vars: { A: '1' } });
  assert.ok(edited.statusCode < 300, edited.body);
  assert.deepEqual(await detail(), body.tools_override);
  // A wrong annotation is refused by name; an override that sets nothing says what to set.
  const wrongType = await inject('POST', '/api/v1beta/workloads', {
    ...body,
    name: 'bad-1',
    tools_override: { echo: { annotations: { readOnlyHint: 'yes' } } },
  });
  assert.equal(wrongType.statusCode, 400);
  assert.match(wrongType.json<{ message: string }>().message, /tools_override.*readOnlyHint/);
  const empty = await inject('POST', '/api/v1beta/workloads', {
    ...body,
    name: 'bad-2',
    tools_override: { echo: {} },
  });
  assert.equal(empty.statusCode, 400);
  assert.match(empty.json<{ message: string }>().message, /set a name, a description or annotations/);
});
