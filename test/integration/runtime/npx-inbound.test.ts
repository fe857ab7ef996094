/**
 * The two container-runtime paths containers.test.ts does not cover, against real Podman
 * through the WorkloadManager and Skep's proxy (one engine and the shared test image):
 *
 * - `npx://` with `runtime.node_image` set: the runtime runs `npx -y <pkg> <args>` in the
 *   base image. The package is a local tarball packed into the image (npm runs offline
 *   there; the workload has no network at all), so nothing comes from a registry. The
 *   official MCP SDK client lists and calls its tools through Skep's proxy.
 * - `network.inbound.allow_host`: the published port of an HTTP server answers 403 to a
 *   request whose Host is not allowed, and passes an allowed Host and the loopback names
 *   (Skep's own proxy uses those).
 */
import assert from 'node:assert/strict';
import { request } from 'node:http';
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
import { NPX_FIXTURE_TARBALL, requirePodman, startPodmanService, testImage } from '../../helpers/podman.js';
import { waitForStatus } from '../../helpers/wait.js';
import { workloadEndpoint } from '../workloads/helpers.js';

type ToolResult = { content: { type: string; text?: string }[] };
const textOf = (result: unknown) => (result as ToolResult).content.map((c) => c.text ?? '').join('');

async function withClient<T>(url: string, fn: (client: Client) => Promise<T>): Promise<T> {
  const client = new Client({ name: 'skep-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  try {
    return await fn(client);
  } finally {
    await client.close();
  }
}

/** A raw MCP `initialize` POST with a chosen Host header (fetch would not let us set it). */
function initializeWithHost(port: number, host: string): Promise<{ status: number; body: string }> {
  const payload = JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
  });
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path: '/mcp',
        method: 'POST',
        agent: false,
        timeout: 30_000,
        headers: {
          host,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'content-length': Buffer.byteLength(payload),
        },
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => {
          body += d;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end(payload);
  });
}

async function serverContainer(docker: Docker, instance: string, workload: string) {
  const containers = await docker.listContainers({
    all: true,
    filters: {
      label: [`${LABEL_MANAGED}=true`, `${LABEL_INSTANCE}=${instance}`, `${LABEL_WORKLOAD}=${workload}`],
    },
  });
  const server = containers.find((c) => c.Labels[LABEL_ROLE] === 'server');
  assert.ok(server, `${workload} has a server container`);
  return docker.getContainer(server.Id).inspect();
}

test(
  'containers: npx:// in the node base image (offline, local tarball); inbound allow_host',
  { timeout: 600_000 },
  async (t) => {
    if (!requirePodman(t)) return;
    const workloads = ['npx-srv', 'inbound-srv'];
    // The clean-up hook is registered first so it runs while the home and the engine still
    // exist (see containers.test.ts); it reads these two, which are assigned further down.
    // eslint-disable-next-line prefer-const -- assigned below, read by the hook
    let ctx: ApiContext | undefined;
    // eslint-disable-next-line prefer-const -- assigned below, read by the hook
    let runtime: DockerRuntime | undefined;
    t.after(async () => {
      if (ctx !== undefined) {
        const c = ctx;
        await c.workloads.settled();
        await Promise.all(c.workloads.rows.list().map((r) => c.workloads.deleteNow(r.name)));
        await c.close();
      }
      for (const w of workloads) await runtime?.removeWorkload(w).catch(() => undefined);
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
    ctx = createContext(config, { env: home.env });
    const live = ctx;

    // `file:` makes npx install the tarball; a bare path would be run as a command.
    const npxImage = `npx://file:${NPX_FIXTURE_TARBALL}`;
    await live.workloads.create({
      name: 'npx-srv',
      image: npxImage,
      cmd_arguments: ['--mode', 'offline'],
      env_vars: { GREETING: 'from-npx-env' },
      // Built-in `none`: a stdio server with nothing allowed out gets no network at all.
      permission_profile: { name: 'none' },
    });
    await live.workloads.create({
      name: 'inbound-srv',
      image,
      transport: 'streamable-http',
      cmd_arguments: ['/app/http-server.cjs'],
      permission_profile: {
        network: { outbound: {}, inbound: { allow_host: ['mcp.example.test'] } },
      },
    });
    for (const name of workloads) await waitForStatus(live, name, 'running', 180_000);
    const proxyUrl = (name: string) => workloadEndpoint(live, name);

    await t.test(
      'npx:// runs `npx -y -- <pkg> <args>` in runtime.node_image, installed from a local tarball with no network',
      async () => {
        const info = await serverContainer(docker, instance, 'npx-srv');
        assert.equal(info.Config.Image, image, 'the configured node image');
        assert.deepEqual(info.Config.Entrypoint, ['npx']);
        assert.deepEqual(info.Config.Cmd, ['-y', '--', `file:${NPX_FIXTURE_TARBALL}`, '--mode', 'offline']);
        assert.equal(info.HostConfig.NetworkMode, 'none');
      },
    );

    await t.test(
      'the MCP SDK client lists and calls tools of the npx:// server through Skep’s proxy',
      async () => {
        await withClient(proxyUrl('npx-srv'), async (client) => {
          assert.equal(client.getServerVersion()?.name, 'skep-fixture-npx-server');
          const tools = (await client.listTools()).tools.map((tool) => tool.name).sort();
          assert.deepEqual(tools, [
            'connect_direct',
            'echo',
            'fetch_via_proxy',
            'package_info',
            'write_file',
          ]);
          assert.equal(
            textOf(await client.callTool({ name: 'echo', arguments: { message: 'hi' } })),
            'echo: hi (from-npx-env)',
          );
          const info = JSON.parse(textOf(await client.callTool({ name: 'package_info', arguments: {} }))) as {
            script: string;
            args: string[];
          };
          assert.deepEqual(info.args, ['--mode', 'offline'], 'server args reach the package bin');
          // npx installed the package into its cache and runs the bin from there.
          assert.match(info.script, /\/_npx\/[^/]+\/node_modules\/\.bin\/skep-fixture-npx-server$/);
        });
      },
    );

    await t.test(
      'network.inbound.allow_host: other Host headers are refused at the published port',
      async () => {
        const targetPort = live.workloads.rows.get('inbound-srv')?.config.target_port;
        assert.ok(targetPort !== undefined && targetPort > 0, 'the server has a published port');

        // The workload reports running once Skep's proxy has its upstream; give the published
        // port (egress forwarder → server) the same chance before judging it.
        const ready = Date.now() + 60_000;
        for (;;) {
          const probe = await initializeWithHost(targetPort, `localhost:${targetPort}`).catch(
            () => undefined,
          );
          if (probe?.status === 200 || Date.now() > ready) break;
          await new Promise((r) => setTimeout(r, 250));
        }
        const denied = await initializeWithHost(targetPort, 'evil.example.test');
        assert.equal(denied.status, 403, denied.body);
        assert.match(denied.body, /host not allowed/);
        const deniedWithPort = await initializeWithHost(targetPort, `evil.example.test:${targetPort}`);
        assert.equal(deniedWithPort.status, 403);

        for (const host of [
          `mcp.example.test:${targetPort}`,
          'MCP.example.test',
          `localhost:${targetPort}`,
        ]) {
          const passed = await initializeWithHost(targetPort, host);
          assert.equal(passed.status, 200, `${host}: ${passed.body}`);
          assert.match(passed.body, /"serverInfo":\{"name":"skep-fixture-http"/, host);
        }

        // Skep's proxy reaches the server with a loopback Host, so clients through it are served.
        await withClient(proxyUrl('inbound-srv'), async (client) => {
          assert.equal(
            textOf(await client.callTool({ name: 'echo', arguments: { message: 'inbound' } })),
            'echo: inbound (no greeting)',
          );
        });
      },
    );

    await t.test('delete leaves no containers or networks behind', async () => {
      for (const name of workloads) {
        await live.workloads.deleteNow(name);
        const filters = {
          label: [`${LABEL_MANAGED}=true`, `${LABEL_INSTANCE}=${instance}`, `${LABEL_WORKLOAD}=${name}`],
        };
        assert.deepEqual(await docker.listContainers({ all: true, filters }), [], `${name}: containers`);
        assert.deepEqual(await docker.listNetworks({ filters }), [], `${name}: networks`);
      }
    });
  },
);
