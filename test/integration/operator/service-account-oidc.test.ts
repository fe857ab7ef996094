// MCPOIDCConfig `kubernetesServiceAccount`, end to end without a cluster (none can run here):
// the operator renders an MCPServer that references it, and the runner's `auth` stage is built
// from the rendered run configuration. A local HTTPS server stands in for the Kubernetes API
// server: its certificate is signed by its own authority (the cluster CA) and it serves OIDC
// discovery and the JWKS only to a caller presenting the pod's service-account token, as the API
// server does. The rendered `cacertPath` and `authTokenFile` name the pod's standard paths; the
// test points them at files holding that CA and token, since those paths exist only in a pod.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { type K8sObject, renderResources } from '../../../src/control/operator/render.js';
import { buildPipeline } from '../../../src/dataplane/pipeline/index.js';
import { newRequestContext } from '../../../src/dataplane/proxy/index.js';
import { silentLogger } from '../../../src/shared/index.js';
import { parseRunConfig, type RunConfig } from '../../../src/workloads/index.js';
import { startGuardedIssuer } from '../../helpers/guarded-issuer.js';

const NS = 'tools';
const POD_TOKEN = 'pod-service-account-token';

/** The API server's service-account issuer (https, its own CA): discovery and JWKS behind the pod's token. */
async function apiServer(t: TestContext) {
  const issuer = await startGuardedIssuer(t, { acceptedToken: POD_TOKEN, tls: true });
  return { ...issuer, ca: issuer.ca ?? assert.fail('an https issuer has a CA') };
}

const cr = (kind: string, name: string, spec: Record<string, unknown>) => ({
  apiVersion: 'skep.dev/v1beta1',
  kind,
  metadata: { name, namespace: NS },
  spec,
});

/** The run configuration the operator renders for an MCPServer referencing the MCPOIDCConfig. */
async function renderedRunConfig(k8s: Record<string, unknown>): Promise<RunConfig> {
  const { objects, problems } = await renderResources([
    cr('MCPOIDCConfig', 'cluster', { type: 'kubernetesServiceAccount', kubernetesServiceAccount: k8s }),
    cr('MCPServer', 'srv', {
      image: 'ghcr.io/example/srv:1',
      transport: 'streamable-http',
      proxyPort: 8080,
      mcpPort: 8080,
      oidcConfigRef: { name: 'cluster', audience: 'srv-audience' },
    }),
  ]);
  assert.deepEqual(problems, []);
  const cm = objects.find((o: K8sObject) => o.kind === 'ConfigMap')!;
  return parseRunConfig(JSON.parse(String((cm['data'] as Record<string, unknown>)['runconfig.json'])));
}

/** The runner's pipeline for `config`; `check(token)` is the auth stage's answer (undefined: accepted). */
async function runnerAuth(t: TestContext, config: RunConfig) {
  const pipeline = await buildPipeline(config, { logger: silentLogger, secretLookup: async () => undefined });
  t.after(() => pipeline.close());
  const auth = pipeline.middlewares.find((m) => m.name === 'auth');
  assert.ok(auth, 'the run configuration has an auth stage');
  return async (token: string) => {
    const { ctx } = newRequestContext({
      method: 'POST',
      path: '/mcp',
      headers: { authorization: `Bearer ${token}` },
      body: { json: { jsonrpc: '2.0', id: 1, method: 'tools/list' } },
      serverName: 'srv',
      backendTransport: 'streamable-http',
    });
    const answer = await auth.handle(ctx);
    return { status: answer?.status, subject: ctx.identity?.subject };
  };
}

/** Points the rendered pod paths at local files holding the cluster CA and the pod's token. */
function withLocalFiles(t: TestContext, config: RunConfig, ca: string, token: string): RunConfig {
  const dir = mkdtempSync(join(tmpdir(), 'skep-sa-oidc-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'ca.crt'), ca);
  writeFileSync(join(dir, 'token'), `${token}\n`);
  const oidc = config.oidc_config!;
  assert.equal(oidc.cacertPath, '/var/run/secrets/kubernetes.io/serviceaccount/ca.crt');
  assert.equal(oidc.authTokenFile, '/var/run/secrets/kubernetes.io/serviceaccount/token');
  return {
    ...config,
    oidc_config: { ...oidc, cacertPath: join(dir, 'ca.crt'), authTokenFile: join(dir, 'token') },
  };
}

const caller = (namespace: string, name: string) => `system:serviceaccount:${namespace}:${name}`;

test('kubernetesServiceAccount: the runner fetches the JWKS with the pod’s token over the cluster CA, and checks audience and account', async (t) => {
  const api = await apiServer(t);
  const rendered = await renderedRunConfig({
    issuer: api.issuer,
    namespace: 'clients',
    serviceAccount: 'agent',
  });
  assert.deepEqual(rendered.oidc_config?.kubernetesServiceAccount, { namespace: 'clients', name: 'agent' });
  const check = await runnerAuth(t, withLocalFiles(t, rendered, api.ca, POD_TOKEN));

  const good = await api.sign({ aud: 'srv-audience', sub: caller('clients', 'agent') });
  assert.deepEqual(await check(good), { status: undefined, subject: caller('clients', 'agent') });
  // Discovery and the JWKS were fetched with the pod's token (the file's content, trimmed).
  assert.ok(api.seen.length >= 2);
  assert.ok(api.seen.every((h) => h === `Bearer ${POD_TOKEN}`));

  const wrongAudience = await api.sign({ aud: 'other-server', sub: caller('clients', 'agent') });
  assert.equal((await check(wrongAudience)).status, 401);
  const otherNamespace = await api.sign({ aud: 'srv-audience', sub: caller('kube-system', 'agent') });
  assert.equal((await check(otherNamespace)).status, 401);
  const otherAccount = await api.sign({ aud: 'srv-audience', sub: caller('clients', 'intruder') });
  assert.equal((await check(otherAccount)).status, 401);
  const notAServiceAccount = await api.sign({ aud: 'srv-audience', sub: 'alice' });
  assert.equal((await check(notAServiceAccount)).status, 401);
});

test('kubernetesServiceAccount without serviceAccount/namespace accepts any account of the issuer with the audience', async (t) => {
  const api = await apiServer(t);
  const rendered = await renderedRunConfig({ issuer: api.issuer });
  assert.equal(rendered.oidc_config?.kubernetesServiceAccount, undefined);
  const check = await runnerAuth(t, withLocalFiles(t, rendered, api.ca, POD_TOKEN));
  const token = await api.sign({ aud: 'srv-audience', sub: caller('anywhere', 'anyone') });
  assert.equal((await check(token)).status, undefined);
});

test('kubernetesServiceAccount: a token the API server refuses, or no cluster CA, means no key and every token is refused', async (t) => {
  const api = await apiServer(t);
  const rendered = await renderedRunConfig({ issuer: api.issuer });

  const wrongPodToken = await runnerAuth(t, withLocalFiles(t, rendered, api.ca, 'stale-token'));
  const token = await api.sign({ aud: 'srv-audience', sub: caller(NS, 'x') });
  assert.equal((await wrongPodToken(token)).status, 401);
  assert.ok(api.seen.includes('Bearer stale-token'), 'the API server was asked, with the file’s token');

  // Without the CA the issuer's certificate is not trusted: no request reaches it.
  const before = api.seen.length;
  const local = withLocalFiles(t, rendered, api.ca, POD_TOKEN);
  const { cacertPath: _ca, ...withoutCa } = local.oidc_config!;
  const untrusted = await runnerAuth(t, { ...local, oidc_config: withoutCa });
  assert.equal((await untrusted(token)).status, 401);
  assert.equal(api.seen.length, before);
});

test('oidc_config.cacertPath / authTokenFile: a missing file is a start error naming the field', async (t) => {
  const api = await apiServer(t);
  const rendered = await renderedRunConfig({ issuer: api.issuer });
  await assert.rejects(
    buildPipeline(rendered, { logger: silentLogger, secretLookup: async () => undefined }),
    /oidc_config\.cacertPath: cannot read \/var\/run\/secrets\/kubernetes\.io\/serviceaccount\/ca\.crt/,
  );
  const local = withLocalFiles(t, rendered, api.ca, POD_TOKEN);
  await assert.rejects(
    buildPipeline(
      { ...local, oidc_config: { ...local.oidc_config, authTokenFile: '/nonexistent/token' } },
      { logger: silentLogger, secretLookup: async () => undefined },
    ),
    /oidc_config\.authTokenFile: cannot read \/nonexistent\/token \(ENOENT\)/,
  );
});
