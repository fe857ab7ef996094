// "Every rendered object validates against the Kubernetes schemas for its kind":
// the upstream OpenAPI schemas as packaged by kubernetes-models 4.5.1 (pinned; per-kind JSON
// schemas generated from the Kubernetes API's OpenAPI spec, validated with ajv). Limitation
// of that source: it does not reject unknown fields (the upstream schemas leave
// additionalProperties open), so field names are also checked against the model's known
// properties below for the objects the operator writes most (pod template containers).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { CustomResourceDefinition } from 'kubernetes-models/apiextensions.k8s.io/v1/CustomResourceDefinition';
import { Deployment } from 'kubernetes-models/apps/v1/Deployment';
import { Role } from 'kubernetes-models/rbac.authorization.k8s.io/v1/Role';
import { RoleBinding } from 'kubernetes-models/rbac.authorization.k8s.io/v1/RoleBinding';
import { ConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { Service } from 'kubernetes-models/v1/Service';
import { ServiceAccount } from 'kubernetes-models/v1/ServiceAccount';
import { parseAllDocuments } from 'yaml';
import { buildAllCrds } from '../../../src/control/operator/crd.js';
import { type K8sObject, renderResources } from '../../../src/control/operator/render.js';

type Model = { validate(): void };
const MODELS: Record<string, new (data: never) => Model> = {
  ConfigMap,
  Deployment,
  Role,
  RoleBinding,
  Service,
  ServiceAccount,
  CustomResourceDefinition,
};

function validateK8s(obj: K8sObject | Record<string, unknown>): void {
  const Ctor = MODELS[String(obj['kind'])];
  assert.ok(Ctor !== undefined, `no schema for kind ${String(obj['kind'])}`);
  const model = new Ctor(structuredClone(obj) as never);
  model.validate(); // throws naming the failing path
}

// Container fields of core/v1 Container (Kubernetes 1.27): a misspelt key would otherwise pass.
const CONTAINER_FIELDS = new Set([
  'args',
  'command',
  'env',
  'envFrom',
  'image',
  'imagePullPolicy',
  'lifecycle',
  'livenessProbe',
  'name',
  'ports',
  'readinessProbe',
  'resizePolicy',
  'resources',
  'securityContext',
  'startupProbe',
  'stdin',
  'stdinOnce',
  'terminationMessagePath',
  'terminationMessagePolicy',
  'tty',
  'volumeDevices',
  'volumeMounts',
  'workingDir',
]);

const examples = parseAllDocuments(
  readFileSync(new URL('../../../deploy/examples/workloads.yaml', import.meta.url), 'utf8'),
).map((d) => d.toJS() as Record<string, unknown>);
const httpServer = {
  apiVersion: 'skep.dev/v1beta1',
  kind: 'MCPServer',
  metadata: { name: 'web', uid: '8d1c4f0e-0000-4000-8000-000000000001' },
  spec: {
    image: 'web:1',
    transport: 'sse',
    mcpPort: 9000,
    secrets: [{ name: 'github-token', key: 'token' }],
    sessionStorage: { provider: 'redis', address: 'redis:6379', passwordRef: { name: 'r', key: 'p' } },
    replicas: 2,
    podTemplateSpec: { spec: { nodeSelector: { pool: 'mcp' } } },
  },
};

describe('rendered objects validate against the Kubernetes schemas (kubernetes-models 4.5.1)', () => {
  it('every object of the examples and an HTTP server with owner references', async () => {
    const { objects, problems } = await renderResources([...examples, httpServer], {
      runnerImage: 'skep:test',
    });
    assert.deepEqual(problems, []);
    assert.equal(objects.length, 16); // ConfigMap, ServiceAccount, Deployment, Service × 4
    for (const obj of objects) {
      assert.doesNotThrow(() => validateK8s(obj), `${obj.kind}/${obj.metadata.name}`);
      if (obj.kind !== 'Deployment') continue;
      const pod = (obj['spec'] as { template: { spec: Record<string, unknown> } }).template.spec;
      for (const c of [
        ...((pod['containers'] ?? []) as Array<Record<string, unknown>>),
        ...((pod['initContainers'] ?? []) as Array<Record<string, unknown>>),
      ]) {
        for (const key of Object.keys(c))
          assert.ok(CONTAINER_FIELDS.has(key), `${obj.metadata.name}: container field ${key}`);
      }
    }
    const web = objects.find((o) => o.kind === 'Deployment' && o.metadata.name === 'web')!;
    assert.equal(web.metadata.ownerReferences?.length, 1);
  });

  it('the schema source catches a broken object (the check can fail)', () => {
    assert.throws(() =>
      validateK8s({
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'x' },
        spec: { replicas: 'two', selector: {}, template: {} },
      }),
    );
  });

  it('every generated CRD validates as apiextensions.k8s.io/v1 CustomResourceDefinition', () => {
    const crds = buildAllCrds();
    // The reference's 14 kinds.
    assert.equal(crds.length, 14);
    for (const crd of crds)
      assert.doesNotThrow(() => validateK8s(crd), String((crd['metadata'] as { name: string }).name));
  });
});
