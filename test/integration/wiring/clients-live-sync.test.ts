/**
 * Live client sync with real parts: a registered client's config file follows a
 * real workload — a detached runner serving server-everything — as it starts, stops and is
 * removed. The composition root wires `workloads.onChange` to the clients' sync.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { createContext } from '../../../src/control/app/index.js';
import { tempHome } from '../../helpers/home.js';
import { everythingBody, removeAllWorkloads, waitFor, waitForStatus } from '../workloads/helpers.js';

test('a running workload in a registered client’s group appears in its config; stop and rm take it out', async (t) => {
  const home = tempHome(t);
  const userHome = join(home.dir, 'user-home');
  mkdirSync(join(userHome, '.cursor'), { recursive: true });
  const cursorConfig = join(userHome, '.cursor', 'mcp.json');
  // The user's own content, which must survive every sync.
  writeFileSync(cursorConfig, '{\n  "mcpServers": {\n    "mine": { "command": "my-server" }\n  }\n}\n');
  const ctx = createContext(home.config, { env: { ...home.env, HOME: userHome } });
  t.after(async () => {
    await removeAllWorkloads(ctx);
    await ctx.close();
  });

  await ctx.clients.register('cursor', ['default']);
  const created = await ctx.workloads.create(everythingBody('live-sync'));
  await waitForStatus(ctx, 'live-sync', 'running');
  const servers = () =>
    (JSON.parse(readFileSync(cursorConfig, 'utf8')) as { mcpServers: Record<string, unknown> }).mcpServers;

  await waitFor('the workload to appear in the Cursor config', () =>
    servers()['live-sync'] === undefined ? undefined : true,
  );
  // Cursor's config takes headers: the plain URL, and the workload's access token as a bearer.
  const token = ctx.workloads.rows.get('live-sync')?.accessToken as string;
  assert.match(token, /^[0-9a-f]{64}$/);
  assert.deepEqual(servers()['live-sync'], {
    url: `http://127.0.0.1:${created.port}/mcp`,
    type: 'http',
    headers: { Authorization: `Bearer ${token}` },
  });
  assert.deepEqual(servers()['mine'], { command: 'my-server' }, 'user entries are kept');

  await ctx.workloads.stopNow('live-sync');
  await waitFor('the stopped workload to leave the config', () =>
    servers()['live-sync'] === undefined ? true : undefined,
  );
  assert.deepEqual(Object.keys(servers()), ['mine']);

  await ctx.workloads.restartNow('live-sync');
  await waitForStatus(ctx, 'live-sync', 'running');
  await waitFor('the restarted workload to come back', () =>
    servers()['live-sync'] === undefined ? undefined : true,
  );

  await ctx.workloads.deleteNow('live-sync');
  await waitFor('the removed workload to leave the config', () =>
    servers()['live-sync'] === undefined ? true : undefined,
  );
  assert.deepEqual(Object.keys(servers()), ['mine']);
  assert.ok(existsSync(cursorConfig));
});
