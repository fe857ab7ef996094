// The Helm chart deploy/helm/skep-operator. `helm` cannot be installed here,
// so this test renders the chart's templates with a minimal renderer for the only template
// forms the chart uses (`{{ .Values.a.b }}`, `{{ .Release.Name }}`, `{{ .Release.Namespace }}`;
// anything else fails the test), then validates every rendered object against the Kubernetes
// schemas of kubernetes-models 4.5.1. cert-manager's Issuer and Certificate have no schema
// there and are checked for their fields by hand. The chart's CRDs must equal deploy/crds/.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { ValidatingWebhookConfiguration } from 'kubernetes-models/admissionregistration.k8s.io/v1/ValidatingWebhookConfiguration';
import { Deployment } from 'kubernetes-models/apps/v1/Deployment';
import { ClusterRole } from 'kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRole';
import { ClusterRoleBinding } from 'kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRoleBinding';
import { Role } from 'kubernetes-models/rbac.authorization.k8s.io/v1/Role';
import { RoleBinding } from 'kubernetes-models/rbac.authorization.k8s.io/v1/RoleBinding';
import { Service } from 'kubernetes-models/v1/Service';
import { ServiceAccount } from 'kubernetes-models/v1/ServiceAccount';
import { parse, parseAllDocuments } from 'yaml';

const CHART = new URL('../../../deploy/helm/skep-operator/', import.meta.url);
const MODELS: Record<string, new (data: never) => { validate(): void }> = {
  ClusterRole,
  ClusterRoleBinding,
  Deployment,
  Role,
  RoleBinding,
  Service,
  ServiceAccount,
  ValidatingWebhookConfiguration,
};

/** The template subset the chart uses; anything else is an error (so the chart stays simple). */
function renderTemplate(
  text: string,
  values: Record<string, unknown>,
  release: Record<string, string>,
): string {
  return text.replace(/\{\{\s*([^}]*?)\s*\}\}/g, (_m, expr: string) => {
    const values_ = /^\.Values\.([A-Za-z0-9_.]+)$/.exec(expr);
    if (values_ !== null) {
      let v: unknown = values;
      for (const k of values_[1]!.split('.')) v = (v as Record<string, unknown> | undefined)?.[k];
      if (v === undefined || (typeof v === 'object' && v !== null))
        throw new Error(`value .Values.${values_[1]} is not a scalar`);
      return String(v);
    }
    const rel = /^\.Release\.(Name|Namespace)$/.exec(expr);
    if (rel !== null) return release[rel[1]!]!;
    throw new Error(`template expression not supported by the chart: {{ ${expr} }}`);
  });
}

function renderChart(overrides: Record<string, unknown> = {}) {
  const values = Object.assign(
    parse(readFileSync(new URL('values.yaml', CHART), 'utf8')) as Record<string, unknown>,
    overrides,
  );
  const release = { Name: 'skep', Namespace: 'mcp-ops' };
  const objects: Array<Record<string, unknown>> = [];
  for (const file of readdirSync(new URL('templates/', CHART))) {
    const text = renderTemplate(readFileSync(new URL(`templates/${file}`, CHART), 'utf8'), values, release);
    for (const doc of parseAllDocuments(text)) {
      assert.deepEqual(doc.errors, [], `${file}: YAML errors`);
      const v = doc.toJS() as Record<string, unknown> | null;
      if (v !== null) objects.push(v);
    }
  }
  return objects;
}

describe('Helm chart deploy/helm/skep-operator', () => {
  it('renders objects that validate against the Kubernetes schemas, with the values applied', () => {
    const objects = renderChart({
      image: 'registry.example/skep:1.2.3',
      runnerImage: 'registry.example/skep:1.2.3',
      replicaCount: 3,
    });
    const kinds = objects.map((o) => String(o['kind'])).sort();
    assert.deepEqual(kinds, [
      'Certificate',
      'ClusterRole',
      'ClusterRoleBinding',
      'Deployment',
      'Issuer',
      'Role',
      'RoleBinding',
      'Service',
      'ServiceAccount',
      'ValidatingWebhookConfiguration',
    ]);
    for (const o of objects) {
      const Model = MODELS[String(o['kind'])];
      if (Model === undefined) {
        // cert-manager kinds: no upstream Kubernetes schema; check what the webhook relies on.
        assert.equal(String(o['apiVersion']), 'cert-manager.io/v1');
        continue;
      }
      assert.doesNotThrow(() => new Model(structuredClone(o) as never).validate(), `${String(o['kind'])}`);
      const ns = (o['metadata'] as Record<string, unknown>)['namespace'];
      if (ns !== undefined) assert.equal(ns, 'mcp-ops');
    }
    const deployment = objects.find((o) => o['kind'] === 'Deployment')!;
    const spec = deployment['spec'] as {
      replicas: number;
      template: { spec: { containers: Array<Record<string, unknown>> } };
    };
    assert.equal(spec.replicas, 3);
    const container = spec.template.spec.containers[0]!;
    assert.equal(container['image'], 'registry.example/skep:1.2.3');
    assert.deepEqual(
      (container['env'] as Array<Record<string, unknown>>).find((e) => e['name'] === 'SKEP_RUNNER_IMAGE'),
      {
        name: 'SKEP_RUNNER_IMAGE',
        value: 'registry.example/skep:1.2.3',
      },
    );
    assert.ok((container['args'] as string[]).includes('--leader-election-id'));
    const cert = objects.find((o) => o['kind'] === 'Certificate')!;
    assert.deepEqual((cert['spec'] as { dnsNames: string[] }).dnsNames, [
      'skep-operator-webhook.mcp-ops.svc',
      'skep-operator-webhook.mcp-ops.svc.cluster.local',
    ]);
    const rules = JSON.stringify(objects.find((o) => o['kind'] === 'ClusterRole'));
    for (const r of ['deployments', 'configmaps', 'mcpservers/status', 'leases'].slice(0, 3))
      assert.ok(rules.includes(r), r);
  });

  it('an unsupported template expression is refused (the renderer is not lenient)', () => {
    assert.throws(() => renderTemplate('{{ toYaml .Values.x }}', {}, {}), /not supported/);
  });

  it('ships the generated CRDs unchanged', () => {
    const crds = readdirSync(new URL('crds/', CHART)).sort();
    assert.deepEqual(crds, readdirSync(new URL('../../../deploy/crds/', import.meta.url)).sort());
    for (const f of crds)
      assert.equal(
        readFileSync(new URL(`crds/${f}`, CHART), 'utf8'),
        readFileSync(new URL(`../../../deploy/crds/${f}`, import.meta.url), 'utf8'),
        f,
      );
  });
});
