// The validating admission webhook over real HTTPS on 127.0.0.1 with a freshly issued
// self-signed certificate (openssl); requests are admission.k8s.io/v1 AdmissionReviews as the
// API server sends them.
import assert from 'node:assert/strict';
import { request } from 'node:https';
import { describe, it, type TestContext } from 'node:test';
import { generateSelfSignedCert } from '../../../src/control/operator/certs.js';
import { startWebhook, WEBHOOK_PATH } from '../../../src/control/operator/webhook.js';
import { silentLogger } from '../../../src/shared/index.js';
import { hasCommand, requireService } from '../../helpers/services.js';
import { awsSts, embedded, ROLE_ARN, ref, resource } from '../../unit/operator/fixtures.js';

interface Reply {
  status: number;
  body: string;
}

function post(url: string, ca: string, body: unknown, method = 'POST'): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method, ca, headers: { 'content-type': 'application/json' }, timeout: 10_000 },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }),
        );
      },
    );
    req.on('error', reject);
    req.end(body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body));
  });
}

const admission = (uid: string, operation: string, object: unknown, oldObject: unknown = null) => ({
  apiVersion: 'admission.k8s.io/v1',
  kind: 'AdmissionReview',
  request: {
    uid,
    kind: { group: 'skep.dev', version: 'v1beta1', kind: 'MCPExternalAuthConfig' },
    resource: { group: 'skep.dev', version: 'v1beta1', resource: 'mcpexternalauthconfigs' },
    namespace: 'team-a',
    operation,
    object,
    oldObject,
  },
});

async function start(t: TestContext, secrets: Record<string, string> = {}) {
  const { cert, key } = generateSelfSignedCert(['127.0.0.1', 'localhost']);
  const server = await startWebhook({
    cert,
    key,
    logger: silentLogger,
    // Secrets come from a plain map here; the operator wires the Kubernetes API reader.
    readSecret: async (ns, name, k) => {
      const v = secrets[`${ns}/${name}/${k}`];
      return v === undefined ? undefined : Buffer.from(v);
    },
  });
  t.after(() => server.close());
  return { server, ca: cert };
}

describe('admission webhook over HTTPS', { timeout: 60_000 }, () => {
  it('admits a valid resource and echoes the request uid', async (t) => {
    if (!requireService(t, 'openssl', hasCommand('openssl'), 'apt-get install openssl')) return;
    const { server, ca } = await start(t);
    const reply = await post(
      server.url,
      ca,
      admission('uid-1', 'CREATE', resource(awsSts({ fallbackRoleArn: ROLE_ARN }))),
    );
    assert.equal(reply.status, 200);
    const body = JSON.parse(reply.body);
    assert.equal(body.apiVersion, 'admission.k8s.io/v1');
    assert.equal(body.kind, 'AdmissionReview');
    assert.deepEqual(body.response, { uid: 'uid-1', allowed: true });
  });

  it('(webhook rule): denies awsSts without fallbackRoleArn or roleMappings and a bad CEL matcher, naming the fields', async (t) => {
    if (!requireService(t, 'openssl', hasCommand('openssl'), 'apt-get install openssl')) return;
    const { server, ca } = await start(t);
    const bad = resource(awsSts({ roleMappings: [{ roleArn: ROLE_ARN, matcher: 'claims.groups.exists(' }] }));
    const reply = await post(server.url, ca, admission('uid-2', 'CREATE', bad));
    const { response } = JSON.parse(reply.body);
    assert.equal(response.uid, 'uid-2');
    assert.equal(response.allowed, false);
    assert.equal(response.status.code, 422);
    assert.match(response.status.message, /MCPExternalAuthConfig team-a\/cfg is invalid/);
    assert.match(
      response.status.message,
      /spec\.awsSts\.roleMappings\[0\]\.matcher: CEL expression does not compile/,
    );
    const empty = await post(
      server.url,
      ca,
      admission('uid-3', 'UPDATE', resource(awsSts({})), resource(awsSts({ fallbackRoleArn: ROLE_ARN }))),
    );
    assert.match(
      JSON.parse(empty.body).response.status.message,
      /spec\.awsSts: at least one of fallbackRoleArn or roleMappings/,
    );
  });

  it('(webhook rule): HMAC current secret shorter than 32 bytes is denied when the Secret is readable, without its length', async (t) => {
    if (!requireService(t, 'openssl', hasCommand('openssl'), 'apt-get install openssl')) return;
    const { server, ca } = await start(t, {
      'team-a/hmac/short': 'x'.repeat(31),
      'team-a/hmac/long': 'y'.repeat(32),
    });
    const withHmac = (key: string) => resource(embedded({ hmacSecretRefs: [ref('hmac', key)] }));
    const short = JSON.parse(
      (await post(server.url, ca, admission('h1', 'CREATE', withHmac('short')))).body,
    ).response;
    assert.equal(short.allowed, false);
    assert.match(
      short.status.message,
      /spec\.embeddedAuthServer\.hmacSecretRefs\[0\]: .*is shorter than 32 bytes.*at least 32 bytes/,
    );
    assert.doesNotMatch(short.status.message, /xxxx/, 'never echoes the secret value');
    assert.doesNotMatch(short.status.message, /\b31\b/, "never the Secret's length");
    const long = JSON.parse(
      (await post(server.url, ca, admission('h2', 'CREATE', withHmac('long')))).body,
    ).response;
    assert.equal(long.allowed, true);
    const unreadable = JSON.parse(
      (await post(server.url, ca, admission('h3', 'CREATE', withHmac('missing')))).body,
    ).response;
    assert.equal(unreadable.allowed, true, 'an unreadable Secret is not a reason to deny');
  });

  it('(webhook rule): the shared configuration kinds go through the same library (MCPWebhookConfig, MCPAuthzConfig)', async (t) => {
    if (!requireService(t, 'openssl', hasCommand('openssl'), 'apt-get install openssl')) return;
    const { server, ca } = await start(t);
    const obj = (kind: string, spec: unknown) => ({
      apiVersion: 'skep.dev/v1beta1',
      kind,
      metadata: { name: 'shared', namespace: 'team-a' },
      spec,
    });
    const noHooks = await post(server.url, ca, admission('uid-w', 'CREATE', obj('MCPWebhookConfig', {})));
    const denied = JSON.parse(noHooks.body).response;
    assert.equal(denied.allowed, false);
    assert.match(
      denied.status.message,
      /MCPWebhookConfig team-a\/shared is invalid: spec: at least one validating or mutating webhook must be defined/,
    );
    const badCedar = await post(
      server.url,
      ca,
      admission(
        'uid-a',
        'CREATE',
        obj('MCPAuthzConfig', { type: 'cedarv1', config: { policies: ['permit('] } }),
      ),
    );
    assert.equal(JSON.parse(badCedar.body).response.allowed, false);
    const good = await post(
      server.url,
      ca,
      admission('uid-t', 'CREATE', obj('MCPToolConfig', { toolsFilter: ['fetch'] })),
    );
    assert.deepEqual(JSON.parse(good.body).response, { uid: 'uid-t', allowed: true });
  });

  it('allows DELETE, deleting objects and metadata-only updates of an invalid object', async (t) => {
    if (!requireService(t, 'openssl', hasCommand('openssl'), 'apt-get install openssl')) return;
    const { server, ca } = await start(t);
    const invalid = resource({ type: 'tokenExchange' });
    const del = JSON.parse(
      (await post(server.url, ca, admission('d1', 'DELETE', null, invalid))).body,
    ).response;
    assert.equal(del.allowed, true);
    const withFinalizer = { ...invalid, metadata: { name: 'cfg', namespace: 'team-a', finalizers: ['x'] } };
    const meta = JSON.parse(
      (await post(server.url, ca, admission('d2', 'UPDATE', withFinalizer, invalid))).body,
    ).response;
    assert.equal(meta.allowed, true);
    const deleting = { ...invalid, metadata: { name: 'cfg', deletionTimestamp: '2026-01-01T00:00:00Z' } };
    const dying = JSON.parse(
      (await post(server.url, ca, admission('d3', 'UPDATE', deleting, invalid))).body,
    ).response;
    assert.equal(dying.allowed, true);
    const specChange = JSON.parse(
      (await post(server.url, ca, admission('d4', 'UPDATE', invalid, resource({ type: 'unauthenticated' }))))
        .body,
    ).response;
    assert.equal(specChange.allowed, false);
  });

  it('rejects malformed reviews with 400, other paths with 404, serves /healthz', async (t) => {
    if (!requireService(t, 'openssl', hasCommand('openssl'), 'apt-get install openssl')) return;
    const { server, ca } = await start(t);
    assert.equal((await post(server.url, ca, '{not json')).status, 400);
    assert.equal(
      (await post(server.url, ca, { apiVersion: 'admission.k8s.io/v1beta1', kind: 'AdmissionReview' }))
        .status,
      400,
    );
    const base = server.url.slice(0, -WEBHOOK_PATH.length);
    assert.equal((await post(`${base}/other`, ca, {})).status, 404);
    const health = await post(`${base}/healthz`, ca, undefined, 'GET');
    assert.deepEqual(health, { status: 200, body: 'ok' });
  });

  it('the certificate is verified by the client (an unrelated CA is refused)', async (t) => {
    if (!requireService(t, 'openssl', hasCommand('openssl'), 'apt-get install openssl')) return;
    const { server } = await start(t);
    const other = generateSelfSignedCert(['127.0.0.1']).cert;
    await assert.rejects(
      post(server.url, other, admission('x', 'CREATE', resource({ type: 'unauthenticated' }))),
    );
  });
});
