/**
 * The rendered manifests run: `renderResources` turns an MCPServer (a stdio echo
 * server in a locally built image), an MCPRemoteProxy (in front of a streamable-HTTP MCP
 * server on this machine's loopback that demands an API key), and a VirtualMCPServer over
 * their MCPGroup plus an MCPServerEntry for the same remote server (reached directly by the
 * vMCP pod with the key from the entry's MCPExternalAuthConfig) into Deployments, ConfigMaps
 * and Services; the Deployments run under `podman kube play` with the Skep image built from
 * the repository's Containerfile, and the official MCP SDK client calls tools through the Skep
 * runner inside each pod.
 *
 * No Kubernetes API server can run here; Podman plays the rendered objects. What the test
 * changes on the way, and why (nothing else is touched):
 *  - `hostNetwork: true` on each pod template, so the pod reaches the loopback MCP server and
 *    the test reaches the pod's proxy port; with it the run configuration's `host` is
 *    rewritten from 0.0.0.0 to 127.0.0.1 (tests bind loopback only).
 *  - Podman 4.3.1 cannot resolve `secretKeyRef` from a Secret (containers/podman#17071; a
 *    stored Secret in YAML, JSON or base64 is refused as "not valid JSON"), so each
 *    `valueFrom.secretKeyRef` env var is given the Secret's value inline, in the Deployment
 *    only — never in the ConfigMap, which the test checks holds no secret value.
 *  - Podman 4.3 refuses container ports on the host network, so `ports` are dropped and the
 *    probes' named port is replaced by its number.
 *  - Podman 4.3 removes an init container while it still runs, so the test runs it (same
 *    image, same command) with `podman run` into a named volume that replaces its emptyDir.
 *  - The ConfigMap is passed with `--configmap` (Podman 4.3 reads ConfigMaps that way).
 *  - No cluster DNS: the vMCP run configuration's backend URLs (`mcp-<n>-proxy.<ns>.svc...`)
 *    are rewritten to the pods' loopback ports, and its port 4483 to a free one.
 * The image is built once per run (its layers are reused); pods, secrets and the image are
 * removed at the end.
 *
 * The stdio MCPServer without `command` names an image (the test image with the stdio server as
 * its entrypoint) pushed to a local OCI registry (Debian's docker-registry over plain HTTP, so
 * `kube play --tls-verify=false`); the render reads its entrypoint there and pins the pod to it.
 *
 * The HTTP MCPServer with `mcpPort` and `proxyPort` both 8080 runs in a pod network of its own
 * instead (the clash it tests is inside the pod): only its sidecar's port `http` is published,
 * on a free loopback port of the host (the Service's role), and its probes' named port is
 * replaced by its number.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { stringify } from 'yaml';
import { type K8sObject, renderResources } from '../../../src/control/operator/render.js';
import { startKeyedMcpServer } from '../../helpers/keyed-mcp.js';
import { freePort } from '../../helpers/net.js';
import { requirePodman, testImage } from '../../helpers/podman.js';
import { requireService } from '../../helpers/services.js';
import { hasRegistry, startRegistry } from '../skills/fixtures.js';
import { waitFor } from '../../helpers/wait.js';

const API_KEY = 'k8s-test-key-7f3a9c';
const GREETING = 'hello from a Secret';
const RUN = `k${process.pid}`;

function podman(args: string[], input?: string): string {
  const r = spawnSync('podman', args, { encoding: 'utf8', input, timeout: 300_000 });
  if (r.status !== 0) throw new Error(`podman ${args.join(' ')} failed: ${r.stderr}`);
  return r.stdout;
}

/** Builds the Skep image from the repository's Containerfile on the locally imported Node base. */
function buildSkepImage(base: string, dir: string): string {
  const context = join(dir, 'context');
  execFileSync(process.execPath, ['scripts/image-context.mjs', context], {
    stdio: 'ignore',
    timeout: 300_000,
  });
  const tag = `localhost/skep-runner-test:${createHash('sha256').update(RUN).digest('hex').slice(0, 8)}`;
  podman(['build', '-q', '-f', 'Containerfile', '--build-arg', `NODE_IMAGE=${base}`, '-t', tag, context]);
  return tag;
}

async function callTool(url: string, tool: string, args: Record<string, unknown>): Promise<string> {
  const client = new Client({ name: 'k8s-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  try {
    const result = (await client.callTool({ name: tool, arguments: args })) as {
      content: Array<{ type: string; text?: string }>;
    };
    return result.content.map((c) => c.text ?? '').join('');
  } finally {
    await client.close();
  }
}

async function healthy(url: string): Promise<true | undefined> {
  try {
    const res = await fetch(url);
    return res.ok ? true : undefined;
  } catch {
    return undefined;
  }
}

/** The test's translation of a rendered Deployment for Podman (see the header). */
function forPodman(
  deployment: K8sObject,
  docs: Array<{ kind: string; metadata: { name: string } }>,
  volumes: string[],
): K8sObject {
  const copy = structuredClone(deployment);
  const secretValue = (name: string, key: string): string => {
    const s = docs.find((d) => d.kind === 'Secret' && d.metadata.name === name) as
      { stringData: Record<string, string> } | undefined;
    const v = s?.stringData[key];
    if (v === undefined) throw new Error(`rendered Deployment references missing Secret ${name}/${key}`);
    return v;
  };
  const template = (
    copy['spec'] as {
      template: { metadata: { annotations?: Record<string, string> }; spec: Record<string, unknown> };
    }
  ).template;
  template.spec['hostNetwork'] = true;
  // Podman 4.3 removes an init container while it still runs ("failed to remove once init
  // container ... as it is running"): the test runs each init container's exact image and
  // command itself, with `podman run` into a named volume, and the pod mounts that volume in
  // place of the emptyDir the init container writes to.
  const inits = (template.spec['initContainers'] ?? []) as Array<Record<string, unknown>>;
  delete template.spec['initContainers'];
  for (const init of inits) {
    for (const m of (init['volumeMounts'] ?? []) as Array<{ name: string; mountPath: string }>) {
      const volume = `${deployment.metadata.name}-${m.name}`;
      volumes.push(volume);
      podman(['volume', 'create', volume]);
      podman([
        'run',
        '--rm',
        '-v',
        `${volume}:${m.mountPath}`,
        '--entrypoint',
        (init['command'] as string[])[0]!,
        String(init['image']),
        ...(init['command'] as string[]).slice(1),
      ]);
      const specVolumes = template.spec['volumes'] as Array<Record<string, unknown>>;
      const i = specVolumes.findIndex((v) => v['name'] === m.name);
      specVolumes[i] = { name: m.name, persistentVolumeClaim: { claimName: volume } };
    }
  }
  // Podman 4.3 refuses container ports on the host network ("PortMappings can only be used
  // with Bridge or slirp4netns networking"): drop them, and name probe ports by number.
  for (const c of template.spec['containers'] as Array<Record<string, unknown>>) {
    for (const e of (c['env'] ?? []) as Array<Record<string, unknown>>) {
      const ref = (e['valueFrom'] as { secretKeyRef?: { name: string; key: string } } | undefined)
        ?.secretKeyRef;
      if (ref === undefined) continue;
      delete e['valueFrom'];
      e['value'] = secretValue(ref.name, ref.key);
    }
    const ports = (c['ports'] ?? []) as Array<{ name: string; containerPort: number }>;
    delete c['ports'];
    for (const probe of ['startupProbe', 'readinessProbe', 'livenessProbe']) {
      const get = (c[probe] as { httpGet?: { port: unknown } } | undefined)?.httpGet;
      const named = ports.find((p) => p.name === get?.port);
      if (get !== undefined && named !== undefined) get.port = named.containerPort;
    }
  }
  return copy;
}

/** Host → loopback; for the vMCP: its port and its backends' Service URLs (see the header). */
function forPodmanConfigMap(cm: K8sObject, vmcp?: { port: number; urls: Record<string, string> }): K8sObject {
  const copy = structuredClone(cm);
  const data = copy['data'] as Record<string, string>;
  const rc = JSON.parse(data['runconfig.json'] ?? '{}') as Record<string, unknown>;
  rc['host'] = '127.0.0.1';
  if (vmcp !== undefined) {
    rc['port'] = vmcp.port;
    const backends = (rc['vmcp'] as { backends: Array<{ name: string; url: string }> }).backends;
    for (const b of backends) b.url = vmcp.urls[b.name] ?? b.url;
  }
  data['runconfig.json'] = JSON.stringify(rc);
  return copy;
}

describe('rendered manifests run under podman kube play', { timeout: 900_000 }, () => {
  it('a stdio MCPServer and an MCPRemoteProxy with header injection answer tools through the runner in their pods', async (t) => {
    if (!requirePodman(t)) return;
    const dir = mkdtempSync(join(tmpdir(), 'skep-k8s-'));
    const pods: string[] = [];
    const volumes: string[] = [];
    const held: { image?: string; remote?: Server } = {};
    t.after(() => {
      for (const pod of pods) spawnSync('podman', ['pod', 'rm', '-f', '-t', '0', pod], { stdio: 'ignore' });
      for (const v of volumes) spawnSync('podman', ['volume', 'rm', '-f', v], { stdio: 'ignore' });
      // kube play also creates a volume per ConfigMap mount (`<pod>-<volume>`).
      const left = spawnSync('podman', ['volume', 'ls', '-q'], { encoding: 'utf8' }).stdout.split('\n');
      for (const v of left.filter((n) => n.startsWith(`${RUN}-`)))
        spawnSync('podman', ['volume', 'rm', '-f', v], { stdio: 'ignore' });
      if (held.image !== undefined) spawnSync('podman', ['rmi', '-f', held.image], { stdio: 'ignore' });
      held.remote?.close();
      rmSync(dir, { recursive: true, force: true });
    });

    const base = await testImage(); // node + the fixture servers (/app/stdio-server.cjs)
    const image = buildSkepImage(base, dir);
    held.image = image;

    const [remotePort, echoPort, proxyPort, vmcpPort] = [
      await freePort(),
      await freePort(),
      await freePort(),
      await freePort(),
    ];
    const started = await startKeyedMcpServer(API_KEY, remotePort);
    held.remote = started.server;

    const names = { key: `${RUN}-api-key`, greeting: `${RUN}-greeting` };
    const resources = [
      {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: names.key },
        type: 'Opaque',
        stringData: { key: API_KEY },
      },
      {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: names.greeting },
        type: 'Opaque',
        stringData: { text: GREETING },
      },
      {
        apiVersion: 'skep.dev/v1beta1',
        kind: 'MCPExternalAuthConfig',
        metadata: { name: 'remote-key' },
        spec: {
          type: 'headerInjection',
          headerInjection: { headerName: 'X-Api-Key', valueSecretRef: { name: names.key, key: 'key' } },
        },
      },
      {
        apiVersion: 'skep.dev/v1beta1',
        kind: 'MCPServer',
        metadata: { name: `${RUN}-echo` },
        spec: {
          image: base,
          transport: 'stdio',
          command: ['/usr/bin/node', '/app/stdio-server.cjs'],
          proxyPort: echoPort,
          secrets: [{ name: names.greeting, key: 'text', targetEnvName: 'GREETING' }],
          groupRef: { name: 'team' },
        },
      },
      {
        apiVersion: 'skep.dev/v1beta1',
        kind: 'MCPRemoteProxy',
        metadata: { name: `${RUN}-remote` },
        spec: {
          remoteUrl: `http://127.0.0.1:${remotePort}/mcp`,
          allowPrivateEndpoint: true,
          proxyPort,
          externalAuthConfigRef: { name: 'remote-key' },
          groupRef: { name: 'team' },
        },
      },
      { apiVersion: 'skep.dev/v1beta1', kind: 'MCPGroup', metadata: { name: 'team' }, spec: {} },
      {
        apiVersion: 'skep.dev/v1beta1',
        kind: 'MCPServerEntry',
        metadata: { name: `${RUN}-direct` },
        spec: {
          remoteUrl: `http://127.0.0.1:${remotePort}/mcp`,
          allowPrivateEndpoint: true,
          transport: 'streamable-http',
          externalAuthConfigRef: { name: 'remote-key' },
          groupRef: { name: 'team' },
        },
      },
      {
        apiVersion: 'skep.dev/v1beta1',
        kind: 'VirtualMCPServer',
        metadata: { name: `${RUN}-hub` },
        spec: { groupRef: { name: 'team' }, incomingAuth: { type: 'anonymous' } },
      },
    ];
    const rendered = await renderResources(resources, { runnerImage: image });
    assert.deepEqual(rendered.problems, []);
    assert.deepEqual(rendered.warnings, []);

    // Nothing secret is in a ConfigMap.
    const configMaps = rendered.objects.filter((o) => o.kind === 'ConfigMap');
    assert.equal(configMaps.length, 3);
    for (const cm of configMaps) {
      const text = JSON.stringify(cm);
      assert.ok(
        !text.includes(API_KEY) && !text.includes(GREETING),
        `${cm.metadata.name} holds a secret value`,
      );
    }

    const hub = `${RUN}-hub`;
    for (const deployment of rendered.objects.filter((o) => o.kind === 'Deployment')) {
      const name = deployment.metadata.name;
      const isHub = name === hub;
      const cm = configMaps.find(
        (c) => c.metadata.name === `${name}${isHub ? '-vmcp-config' : '-runconfig'}`,
      )!;
      const cmFile = join(dir, `${name}-cm.yaml`);
      const vmcp = isHub
        ? {
            port: vmcpPort,
            urls: {
              [`${RUN}-echo`]: `http://127.0.0.1:${echoPort}/mcp`,
              [`${RUN}-remote`]: `http://127.0.0.1:${proxyPort}/mcp`,
            },
          }
        : undefined;
      writeFileSync(cmFile, stringify(forPodmanConfigMap(cm, vmcp)));
      if (isHub) {
        const pod = (
          deployment['spec'] as { template: { spec: { containers: Array<Record<string, unknown>> } } }
        ).template.spec;
        (pod.containers[0]!['ports'] as Array<{ containerPort: number }>)[0]!.containerPort = vmcpPort;
      }
      const kubeFile = join(dir, `${name}.yaml`);
      writeFileSync(kubeFile, stringify(forPodman(deployment, resources, volumes)));
      pods.push(`${name}-pod-0`);
      podman(['kube', 'play', '--configmap', cmFile, kubeFile]);
    }

    await waitFor('the echo pod proxy', () => healthy(`http://127.0.0.1:${echoPort}/health`), 180_000);
    const echoed = await callTool(`http://127.0.0.1:${echoPort}/mcp`, 'echo', {
      message: 'through the pod',
    });
    assert.equal(echoed, `echo: through the pod (${GREETING})`);

    await waitFor(
      'the remote proxy pod',
      () => healthy(`http://127.0.0.1:${proxyPort}/health`),
      180_000,
    ).catch((err: unknown) => {
      const logs = spawnSync('podman', ['logs', `${RUN}-remote-pod-0-skep-runner`], { encoding: 'utf8' });
      throw new Error(`${(err as Error).message}; runner log: ${logs.stdout}${logs.stderr}`);
    });
    const answer = await callTool(`http://127.0.0.1:${proxyPort}/mcp`, 'whoami', { who: 'skep' });
    assert.equal(answer, 'remote says hi to skep');
    // The tool call could only succeed with the key (the remote answers 401 without it), and the
    // requests carrying it came from the runners: the test client never sends it. Every POST
    // carries it (the runner's start-up probe too); only the vMCP's reachability probe of the
    // entry (a GET: any HTTP answer counts) goes without.
    const posts = started.seen.filter((s) => s.startsWith('POST '));
    assert.ok(posts.length >= 2, `requests seen: ${JSON.stringify(started.seen)}`);
    assert.deepEqual(
      posts.filter((s) => s !== `POST ${API_KEY}`),
      [],
      `requests seen: ${JSON.stringify(started.seen)}`,
    );

    // The VirtualMCPServer pod: one endpoint over the group — the echo server's pod, the remote
    // proxy's pod, and the entry reached directly with the key from its Secret.
    await waitFor('the vMCP pod', () => healthy(`http://127.0.0.1:${vmcpPort}/health`), 180_000).catch(
      (err: unknown) => {
        const logs = spawnSync('podman', ['logs', `${hub}-pod-0-vmcp`], { encoding: 'utf8' });
        throw new Error(`${(err as Error).message}; vmcp log: ${logs.stdout}${logs.stderr}`);
      },
    );
    const hubUrl = `http://127.0.0.1:${vmcpPort}/mcp`;
    const postsBefore = started.seen.filter((s) => s.startsWith('POST ')).length;
    assert.equal(
      await callTool(hubUrl, `${RUN}-echo_echo`, { message: 'through the hub' }),
      `echo: through the hub (${GREETING})`,
    );
    assert.equal(await callTool(hubUrl, `${RUN}-remote_whoami`, { who: 'hub' }), 'remote says hi to hub');
    assert.equal(await callTool(hubUrl, `${RUN}-direct_whoami`, { who: 'entry' }), 'remote says hi to entry');
    const hubPosts = started.seen.filter((s) => s.startsWith('POST ')).slice(postsBefore);
    assert.ok(hubPosts.length >= 2, `requests seen: ${JSON.stringify(started.seen)}`);
    assert.deepEqual(
      hubPosts.filter((s) => s !== `POST ${API_KEY}`),
      [],
      `requests seen: ${JSON.stringify(started.seen)}`,
    );
    // The test client itself never sent the key: calling the remote server directly fails.
    const direct = await fetch(`http://127.0.0.1:${remotePort}/mcp`, { method: 'POST', body: '{}' });
    assert.equal(direct.status, 401);
  });

  it('an HTTP MCPServer with mcpPort and proxyPort both 8080 answers through its runner sidecar, its MCPToolConfig filter applied', async (t) => {
    if (!requirePodman(t)) return;
    const dir = mkdtempSync(join(tmpdir(), 'skep-k8s-'));
    const name = `${RUN}-web`;
    const held: { image?: string; played?: boolean } = {};
    t.after(() => {
      if (held.played === true)
        spawnSync('podman', ['pod', 'rm', '-f', '-t', '0', `${name}-pod-0`], { stdio: 'ignore' });
      const left = spawnSync('podman', ['volume', 'ls', '-q'], { encoding: 'utf8' }).stdout.split('\n');
      for (const v of left.filter((n) => n.startsWith(`${name}-`)))
        spawnSync('podman', ['volume', 'rm', '-f', v], { stdio: 'ignore' });
      if (held.image !== undefined) spawnSync('podman', ['rmi', '-f', held.image], { stdio: 'ignore' });
      rmSync(dir, { recursive: true, force: true });
    });
    const base = await testImage(); // ENTRYPOINT node; /app/http-server.cjs serves /mcp on $PORT
    const image = buildSkepImage(base, dir);
    held.image = image;
    const rendered = await renderResources(
      [
        {
          apiVersion: 'skep.dev/v1beta1',
          kind: 'MCPToolConfig',
          metadata: { name: 'only-echo' },
          spec: { toolsFilter: ['echo'] },
        },
        {
          apiVersion: 'skep.dev/v1beta1',
          kind: 'MCPServer',
          metadata: { name },
          spec: {
            image: base,
            transport: 'streamable-http',
            args: ['/app/http-server.cjs'],
            mcpPort: 8080,
            proxyPort: 8080,
            toolConfigRef: { name: 'only-echo' },
          },
        },
      ],
      { runnerImage: image },
    );
    assert.deepEqual(rendered.problems, []);
    const service = rendered.objects.find((o) => o.kind === 'Service')!;
    assert.deepEqual((service['spec'] as { ports: unknown[] }).ports, [
      { name: 'http', port: 8080, targetPort: 'http', protocol: 'TCP' },
    ]);
    const deployment = structuredClone(rendered.objects.find((o) => o.kind === 'Deployment')!);
    const containers = (
      deployment['spec'] as { template: { spec: { containers: Array<Record<string, unknown>> } } }
    ).template.spec.containers;
    type Port = { name: string; containerPort: number; hostPort?: number; hostIP?: string };
    const hostPort = await freePort();
    for (const c of containers) {
      const ports = c['ports'] as Port[];
      for (const probe of ['startupProbe', 'readinessProbe', 'livenessProbe']) {
        const get = (c[probe] as { httpGet?: { port: unknown } } | undefined)?.httpGet;
        const named = ports.find((p) => p.name === get?.port);
        if (get !== undefined && named !== undefined) get.port = named.containerPort;
      }
      if (c['name'] === 'skep-runner') Object.assign(ports[0]!, { hostPort, hostIP: '127.0.0.1' });
    }
    assert.deepEqual(
      containers.map(
        (c) => `${String(c['name'])}:${(c['ports'] as Port[]).map((p) => p.containerPort).join()}`,
      ),
      ['mcp:8080', 'skep-runner:8081'],
    );
    const cmFile = join(dir, 'cm.yaml');
    writeFileSync(cmFile, stringify(rendered.objects.find((o) => o.kind === 'ConfigMap')!));
    const kubeFile = join(dir, 'web.yaml');
    writeFileSync(kubeFile, stringify(deployment));
    held.played = true;
    podman(['kube', 'play', '--configmap', cmFile, kubeFile]);
    await waitFor('the web pod sidecar', () => healthy(`http://127.0.0.1:${hostPort}/health`), 180_000).catch(
      (err: unknown) => {
        const logs = spawnSync('podman', ['logs', `${name}-pod-0-skep-runner`], { encoding: 'utf8' });
        throw new Error(`${(err as Error).message}; runner log: ${logs.stdout}${logs.stderr}`);
      },
    );
    const echoed = await callTool(`http://127.0.0.1:${hostPort}/mcp`, 'echo', { message: 'same port' });
    assert.equal(echoed, 'echo: same port (no greeting)');
    // The MCPToolConfig's filter, folded into the run configuration: the server's other tools
    // (fetch_via_proxy, …) are absent from tools/list through the runner.
    const client = new Client({ name: 'k8s-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${hostPort}/mcp`)));
    try {
      const { tools } = await client.listTools();
      assert.deepEqual(
        tools.map((x) => x.name),
        ['echo'],
      );
    } finally {
      await client.close();
    }
  });

  it("a stdio MCPServer without command runs its image's entrypoint, pulled from an OCI registry", async (t) => {
    if (!requirePodman(t)) return;
    if (!requireService(t, 'docker-registry', hasRegistry(), 'apt-get install docker-registry')) return;
    const dir = mkdtempSync(join(tmpdir(), 'skep-k8s-'));
    const name = `${RUN}-entry`;
    const volumes: string[] = [];
    const images: string[] = [];
    let played = false;
    t.after(() => {
      if (played) spawnSync('podman', ['pod', 'rm', '-f', '-t', '0', `${name}-pod-0`], { stdio: 'ignore' });
      for (const v of volumes) spawnSync('podman', ['volume', 'rm', '-f', v], { stdio: 'ignore' });
      const left = spawnSync('podman', ['volume', 'ls', '-q'], { encoding: 'utf8' }).stdout.split('\n');
      for (const v of left.filter((n) => n.startsWith(`${name}-`)))
        spawnSync('podman', ['volume', 'rm', '-f', v], { stdio: 'ignore' });
      for (const image of images) spawnSync('podman', ['rmi', '-f', image], { stdio: 'ignore' });
      rmSync(dir, { recursive: true, force: true });
    });
    const host = await startRegistry(t);
    const base = await testImage();
    const runner = buildSkepImage(base, dir);
    images.push(runner);
    // The server's image: its entrypoint is the stdio server; no command is named anywhere else.
    const local = `localhost/skep-entry-test:${RUN}`;
    writeFileSync(
      join(dir, 'Entry.Containerfile'),
      `FROM ${base}\nENTRYPOINT ["/usr/bin/node", "/app/stdio-server.cjs"]\n`,
    );
    podman(['build', '-q', '-f', join(dir, 'Entry.Containerfile'), '-t', local, dir]);
    images.push(podman(['image', 'inspect', '--format', '{{.Id}}', local]).trim());
    const pushed = `${host}/mcp/echo:1`;
    podman(['push', '-q', '--tls-verify=false', local, pushed]);

    const proxyPort = await freePort();
    const resources = [
      {
        apiVersion: 'skep.dev/v1beta1',
        kind: 'MCPServer',
        metadata: { name },
        spec: { image: pushed, transport: 'stdio', proxyPort },
      },
    ];
    const rendered = await renderResources(resources, { runnerImage: runner });
    assert.deepEqual(rendered.problems, []);
    const deployment = rendered.objects.find((o) => o.kind === 'Deployment')!;
    const pod = (deployment['spec'] as { template: { spec: { containers: Array<{ image: string }> } } })
      .template.spec;
    assert.match(pod.containers[0]!.image, new RegExp(`^${host}/mcp/echo@sha256:[0-9a-f]{64}$`));
    const cm = rendered.objects.find((o) => o.kind === 'ConfigMap')!;
    const rc = JSON.parse((cm['data'] as Record<string, string>)['runconfig.json']!) as {
      image: string;
      cmd_args: string[];
    };
    assert.deepEqual([rc.image, ...rc.cmd_args], ['cmd:///usr/bin/node', '/app/stdio-server.cjs']);

    const cmFile = join(dir, 'cm.yaml');
    writeFileSync(cmFile, stringify(forPodmanConfigMap(cm)));
    const kubeFile = join(dir, 'entry.yaml');
    writeFileSync(kubeFile, stringify(forPodman(deployment, [], volumes)));
    played = true;
    podman(['kube', 'play', '--tls-verify=false', '--configmap', cmFile, kubeFile]);
    await waitFor('the entry pod', () => healthy(`http://127.0.0.1:${proxyPort}/health`), 180_000).catch(
      (err: unknown) => {
        const logs = spawnSync('podman', ['logs', `${name}-pod-0-mcp`], { encoding: 'utf8' });
        throw new Error(`${(err as Error).message}; pod log: ${logs.stdout}${logs.stderr}`);
      },
    );
    const echoed = await callTool(`http://127.0.0.1:${proxyPort}/mcp`, 'echo', {
      message: 'from the entrypoint',
    });
    assert.match(echoed, /^echo: from the entrypoint/);
  });

  it('an MCPRegistry serves its ConfigMap source: the v0.1 list answers through the rendered Deployment', async (t) => {
    if (!requirePodman(t)) return;
    const dir = mkdtempSync(join(tmpdir(), 'skep-k8s-'));
    const name = `${RUN}-reg`;
    const held: { image?: string; played?: boolean } = {};
    t.after(() => {
      if (held.played === true)
        spawnSync('podman', ['pod', 'rm', '-f', '-t', '0', `${name}-api-pod-0`], { stdio: 'ignore' });
      if (held.image !== undefined) spawnSync('podman', ['rmi', '-f', held.image], { stdio: 'ignore' });
      rmSync(dir, { recursive: true, force: true });
    });
    const image = buildSkepImage(await testImage(), dir);
    held.image = image;
    const registry = {
      version: '1.0.0',
      meta: { last_updated: '2025-09-08T12:00:00Z' },
      data: {
        servers: [
          {
            name: 'io.github.example/filesystem',
            description: 'Allows you to do filesystem operations',
            version: '1.0.0',
            packages: [
              {
                registryType: 'oci',
                identifier: 'docker.io/mcp/filesystem:latest',
                transport: { type: 'stdio' },
              },
            ],
          },
        ],
      },
    };
    // As the reference's example: the ConfigMap is a volume, configYAML names the file in it.
    const rendered = await renderResources(
      [
        {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: `${name}-data` },
          data: { 'registry.json': JSON.stringify(registry) },
        },
        {
          apiVersion: 'skep.dev/v1beta1',
          kind: 'MCPRegistry',
          metadata: { name },
          spec: {
            configYAML:
              'sources:\n  - name: production\n    file:\n      path: /config/registry/production/registry.json\nregistries:\n  - name: default\n    sources: [production]\n',
            volumes: [{ name: 'registry-data', configMap: { name: `${name}-data` } }],
            volumeMounts: [
              { name: 'registry-data', mountPath: '/config/registry/production', readOnly: true },
            ],
          },
        },
      ],
      { runnerImage: image },
    );
    assert.deepEqual(rendered.problems, []);
    const deployment = structuredClone(rendered.objects.find((o) => o.kind === 'Deployment')!);
    const container = (
      deployment['spec'] as { template: { spec: { containers: Array<Record<string, unknown>> } } }
    ).template.spec.containers[0]!;
    // Podman 4.3 translations, as above: probe ports by number, the port published on loopback.
    for (const probe of ['readinessProbe', 'livenessProbe'])
      (container[probe] as { httpGet: { port: unknown } }).httpGet.port = 8080;
    // Podman 4.3 mounts a configMap volume whole where a mount names a subPath: the
    // configuration file is mounted as a directory of its own and named by its path there.
    const mounts = container['volumeMounts'] as Array<Record<string, unknown>>;
    const configMount = mounts.find((m) => m['name'] === 'config')!;
    assert.equal(configMount['mountPath'], '/config/config.yaml');
    Object.assign(configMount, { mountPath: '/etc/registry-config' });
    delete configMount['subPath'];
    container['args'] = (container['args'] as string[]).map((a) =>
      a === '/config/config.yaml' ? '/etc/registry-config/config.yaml' : a,
    );
    const hostPort = await freePort();
    Object.assign((container['ports'] as Array<Record<string, unknown>>)[0]!, {
      hostPort,
      hostIP: '127.0.0.1',
    });
    const configFile = join(dir, 'config-cm.yaml');
    writeFileSync(configFile, stringify(rendered.objects.find((o) => o.kind === 'ConfigMap')!));
    const dataFile = join(dir, 'data-cm.yaml');
    writeFileSync(
      dataFile,
      stringify({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: `${name}-data` },
        data: { 'registry.json': JSON.stringify(registry) },
      }),
    );
    const kubeFile = join(dir, 'registry.yaml');
    writeFileSync(kubeFile, stringify(deployment));
    held.played = true;
    podman(['kube', 'play', '--configmap', configFile, '--configmap', dataFile, kubeFile]);
    await waitFor('the registry pod', () => healthy(`http://127.0.0.1:${hostPort}/health`), 180_000).catch(
      (err: unknown) => {
        const logs = spawnSync('podman', ['logs', `${name}-api-pod-0-registry-api`], { encoding: 'utf8' });
        throw new Error(`${(err as Error).message}; log: ${logs.stdout}${logs.stderr}`);
      },
    );
    const list = await fetch(`http://127.0.0.1:${hostPort}/registry/default/v0.1/servers`);
    assert.equal(list.status, 200);
    const body = (await list.json()) as { servers: Array<{ name: string }> };
    assert.deepEqual(
      body.servers.map((x) => x.name),
      ['io.github.example/filesystem'],
    );
    const write = await fetch(`http://127.0.0.1:${hostPort}/api/v1beta/registry/default`, {
      method: 'PUT',
      body: '{}',
    });
    assert.equal(write.status, 405);
  });
});
