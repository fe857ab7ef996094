// The MCPServer fields added for parity with the reference, rendered (`skep operator render`):
// hostPath `volumes` in the server's container, `resourceOverrides` (labels, annotations, runner
// env, pull secrets on the pod and its ServiceAccount), the strategic merge of `podTemplateSpec`
// (lists by their merge key), `rateLimiting` and `endpointPrefix` into the run configuration
// (`endpointPrefix` validated with the runner's rules: a URL path, on a workload served over SSE).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type K8sObject, renderResources } from '../../../src/control/operator/render.js';
import { pullSecretCredentials } from '../../../src/control/operator/image-command.js';
import { validateResource } from '../../../src/control/operator/resource-validate.js';
import { parseRunConfig } from '../../../src/workloads/index.js';

type Obj = Record<string, unknown>;
const server = (spec: Obj) => ({
  apiVersion: 'skep.dev/v1beta1',
  kind: 'MCPServer',
  metadata: { name: 'srv', namespace: 'ns' },
  spec: {
    image: 'ghcr.io/example/srv:1',
    transport: 'streamable-http',
    proxyPort: 8080,
    mcpPort: 8080,
    ...spec,
  },
});
const remoteProxy = (spec: Obj) => ({
  apiVersion: 'skep.dev/v1beta1',
  kind: 'MCPRemoteProxy',
  metadata: { name: 'rp', namespace: 'ns' },
  spec: { remoteUrl: 'https://mcp.example.com/mcp', proxyPort: 8080, ...spec },
});
const find = (objects: K8sObject[], kind: string) => objects.find((o) => o.kind === kind)!;
const podOf = (objects: K8sObject[]) =>
  (find(objects, 'Deployment')['spec'] as { template: { metadata: Obj; spec: Obj } }).template;
const container = (objects: K8sObject[], name: string) =>
  (podOf(objects).spec['containers'] as Obj[]).find((c) => c['name'] === name)!;
const runConfig = (objects: K8sObject[]) =>
  JSON.parse(String((find(objects, 'ConfigMap')['data'] as Obj)['runconfig.json'])) as Obj;

describe('MCPServer fields of the reference', () => {
  it('volumes: hostPath volumes mounted in the server container; a reserved name is refused', async () => {
    const { objects, problems } = await renderResources([
      server({ volumes: [{ name: 'data', hostPath: '/srv/data', mountPath: '/data', readOnly: true }] }),
    ]);
    assert.deepEqual(problems, []);
    assert.ok(
      (podOf(objects).spec['volumes'] as Obj[]).some(
        (v) => JSON.stringify(v) === '{"name":"data","hostPath":{"path":"/srv/data"}}',
      ),
    );
    assert.deepEqual((container(objects, 'mcp')['volumeMounts'] as Obj[]).at(-1), {
      name: 'data',
      mountPath: '/data',
      readOnly: true,
    });
    const bad = await renderResources([
      server({ volumes: [{ name: 'tmp', hostPath: '/x', mountPath: '/x' }] }),
    ]);
    assert.deepEqual(
      bad.problems.map((p) => p.problem),
      ['spec.volumes[0].name: "tmp" is a volume Skep\'s pod uses itself; rename it'],
    );
  });

  it('resourceOverrides: labels and annotations, runner env, pull secrets on the pod and its ServiceAccount', async () => {
    const { objects, problems } = await renderResources([
      server({
        resourceOverrides: {
          proxyDeployment: {
            labels: { team: 'a', 'app.kubernetes.io/instance': 'hijack' },
            annotations: { note: 'x' },
            podTemplateMetadataOverrides: { labels: { pod: 'y' }, annotations: { scrape: 'true' } },
            env: [{ name: 'SKEP_RUNNER_LOG_LEVEL', value: 'debug' }],
            imagePullSecrets: [{ name: 'regcred' }],
          },
          proxyService: { annotations: { lb: 'internal' }, labels: { exposed: 'no' } },
        },
      }),
    ]);
    assert.deepEqual(problems, []);
    const d = find(objects, 'Deployment');
    assert.equal(d.metadata.labels?.['team'], 'a');
    // The selector labels stay: an override cannot detach the Deployment from its pods.
    assert.equal(d.metadata.labels?.['app.kubernetes.io/instance'], 'srv');
    assert.equal(d.metadata.annotations?.['note'], 'x');
    const pod = podOf(objects);
    assert.equal((pod.metadata['labels'] as Obj)['pod'], 'y');
    assert.equal((pod.metadata['annotations'] as Obj)['scrape'], 'true');
    assert.deepEqual(pod.spec['imagePullSecrets'], [{ name: 'regcred' }]);
    assert.deepEqual((container(objects, 'skep-runner')['env'] as Obj[]).at(-1), {
      name: 'SKEP_RUNNER_LOG_LEVEL',
      value: 'debug',
    });
    assert.deepEqual(find(objects, 'ServiceAccount')['imagePullSecrets'], [{ name: 'regcred' }]);
    const svc = find(objects, 'Service');
    assert.equal(svc.metadata.annotations?.['lb'], 'internal');
    assert.equal(svc.metadata.labels?.['exposed'], 'no');
  });

  it('podTemplateSpec: lists merge by their key (containers and env by name, volumeMounts by mountPath, imagePullSecrets by name)', async () => {
    const { objects, problems } = await renderResources([
      server({
        podTemplateSpec: {
          spec: {
            imagePullSecrets: [{ name: 'extra' }],
            containers: [
              {
                name: 'mcp',
                env: [{ name: 'PORT', value: '9999' }],
                volumeMounts: [{ name: 'cache', mountPath: '/cache' }],
              },
            ],
            volumes: [{ name: 'cache', emptyDir: {} }],
          },
        },
      }),
    ]);
    assert.deepEqual(problems, []);
    const mcp = container(objects, 'mcp');
    const env = mcp['env'] as Obj[];
    assert.equal(env.filter((e) => e['name'] === 'PORT').length, 1);
    assert.equal(env.find((e) => e['name'] === 'PORT')!['value'], '9999');
    assert.deepEqual(mcp['volumeMounts'], [{ name: 'cache', mountPath: '/cache' }]);
    assert.deepEqual(podOf(objects).spec['imagePullSecrets'], [{ name: 'extra' }]);
    assert.equal(mcp['image'], 'ghcr.io/example/srv:1');
  });

  it('rateLimiting reaches the run configuration (and needs redis session storage)', async () => {
    const limits = {
      shared: { maxTokens: 100, refillPeriod: '1m' },
      tools: [{ name: 'fetch', shared: { maxTokens: 5, refillPeriod: '10s' } }],
    };
    const { objects, problems } = await renderResources([
      server({ rateLimiting: limits, sessionStorage: { provider: 'redis', address: 'redis:6379' } }),
    ]);
    assert.deepEqual(problems, []);
    assert.deepEqual(runConfig(objects)['rate_limit_config'], limits);
    const noRedis = await renderResources([server({ rateLimiting: limits })]);
    assert.match(noRedis.problems[0]!.problem, /rateLimiting requires sessionStorage with provider 'redis'/);
  });

  it('endpointPrefix: the run configuration’s endpoint_prefix on both proxy kinds served over SSE', async () => {
    const stdio = {
      apiVersion: 'skep.dev/v1beta1',
      kind: 'MCPServer',
      metadata: { name: 'srv', namespace: 'ns' },
      spec: { image: 'ghcr.io/example/srv:1', command: ['srv'], proxyPort: 8080, endpointPrefix: '/team-a/' },
    };
    const remote = remoteProxy({ transport: 'sse', endpointPrefix: '/tools/remote' });
    for (const [resource, prefix] of [
      [stdio, '/team-a/'],
      [server({ transport: 'sse', endpointPrefix: '/team-b' }), '/team-b'],
      [remote, '/tools/remote'],
    ] as const) {
      assert.deepEqual(validateResource(resource).problems, [], resource.kind);
      const { objects, problems } = await renderResources([resource]);
      assert.deepEqual(problems, []);
      const rc = runConfig(objects);
      assert.equal(rc['endpoint_prefix'], prefix);
      // The runner's own parse accepts it (the pod would not start on a run configuration it refuses).
      assert.equal(parseRunConfig(rc).endpoint_prefix, prefix);
    }
    // An empty prefix is the reference's default ("no prefix"): accepted, and not rendered.
    assert.deepEqual(validateResource(server({ endpointPrefix: '' })).problems, []);
    const { objects } = await renderResources([server({ endpointPrefix: '' })]);
    assert.equal(runConfig(objects)['endpoint_prefix'], undefined);
  });

  it('endpointPrefix: refused by name at validation (admission, `skep operator validate`) and render when not a path or where there is no SSE endpoint', async () => {
    const cases: Array<[Obj, RegExp]> = [
      [server({ transport: 'sse', endpointPrefix: 'team-a' }), /must be a path starting with '\/'/],
      [server({ transport: 'sse', endpointPrefix: '/team-a?x=1' }), /without a query or fragment/],
      [server({ transport: 'sse', endpointPrefix: '/team-a#top' }), /without a query or fragment/],
      [server({ transport: 'sse', endpointPrefix: '//evil.example' }), /must not start with '\/\/'/],
      [server({ transport: 'sse', endpointPrefix: '/team a' }), /only URL path characters/],
      // A streamable-HTTP server, and a remote proxy's default transport: no endpoint event.
      [server({ endpointPrefix: '/team-a' }), /no effect with transport streamable-http/],
      [remoteProxy({ endpointPrefix: '/team-a' }), /no effect with transport streamable-http/],
    ];
    for (const [resource, reason] of cases) {
      const { problems } = validateResource(resource);
      assert.equal(problems.length, 1, JSON.stringify(problems));
      assert.equal(problems[0]!.path, 'spec.endpointPrefix');
      assert.match(problems[0]!.message, reason);
      const rendered = await renderResources([resource]);
      assert.equal(rendered.objects.length, 0, 'nothing is deployed');
      assert.match(rendered.problems[0]!.problem, /spec\.endpointPrefix/);
    }
  });

  it('pull secrets give the registry credentials for reading an entrypoint (auth or username/password)', () => {
    const configs = [
      {
        auths: {
          'https://registry.example.com/v1/': { auth: Buffer.from('robot:s3cret').toString('base64') },
        },
      },
      { auths: { 'ghcr.io': { username: 'me', password: 'pat' } } },
    ];
    assert.deepEqual(pullSecretCredentials(configs, 'registry.example.com'), {
      username: 'robot',
      password: 's3cret',
    });
    assert.deepEqual(pullSecretCredentials(configs, 'ghcr.io'), { username: 'me', password: 'pat' });
    assert.equal(pullSecretCredentials(configs, 'quay.io'), undefined);
  });

  it('VirtualMCPServer imagePullSecrets reach the pod (merged by name with podTemplateSpec) and its ServiceAccount', async () => {
    const group = {
      apiVersion: 'skep.dev/v1beta1',
      kind: 'MCPGroup',
      metadata: { name: 'g', namespace: 'ns' },
      spec: {},
    };
    const vmcp = {
      apiVersion: 'skep.dev/v1beta1',
      kind: 'VirtualMCPServer',
      metadata: { name: 'v', namespace: 'ns' },
      spec: {
        groupRef: { name: 'g' },
        incomingAuth: {
          type: 'anonymous',
          authzConfig: {
            type: 'inline',
            inline: { policies: ['permit(principal, action, resource);'], primaryUpstreamProvider: 'github' },
          },
        },
        imagePullSecrets: [{ name: 'a' }],
        podTemplateSpec: { spec: { imagePullSecrets: [{ name: 'b' }] } },
      },
    };
    const { objects, problems } = await renderResources([group, vmcp]);
    assert.deepEqual(problems, []);
    assert.deepEqual(podOf(objects).spec['imagePullSecrets'], [{ name: 'a' }, { name: 'b' }]);
    assert.deepEqual(find(objects, 'ServiceAccount')['imagePullSecrets'], [{ name: 'a' }]);
    const authz = runConfig(objects)['authz_config'] as { cedar: Obj };
    assert.equal(authz.cedar['primary_upstream_provider'], 'github');
  });
});
