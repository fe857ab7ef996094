// The controllers of the kinds added for parity with the reference — MCPToolConfig,
// MCPOIDCConfig, MCPAuthzConfig, MCPTelemetryConfig, MCPWebhookConfig (one ConfigController each),
// EmbeddingServer, MCPRegistry and VirtualMCPCompositeToolDefinition (the workload controller) —
// on the real @kubernetes/client-node client against the in-process FAKE Kubernetes API server
// (fake-kube-api.ts; no real API server runs on these machines). Covered per kind: finalizer,
// Valid condition with configHash and referencingWorkloads, deletion blocked while referenced,
// and on the workload: the folded run configuration, the hash on the pod template (a change
// rolls the pods), the hash in status, and a condition naming a missing or invalid reference.
import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { configHash } from '../../../src/control/operator/config-hash.js';
import { sharedConfigControllers } from '../../../src/control/operator/controller.js';
import { createKubeClient, createObjectClient } from '../../../src/control/operator/kube.js';
import { WorkloadController } from '../../../src/control/operator/workload-controller.js';
import { createLineLogger } from '../../../src/shared/index.js';
import { waitFor } from '../../helpers/wait.js';
import { FakeKubeApi } from './fake-kube-api.js';

const NS = 'team-a';
const R = (plural: string) => `skep.dev/v1beta1/${plural}`;
type Obj = Record<string, unknown> & { metadata: Record<string, unknown> };
const cr = (kind: string, name: string, spec: unknown) =>
  ({ apiVersion: 'skep.dev/v1beta1', kind, metadata: { name, namespace: NS }, spec }) as Obj;
const statusOf = (o: Obj | undefined) => (o?.['status'] ?? {}) as Record<string, unknown>;
const condition = (o: Obj | undefined, type: string) =>
  ((statusOf(o)['conditions'] ?? []) as Array<Record<string, unknown>>).find((c) => c['type'] === type);

async function setup(t: TestContext) {
  const api = new FakeKubeApi();
  await api.start();
  t.after(() => api.close());
  const kc = api.kubeConfig();
  const logger = createLineLogger({ name: 'ctl', level: 'warn', write: (l) => t.diagnostic(l.trim()) });
  const kube = createKubeClient(kc);
  const configs = sharedConfigControllers({
    kube,
    logger,
    blockedRecheckMs: 100,
    backoffBaseMs: 20,
    relistDelayMs: 20,
  });
  for (const c of configs) await c.start();
  const workloads = new WorkloadController({
    kube,
    objects: createObjectClient(kc),
    logger,
    render: { runnerImage: 'skep:test' },
    relistDelayMs: 20,
  });
  await workloads.start();
  t.after(async () => {
    await workloads.close();
    for (const c of configs) await c.close();
  });
  return api;
}

const deploymentOf = (api: FakeKubeApi, name: string) => api.getObject('apps/v1/deployments', NS, name);
const podAnnotations = (d: Obj | undefined) =>
  (d?.['spec'] as { template?: { metadata?: { annotations?: Record<string, string> } } } | undefined)
    ?.template?.metadata?.annotations ?? {};
const runConfigOf = (api: FakeKubeApi, name: string) => {
  const cm = api.getObject('core/v1/configmaps', NS, `${name}-runconfig`);
  const text = (cm?.['data'] as Record<string, string> | undefined)?.['runconfig.json'];
  return text === undefined ? undefined : (JSON.parse(text) as Record<string, unknown>);
};

const server = (name: string, extra: Record<string, unknown>) =>
  cr('MCPServer', name, {
    image: 'ghcr.io/example/server:1',
    transport: 'streamable-http',
    proxyPort: 8080,
    mcpPort: 8080,
    ...extra,
  });

describe('shared configuration kinds against a fake API server', { timeout: 90_000 }, () => {
  it('MCPToolConfig: finalizer, Valid, configHash and referencingWorkloads; the server gets the filter, the hash rolls it', async (t) => {
    const api = await setup(t);
    const spec = {
      toolsFilter: ['fetch'],
      toolsOverride: { fetch: { name: 'get_url', description: 'Fetch a URL' } },
    };
    api.create(R('mcptoolconfigs'), cr('MCPToolConfig', 'tools', spec));
    api.create(R('mcpservers'), server('fetch', { toolConfigRef: { name: 'tools' } }));

    const config = await waitFor('tool config status', () => {
      const o = api.getObject(R('mcptoolconfigs'), NS, 'tools');
      return (statusOf(o)['referencingWorkloads'] as unknown[] | undefined)?.length === 1 ? o : undefined;
    });
    assert.deepEqual(config.metadata['finalizers'], ['skep.dev/mcptoolconfig-finalizer']);
    assert.equal(condition(config, 'Valid')?.['status'], 'True');
    assert.equal(statusOf(config)['configHash'], configHash(spec));
    assert.deepEqual(statusOf(config)['referencingWorkloads'], [{ kind: 'MCPServer', name: 'fetch' }]);

    const rc = await waitFor('run config', () => runConfigOf(api, 'fetch'));
    assert.deepEqual(rc['tools_filter'], ['fetch']);
    assert.deepEqual(rc['tools_override'], { fetch: { name: 'get_url', description: 'Fetch a URL' } });
    const first = podAnnotations(await waitFor('deployment', () => deploymentOf(api, 'fetch')))[
      'skep.dev/tool-config-hash'
    ];
    assert.equal(first, configHash(spec));
    const status = await waitFor('server status', () => {
      const o = api.getObject(R('mcpservers'), NS, 'fetch');
      return statusOf(o)['toolConfigHash'] !== undefined ? o : undefined;
    });
    assert.equal(statusOf(status)['toolConfigHash'], first);
    assert.equal(condition(status, 'ToolConfigValidated')?.['status'], 'True');

    // A change of the config rolls the server's pods (a new pod-template annotation).
    api.update(R('mcptoolconfigs'), NS, 'tools', (o) => {
      (o['spec'] as Record<string, unknown>)['toolsFilter'] = ['fetch', 'head'];
    });
    const rolled = await waitFor('rolled deployment', () => {
      const h = podAnnotations(deploymentOf(api, 'fetch'))['skep.dev/tool-config-hash'];
      return h !== undefined && h !== first ? h : undefined;
    });
    assert.equal(rolled, configHash({ ...spec, toolsFilter: ['fetch', 'head'] }));
    assert.deepEqual(runConfigOf(api, 'fetch')?.['tools_filter'], ['fetch', 'head']);

    // Deletion is blocked while the server references it, then released.
    api.delete(R('mcptoolconfigs'), NS, 'tools');
    const blocked = await waitFor('DeletionBlocked', () =>
      condition(api.getObject(R('mcptoolconfigs'), NS, 'tools'), 'DeletionBlocked'),
    );
    assert.match(String(blocked['message']), /MCPServer\/fetch/);
    api.delete(R('mcpservers'), NS, 'fetch');
    await waitFor('config gone', () =>
      api.getObject(R('mcptoolconfigs'), NS, 'tools') === undefined ? true : undefined,
    );
  });

  it('a missing or invalid referenced config is a condition on the workload, and nothing is deployed', async (t) => {
    const api = await setup(t);
    api.create(R('mcpservers'), server('lonely', { oidcConfigRef: { name: 'idp', audience: 'lonely' } }));
    const failed = await waitFor('failed status', () => {
      const o = api.getObject(R('mcpservers'), NS, 'lonely');
      return statusOf(o)['phase'] === 'Failed' ? o : undefined;
    });
    const c = condition(failed, 'OIDCConfigRefValidated')!;
    assert.equal(c['status'], 'False');
    assert.equal(c['message'], `spec.oidcConfigRef: MCPOIDCConfig ${NS}/idp does not exist`);
    assert.equal(deploymentOf(api, 'lonely'), undefined);

    // An invalid MCPAuthzConfig (a Cedar policy that does not parse): Valid=False on it, and the
    // referencing server says it is invalid.
    api.create(
      R('mcpauthzconfigs'),
      cr('MCPAuthzConfig', 'authz', { type: 'cedarv1', config: { policies: ['permit('] } }),
    );
    api.create(R('mcpservers'), server('guarded', { authzConfigRef: { name: 'authz' } }));
    const invalid = await waitFor('authz Valid=False', () => {
      const o = api.getObject(R('mcpauthzconfigs'), NS, 'authz');
      return condition(o, 'Valid')?.['status'] === 'False' ? o : undefined;
    });
    assert.match(String(condition(invalid, 'Valid')?.['message']), /^spec: /);
    const guarded = await waitFor('guarded failed', () => {
      const o = api.getObject(R('mcpservers'), NS, 'guarded');
      return condition(o, 'AuthzConfigRefValidated')?.['status'] === 'False' ? o : undefined;
    });
    assert.match(
      String(condition(guarded, 'AuthzConfigRefValidated')?.['message']),
      /MCPAuthzConfig team-a\/authz is invalid/,
    );
    assert.equal(deploymentOf(api, 'guarded'), undefined);

    // Once the referenced config exists the server deploys with the OIDC settings.
    api.create(
      R('mcpoidcconfigs'),
      cr('MCPOIDCConfig', 'idp', {
        type: 'inline',
        inline: {
          issuer: 'https://idp.example.com',
          clientId: 'skep',
          clientSecretRef: { name: 'idp', key: 'secret' },
        },
      }),
    );
    const rc = await waitFor('lonely deployed', () => runConfigOf(api, 'lonely'));
    assert.deepEqual(rc['oidc_config'], {
      audience: 'lonely',
      scopes: ['openid'],
      issuer: 'https://idp.example.com',
      clientID: 'skep',
      clientSecret: 'SKEP_OIDC_CLIENT_SECRET,target=oidc_client_secret',
    });
    const deployment = await waitFor('deployment', () => deploymentOf(api, 'lonely'));
    const containers = (deployment['spec'] as { template: { spec: { containers: Obj[] } } }).template.spec
      .containers;
    const runner = containers.find((x) => x['name'] === 'skep-runner')!;
    assert.deepEqual(
      (runner['env'] as Obj[]).find((e) => e['name'] === 'SKEP_OIDC_CLIENT_SECRET'),
      { name: 'SKEP_OIDC_CLIENT_SECRET', valueFrom: { secretKeyRef: { name: 'idp', key: 'secret' } } },
    );
    const ok = await waitFor('OIDCConfigRefValidated=True', () => {
      const o = api.getObject(R('mcpservers'), NS, 'lonely');
      return condition(o, 'OIDCConfigRefValidated')?.['status'] === 'True' ? o : undefined;
    });
    assert.equal(typeof statusOf(ok)['oidcConfigHash'], 'string');
  });

  it('MCPTelemetryConfig and MCPWebhookConfig fold into the run configuration; secrets stay out of the ConfigMap', async (t) => {
    const api = await setup(t);
    api.create(
      R('mcptelemetryconfigs'),
      cr('MCPTelemetryConfig', 'otel', {
        openTelemetry: {
          enabled: true,
          endpoint: 'collector:4318',
          insecure: true,
          tracing: { enabled: true, samplingRate: '0.1' },
          metrics: { enabled: true },
        },
        prometheus: { enabled: true },
      }),
    );
    api.create(
      R('mcpwebhookconfigs'),
      cr('MCPWebhookConfig', 'hooks', {
        validating: [
          {
            name: 'policy',
            url: 'https://policy.example.com/check',
            timeout: '5s',
            hmacSecretRef: { name: 'hook', key: 'hmac' },
          },
        ],
      }),
    );
    api.create(
      R('mcpservers'),
      server('observed', {
        telemetryConfigRef: { name: 'otel', serviceName: 'observed-svc' },
        webhookConfigRef: { name: 'hooks' },
      }),
    );
    const rc = await waitFor('run config', () => runConfigOf(api, 'observed'));
    assert.deepEqual(rc['telemetry_config'], {
      serviceName: 'observed-svc',
      endpoint: 'collector:4318',
      insecure: true,
      tracingEnabled: true,
      metricsEnabled: true,
      samplingRate: '0.1',
      useLegacyAttributes: true,
      enablePrometheusMetricsPath: true,
    });
    assert.deepEqual(rc['validating_webhooks'], [
      {
        name: 'policy',
        url: 'https://policy.example.com/check',
        failure_policy: 'fail',
        timeout: '5s',
        hmac_secret_ref: '/etc/skep/webhooks/policy/hmac',
      },
    ]);
    const d = await waitFor('deployment', () => deploymentOf(api, 'observed'));
    assert.ok(podAnnotations(d)['skep.dev/telemetry-config-hash']);
    assert.ok(podAnnotations(d)['skep.dev/webhook-config-hash']);
    const volumes = (d['spec'] as { template: { spec: { volumes: Obj[] } } }).template.spec.volumes;
    assert.ok(volumes.some((v) => JSON.stringify(v).includes('"secretName":"hook"')));
    const hooks = await waitFor('webhook config referenced', () => {
      const o = api.getObject(R('mcpwebhookconfigs'), NS, 'hooks');
      return (statusOf(o)['referencingWorkloads'] as unknown[] | undefined)?.length === 1 ? o : undefined;
    });
    assert.deepEqual(hooks.metadata['finalizers'], ['skep.dev/mcpwebhookconfig-finalizer']);
  });

  it('EmbeddingServer renders a StatefulSet and Service; a VirtualMCPServer optimizer points at it; composite tool refs are resolved and listed', async (t) => {
    const api = await setup(t);
    api.create(
      R('embeddingservers'),
      cr('EmbeddingServer', 'emb', { modelCache: { enabled: true, size: '1Gi' } }),
    );
    const sts = await waitFor('statefulset', () => api.getObject('apps/v1/statefulsets', NS, 'emb'));
    const spec = sts['spec'] as Record<string, unknown>;
    const container = (spec['template'] as { spec: { containers: Obj[] } }).spec.containers[0]!;
    assert.deepEqual(container['args'], ['--model-id', 'BAAI/bge-small-en-v1.5', '--port', '8080']);
    assert.equal((spec['volumeClaimTemplates'] as Obj[])[0]?.metadata['name'], 'model-cache');
    assert.ok(await waitFor('service', () => api.getObject('core/v1/services', NS, 'emb')));
    const emb = await waitFor('embedding status', () => {
      const o = api.getObject(R('embeddingservers'), NS, 'emb');
      return statusOf(o)['url'] !== undefined ? o : undefined;
    });
    assert.equal(statusOf(emb)['url'], `http://emb.${NS}.svc.cluster.local:8080`);

    api.create(R('mcpgroups'), cr('MCPGroup', 'tools', {}));
    api.create(
      R('virtualmcpcompositetooldefinitions'),
      cr('VirtualMCPCompositeToolDefinition', 'flow', {
        name: 'flow',
        description: 'two steps',
        steps: [{ id: 'one', tool: 'a.echo' }],
      }),
    );
    api.create(
      R('virtualmcpservers'),
      cr('VirtualMCPServer', 'v', {
        groupRef: { name: 'tools' },
        incomingAuth: { type: 'anonymous' },
        embeddingServerRef: { name: 'emb' },
        config: { optimizer: {}, compositeToolRefs: [{ name: 'flow' }] },
      }),
    );
    const def = await waitFor('composite definition referenced', () => {
      const o = api.getObject(R('virtualmcpcompositetooldefinitions'), NS, 'flow');
      return (statusOf(o)['referencingVirtualServers'] as unknown[] | undefined)?.length === 1
        ? o
        : undefined;
    });
    assert.equal(statusOf(def)['validationStatus'], 'Valid');
    assert.equal(condition(def, 'WorkflowValidated')?.['status'], 'True');
    // The vMCP either deploys with the definitions inline (composite tools supported by the
    // virtual MCP) or reports CompositeToolRefsValidated=False and deploys nothing.
    const vmcp = await waitFor('vmcp composite condition', () => {
      const o = api.getObject(R('virtualmcpservers'), NS, 'v');
      return condition(o, 'CompositeToolRefsValidated') !== undefined ? o : undefined;
    });
    const cm = api.getObject('core/v1/configmaps', NS, 'v-vmcp-config');
    if (condition(vmcp, 'CompositeToolRefsValidated')?.['status'] === 'True') {
      const rc = JSON.parse((cm!['data'] as Record<string, string>)['runconfig.json']!) as {
        vmcp: { compositeTools: Obj[]; compositeToolRefs?: unknown; optimizer: Record<string, unknown> };
      };
      assert.equal(rc.vmcp.compositeTools[0]?.['name'], 'flow');
      assert.equal(rc.vmcp.compositeToolRefs, undefined);
      assert.equal(rc.vmcp.optimizer['embeddingService'], `http://emb.${NS}.svc.cluster.local:8080`);
      assert.ok(podAnnotations(deploymentOf(api, 'v'))['skep.dev/composite-tools-hash']);
    } else {
      assert.equal(cm, undefined);
      assert.equal(deploymentOf(api, 'v'), undefined);
    }
  });

  it('MCPRegistry renders its ConfigMap, Deployment and Service; a source Skep cannot serve is a Failed status', async (t) => {
    const api = await setup(t);
    const configYAML =
      'sources:\n  - name: prod\n    file:\n      path: /data/registry.json\nregistries:\n  - name: default\n    sources: [prod]\n';
    api.create(R('mcpregistries'), cr('MCPRegistry', 'reg', { configYAML }));
    const d = await waitFor('deployment', () => deploymentOf(api, 'reg-api'));
    const c = (d['spec'] as { template: { spec: { containers: Obj[] } } }).template.spec.containers[0]!;
    assert.deepEqual(c['args'], [
      'operator',
      'registry-server',
      '--config',
      '/config/config.yaml',
      '--port',
      '8080',
    ]);
    const cm = api.getObject('core/v1/configmaps', NS, 'reg-registry-server-config');
    assert.equal((cm?.['data'] as Record<string, string>)['config.yaml'], configYAML);
    const reg = await waitFor('registry status', () => {
      const o = api.getObject(R('mcpregistries'), NS, 'reg');
      return statusOf(o)['url'] !== undefined ? o : undefined;
    });
    assert.equal(statusOf(reg)['url'], `http://reg-api.${NS}.svc.cluster.local:8080`);

    api.create(
      R('mcpregistries'),
      cr('MCPRegistry', 'managed', {
        configYAML:
          'sources:\n  - name: m\n    managed: {}\nregistries:\n  - name: default\n    sources: [m]\n',
      }),
    );
    const failed = await waitFor('failed', () => {
      const o = api.getObject(R('mcpregistries'), NS, 'managed');
      return statusOf(o)['phase'] === 'Failed' ? o : undefined;
    });
    assert.match(
      String(statusOf(failed)['message']),
      /sources\[0\]\.managed: Skep's registry server is read-only/,
    );
    assert.equal(deploymentOf(api, 'managed-api'), undefined);

    // A kubernetes source: the pod lists workloads with its token, through the Role rendered for it.
    api.create(
      R('mcpregistries'),
      cr('MCPRegistry', 'k8s', {
        configYAML:
          'sources:\n  - {name: k, kubernetes: {}}\nregistries:\n  - {name: default, sources: [k]}\n',
      }),
    );
    const role = await waitFor('role', () =>
      api.getObject('rbac.authorization.k8s.io/v1/roles', NS, 'k8s-api'),
    );
    assert.deepEqual((role['rules'] as Array<{ verbs: string[] }>)[0]?.verbs, ['get', 'list', 'watch']);
    await waitFor('role binding', () =>
      api.getObject('rbac.authorization.k8s.io/v1/rolebindings', NS, 'k8s-api'),
    );
  });
});
