/**
 * What the Docker runtime decides before it talks to the engine: how a server reaches the
 * network, what it refuses up front, and the create options of stdio and HTTP servers.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  planServer,
  serverCreateOptions,
  serverEnv,
  useEgressProxy,
} from '../../../src/dataplane/runtime/docker/server-container.js';
import type { ServerSpec } from '../../../src/dataplane/runtime/index.js';
import { isSkepError } from '../../../src/shared/index.js';

const options = { allowPrivileged: false, nodeImage: 'node:test' };

function spec(overrides: Partial<ServerSpec> = {}): ServerSpec {
  return {
    name: 'w',
    image: 'example/server',
    args: [],
    env: { A: '1' },
    transport: 'stdio',
    logFile: '/dev/null',
    ...overrides,
  };
}

test('network: all outbound allowed or isolation off → default; restricted → egress; a stdio server allowed nothing → none', () => {
  const open = { network: { outbound: { insecure_allow_all: true } } };
  assert.equal(planServer(spec({ permissionProfile: open }), options).network, 'default');
  const limited = { network: { outbound: { allow_host: ['example.com'] } } };
  assert.equal(
    planServer(spec({ permissionProfile: limited, isolateNetwork: false }), options).network,
    'default',
  );
  const restricted = planServer(spec({ permissionProfile: limited }), options);
  assert.equal(restricted.network, 'egress');
  assert.equal(restricted.egressImage, 'node:test');
  assert.equal(planServer(spec({ permissionProfileName: 'none' }), options).network, 'none');
  // An HTTP server needs a network for its inbound port even when nothing may go out.
  const http = planServer(
    spec({ permissionProfileName: 'none', transport: 'streamable-http', targetPort: 8080 }),
    options,
  );
  assert.equal(http.network, 'egress');
});

test('refused before anything starts: no target port, privileged without permission, egress without an image', () => {
  const code = (f: () => unknown) => {
    try {
      f();
    } catch (err) {
      return isSkepError(err) ? `${err.code}: ${err.message}` : String(err);
    }
    return 'accepted';
  };
  assert.equal(
    code(() => planServer(spec({ transport: 'sse' }), options)),
    'invalid_config: an sse server needs a target port',
  );
  assert.match(
    code(() => planServer(spec({ permissionProfile: { privileged: true } }), options)),
    /^privileged_not_allowed: /,
  );
  const limited = { network: { outbound: { allow_host: ['example.com'] } } };
  assert.match(
    code(() => planServer(spec({ permissionProfile: limited }), { allowPrivileged: false })),
    /^invalid_config: the permission profile restricts outbound network access/,
  );
  assert.equal(
    code(() => planServer(spec({ image: 'npx://' }), options)),
    "invalid_reference: 'npx://' names no package",
  );
});

test('npx:// runs in the node image with npx as entrypoint; an image keeps its own', () => {
  const npx = planServer(spec({ image: 'npx://@scope/pkg', args: ['--x'] }), options).container;
  assert.deepEqual(npx, { image: 'node:test', entrypoint: ['npx'], cmd: ['-y', '--', '@scope/pkg', '--x'] });
  assert.deepEqual(planServer(spec(), options).container, { image: 'example/server', cmd: undefined });
});

test('create options: a stdio server is attached with stdin once; an HTTP server gets its port and no stdin', () => {
  const net = { hostConfig: { NetworkMode: 'none' }, networking: undefined, exposed: {} };
  const stdio = serverCreateOptions(
    'c',
    planServer(spec(), options),
    serverEnv(spec(), false),
    { l: 'v' },
    net,
  );
  assert.equal(stdio.OpenStdin, true);
  assert.equal(stdio.StdinOnce, true);
  assert.deepEqual(stdio.Env, ['A=1']);
  assert.equal('NetworkingConfig' in stdio, false);
  assert.equal('Entrypoint' in stdio, false);
  const httpSpec = spec({ transport: 'streamable-http', targetPort: 9000 });
  const env = serverEnv(httpSpec, true);
  useEgressProxy(env, '10.0.0.10');
  const http = serverCreateOptions('c', planServer(httpSpec, options), env, {}, net);
  assert.equal(http.OpenStdin, false);
  assert.ok(http.Env?.includes('PORT=9000') && http.Env.includes('MCP_PORT=9000'));
  assert.ok(http.Env?.includes('HTTPS_PROXY=http://10.0.0.10:3128'));
  assert.ok(http.Env?.includes('NO_PROXY=localhost,127.0.0.1,::1'));
});
