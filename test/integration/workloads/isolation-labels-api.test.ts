/**
 * The API's list and detail say how a workload is isolated as the runtime enforces it: a
 * local server under the default `network` profile (what package servers get) shares this
 * machine's network, whether or not it is sandboxed; a virtual MCP server runs no server
 * process, so neither label applies (it was reported as a container with no engine).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { probeBwrap } from '../../../src/dataplane/runtime/index.js';
import { everythingBody, workloadApp } from './helpers.js';

interface Summary {
  name: string;
  sandbox: string;
  network: string;
}

test('GET /workloads and /workloads/{name}: host network for the network profile, n/a for a virtual server', async (t) => {
  const { app } = await workloadApp(t);
  const created = await app.inject({
    method: 'POST',
    url: '/api/v1beta/workloads',
    payload: {
      ...everythingBody('everything'),
      // What the built-in `network` profile of package servers allows.
      permission_profile: { network: { outbound: { insecure_allow_all: true } } },
    },
  });
  assert.equal(created.statusCode, 201, created.body);
  const virtual = await app.inject({
    method: 'POST',
    url: '/api/v1beta/workloads',
    payload: { name: 'team', transport: 'stdio', vmcp: { groupRef: 'default' } },
  });
  assert.equal(virtual.statusCode, 201, virtual.body);

  const list = (await app.inject({ method: 'GET', url: '/api/v1beta/workloads?all=true' })).json<{
    workloads: Summary[];
  }>();
  const byName = new Map(list.workloads.map((w) => [w.name, w]));
  const sandboxed = probeBwrap('bwrap').ok;
  assert.equal(byName.get('everything')?.sandbox, sandboxed ? 'bwrap' : 'none');
  assert.equal(byName.get('everything')?.network, 'host');
  assert.deepEqual(
    [byName.get('team')?.sandbox, byName.get('team')?.network],
    ['n/a', 'n/a'],
    'a virtual MCP server is neither a container nor sandboxed',
  );

  const detail = (await app.inject({ method: 'GET', url: '/api/v1beta/workloads/everything' })).json<{
    network: string;
    network_detail: string;
    network_isolation: boolean;
  }>();
  assert.equal(detail.network, 'host');
  assert.match(detail.network_detail, /^this machine's network, unfiltered/);
  const team = (await app.inject({ method: 'GET', url: '/api/v1beta/workloads/team' })).json<{
    sandbox: string;
    sandbox_reason: string;
    network_detail: string;
  }>();
  assert.equal(team.sandbox, 'n/a');
  assert.match(team.sandbox_reason, /virtual MCP server runs no server process/);
  assert.match(team.network_detail, /^not applicable/);
});
