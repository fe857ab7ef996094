// The controller on the real @kubernetes/client-node client talking HTTP to an in-process
// FAKE Kubernetes API server (fake-kube-api.ts) — no real API server can run on these
// machines. The fake implements list/watch/get/merge-patch/status PUT with resourceVersion
// conflicts, finalizer-aware deletion and generation bumps.
import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { configHash } from '../../../src/control/operator/config-hash.js';
import { ExtAuthController, FINALIZER } from '../../../src/control/operator/controller.js';
import { createKubeClient } from '../../../src/control/operator/kube.js';
import { silentLogger } from '../../../src/shared/index.js';
import { awsSts, embedded, ROLE_ARN, ref, resource } from '../../unit/operator/fixtures.js';
import { FakeKubeApi } from './fake-kube-api.js';
import { waitFor } from '../../helpers/wait.js';

const EXT = 'skep.dev/v1beta1/mcpexternalauthconfigs';
const SERVERS = 'skep.dev/v1beta1/mcpservers';
const PROXIES = 'skep.dev/v1beta1/mcpremoteproxies';
const VMCP = 'skep.dev/v1beta1/virtualmcpservers';
const ENTRIES = 'skep.dev/v1beta1/mcpserverentries';
const NS = 'team-a';

type Obj = Record<string, unknown> & { metadata: Record<string, unknown> };

async function setup(t: TestContext, prepare?: (api: FakeKubeApi) => void) {
  const api = new FakeKubeApi();
  await api.start();
  t.after(() => api.close());
  prepare?.(api);
  const controller = new ExtAuthController({
    kube: createKubeClient(api.kubeConfig()),
    logger: silentLogger,
    blockedRecheckMs: 200,
    backoffBaseMs: 20,
    relistDelayMs: 50,
  });
  await controller.start();
  t.after(() => controller.close());
  return { api, controller };
}

const condition = (o: Obj | undefined, type: string) =>
  ((o?.['status'] as { conditions?: Array<Record<string, unknown>> } | undefined)?.conditions ?? []).find(
    (c) => c['type'] === type,
  );

const config = (name: string, spec: unknown) =>
  ({ ...resource(spec), metadata: { name, namespace: NS } }) as Obj;
const workload = (kind: string, name: string, spec: unknown, namespace = NS) =>
  ({ apiVersion: 'skep.dev/v1beta1', kind, metadata: { name, namespace }, spec }) as Obj;

describe('MCPExternalAuthConfig controller against a fake API server', { timeout: 90_000 }, () => {
  it('status: adds the finalizer, writes Valid=True with observedGeneration and configHash', async (t) => {
    const { api } = await setup(t);
    const spec = awsSts({ fallbackRoleArn: ROLE_ARN });
    api.create(EXT, config('sts', spec));
    const obj = await waitFor('Valid condition', () => {
      const o = api.getObject(EXT, NS, 'sts');
      return condition(o, 'Valid') ? o : undefined;
    });
    assert.deepEqual(obj.metadata['finalizers'], [FINALIZER]);
    const valid = condition(obj, 'Valid')!;
    assert.equal(valid['status'], 'True');
    assert.equal(valid['reason'], 'ValidationSucceeded');
    assert.equal(valid['observedGeneration'], 1);
    const status = obj['status'] as Record<string, unknown>;
    assert.equal(status['observedGeneration'], 1);
    assert.equal(status['configHash'], configHash(spec));
    assert.deepEqual(status['referencingWorkloads'], []);
    assert.ok(
      api.requests.some((r) => r.method === 'PUT' && r.path.endsWith('/sts/status') && r.status === 200),
    );
  });

  it('status: an invalid spec gets Valid=False/ValidationFailed naming the field, and keeps the last good hash', async (t) => {
    const { api } = await setup(t);
    const good = awsSts({ fallbackRoleArn: ROLE_ARN });
    api.create(EXT, config('sts', good));
    await waitFor(
      'first hash',
      () => (api.getObject(EXT, NS, 'sts')?.['status'] as Record<string, unknown>)?.['configHash'],
    );
    api.update(EXT, NS, 'sts', (o) => {
      o['spec'] = awsSts({ roleMappings: [{ roleArn: ROLE_ARN, matcher: 'claims.groups.exists(' }] });
    });
    const obj = await waitFor('Valid=False', () => {
      const o = api.getObject(EXT, NS, 'sts');
      return condition(o, 'Valid')?.['status'] === 'False' ? o : undefined;
    });
    const valid = condition(obj, 'Valid')!;
    assert.equal(valid['reason'], 'ValidationFailed');
    assert.match(
      String(valid['message']),
      /spec\.awsSts\.roleMappings\[0\]\.matcher: CEL expression does not compile/,
    );
    assert.equal(valid['observedGeneration'], 2);
    const status = obj['status'] as Record<string, unknown>;
    assert.equal(status['observedGeneration'], 2);
    assert.equal(status['configHash'], configHash(good));
  });

  it('referencingWorkloads from MCPServer, MCPRemoteProxy and VirtualMCPServer refs in the same namespace; workloads roll out on hash change', async (t) => {
    const { api } = await setup(t);
    const spec1 = embedded();
    api.create(EXT, config('auth', spec1));
    api.create(
      SERVERS,
      workload('MCPServer', 'fetch', { image: 'x', externalAuthConfigRef: { name: 'auth' } }),
    );
    api.create(
      PROXIES,
      workload('MCPRemoteProxy', 'remote', {
        authServerRef: { kind: 'MCPExternalAuthConfig', name: 'auth' },
      }),
    );
    api.create(
      VMCP,
      workload('VirtualMCPServer', 'agg', {
        outgoingAuth: { default: { externalAuthConfigRef: { name: 'auth' } } },
      }),
    );
    api.create(
      SERVERS,
      workload('MCPServer', 'other-ns', { externalAuthConfigRef: { name: 'auth' } }, 'team-b'),
    );
    api.create(
      SERVERS,
      workload('MCPServer', 'unrelated', { externalAuthConfigRef: { name: 'someone-else' } }),
    );
    const expected = [
      { kind: 'MCPRemoteProxy', name: 'remote' },
      { kind: 'MCPServer', name: 'fetch' },
      { kind: 'VirtualMCPServer', name: 'agg' },
    ];
    await waitFor('referencingWorkloads', () => {
      const s = api.getObject(EXT, NS, 'auth')?.['status'] as Record<string, unknown> | undefined;
      return JSON.stringify(s?.['referencingWorkloads']) === JSON.stringify(expected);
    });
    const hash1 = configHash(spec1);
    const annotation = (res: string, name: string, key: string, ns = NS) =>
      (api.getObject(res, ns, name)?.metadata['annotations'] as Record<string, string> | undefined)?.[key];
    await waitFor(
      'rollout annotations',
      () =>
        annotation(SERVERS, 'fetch', 'skep.dev/external-auth-config-hash') === hash1 &&
        annotation(PROXIES, 'remote', 'skep.dev/auth-server-config-hash') === hash1 &&
        annotation(VMCP, 'agg', 'skep.dev/outgoing-auth-config-hash') === hash1,
    );
    assert.equal(
      annotation(SERVERS, 'other-ns', 'skep.dev/external-auth-config-hash', 'team-b'),
      undefined,
      'other namespace untouched',
    );
    assert.equal(annotation(SERVERS, 'unrelated', 'skep.dev/external-auth-config-hash'), undefined);

    // A spec change → new hash → every referencing workload gets the new value.
    const spec2 = embedded({ tokenLifespans: { accessTokenLifespan: '30m' } });
    api.update(EXT, NS, 'auth', (o) => {
      o['spec'] = spec2;
    });
    const hash2 = configHash(spec2);
    assert.notEqual(hash1, hash2);
    await waitFor(
      'rollout to new hash',
      () =>
        annotation(SERVERS, 'fetch', 'skep.dev/external-auth-config-hash') === hash2 &&
        annotation(PROXIES, 'remote', 'skep.dev/auth-server-config-hash') === hash2 &&
        annotation(VMCP, 'agg', 'skep.dev/outgoing-auth-config-hash') === hash2,
    );

    // Dropping a reference removes the workload from status.
    api.update(SERVERS, NS, 'fetch', (o) => {
      o['spec'] = { image: 'x' };
    });
    await waitFor('MCPServer dropped', () => {
      const s = api.getObject(EXT, NS, 'auth')?.['status'] as Record<string, unknown> | undefined;
      return (
        JSON.stringify(s?.['referencingWorkloads']) ===
        JSON.stringify(expected.filter((e) => e.name !== 'fetch'))
      );
    });
  });

  it('deletion is blocked while referenced (condition names them) and completes once references are gone', async (t) => {
    const { api } = await setup(t);
    api.create(EXT, config('tx', { type: 'unauthenticated' }));
    api.create(SERVERS, workload('MCPServer', 'a', { externalAuthConfigRef: { name: 'tx' } }));
    api.create(ENTRIES, workload('MCPServerEntry', 'entry', { externalAuthConfigRef: { name: 'tx' } }));
    await waitFor('finalizer', () =>
      (api.getObject(EXT, NS, 'tx')?.metadata['finalizers'] as string[] | undefined)?.includes(FINALIZER),
    );
    await waitFor('referenced', () => {
      const s = api.getObject(EXT, NS, 'tx')?.['status'] as Record<string, unknown> | undefined;
      return (s?.['referencingWorkloads'] as unknown[] | undefined)?.length === 1;
    });
    api.delete(EXT, NS, 'tx');
    const blocked = await waitFor('DeletionBlocked', () =>
      condition(api.getObject(EXT, NS, 'tx'), 'DeletionBlocked'),
    );
    assert.equal(blocked['status'], 'True');
    assert.equal(blocked['reason'], 'ReferencedByWorkloads');
    assert.equal(
      blocked['message'],
      'Cannot delete: referenced by workloads: MCPServer/a, MCPServerEntry/entry',
    );
    assert.ok(api.getObject(EXT, NS, 'tx') !== undefined, 'still present');

    api.delete(SERVERS, NS, 'a');
    await waitFor('only the entry left', () =>
      String(condition(api.getObject(EXT, NS, 'tx'), 'DeletionBlocked')?.['message']).endsWith(
        'MCPServerEntry/entry',
      ),
    );
    assert.ok(api.getObject(EXT, NS, 'tx') !== undefined, 'MCPServerEntry still blocks');
    api.delete(ENTRIES, NS, 'entry');
    await waitFor('object deleted', () => api.getObject(EXT, NS, 'tx') === undefined);
  });

  it('status writes retry on 409 Conflict from the status subresource', async (t) => {
    const { api } = await setup(t);
    api.injectConflicts('status', 3);
    api.create(EXT, config('cf', { type: 'unauthenticated' }));
    await waitFor('Valid after conflicts', () => condition(api.getObject(EXT, NS, 'cf'), 'Valid'));
    const statusPuts = api.requests.filter((r) => r.method === 'PUT' && r.path.includes('/cf/status'));
    assert.ok(statusPuts.filter((r) => r.status === 409).length >= 3, JSON.stringify(statusPuts));
    assert.equal(statusPuts.at(-1)?.status, 200);
  });

  it('a stale resourceVersion on the finalizer patch is a 409 and the key is retried with backoff', async (t) => {
    const { api } = await setup(t);
    api.injectConflicts('main', 2);
    api.create(EXT, config('fz', { type: 'unauthenticated' }));
    await waitFor('finalizer after conflicts', () =>
      (api.getObject(EXT, NS, 'fz')?.metadata['finalizers'] as string[] | undefined)?.includes(FINALIZER),
    );
    const patches = api.requests.filter((r) => r.method === 'PATCH' && r.path.endsWith('/fz'));
    assert.deepEqual(patches.map((p) => p.status).slice(0, 3), [409, 409, 200]);
  });

  it('Limits: HMAC current secret under 32 bytes read through the API makes Valid=False', async (t) => {
    const { api } = await setup(t, (a) => a.putSecret(NS, 'hmac', { current: 'short-secret' }));
    api.create(EXT, config('eas', embedded({ hmacSecretRefs: [ref('hmac', 'current')] })));
    const valid = await waitFor('Valid', () => condition(api.getObject(EXT, NS, 'eas'), 'Valid'));
    assert.equal(valid['status'], 'False');
    assert.match(
      String(valid['message']),
      /spec\.embeddedAuthServer\.hmacSecretRefs\[0\]: .*is shorter than 32 bytes/,
    );
    assert.doesNotMatch(String(valid['message']), /\b12\b/, "never the Secret's length");
    api.putSecret(NS, 'hmac', { current: Buffer.alloc(32, 7) });
    api.update(EXT, NS, 'eas', (o) => {
      o.metadata['annotations'] = { touch: '1' };
      o['spec'] = embedded({
        hmacSecretRefs: [ref('hmac', 'current')],
        tokenLifespans: { authCodeLifespan: '5m' },
      });
    });
    await waitFor(
      'Valid=True after rotation',
      () => condition(api.getObject(EXT, NS, 'eas'), 'Valid')?.['status'] === 'True',
    );
  });

  // Fake API (fake-kube-api.ts): `endWatches` closes every watch stream as the API server's
  // request timeout does; `compact` drops its event history so the controller's next watch
  // gets the 410 Expired ERROR event a real API server sends for a too-old resourceVersion.
  const referencing = (api: FakeKubeApi, name: string) =>
    JSON.stringify(
      ((api.getObject(EXT, NS, name)?.['status'] as Record<string, unknown> | undefined)?.[
        'referencingWorkloads'
      ] as Array<{ name: string }> | undefined) ?? null,
    );
  const lists = (api: FakeKubeApi) =>
    api.requests.filter(
      (r) => r.method === 'GET' && /\/(mcp[a-z]+|virtualmcpservers)(\?(?!.*watch=true)|$)/.test(r.path),
    ).length;

  it('a watch that ends is resumed from its last resourceVersion: a workload created meanwhile is reconciled, nothing re-listed', async (t) => {
    const { api } = await setup(t);
    api.create(EXT, config('auth', embedded()));
    api.create(SERVERS, workload('MCPServer', 'one', { externalAuthConfigRef: { name: 'auth' } }));
    await waitFor(
      'one referencing',
      () => referencing(api, 'auth') === '[{"kind":"MCPServer","name":"one"}]',
    );
    const listed = lists(api);
    assert.equal(api.endWatches(), 5, 'the config and the four workload kinds were watched');
    api.create(SERVERS, workload('MCPServer', 'two', { externalAuthConfigRef: { name: 'auth' } }));
    await waitFor(
      'two referencing',
      () =>
        referencing(api, 'auth') === '[{"kind":"MCPServer","name":"one"},{"kind":"MCPServer","name":"two"}]',
    );
    assert.equal(lists(api), listed, 'resumed by watching again, not by listing');
  });

  it('410 Gone: re-lists and reconciles a workload created and one deleted while no watch ran', async (t) => {
    const { api } = await setup(t);
    api.create(EXT, config('auth', embedded()));
    api.create(SERVERS, workload('MCPServer', 'old', { externalAuthConfigRef: { name: 'auth' } }));
    await waitFor(
      'old referencing',
      () => referencing(api, 'auth') === '[{"kind":"MCPServer","name":"old"}]',
    );
    const listed = lists(api);
    api.endWatches();
    api.delete(SERVERS, NS, 'old');
    api.create(PROXIES, workload('MCPRemoteProxy', 'new', { externalAuthConfigRef: { name: 'auth' } }));
    api.compact(); // the events above are gone from the history: only a re-list can see them
    await waitFor(
      'new referencing, old gone',
      () => referencing(api, 'auth') === '[{"kind":"MCPRemoteProxy","name":"new"}]',
    );
    // The informers re-list independently: the three this change concerns may be done before
    // the other two, so wait for all five rather than count at this instant.
    await waitFor('every informer re-listed after its 410', () => lists(api) >= listed + 5);
    // The re-listed informers watch again: a later change still arrives.
    api.create(SERVERS, workload('MCPServer', 'later', { externalAuthConfigRef: { name: 'auth' } }));
    await waitFor(
      'later referencing',
      () =>
        referencing(api, 'auth') ===
        '[{"kind":"MCPRemoteProxy","name":"new"},{"kind":"MCPServer","name":"later"}]',
    );
  });

  it('410 Gone: a config marked for deletion while no watch ran is seen by the re-list and its finalizer released', async (t) => {
    const { api } = await setup(t);
    api.create(EXT, config('gone', { type: 'unauthenticated' }));
    await waitFor(
      'finalizer',
      () => (api.getObject(EXT, NS, 'gone')?.metadata['finalizers'] as string[] | undefined)?.length === 1,
    );
    api.endWatches();
    api.delete(EXT, NS, 'gone'); // marks it: the finalizer holds it
    api.compact();
    await waitFor(
      'the finalizer removed after the re-list',
      () => api.getObject(EXT, NS, 'gone') === undefined,
    );
  });

  it('410 Gone answered as the HTTP status of the watch request: re-lists all the same', async (t) => {
    const { api } = await setup(t);
    api.create(EXT, config('auth', embedded()));
    api.create(SERVERS, workload('MCPServer', 'old', { externalAuthConfigRef: { name: 'auth' } }));
    await waitFor(
      'old referencing',
      () => referencing(api, 'auth') === '[{"kind":"MCPServer","name":"old"}]',
    );
    api.endWatches();
    api.delete(SERVERS, NS, 'old');
    api.create(SERVERS, workload('MCPServer', 'new', { externalAuthConfigRef: { name: 'auth' } }));
    api.compact('status');
    await waitFor(
      'new referencing, old gone',
      () => referencing(api, 'auth') === '[{"kind":"MCPServer","name":"new"}]',
    );
    assert.ok(api.requests.some((r) => r.method === 'WATCH' && r.status === 410));
  });

  it('a server that ends every watch at once is re-watched with a growing delay, not in a tight loop', async (t) => {
    const { api } = await setup(t); // relistDelayMs 50: waits of 50, 100, 200 ms... between empty watches
    api.create(EXT, config('auth', { type: 'unauthenticated' }));
    await waitFor('Valid', () => condition(api.getObject(EXT, NS, 'auth'), 'Valid')?.['status'] === 'True');
    const configWatches = () =>
      api.requests.filter((r) => r.method === 'WATCH' && /\/mcpexternalauthconfigs\?/.test(r.path));
    api.endWatchesAtOnce = true;
    const before = configWatches().length;
    const ended = performance.now();
    api.endWatches();
    const next = await waitFor(
      'four more watches of the configs',
      () => (configWatches().length >= before + 4 ? configWatches().slice(before, before + 4) : undefined),
      10_000,
    );
    // The first is at once (the ended watch had delivered events), then 3 growing waits
    // (50 + 100 + 200 ms, less a margin for timer rounding); a tight loop takes a few ms.
    assert.ok(next[0]!.at - ended < 200, 'the ended watch was resumed at once');
    const gaps = next.slice(1).map((r, i) => r.at - next[i]!.at);
    assert.ok(
      gaps[0]! >= 45 && gaps[1]! >= 95 && gaps[2]! >= 195,
      `gaps between watches: ${gaps.join(', ')} ms`,
    );
    // Watches that stay open again: changes arrive.
    api.endWatchesAtOnce = false;
    api.create(SERVERS, workload('MCPServer', 'late', { externalAuthConfigRef: { name: 'auth' } }));
    await waitFor(
      'late referencing',
      () => referencing(api, 'auth') === '[{"kind":"MCPServer","name":"late"}]',
    );
  });

  it('works when the workload CRDs are not installed (their lists answer 404)', async (t) => {
    const { api } = await setup(t, (a) => {
      for (const r of [SERVERS, PROXIES, VMCP, ENTRIES]) a.missingResources.add(r);
    });
    api.create(EXT, config('solo', { type: 'unauthenticated' }));
    await waitFor('Valid', () => condition(api.getObject(EXT, NS, 'solo'), 'Valid')?.['status'] === 'True');
    api.delete(EXT, NS, 'solo');
    await waitFor('deleted', () => api.getObject(EXT, NS, 'solo') === undefined);
  });
});
