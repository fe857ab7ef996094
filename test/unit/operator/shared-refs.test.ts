// Shared configurations folded into a workload's render (`skep operator render`), for the fields
// of the reference whose effect is in the pod wiring or that the runner cannot honour:
// MCPTelemetryConfig `openTelemetry.sensitiveHeaders` (each value an env var of the runner filled
// from its Secret, the run configuration holding only a reference to it) and MCPToolConfig
// `toolsOverride.<tool>.annotations` (an MCPServer's run configuration carries them to its runner's
// tool policy; a VirtualMCPServer carries them to the virtual MCP; both apply them).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type K8sObject, renderResources } from '../../../src/control/operator/render.js';
import { parseRunConfig } from '../../../src/workloads/index.js';

type Obj = Record<string, unknown>;
const NS = 'ns';
const cr = (kind: string, name: string, spec: Obj) => ({
  apiVersion: 'skep.dev/v1beta1',
  kind,
  metadata: { name, namespace: NS },
  spec,
});
const server = (spec: Obj) =>
  cr('MCPServer', 'srv', {
    image: 'ghcr.io/example/srv:1',
    transport: 'streamable-http',
    proxyPort: 8080,
    mcpPort: 8080,
    ...spec,
  });
const TOKEN = 'Bearer s3cret-collector-token';
const secret = {
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { name: 'otel-creds', namespace: NS },
  data: { token: Buffer.from(TOKEN).toString('base64'), key: Buffer.from('k-42').toString('base64') },
};
const telemetry = (otel: Obj) =>
  cr('MCPTelemetryConfig', 'otel', {
    openTelemetry: { enabled: true, endpoint: 'collector:4318', tracing: { enabled: true }, ...otel },
  });
const find = (objects: K8sObject[], kind: string) => objects.find((o) => o.kind === kind)!;
const runConfig = (objects: K8sObject[]) =>
  JSON.parse(String((find(objects, 'ConfigMap')['data'] as Obj)['runconfig.json'])) as Obj;
const runnerEnv = (objects: K8sObject[]) => {
  const pod = (find(objects, 'Deployment')['spec'] as { template: { spec: { containers: Obj[] } } }).template;
  return pod.spec.containers.find((c) => c['name'] === 'skep-runner')!['env'] as Obj[];
};

describe('shared configurations: fields whose effect is pod wiring', () => {
  it('sensitiveHeaders: each value is an env var of the runner from its Secret; the run configuration holds a reference only', async () => {
    const { objects, problems } = await renderResources([
      secret,
      telemetry({
        headers: { 'x-team': 'tools' },
        sensitiveHeaders: [
          { name: 'Authorization', secretKeyRef: { name: 'otel-creds', key: 'token' } },
          { name: 'X-API-Key', secretKeyRef: { name: 'otel-creds', key: 'key' } },
        ],
      }),
      server({ telemetryConfigRef: { name: 'otel' } }),
    ]);
    assert.deepEqual(problems, []);
    const env = runnerEnv(objects);
    assert.deepEqual(
      env.filter((e) => String(e['name']).startsWith('SKEP_OTEL_HEADER_')),
      [
        {
          name: 'SKEP_OTEL_HEADER_AUTHORIZATION',
          valueFrom: { secretKeyRef: { name: 'otel-creds', key: 'token' } },
        },
        {
          name: 'SKEP_OTEL_HEADER_X_API_KEY',
          valueFrom: { secretKeyRef: { name: 'otel-creds', key: 'key' } },
        },
      ],
    );
    assert.deepEqual((runConfig(objects)['telemetry_config'] as Obj)['headers'], {
      'x-team': 'tools',
      Authorization: 'SKEP_OTEL_HEADER_AUTHORIZATION,target=telemetry_config.headers.Authorization',
      'X-API-Key': 'SKEP_OTEL_HEADER_X_API_KEY,target=telemetry_config.headers.X-API-Key',
    });
    // The Secret's values are in no rendered object (ConfigMap, pod spec, annotations).
    const rendered = JSON.stringify(objects);
    assert.ok(!rendered.includes('s3cret-collector-token'));
    assert.ok(!rendered.includes(Buffer.from(TOKEN).toString('base64')));
    assert.ok(!rendered.includes('k-42'));
  });

  it('sensitiveHeaders: names that normalise to the same variable get distinct ones', async () => {
    const { objects, problems } = await renderResources([
      telemetry({
        sensitiveHeaders: [
          { name: 'X-Key', secretKeyRef: { name: 'a', key: 'k' } },
          { name: 'x_key', secretKeyRef: { name: 'b', key: 'k' } },
        ],
      }),
      server({ telemetryConfigRef: { name: 'otel' } }),
    ]);
    assert.deepEqual(problems, []);
    const names = runnerEnv(objects)
      .map((e) => String(e['name']))
      .filter((n) => n.startsWith('SKEP_OTEL_HEADER_'));
    assert.deepEqual(names, ['SKEP_OTEL_HEADER_X_KEY', 'SKEP_OTEL_HEADER_X_KEY_2']);
    assert.deepEqual((runConfig(objects)['telemetry_config'] as Obj)['headers'], {
      'X-Key': 'SKEP_OTEL_HEADER_X_KEY,target=telemetry_config.headers.X-Key',
      x_key: 'SKEP_OTEL_HEADER_X_KEY_2,target=telemetry_config.headers.x_key',
    });
  });

  it('sensitiveHeaders: a name also in headers makes the MCPTelemetryConfig invalid (CEL rule), named on the workload', async () => {
    const { objects, problems } = await renderResources([
      telemetry({
        headers: { Authorization: 'plain' },
        sensitiveHeaders: [{ name: 'Authorization', secretKeyRef: { name: 'otel-creds', key: 'token' } }],
      }),
      server({ telemetryConfigRef: { name: 'otel' } }),
    ]);
    assert.equal(objects.filter((o) => o.kind === 'Deployment').length, 0);
    assert.ok(
      problems.some((p) =>
        /a header name cannot appear in both headers and sensitiveHeaders/.test(p.problem),
      ),
      JSON.stringify(problems),
    );
  });

  it('toolsOverride annotations: an MCPServer’s run configuration carries them to its runner, which reads it', async () => {
    const tools = cr('MCPToolConfig', 'tools', {
      toolsOverride: {
        fetch: { description: 'Fetch a URL', annotations: { readOnlyHint: true, title: 'Fetch' } },
        // An override of the annotations only is an override.
        store: { annotations: { destructiveHint: false } },
      },
    });
    const { objects, problems } = await renderResources([
      tools,
      server({ toolConfigRef: { name: 'tools' } }),
    ]);
    assert.deepEqual(problems, []);
    const rc = runConfig(objects);
    const expected = {
      fetch: { description: 'Fetch a URL', annotations: { readOnlyHint: true, title: 'Fetch' } },
      store: { annotations: { destructiveHint: false } },
    };
    assert.deepEqual(rc['tools_override'], expected);
    // The runner's own parse keeps them (the pod would not start on a run configuration it refuses).
    assert.deepEqual(parseRunConfig(rc).tools_override, expected);
  });

  it('toolsOverride annotations: a VirtualMCPServer carries them into its aggregation overrides (the virtual MCP applies them)', async () => {
    const tools = cr('MCPToolConfig', 'tools', {
      toolsOverride: { fetch: { description: 'Fetch a URL', annotations: { readOnlyHint: true } } },
    });
    const vmcp = cr('VirtualMCPServer', 'v', {
      groupRef: { name: 'g' },
      incomingAuth: { type: 'anonymous' },
      config: { aggregation: { tools: [{ workload: 'srv', toolConfigRef: { name: 'tools' } }] } },
    });
    const { objects, problems } = await renderResources([cr('MCPGroup', 'g', {}), tools, vmcp]);
    assert.deepEqual(problems, []);
    const aggregation = (runConfig(objects)['vmcp'] as { aggregation: { tools: Obj[] } }).aggregation;
    assert.deepEqual(aggregation.tools, [
      {
        workload: 'srv',
        overrides: { fetch: { description: 'Fetch a URL', annotations: { readOnlyHint: true } } },
      },
    ]);
  });
});
