// EmbeddingServer status conditions (`ModelReady`, `VolumeReady`, the reference's names and
// reasons) written by the workload controller, against the in-process FAKE Kubernetes API server
// (fake-kube-api.ts — no real API server or kubelet can run here, so the test plays the
// StatefulSet controller and the volume binder: it writes the StatefulSet's status and the
// claims' phases, then reconciles).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Condition } from '../../../src/schemas/extauth/index.js';
import { waitFor } from '../../helpers/wait.js';
import type { FakeKubeApi } from './fake-kube-api.js';
import { putAppsStatus, startWorkloadController } from './workload-controller-fixture.js';

const NS = 'models';
const KEY = `EmbeddingServer/${NS}/emb`;
const STS = 'apps/v1/statefulsets';
const PVC = 'core/v1/persistentvolumeclaims';
type Obj = Record<string, unknown> & { metadata: Record<string, unknown> };

const embedding = (spec: Record<string, unknown>) =>
  ({
    apiVersion: 'skep.dev/v1beta1',
    kind: 'EmbeddingServer',
    metadata: { name: 'emb', namespace: NS },
    spec: { model: 'BAAI/bge-small-en-v1.5', ...spec },
  }) as Obj;

const statusOf = (api: FakeKubeApi) =>
  (api.getObject('skep.dev/v1beta1/embeddingservers', NS, 'emb')?.['status'] ?? {}) as {
    phase?: string;
    message?: string;
    conditions?: Condition[];
  };
const condition = (api: FakeKubeApi, type: string) => statusOf(api).conditions?.find((c) => c.type === type);

/** What the StatefulSet controller reports, written through the status subresource. */
const setStatefulSetStatus = (api: FakeKubeApi, status: Record<string, number>) =>
  putAppsStatus(api, STS, NS, 'emb', status);

const claim = (name: string, phase: string) =>
  ({
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name, namespace: NS },
    spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '10Gi' } } },
    status: { phase },
  }) as Obj;

describe('EmbeddingServer conditions against a fake API server', { timeout: 60_000 }, () => {
  it('ModelReady follows the StatefulSet: no pods, pods downloading (phase Downloading), a ready pod', async (t) => {
    const { api, controller } = await startWorkloadController(t);
    api.create('skep.dev/v1beta1/embeddingservers', embedding({}));
    await waitFor('the StatefulSet and a first status', () =>
      api.getObject(STS, NS, 'emb') !== undefined && condition(api, 'ModelReady') !== undefined
        ? true
        : undefined,
    );
    assert.deepEqual(
      [condition(api, 'ModelReady')?.status, condition(api, 'ModelReady')?.reason, statusOf(api).phase],
      ['False', 'ModelDownloading', 'Pending'],
    );
    // Without modelCache there is no claim, and no VolumeReady condition.
    assert.equal(condition(api, 'VolumeReady'), undefined);

    await setStatefulSetStatus(api, { replicas: 1, readyReplicas: 0 });
    await controller.reconcile(KEY);
    assert.equal(statusOf(api).phase, 'Downloading');
    assert.match(statusOf(api).message ?? '', /downloading and loading the model/);
    assert.equal(condition(api, 'ModelReady')?.reason, 'ModelDownloading');

    await setStatefulSetStatus(api, { replicas: 1, readyReplicas: 1 });
    await controller.reconcile(KEY);
    assert.equal(statusOf(api).phase, 'Ready');
    assert.deepEqual(
      [condition(api, 'ModelReady')?.status, condition(api, 'ModelReady')?.reason],
      ['True', 'ModelReady'],
    );
    assert.equal(condition(api, 'Ready')?.status, 'True');
  });

  it('a change of the StatefulSet’s status re-reconciles its EmbeddingServer (the controller watches it)', async (t) => {
    const { api } = await startWorkloadController(t);
    api.create('skep.dev/v1beta1/embeddingservers', embedding({}));
    await waitFor('a first status', () => condition(api, 'ModelReady'));
    await setStatefulSetStatus(api, { replicas: 1, readyReplicas: 0 });
    await waitFor('phase Downloading', () => (statusOf(api).phase === 'Downloading' ? true : undefined));
    await setStatefulSetStatus(api, { replicas: 1, readyReplicas: 1 });
    await waitFor('ModelReady', () => (condition(api, 'ModelReady')?.status === 'True' ? true : undefined));
    assert.equal(statusOf(api).phase, 'Ready');
    // The list and the watch ask the API server for the rendered StatefulSets only.
    const selected = api.requests
      .map((r) => r.path)
      .filter((p) => p.startsWith('/apis/apps/v1/statefulsets?'))
      .map((p) => new URL(p, 'http://x').searchParams);
    assert.ok(
      selected.some((q) => q.get('watch') === null),
      'listed',
    );
    assert.ok(
      selected.some((q) => q.get('watch') === 'true'),
      'watched',
    );
    for (const q of selected) assert.equal(q.get('labelSelector'), 'app.kubernetes.io/name=embeddingserver');
  });

  it('VolumeReady follows the model-cache claims of every replica: absent, Pending, Bound, Lost', async (t) => {
    const { api, controller } = await startWorkloadController(t);
    api.create(
      'skep.dev/v1beta1/embeddingservers',
      embedding({ replicas: 2, modelCache: { enabled: true } }),
    );
    await waitFor('a first VolumeReady', () => condition(api, 'VolumeReady'));
    let volume = condition(api, 'VolumeReady')!;
    assert.deepEqual([volume.status, volume.reason], ['False', 'VolumeCreating']);
    assert.match(
      volume.message,
      /model-cache-emb-0 not created yet; PersistentVolumeClaim model-cache-emb-1 not created yet/,
    );

    api.create(PVC, claim('model-cache-emb-0', 'Bound'));
    api.create(PVC, claim('model-cache-emb-1', 'Pending'));
    await controller.reconcile(KEY);
    volume = condition(api, 'VolumeReady')!;
    assert.deepEqual([volume.status, volume.reason], ['False', 'VolumeCreating']);
    assert.equal(volume.message, 'PersistentVolumeClaim model-cache-emb-1 Pending');

    api.update(PVC, NS, 'model-cache-emb-1', (o) => {
      o['status'] = { phase: 'Bound' };
    });
    await controller.reconcile(KEY);
    volume = condition(api, 'VolumeReady')!;
    assert.deepEqual([volume.status, volume.reason], ['True', 'VolumeReady']);

    api.update(PVC, NS, 'model-cache-emb-0', (o) => {
      o['status'] = { phase: 'Lost' };
    });
    await controller.reconcile(KEY);
    volume = condition(api, 'VolumeReady')!;
    assert.deepEqual([volume.status, volume.reason], ['False', 'VolumeFailed']);
    assert.match(volume.message, /model-cache-emb-0 lost its volume/);
  });
});
