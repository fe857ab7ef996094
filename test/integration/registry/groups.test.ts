/**
 * Registry groups end to end: a registry file that defines `data.groups`, seen through the native
 * API in ToolHive's shape; ToolHive Studio's "Install group" wizard (POST /groups, then POST
 * /workloads with `registry`, `server` and the group, once per member) run against real runners;
 * the group removed in bulk; and the groups carried through a second Skep's v0.1 API
 * (`x/dev.skep/groups`).
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { buildApp } from '../../../src/control/api/app.js';
import { createContext } from '../../../src/control/app/index.js';
import type { RegistryDocument } from '../../../src/registry/index.js';
import { testApp } from '../../helpers/api.js';
import { tempHome } from '../../helpers/home.js';
import { startRemoteMcp } from '../auth/harness.js';
import { EVERYTHING_ENTRY, waitFor, waitForStatus, workloadApp } from '../workloads/helpers.js';

const STACKLOK = 'io.github.stacklok';
const PUBLISHER = 'io.modelcontextprotocol.registry/publisher-provided';

/**
 * A registry with two runnable servers (server-everything as a local process, and a remote
 * MCP server on loopback), one server outside any group, and the group `demo` of the first two.
 */
function demoRegistry(remoteUrl: string): RegistryDocument {
  const local = `cmd://${process.execPath}`;
  return {
    version: '1.0.0',
    meta: { last_updated: '2026-11-24T00:00:00Z' },
    data: {
      servers: [
        {
          name: 'io.example/everything-local',
          description: 'server-everything as a local process',
          version: '1.0.0',
          packages: [
            {
              registryType: 'oci',
              identifier: local,
              transport: { type: 'stdio' },
              packageArguments: [
                { type: 'positional', value: EVERYTHING_ENTRY },
                { type: 'positional', value: 'stdio' },
              ],
            },
          ],
          _meta: { [PUBLISHER]: { [STACKLOK]: { [local]: { tier: 'Community', tools: ['echo'] } } } },
        },
        {
          name: 'io.example/remote-echo',
          description: 'A remote MCP server on loopback',
          version: '1.0.0',
          remotes: [{ type: 'streamable-http', url: remoteUrl }],
        },
        {
          name: 'io.example/outsider',
          description: 'Not in any group',
          version: '1.0.0',
          remotes: [{ type: 'streamable-http', url: 'https://mcp.example.com/mcp' }],
        },
      ],
      groups: [
        {
          name: 'demo',
          description: 'Both demo servers',
          servers: ['io.example/everything-local', 'io.example/remote-echo'],
        },
      ],
    },
  };
}

function writeRegistry(t: TestContext, doc: RegistryDocument): string {
  const file = join(tempHome(t, 'skep-groups-file-').dir, 'registry.json');
  writeFileSync(file, JSON.stringify(doc));
  return file;
}

test(
  '"Group" from a registry file, and Studio\'s group install: a group of that name, one workload per member, removed in bulk',
  { timeout: 180_000 },
  async (t) => {
    const remote = await startRemoteMcp(t);
    const { app, ctx } = await workloadApp(t);
    const file = writeRegistry(t, demoRegistry(remote.url));
    const put = await app.inject({
      method: 'PUT',
      url: '/api/v1beta/registry/default',
      payload: { local_path: file },
    });
    assert.equal(put.statusCode, 200, put.body);

    // What Studio's /registry-group/$name page reads: GET /registry/default → registry.groups[].
    const detail = (await app.inject({ method: 'GET', url: '/api/v1beta/registry/default' })).json();
    assert.equal(detail.registry.groups.length, 1);
    const group = detail.registry.groups[0];
    assert.deepEqual(Object.keys(group).sort(), ['description', 'name', 'remote_servers', 'servers']);
    assert.equal(group.name, 'demo');
    assert.equal(group.description, 'Both demo servers');
    assert.deepEqual(Object.keys(group.servers), ['io.example/everything-local']);
    assert.equal(group.servers['io.example/everything-local'].image, `cmd://${process.execPath}`);
    assert.deepEqual(group.servers['io.example/everything-local'].args, [EVERYTHING_ENTRY, 'stdio']);
    assert.deepEqual(Object.keys(group.remote_servers), ['io.example/remote-echo']);
    assert.equal(group.remote_servers['io.example/remote-echo'].url, remote.url);
    assert.equal(detail.registry.servers['io.example/everything-local'].image, `cmd://${process.execPath}`);
    assert.ok(detail.registry.remote_servers['io.example/outsider'], 'the outsider is still listed');

    // The wizard: the group first, then the normal install once per member, with the group fixed.
    const created = await app.inject({
      method: 'POST',
      url: '/api/v1beta/groups',
      payload: { name: 'demo' },
    });
    assert.equal(created.statusCode, 201, created.body);
    const members = [...Object.keys(group.servers), ...Object.keys(group.remote_servers)];
    for (const server of members) {
      const install = await app.inject({
        method: 'POST',
        url: '/api/v1beta/workloads',
        payload: { name: server.split('/')[1], registry: 'default', server, group: 'demo' },
      });
      assert.equal(install.statusCode, 201, install.body);
    }
    await waitForStatus(ctx, 'everything-local', 'running');
    await waitForStatus(ctx, 'remote-echo', 'running');
    const inGroup = (
      await app.inject({ method: 'GET', url: '/api/v1beta/workloads?all=true&group=demo' })
    ).json<{ workloads: { name: string; group: string; remote: boolean }[] }>().workloads;
    assert.deepEqual(
      inGroup.map((w) => [w.name, w.group, w.remote]),
      [
        ['everything-local', 'demo', false],
        ['remote-echo', 'demo', true],
      ],
    );

    // Bulk delete by group: 202 with a JSON string (as ToolHive answers a bulk delete).
    const removed = await app.inject({
      method: 'POST',
      url: '/api/v1beta/workloads/delete',
      payload: { group: 'demo' },
    });
    assert.equal(removed.statusCode, 202);
    assert.equal(removed.json(), 'deletion of 2 workloads started');
    await waitFor('the group to be empty', () =>
      ctx.workloads.rows.names('demo').length === 0 ? true : undefined,
    );
  },
);

test("groups travel through a second Skep's v0.1 API (x/dev.skep/groups) into the native view", async (t) => {
  const upstreamHome = tempHome(t, 'skep-upstream-');
  const upstream = createContext(upstreamHome.config);
  await upstream.registry.configure('default', {
    local_path: writeRegistry(t, demoRegistry('https://remote.example.com/mcp')),
  });
  // Registry sources send no API token: the upstream is served as its unix-socket app is.
  const upstreamApp = await buildApp(upstream, { transport: 'unix' });
  await upstreamApp.listen({ port: 0, host: '127.0.0.1' });
  t.after(async () => {
    await upstreamApp.close();
    await upstream.close();
  });
  const port = (upstreamApp.server.address() as { port: number }).port;
  const base = `http://127.0.0.1:${port}/registry/default`;

  const extension = await fetch(`${base}/v0.1/x/dev.skep/groups`);
  assert.equal(extension.status, 200);
  assert.deepEqual(await extension.json(), {
    groups: [
      {
        name: 'demo',
        description: 'Both demo servers',
        servers: ['io.example/everything-local', 'io.example/remote-echo'],
      },
    ],
  });

  const { app } = await testApp(t);
  const put = await app.inject({
    method: 'PUT',
    url: '/api/v1beta/registry/default',
    payload: { api_url: base, allow_private_ip: true },
  });
  assert.equal(put.statusCode, 200, put.body);
  const groups = (await app.inject({ method: 'GET', url: '/api/v1beta/registry/default' })).json().registry
    .groups;
  assert.equal(groups.length, 1);
  assert.deepEqual(Object.keys(groups[0].servers), ['io.example/everything-local']);
  assert.deepEqual(Object.keys(groups[0].remote_servers), ['io.example/remote-echo']);
  assert.equal(groups[0].remote_servers['io.example/remote-echo'].url, 'https://remote.example.com/mcp');
});
