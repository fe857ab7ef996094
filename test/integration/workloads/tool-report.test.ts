/**
 * The runner reports the tool names a workload's clients see to the store (`tools`, shown by
 * `skep list`, the API and the UI), listed at its own proxy: real runners (in this process)
 * over real servers (the team fixture on stdio and on streamable HTTP, a per-session server,
 * a virtual MCP server), reached by the official SDK client.
 */
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { callText, connect, lab, team, virtual, waitFor } from '../vmcp/helpers.js';

const COUNTER_SERVER = fileURLToPath(new URL('../../fixtures/mcp/counter-server.ts', import.meta.url));
const TSX = import.meta.resolve('tsx');

test(
  'MCP 2025-11-25 tools/list_changed: the runner reports the tools clients see (after tools_override) and their changes',
  { timeout: 180_000 },
  async (t) => {
    const l = lab(t);
    await team(l, 'alpha', 'default', { tools_override: { alpha_status: { name: 'status' } } });
    const first = await waitFor('alpha to report its tools', () => l.manager.rows.get('alpha')?.tools);
    assert.deepEqual([...first].sort(), ['ask', 'confirm', 'grow', 'headers', 'search', 'slow', 'status']);

    // `grow` registers a tool: the server announces it, the runner lists again.
    const client = await connect(t, l.url('alpha'));
    assert.equal(await callText(client, 'grow'), 'grew');
    await waitFor('alpha to report the grown tool', () =>
      l.manager.rows.get('alpha')?.tools?.includes('grown') === true ? true : undefined,
    );

    await l.stop('alpha');
    assert.equal(l.manager.rows.get('alpha')?.tools, undefined, 'a stopped workload forgets its tools');
  },
);

test(
  'tools reported for a streamable-HTTP server, a per-session server and a virtual MCP server',
  { timeout: 240_000 },
  async (t) => {
    const l = lab(t);
    l.ctx.groups.create('team');
    await team(l, 'beta', 'team', { tools: ['search', 'beta_status'] }, true);
    assert.deepEqual(
      [...(await waitFor('beta to report its tools', () => l.manager.rows.get('beta')?.tools))].sort(),
      ['beta_status', 'search'],
    );

    // One server process per client session: the runner's listing session is ended at once.
    await l.manager.createFromConfig({
      schema_version: 'v0.1.0',
      name: 'counter',
      image: `cmd://${process.execPath}`,
      cmd_args: ['--import', TSX, COUNTER_SERVER],
      transport: 'stdio',
      session_mode: 'per-session',
    });
    await l.run('counter');
    assert.deepEqual(
      await waitFor('counter to report its tools', () => l.manager.rows.get('counter')?.tools),
      ['count'],
    );
    const children = async () =>
      ((await (await fetch(`http://127.0.0.1:${l.port('counter')}/health`)).json()) as { children: number })
        .children;
    await waitFor('the listing session’s server to stop', async () =>
      (await children()) === 0 ? true : undefined,
    );

    await virtual(l, 'v', 'team');
    const tools = await waitFor('v to report its tools', () => {
      const names = l.manager.rows.get('v')?.tools;
      return names !== undefined && names.length > 0 ? names : undefined;
    });
    assert.ok(
      tools.some((name) => name.endsWith('beta_status')),
      `the virtual server lists beta's tools: ${tools.join(', ')}`,
    );
  },
);
