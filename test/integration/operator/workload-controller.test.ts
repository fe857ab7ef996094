// The workload controller against the in-process FAKE Kubernetes API server
// (fake-kube-api.ts — no real API server can run on these machines; the fake speaks the
// HTTP API the real @kubernetes/client-node and the controller's object client use).
// Covered: create of the rendered objects with owner references, status (phase, url,
// conditions with observedGeneration), rollout of a consumer when its MCPExternalAuthConfig
// changes, an update of the resource, a missing reference reported in status, group member
// status, vMCP discovered backends, and watches that end or expire (410 Gone).
import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { createKubeClient, createObjectClient } from '../../../src/control/operator/kube.js';
import { WorkloadController } from '../../../src/control/operator/workload-controller.js';
import { createLineLogger, createLogger } from '../../../src/shared/index.js';
import { waitFor } from '../../helpers/wait.js';
import { FakeKubeApi } from './fake-kube-api.js';

const NS = 'team-a';
const R = (plural: string) => `skep.dev/v1beta1/${plural}`;
type Obj = Record<string, unknown> & { metadata: Record<string, unknown> };
const cr = (kind: string, name: string, spec: unknown) =>
  ({ apiVersion: 'skep.dev/v1beta1', kind, metadata: { name, namespace: NS }, spec }) as Obj;
const headerConfig = (header: string) =>
  cr('MCPExternalAuthConfig', 'key', {
    type: 'headerInjection',
    headerInjection: { headerName: header, valueSecretRef: { name: 'api', key: 'key' } },
  });

async function setup(t: TestContext, prepare?: (api: FakeKubeApi) => void) {
  const api = new FakeKubeApi();
  await api.start();
  t.after(() => api.close());
  prepare?.(api);
  const kc = api.kubeConfig();
  // The controller's warnings (a failed reconcile, retried with backoff) are shown with the
  // test's result, so a slow or failed run says what the controller met.
  const warnings = createLineLogger({
    name: 'wc',
    level: 'warn',
    write: (line) => t.diagnostic(line.trim()),
  });
  const controller = new WorkloadController({
    kube: createKubeClient(kc),
    objects: createObjectClient(kc),
    logger: process.env['K_DEBUG'] ? createLogger({ name: 'wc', level: 'debug' }) : warnings,
    render: { runnerImage: 'skep:test' },
    relistDelayMs: 20,
  });
  await controller.start();
  t.after(() => controller.close());
  return api;
}

const podAnnotation = (d: Obj | undefined, key: string) =>
  (d?.['spec'] as { template: { metadata: { annotations: Record<string, string> } } } | undefined)?.template
    .metadata.annotations[key];

describe('workload controller against a fake API server', { timeout: 60_000 }, () => {
  it('creates the objects, writes status, and rolls the Deployment when the referenced config changes', async (t) => {
    const api = await setup(t);
    api.create(R('mcpexternalauthconfigs'), headerConfig('X-Api-Key'));
    api.create(
      R('mcpremoteproxies'),
      cr('MCPRemoteProxy', 'remote', {
        remoteUrl: 'https://mcp.example.com/mcp',
        externalAuthConfigRef: { name: 'key' },
      }),
    );
    // The controller applies the objects one after another: wait until all four exist.
    const [deployment] = await waitFor('the rendered objects', () => {
      const objects = [
        api.getObject('apps/v1/deployments', NS, 'remote'),
        api.getObject('core/v1/configmaps', NS, 'remote-runconfig'),
        api.getObject('core/v1/services', NS, 'mcp-remote-remote-proxy'),
        api.getObject('core/v1/serviceaccounts', NS, 'remote-remote-proxy-runner'),
      ];
      return objects.every((o) => o !== undefined) ? objects : undefined;
    });
    const uid = api.getObject(R('mcpremoteproxies'), NS, 'remote')!.metadata['uid'];
    assert.deepEqual((deployment!.metadata['ownerReferences'] as Obj[])[0]?.['uid'], uid);

    const status = await waitFor('status', () => {
      const s = api.getObject(R('mcpremoteproxies'), NS, 'remote')?.['status'] as Obj | undefined;
      return s?.['url'] !== undefined ? s : undefined;
    });
    assert.equal(status['url'], `http://mcp-remote-remote-proxy.${NS}.svc.cluster.local:8080/mcp`);
    assert.equal(status['phase'], 'Pending'); // the fake runs no pods: 0/1 ready
    const conditions = status['conditions'] as Array<Record<string, unknown>>;
    assert.deepEqual(
      conditions.map((c) => [c['type'], c['status'], c['observedGeneration']]),
      [
        ['Valid', 'True', 1],
        // One condition per reference the spec holds (the reference's condition types).
        ['ExternalAuthConfigValidated', 'True', 1],
        ['Ready', 'False', 1],
      ],
    );
    const hash = status['externalAuthConfigHash'];
    assert.equal(typeof hash, 'string');

    // A changed MCPExternalAuthConfig re-renders its consumer: new pod annotations (rollout).
    const before = podAnnotation(deployment, 'skep.dev/runconfig-checksum');
    api.update(R('mcpexternalauthconfigs'), NS, 'key', (o) => {
      (o['spec'] as { headerInjection: { headerName: string } }).headerInjection.headerName = 'X-Other';
    });
    const rolled = await waitFor('the rollout', () => {
      const d = api.getObject('apps/v1/deployments', NS, 'remote');
      return podAnnotation(d, 'skep.dev/runconfig-checksum') !== before ? d : undefined;
    });
    assert.notEqual(podAnnotation(rolled, 'skep.dev/external-auth-config-hash'), hash);
    const cm = api.getObject('core/v1/configmaps', NS, 'remote-runconfig')!;
    assert.match(String((cm['data'] as Record<string, string>)['runconfig.json']), /X-Other/);

    // An update of the resource itself (generation 2) is applied and observed.
    api.update(R('mcpremoteproxies'), NS, 'remote', (o) => {
      (o['spec'] as Record<string, unknown>)['proxyPort'] = 9090;
    });
    await waitFor('generation 2', () => {
      const s = api.getObject(R('mcpremoteproxies'), NS, 'remote')?.['status'] as Obj | undefined;
      return s?.['observedGeneration'] === 2 && String(s['url']).endsWith(':9090/mcp') ? true : undefined;
    });
    const service = api.getObject('core/v1/services', NS, 'mcp-remote-remote-proxy')!;
    assert.equal(((service['spec'] as Obj)['ports'] as Obj[])[0]?.['port'], 9090);
  });

  it('reports a missing reference as Failed and creates nothing for it', async (t) => {
    const api = await setup(t);
    api.create(
      R('mcpservers'),
      cr('MCPServer', 'srv', { image: 'x', command: ['x'], externalAuthConfigRef: { name: 'absent' } }),
    );
    const status = await waitFor('Failed status', () => {
      const s = api.getObject(R('mcpservers'), NS, 'srv')?.['status'] as Obj | undefined;
      return s?.['phase'] === 'Failed' ? s : undefined;
    });
    assert.match(
      String(status['message']),
      /spec\.externalAuthConfigRef: MCPExternalAuthConfig team-a\/absent does not exist/,
    );
    assert.equal(api.getObject('apps/v1/deployments', NS, 'srv'), undefined);
  });

  it('an MCPGroup lists its members and a VirtualMCPServer discovers its backends', async (t) => {
    const api = await setup(t);
    api.create(R('mcpgroups'), cr('MCPGroup', 'tools', { description: 'd' }));
    api.create(
      R('mcpservers'),
      cr('MCPServer', 'a', { image: 'x', command: ['x'], groupRef: { name: 'tools' } }),
    );
    api.create(
      R('mcpserverentries'),
      cr('MCPServerEntry', 'e', {
        remoteUrl: 'https://e.example.com/mcp',
        transport: 'streamable-http',
        groupRef: { name: 'tools' },
        externalAuthConfigRef: { name: 'key' },
      }),
    );
    api.create(
      R('virtualmcpservers'),
      cr('VirtualMCPServer', 'v', { groupRef: { name: 'tools' }, incomingAuth: { type: 'anonymous' } }),
    );
    const group = await waitFor('group status', () => {
      const s = api.getObject(R('mcpgroups'), NS, 'tools')?.['status'] as Obj | undefined;
      return s?.['serverCount'] === 1 && s['entryCount'] === 1 ? s : undefined;
    });
    assert.deepEqual(group['servers'], ['a']);
    const vmcp = await waitFor('vMCP backends', () => {
      const s = api.getObject(R('virtualmcpservers'), NS, 'v')?.['status'] as Obj | undefined;
      return (s?.['discoveredBackends'] as Obj[] | undefined)?.length === 2 ? s : undefined;
    });
    // `e` references an MCPExternalAuthConfig that does not exist: it is left out (never called
    // without its auth), said in BackendsDiscovered; `a` is served.
    assert.deepEqual(
      (vmcp['discoveredBackends'] as Obj[]).map((b) => [
        b['name'],
        b['kind'],
        b['authConfigRef'] ?? null,
        b['status'],
      ]),
      [
        ['a', 'MCPServer', null, 'ready'],
        ['e', 'MCPServerEntry', 'key', 'unavailable'],
      ],
    );
    assert.equal(vmcp['backendCount'], 1);
    const discovered = (vmcp['conditions'] as Obj[]).find((c) => c['type'] === 'BackendsDiscovered')!;
    assert.equal(discovered['status'], 'False');
    assert.match(String(discovered['message']), /MCPServerEntry team-a\/e left out: .*key does not exist/);
    // The vMCP pod never reads the API: a ServiceAccount without token, no Role.
    assert.equal(api.getObject('rbac.authorization.k8s.io/v1/roles', NS, 'v-vmcp'), undefined);
    assert.equal(
      api.getObject('core/v1/serviceaccounts', NS, 'v-vmcp')?.['automountServiceAccountToken'],
      false,
    );
    const cm = api.getObject('core/v1/configmaps', NS, 'v-vmcp-config')!;
    const rc = JSON.parse((cm['data'] as Record<string, string>)['runconfig.json']!) as {
      vmcp: { backends: Obj[] };
    };
    assert.deepEqual(
      rc.vmcp.backends.map((b) => b['name']),
      ['a'],
    );

    // The member's config appears: the vMCP is re-rendered (it references the config only
    // through its group's member), `e` is served with the strategy, and the pod rolls.
    const before = podAnnotation(
      api.getObject('apps/v1/deployments', NS, 'v'),
      'skep.dev/runconfig-checksum',
    );
    api.create(R('mcpexternalauthconfigs'), headerConfig('X-Api-Key'));
    await waitFor('e served', () => {
      const s = api.getObject(R('virtualmcpservers'), NS, 'v')?.['status'] as Obj | undefined;
      return s?.['backendCount'] === 2 ? s : undefined;
    });
    const after = JSON.parse(
      (api.getObject('core/v1/configmaps', NS, 'v-vmcp-config')!['data'] as Record<string, string>)[
        'runconfig.json'
      ]!,
    ) as { vmcp: { outgoingAuth: { backends: Obj } } };
    assert.deepEqual(after.vmcp.outgoingAuth.backends['e'], {
      type: 'header_injection',
      headerInjection: { headerName: 'X-Api-Key', headerValueEnv: 'SKEP_HEADER_INJECTION_VALUE_KEY' },
    });
    assert.notEqual(
      podAnnotation(api.getObject('apps/v1/deployments', NS, 'v'), 'skep.dev/runconfig-checksum'),
      before,
    );
  });

  // The fake's `endWatches` closes every watch stream (the API server's request timeout);
  // `compact` drops its event history, so the next watch from an older resourceVersion gets
  // the 410 Expired ERROR event a real API server sends.
  const members = (api: Awaited<ReturnType<typeof setup>>) =>
    JSON.stringify(
      (api.getObject(R('mcpgroups'), NS, 'tools')?.['status'] as Obj | undefined)?.['servers'] ?? null,
    );
  const lists = (api: Awaited<ReturnType<typeof setup>>) =>
    api.requests.filter(
      (r) => r.method === 'GET' && /\/(mcp[a-z]+|virtualmcpservers)(\?(?!.*watch=true)|$)/.test(r.path),
    ).length;
  const server = (name: string) =>
    cr('MCPServer', name, { image: 'x', command: ['x'], groupRef: { name: 'tools' } });

  it('a watch that ends is watched again from its last resourceVersion: a server created meanwhile is deployed', async (t) => {
    const api = await setup(t);
    api.create(R('mcpgroups'), cr('MCPGroup', 'tools', {}));
    api.create(R('mcpservers'), server('a'));
    await waitFor('group [a]', () => members(api) === '["a"]');
    const listed = lists(api);
    assert.equal(
      api.endWatches(),
      16,
      'the 14 kinds (workloads, shared configs, registry, embedding, composite tools), the embedding StatefulSets and the workload Deployments were watched',
    );
    api.create(R('mcpservers'), server('b'));
    await waitFor('group [a,b]', () => members(api) === '["a","b"]');
    assert.ok(await waitFor('the Deployment of b', () => api.getObject('apps/v1/deployments', NS, 'b')));
    assert.equal(lists(api), listed, 'resumed by watching again, not by listing');
  });

  it('410 Gone: re-lists; a server created, one deleted and one changed while no watch ran are all reconciled', async (t) => {
    const api = await setup(t);
    api.create(R('mcpgroups'), cr('MCPGroup', 'tools', {}));
    api.create(R('mcpservers'), server('keep'));
    api.create(R('mcpservers'), server('drop'));
    api.create(
      R('virtualmcpservers'),
      cr('VirtualMCPServer', 'v', { groupRef: { name: 'tools' }, incomingAuth: { type: 'anonymous' } }),
    );
    await waitFor('group [drop,keep]', () => members(api) === '["drop","keep"]');
    const listed = lists(api);
    api.endWatches();
    api.delete(R('mcpservers'), NS, 'drop');
    api.create(R('mcpservers'), server('added'));
    api.update(R('mcpservers'), NS, 'keep', (o) => {
      (o['spec'] as Record<string, unknown>)['proxyPort'] = 9191;
    });
    api.compact(); // the events above are gone from the history: only a re-list can see them
    await waitFor('group [added,keep]', () => members(api) === '["added","keep"]');
    assert.ok(lists(api) >= listed + 6, 'every informer re-listed after its 410');
    assert.ok(
      await waitFor('the Deployment of added', () => api.getObject('apps/v1/deployments', NS, 'added')),
    );
    await waitFor('the changed server re-rendered', () => {
      const svc = api.getObject('core/v1/services', NS, 'mcp-keep-proxy');
      return ((svc?.['spec'] as Obj | undefined)?.['ports'] as Obj[] | undefined)?.[0]?.['port'] === 9191;
    });
    const vmcp = await waitFor('vMCP backends without the deleted server', () => {
      const s = api.getObject(R('virtualmcpservers'), NS, 'v')?.['status'] as Obj | undefined;
      const names = ((s?.['discoveredBackends'] as Obj[] | undefined) ?? []).map((b) => b['name']);
      return JSON.stringify(names) === '["added","keep"]' ? names : undefined;
    });
    assert.deepEqual(vmcp, ['added', 'keep']);
  });

  it('a CRD installed after the controller started is listed again (with backoff) and its resources reconciled', async (t) => {
    const api = await setup(t, (a) => a.missingResources.add(R('mcpservers')));
    api.missingResources.delete(R('mcpservers')); // "kubectl apply" of the CRD
    api.create(R('mcpgroups'), cr('MCPGroup', 'tools', {}));
    api.create(R('mcpservers'), server('late'));
    assert.ok(
      await waitFor('the Deployment of late', () => api.getObject('apps/v1/deployments', NS, 'late')),
    );
    await waitFor('group [late]', () => members(api) === '["late"]');
  });
});
