/**
 * The workload controller against the in-process FAKE Kubernetes API server (fake-kube-api.ts),
 * as the status tests use it: the controller started over a fresh API server, its warnings shown
 * with the test's result, both closed when the test ends; and the writes a cluster's own
 * controllers make (a Deployment's or StatefulSet's status), which no real controller makes here.
 */
import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import { createKubeClient, createObjectClient } from '../../../src/control/operator/kube.js';
import { WorkloadController } from '../../../src/control/operator/workload-controller.js';
import { createLineLogger } from '../../../src/shared/index.js';
import { FakeKubeApi } from './fake-kube-api.js';

/** A fresh fake API server and a started workload controller watching it. */
export async function startWorkloadController(
  t: TestContext,
): Promise<{ api: FakeKubeApi; controller: WorkloadController }> {
  const api = new FakeKubeApi();
  await api.start();
  t.after(() => api.close());
  const kc = api.kubeConfig();
  const controller = new WorkloadController({
    kube: createKubeClient(kc),
    objects: createObjectClient(kc),
    logger: createLineLogger({ name: 'wc', level: 'warn', write: (line) => t.diagnostic(line.trim()) }),
    render: { runnerImage: 'skep:test' },
    relistDelayMs: 20,
  });
  await controller.start();
  t.after(() => controller.close());
  return { api, controller };
}

/**
 * Writes `status` through the status subresource of an `apps/v1` object (`apps/v1/deployments`,
 * `apps/v1/statefulsets`), as the cluster's Deployment and StatefulSet controllers report.
 */
export async function putAppsStatus(
  api: FakeKubeApi,
  resource: `apps/v1/${string}`,
  namespace: string,
  name: string,
  status: Record<string, number>,
): Promise<void> {
  const current = api.getObject(resource, namespace, name);
  assert.ok(current, `${resource} ${namespace}/${name} exists`);
  const plural = resource.slice('apps/v1/'.length);
  const res = await fetch(
    `http://127.0.0.1:${api.port}/apis/apps/v1/namespaces/${namespace}/${plural}/${name}/status`,
    {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...current, status }),
    },
  );
  assert.equal(res.status, 200);
}
