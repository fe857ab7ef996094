// Leader election over a coordination.k8s.io/v1 Lease, on the real @kubernetes/client-node
// client talking HTTP to the in-process FAKE Kubernetes API server (fake-kube-api.ts) — no
// real API server can run on these machines. Short durations keep the test quick; the waits
// only bound polling, nothing is a timing assertion.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { createKubeClient } from '../../../src/control/operator/kube.js';
import { LeaderElector } from '../../../src/control/operator/leader.js';
import { ExtAuthController } from '../../../src/control/operator/controller.js';
import { silentLogger } from '../../../src/shared/index.js';
import { CLI_ENTRY } from '../../helpers/cli.js';
import { FakeKubeApi } from './fake-kube-api.js';
import { waitFor } from '../../helpers/wait.js';
import { awsSts, ROLE_ARN, resource } from '../../unit/operator/fixtures.js';

const LEASES = 'coordination.k8s.io/v1/leases';
const NS = 'skep-system';
const TIMING = { leaseDurationMs: 600, renewDeadlineMs: 400, retryPeriodMs: 50 };

interface Candidate {
  elector: LeaderElector;
  /** How many times it started leading, and whether it leads now. */
  terms: number;
  leading: boolean;
}

function candidate(t: TestContext, api: FakeKubeApi, identity: string): Candidate {
  const c: Candidate = {
    elector: new LeaderElector({
      kube: createKubeClient(api.kubeConfig()),
      namespace: NS,
      name: 'skep-operator',
      identity,
      logger: silentLogger,
      ...TIMING,
    }),
    terms: 0,
    leading: false,
  };
  void c.elector.run(async (signal) => {
    c.terms++;
    c.leading = true;
    await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
    c.leading = false;
  });
  t.after(() => c.elector.close());
  return c;
}

const leaseSpec = (api: FakeKubeApi) =>
  api.getObject(LEASES, NS, 'skep-operator')?.['spec'] as Record<string, unknown> | undefined;

test('two replicas: one leads; a graceful shutdown releases the Lease and the other takes over', async (t) => {
  const api = new FakeKubeApi();
  await api.start();
  t.after(() => api.close());

  const a = candidate(t, api, 'replica-a');
  await waitFor('replica-a to lead', () => a.leading);
  const b = candidate(t, api, 'replica-b');
  // b keeps trying while a renews: the barrier is a renewal by a stamped three lease durations
  // after b started (b could have taken a Lease left alone for one), not a fixed wait.
  const bStarted = Date.now();
  await waitFor('replica-a to renew the Lease three lease durations after replica-b started', () => {
    const renewed = Date.parse(String(leaseSpec(api)?.['renewTime']));
    return renewed - bStarted >= 3 * TIMING.leaseDurationMs;
  });
  assert.equal(b.terms, 0, 'never two leaders');
  const held = leaseSpec(api);
  assert.equal(held?.['holderIdentity'], 'replica-a');
  assert.equal(held?.['leaseTransitions'], 0);
  assert.match(String(held?.['renewTime']), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/, 'MicroTime');

  await a.elector.close();
  assert.equal(a.leading, false);
  await waitFor('replica-b to lead', () => b.leading);
  const taken = leaseSpec(api);
  assert.equal(taken?.['holderIdentity'], 'replica-b');
  assert.equal(taken?.['leaseTransitions'], 1);
});

test('a holder that stops renewing (crashed) loses the Lease after its duration; no earlier', async (t) => {
  const api = new FakeKubeApi();
  await api.start();
  t.after(() => api.close());
  // A replica that died while leading: its record stays, never renewed. Its renewTime is far
  // in the future to show that expiry follows the local observation, not the holder's clock.
  api.create(LEASES, {
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: { name: 'skep-operator', namespace: NS },
    spec: {
      holderIdentity: 'crashed-replica',
      leaseDurationSeconds: 1,
      renewTime: '2099-01-01T00:00:00.000000Z',
      leaseTransitions: 4,
    },
  });
  const started = Date.now();
  const b = candidate(t, api, 'replica-b');
  await waitFor('replica-b to lead', () => b.leading);
  assert.ok(Date.now() - started >= TIMING.leaseDurationMs, 'it waited for the lease to expire');
  assert.equal(leaseSpec(api)?.['holderIdentity'], 'replica-b');
  assert.equal(leaseSpec(api)?.['leaseTransitions'], 5);
});

test('a leader that cannot renew stops leading; the controller it ran is closed', async (t) => {
  const api = new FakeKubeApi();
  await api.start();
  t.after(() => api.close());
  const kube = createKubeClient(api.kubeConfig());
  let controllerRunning = false;
  const elector = new LeaderElector({
    kube,
    namespace: NS,
    name: 'skep-operator',
    identity: 'replica-a',
    logger: silentLogger,
    ...TIMING,
  });
  const done = elector.run(async (signal) => {
    const controller = new ExtAuthController({ kube, logger: silentLogger, relistDelayMs: 50 });
    await controller.start();
    controllerRunning = true;
    await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
    await controller.close();
    controllerRunning = false;
  });
  t.after(() => elector.close());
  await waitFor('the controller to run as leader', () => controllerRunning);
  // It reconciles while leading.
  const EXT = 'skep.dev/v1beta1/mcpexternalauthconfigs';
  api.create(EXT, resource(awsSts({ fallbackRoleArn: ROLE_ARN })) as never);
  await waitFor(
    'a reconcile by the leader',
    () =>
      (api.getObject(EXT, 'team-a', 'cfg')?.['metadata'] as { finalizers?: string[] })?.finalizers?.length,
  );
  // Another replica takes the Lease behind its back (as after a long pause): renewals fail.
  api.update(LEASES, NS, 'skep-operator', (lease) => {
    (lease['spec'] as Record<string, unknown>)['holderIdentity'] = 'replica-b';
  });
  await waitFor('leadership to be given up', () => !controllerRunning);
  await elector.close();
  await done;
});

/** `skep operator` as a real process against the fake API server; its log is kept for asserts. */
function operatorProcesses(t: TestContext, api: FakeKubeApi) {
  const dir = mkdtempSync(join(tmpdir(), 'skep-operator-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const kubeconfig = join(dir, 'kubeconfig.json');
  writeFileSync(kubeconfig, api.kubeConfig().exportConfig());
  const env = { ...process.env, KUBECONFIG: kubeconfig, SKEP_HOME: dir, SKEP_LOG_LEVEL: 'info' };
  return () => {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', CLI_ENTRY, 'operator', '--no-webhook', '--leader-election-namespace', NS],
      { env, stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let log = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      log += d;
    });
    const exit = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
    t.after(() => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    });
    return {
      child,
      log: () => log,
      /** SIGTERM, then the exit code; a replica that does not exit fails with its log. */
      stop: async (): Promise<number | null> => {
        child.kill('SIGTERM');
        let timer: NodeJS.Timeout | undefined;
        const late = new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error(`no exit 30 s after SIGTERM; its log:\n${log}`)), 30_000);
        });
        try {
          return (await Promise.race([exit, late]))[0];
        } finally {
          clearTimeout(timer);
        }
      },
    };
  };
}

const holder = (api: FakeKubeApi) => leaseSpec(api)?.['holderIdentity'] as string | undefined;

test(
  'skep operator as two real processes: one leads and reconciles; on SIGTERM it hands over to the other',
  { timeout: 150_000 },
  async (t) => {
    const api = new FakeKubeApi();
    await api.start();
    t.after(() => api.close());
    const start = operatorProcesses(t, api);
    const first = start();
    const second = start();
    const leaderId = await waitFor('a leader', () => holder(api) || undefined, 30_000);
    const [leader, follower] = await waitFor(
      'the leader to log its term',
      () =>
        first.log().includes(leaderId)
          ? [first, second]
          : second.log().includes(leaderId)
            ? [second, first]
            : undefined,
      30_000,
    );
    assert.match(leader.log(), /"msg":"leading"/);
    assert.ok(!follower.log().includes('"msg":"leading"'), 'only one replica leads');

    const EXT = 'skep.dev/v1beta1/mcpexternalauthconfigs';
    api.create(EXT, resource(awsSts({ fallbackRoleArn: ROLE_ARN })) as never);
    await waitFor(
      'the leader to reconcile',
      () =>
        (api.getObject(EXT, 'team-a', 'cfg')?.['metadata'] as { finalizers?: string[] })?.finalizers?.length,
      30_000,
    );

    assert.equal(await leader.stop(), 0, leader.log());
    assert.match(leader.log(), /lease released/);
    const next = await waitFor(
      'the other replica to take over',
      () => {
        const h = holder(api);
        return h && h !== leaderId ? h : undefined;
      },
      30_000,
    );
    await waitFor('the follower to log its term', () => follower.log().includes('"msg":"leading"'), 30_000);
    assert.ok(follower.log().includes(next));
    assert.equal(leaseSpec(api)?.['leaseTransitions'], 1);
  },
);

test(
  'a replica stopped while its controller is still starting exits and releases the Lease',
  { timeout: 90_000 },
  async (t) => {
    const api = new FakeKubeApi();
    await api.start();
    t.after(() => api.close());
    // The API server answers no list until the replica has been told to stop, so the SIGTERM
    // lands while its controllers start (an abort that came before the wait for it once went
    // unseen, and the replica held the Lease until killed).
    const releaseLists = api.holdLists();
    const replica = operatorProcesses(t, api)();
    await waitFor('the replica to lead', () => replica.log().includes('"msg":"leading"'), 30_000);
    const stopped = replica.stop();
    await waitFor('the replica to log the signal', () => replica.log().includes('shutting down'), 30_000);
    assert.ok(!replica.log().includes('controller running'), 'the controller was still starting');
    releaseLists();
    assert.equal(await stopped, 0, replica.log());
    assert.match(replica.log(), /lease released/);
    assert.equal(holder(api), '');
  },
);
