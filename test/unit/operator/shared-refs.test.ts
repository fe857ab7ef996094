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

describe('MCPOIDCConfig kubernetesServiceAccount: validates the cluster’s service-account tokens', () => {
  const SA_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';
  const oidc = (k: Obj) =>
    cr('MCPOIDCConfig', 'k8s', { type: 'kubernetesServiceAccount', kubernetesServiceAccount: k });
  const podSpec = (objects: K8sObject[]) =>
    (
      find(objects, 'Deployment')['spec'] as {
        template: { spec: Obj & { containers: Obj[]; volumes: Obj[] } };
      }
    ).template.spec;

  it('useClusterAuth (default): the API server issuer, the cluster CA and the pod’s own token, mounted from a projected volume', async () => {
    const { objects, problems } = await renderResources([
      oidc({}),
      server({ oidcConfigRef: { name: 'k8s', audience: 'srv-audience' } }),
    ]);
    assert.deepEqual(problems, []);
    const block = runConfig(objects)['oidc_config'] as Obj;
    assert.deepEqual(block, {
      audience: 'srv-audience',
      scopes: ['openid'],
      issuer: 'https://kubernetes.default.svc',
      allowPrivateIP: true,
      cacertPath: `${SA_DIR}/ca.crt`,
      authTokenFile: `${SA_DIR}/token`,
    });
    // No filter unless the MCPOIDCConfig asks for one (the reference accepts any account).
    assert.equal(parseRunConfig(runConfig(objects)).oidc_config?.kubernetesServiceAccount, undefined);
    const spec = podSpec(objects);
    // The pod still does not automount its token: only this volume carries it, to the runner.
    assert.equal(spec['automountServiceAccountToken'], false);
    const volume = spec.volumes.find((v) => v['name'] === 'service-account-token');
    assert.deepEqual(volume?.['projected'], {
      sources: [
        { serviceAccountToken: { path: 'token', expirationSeconds: 3607 } },
        { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
      ],
    });
    const runner = spec.containers.find((c) => c['name'] === 'skep-runner')!;
    assert.ok(
      (runner['volumeMounts'] as Obj[]).some(
        (m) => m['name'] === 'service-account-token' && m['mountPath'] === SA_DIR && m['readOnly'] === true,
      ),
    );
    // The CA reaches the runner through cacertPath, not as the one NODE_EXTRA_CA_CERTS bundle.
    assert.ok(!runnerEnv(objects).some((e) => e['name'] === 'NODE_EXTRA_CA_CERTS'));
  });

  it('serviceAccount/namespace restrict the accepted tokens; namespace defaults to the workload’s', async () => {
    const one = await renderResources([
      oidc({
        serviceAccount: 'caller',
        issuer: 'https://oidc.cluster.example',
        jwksUrl: 'https://oidc.cluster.example/keys',
      }),
      server({ oidcConfigRef: { name: 'k8s', audience: 'a' } }),
    ]);
    assert.deepEqual(one.problems, []);
    const block = parseRunConfig(runConfig(one.objects)).oidc_config;
    assert.deepEqual(block?.kubernetesServiceAccount, { namespace: NS, name: 'caller' });
    assert.equal(block?.issuer, 'https://oidc.cluster.example');
    assert.equal(block?.jwksurl, 'https://oidc.cluster.example/keys');

    const ns = await renderResources([
      oidc({ namespace: 'clients' }),
      server({ oidcConfigRef: { name: 'k8s', audience: 'a' } }),
    ]);
    assert.deepEqual(ns.problems, []);
    assert.deepEqual((runConfig(ns.objects)['oidc_config'] as Obj)['kubernetesServiceAccount'], {
      namespace: 'clients',
    });
  });

  it('useClusterAuth: false sends no token and mounts none; the cluster CA is trusted as before', async () => {
    const { objects, problems } = await renderResources([
      oidc({ useClusterAuth: false, jwksUrl: 'https://kubernetes.default.svc/openid/v1/jwks' }),
      server({ oidcConfigRef: { name: 'k8s', audience: 'a' } }),
    ]);
    assert.deepEqual(problems, []);
    const block = runConfig(objects)['oidc_config'] as Obj;
    assert.equal(block['authTokenFile'], undefined);
    assert.equal(block['cacertPath'], undefined);
    assert.ok(!podSpec(objects).volumes.some((v) => v['name'] === 'service-account-token'));
    assert.ok(runnerEnv(objects).some((e) => e['name'] === 'NODE_EXTRA_CA_CERTS'));
  });

  it('inline jwksAuthTokenPath is the runner’s authTokenFile', async () => {
    const { objects, problems } = await renderResources([
      cr('MCPOIDCConfig', 'idp', {
        type: 'inline',
        inline: { issuer: 'https://idp.example', jwksAuthTokenPath: '/var/run/idp/token' },
      }),
      server({ oidcConfigRef: { name: 'idp', audience: 'a' } }),
    ]);
    assert.deepEqual(problems, []);
    assert.equal((runConfig(objects)['oidc_config'] as Obj)['authTokenFile'], '/var/run/idp/token');
  });
});
