/**
 * Workloads in real containers (Podman's Docker-compatible API), driven through the
 * WorkloadManager and the detached runner exactly as `skep serve` does, with the official
 * MCP SDK client talking to Skep's proxy. One image and one engine serve the whole file.
 *
 * Proves: a stdio server and an HTTP server in containers answer tool calls; the permission
 * profile's outbound allow list is enforced by the egress proxy (allowed host:port
 * reachable, another port refused, a direct connection impossible); a read-only mount
 * refuses writes; a killed container is restarted; the workload survives a `skep serve`
 * restart; orphaned containers are removed on start; delete removes container and network.
 */
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type Docker from 'dockerode';
import { type ApiContext, createContext } from '../../../src/control/app/index.js';
import type { SkepConfig } from '../../../src/config/index.js';
import { DockerRuntime } from '../../../src/dataplane/runtime/docker/docker-runtime.js';
import {
  instanceId,
  LABEL_INSTANCE,
  LABEL_MANAGED,
  LABEL_ROLE,
  LABEL_WORKLOAD,
} from '../../../src/dataplane/runtime/index.js';
import { tempHome } from '../../helpers/home.js';
import { requirePodman, startPodmanService, testImage } from '../../helpers/podman.js';
import { waitFor, waitForStatus } from '../../helpers/wait.js';
import { workloadEndpoint } from '../workloads/helpers.js';

async function callTool(url: string, name: string, args: Record<string, unknown>): Promise<string> {
  const client = new Client({ name: 'skep-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  try {
    const result = (await client.callTool({ name, arguments: args })) as {
      content: { type: string; text?: string }[];
    };
    return result.content.map((c) => c.text ?? '').join('');
  } finally {
    await client.close();
  }
}

function listen(server: Server, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, () => resolve((server.address() as { port: number }).port));
  });
}

async function labelled(docker: Docker, instance: string, workload: string) {
  const filters = {
    label: [`${LABEL_MANAGED}=true`, `${LABEL_INSTANCE}=${instance}`, `${LABEL_WORKLOAD}=${workload}`],
  };
  return {
    containers: await docker.listContainers({ all: true, filters }),
    networks: await docker.listNetworks({ filters }),
  };
}

test(
  'containers: stdio and HTTP servers, egress allow list, read-only mount, restart, serve restart, orphans, delete',
  {
    timeout: 600_000,
  },
  async (t) => {
    if (!requirePodman(t)) return;
    // node:test runs t.after hooks first-registered-first: this one must run before the temp
    // home and the engine go away, so it is registered before they are created.
    let ctx: ApiContext | undefined;
    // eslint-disable-next-line prefer-const -- assigned below; the clean-up hook above reads it first
    let runtime: DockerRuntime | undefined;
    t.after(async () => {
      if (ctx !== undefined) {
        const c = ctx;
        await c.workloads.settled();
        await Promise.all(c.workloads.rows.list().map((r) => c.workloads.deleteNow(r.name)));
        await c.close();
      }
      // Whatever a failed assertion left behind on the engine.
      for (const w of ['stdio-srv', 'http-srv', 'http-iso', 'ghost'])
        await runtime?.removeWorkload(w).catch(() => undefined);
    });
    const image = await testImage();
    const engine = await startPodmanService(t);
    const home = tempHome(t);
    const config: SkepConfig = {
      ...home.config,
      runtime: { type: 'docker', docker_host: engine.host, node_image: image, allow_privileged: false },
    };
    const instance = instanceId(config.paths.stateDir);
    runtime = new DockerRuntime({
      host: engine.host,
      instance,
      logMaxBytes: 1 << 20,
      logFiles: 1,
      allowPrivileged: false,
    });
    const docker = runtime.docker;

    // Servers on the host side of the engine's default network, where the egress proxy (and
    // only it) can reach them. Running one container first makes sure the bridge exists.
    const warm = await docker.createContainer({
      Image: image,
      Cmd: ['-e', '0'],
      HostConfig: { NetworkMode: 'bridge' },
    });
    await warm.start();
    await warm.wait();
    await warm.remove({ force: true });
    const bridge = (await docker.getNetwork('podman').inspect()) as {
      IPAM?: { Config?: { Gateway?: string }[] };
    };
    const gateway = bridge.IPAM?.Config?.[0]?.Gateway;
    assert.ok(gateway, 'the default network has a gateway address');
    const allowedServer = createServer((_req, res) => res.end('allowed-ok'));
    const deniedServer = createServer((_req, res) => res.end('denied-but-reached'));
    const allowedPort = await listen(allowedServer, gateway);
    const deniedPort = await listen(deniedServer, gateway);
    t.after(() => {
      allowedServer.close();
      deniedServer.close();
    });

    const readOnly = join(home.dir, 'ro');
    mkdirSync(readOnly);
    writeFileSync(join(readOnly, 'hello.txt'), 'hi');

    ctx = createContext(config, { env: home.env });
    let live: ApiContext = ctx;

    await live.workloads.create({
      name: 'stdio-srv',
      image,
      cmd_arguments: ['/app/stdio-server.cjs'],
      env_vars: { GREETING: 'from-env' },
      permission_profile: {
        network: { outbound: { allow_host: [gateway], allow_port: [allowedPort] } },
        read: [`${readOnly}:/data/ro`],
      },
    });
    await live.workloads.create({
      name: 'http-srv',
      image,
      transport: 'streamable-http',
      cmd_arguments: ['/app/http-server.cjs'],
    });
    await live.workloads.create({
      name: 'http-iso',
      image,
      transport: 'streamable-http',
      cmd_arguments: ['/app/http-server.cjs'],
      // Port-only: any host on that port, except the container host and the metadata service.
      permission_profile: { network: { outbound: { allow_port: [allowedPort] } } },
    });
    for (const name of ['stdio-srv', 'http-srv', 'http-iso'])
      await waitForStatus(live, name, 'running', 180_000);
    const url = (name: string) => workloadEndpoint(live, name);

    await t.test(
      'the MCP SDK client calls a tool of a stdio server in a container (env reaches it)',
      async () => {
        assert.equal(
          await callTool(url('stdio-srv'), 'echo', { message: 'hello' }),
          'echo: hello (from-env)',
        );
      },
    );

    await t.test(
      'the MCP SDK client calls a tool of an HTTP server in a container (published on loopback)',
      async () => {
        assert.equal(
          await callTool(url('http-srv'), 'echo', { message: 'over http' }),
          'echo: over http (no greeting)',
        );
        const [server] = (await labelled(docker, instance, 'http-srv')).containers;
        const ports = server?.Ports ?? [];
        assert.ok(
          ports.some((p) => p.IP === '127.0.0.1'),
          `published on 127.0.0.1 only: ${JSON.stringify(ports)}`,
        );
      },
    );

    await t.test(
      'PermissionProfile network.outbound: allowed host:port passes the egress proxy, others do not',
      async () => {
        const allowed = await callTool(url('stdio-srv'), 'fetch_via_proxy', {
          url: `http://${gateway}:${allowedPort}/`,
        });
        assert.equal(allowed, '200 allowed-ok');
        const denied = await callTool(url('stdio-srv'), 'fetch_via_proxy', {
          url: `http://${gateway}:${deniedPort}/`,
        });
        assert.match(denied, /^403 skep egress: .* is not allowed/);
        // No way around the proxy: the server's network is internal.
        const direct = await callTool(url('stdio-srv'), 'connect_direct', {
          host: gateway,
          port: deniedPort,
        });
        assert.match(direct, /^error /);
        const directAllowed = await callTool(url('stdio-srv'), 'connect_direct', {
          host: gateway,
          port: allowedPort,
        });
        assert.match(directAllowed, /^error /);
      },
    );

    await t.test(
      'an isolated HTTP server is reachable inbound through the egress container; a port-only list reaches neither the container host (its gateway, any spelling) nor metadata',
      async () => {
        assert.equal(await callTool(url('http-iso'), 'echo', { message: 'iso' }), 'echo: iso (no greeting)');
        const out = await callTool(url('http-iso'), 'fetch_via_proxy', {
          url: `http://${gateway}:${allowedPort}/`,
        });
        assert.match(out, /^403 skep egress: .* the container host's gateway address/);
        const mapped = `[::ffff:${gateway
          .split('.')
          .map((n) => Number(n).toString(16).padStart(2, '0'))
          .join('')
          .replace(/^(....)/, '$1:')}]`;
        const viaMapped = await callTool(url('http-iso'), 'fetch_via_proxy', {
          url: `http://${mapped}:${allowedPort}/`,
        });
        assert.match(viaMapped, /^403 skep egress: .* the container host's gateway address/);
        const metadata = await callTool(url('http-iso'), 'fetch_via_proxy', {
          url: `http://169.254.169.254:${allowedPort}/`,
        });
        assert.match(
          metadata,
          /^403 skep egress: .* a link-local address that the permission profile does not list/,
        );
        const { containers, networks } = await labelled(docker, instance, 'http-iso');
        assert.deepEqual(containers.map((c) => c.Labels[LABEL_ROLE]).sort(), ['egress', 'server']);
        assert.equal(networks.length, 1);
      },
    );

    await t.test('PermissionProfile read: a read-only bind refuses writes', async () => {
      assert.equal(
        await callTool(url('stdio-srv'), 'write_file', { path: '/data/ro/new.txt' }),
        'error EROFS',
      );
      assert.equal(await callTool(url('stdio-srv'), 'write_file', { path: '/tmp/scratch.txt' }), 'ok');
    });

    await t.test('a killed container is restarted by the runner', async () => {
      const before = (await labelled(docker, instance, 'stdio-srv')).containers.find(
        (c) => c.Labels[LABEL_ROLE] === 'server',
      );
      assert.ok(before);
      await docker.getContainer(before.Id).kill();
      const after = await waitFor(
        'a new server container',
        async () => {
          const found = (await labelled(docker, instance, 'stdio-srv')).containers.find(
            (c) => c.Labels[LABEL_ROLE] === 'server' && c.Id !== before.Id && c.State === 'running',
          );
          return found;
        },
        120_000,
      );
      assert.notEqual(after.Id, before.Id);
      await waitForStatus(live, 'stdio-srv', 'running', 120_000);
      const answer = await waitFor(
        'a tool call after the restart',
        async () => {
          try {
            return await callTool(url('stdio-srv'), 'echo', { message: 'again' });
          } catch {
            return undefined;
          }
        },
        60_000,
      );
      assert.equal(answer, 'echo: again (from-env)');
    });

    await t.test(
      'skep serve restart: workloads stay reachable; orphaned containers of this home are removed',
      async () => {
        const ghost = await docker.createContainer({
          Image: image,
          Cmd: ['-e', 'setTimeout(() => {}, 600000)'],
          Labels: {
            [LABEL_MANAGED]: 'true',
            [LABEL_INSTANCE]: instance,
            [LABEL_WORKLOAD]: 'ghost',
            [LABEL_ROLE]: 'server',
          },
        });
        await ghost.start();
        await live.close();
        live = ctx = createContext(config, { env: home.env, removeOrphanContainers: true });
        assert.equal(live.workloads.status('http-srv').status, 'running');
        assert.equal(
          await callTool(url('http-srv'), 'echo', { message: 'still here' }),
          'echo: still here (no greeting)',
        );
        await waitFor(
          'the orphan to be removed',
          async () =>
            (await labelled(docker, instance, 'ghost')).containers.length === 0 ? true : undefined,
          60_000,
        );
        const health = await live.runtimeHealth();
        assert.equal(health.runtime, 'docker');
        assert.equal(health.ok, true);
      },
    );

    await t.test('delete removes the containers and the network', async () => {
      for (const name of ['stdio-srv', 'http-iso']) {
        assert.ok((await labelled(docker, instance, name)).containers.length > 0);
        await live.workloads.deleteNow(name);
        const left = await labelled(docker, instance, name);
        assert.deepEqual(left.containers, [], `${name}: no containers left`);
        assert.deepEqual(left.networks, [], `${name}: no network left`);
      }
    });
  },
);
