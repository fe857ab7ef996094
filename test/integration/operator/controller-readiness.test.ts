// A workload's readiness follows its Deployment: the workload controller watches the Deployments
// it renders (label-selected) and rewrites the MCPServer's status — `phase`, the `Ready`
// condition and `readyReplicas`, what the CRD's printer columns show — when the Deployment's
// status changes, not only when the MCPServer does. Against the in-process FAKE Kubernetes API
// server (fake-kube-api.ts — no real API server or Deployment controller can run here, so the
// test plays the Deployment controller: it writes the Deployment's status subresource).
import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import type { Condition } from '../../../src/schemas/extauth/index.js';
import { waitFor } from '../../helpers/wait.js';
import type { FakeKubeApi } from './fake-kube-api.js';
import { putAppsStatus, startWorkloadController } from './workload-controller-fixture.js';

const NS = 'team-r';
const SERVERS = 'skep.dev/v1beta1/mcpservers';
const DEPLOYMENTS = 'apps/v1/deployments';

const setup = async (t: TestContext) => (await startWorkloadController(t)).api;

interface ServerStatus {
  phase?: string;
  readyReplicas?: number;
  conditions?: Condition[];
}
const statusOf = (api: FakeKubeApi, name: string) =>
  (api.getObject(SERVERS, NS, name)?.['status'] ?? {}) as ServerStatus;
const ready = (api: FakeKubeApi, name: string) =>
  statusOf(api, name).conditions?.find((c) => c.type === 'Ready');

/** What the Deployment controller reports, written through the status subresource. */
const setDeploymentStatus = (api: FakeKubeApi, name: string, status: Record<string, number>) =>
  putAppsStatus(api, DEPLOYMENTS, NS, name, status);

describe('MCPServer readiness from its Deployment, against a fake API server', { timeout: 60_000 }, () => {
  it('the status follows the Deployment: Pending 0/1, then Ready with readyReplicas 1, then back', async (t) => {
    const api = await setup(t);
    api.create(SERVERS, {
      apiVersion: 'skep.dev/v1beta1',
      kind: 'MCPServer',
      metadata: { name: 'srv', namespace: NS },
      spec: { image: 'example/server:1', command: ['server'] },
    });
    await waitFor('the first status', () => (statusOf(api, 'srv').phase === 'Pending' ? true : undefined));
    assert.equal(ready(api, 'srv')?.status, 'False');
    assert.equal(ready(api, 'srv')?.message, '0/1 replicas ready');
    assert.equal(statusOf(api, 'srv').readyReplicas, 0);
    assert.ok(api.getObject(DEPLOYMENTS, NS, 'srv'), 'the Deployment was created');

    await setDeploymentStatus(api, 'srv', { replicas: 1, readyReplicas: 1, availableReplicas: 1 });
    await waitFor('phase Ready', () => (statusOf(api, 'srv').phase === 'Ready' ? true : undefined));
    assert.deepEqual(
      { status: ready(api, 'srv')?.status, reason: ready(api, 'srv')?.reason },
      { status: 'True', reason: 'DeploymentReady' },
    );
    assert.equal(statusOf(api, 'srv').readyReplicas, 1);

    // A pod that stops being ready (a failing readiness probe) shows as well.
    await setDeploymentStatus(api, 'srv', { replicas: 1, readyReplicas: 0, availableReplicas: 0 });
    await waitFor('phase Pending again', () => (statusOf(api, 'srv').phase === 'Pending' ? true : undefined));
    assert.equal(ready(api, 'srv')?.status, 'False');
    assert.equal(statusOf(api, 'srv').readyReplicas, 0);
  });

  it('the list and the watch ask the API server for the rendered Deployments only', async (t) => {
    const api = await setup(t);
    const deploymentRequests = () =>
      api.requests
        .map((r) => new URL(r.path, 'http://x'))
        .filter((u) => u.pathname === '/apis/apps/v1/deployments');
    // The informer is synced once listed; its watch request follows.
    const selected = await waitFor('a watch of the Deployments', () => {
      const all = deploymentRequests();
      return all.some((u) => u.searchParams.get('watch') === 'true') ? all : undefined;
    });
    assert.ok(
      selected.some((u) => u.searchParams.get('watch') === null),
      'listed',
    );
    assert.ok(
      selected.some((u) => u.searchParams.get('watch') === 'true'),
      'watched',
    );
    for (const u of selected)
      assert.equal(
        u.searchParams.get('labelSelector'),
        'app.kubernetes.io/name in (mcpserver,mcpremoteproxy,virtualmcpserver,mcpregistry)',
      );
  });
});
