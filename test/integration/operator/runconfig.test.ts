// CRD → run configuration (ToolHive's run-configuration fields). Secrets are read through the
// real @kubernetes/client-node client from the in-process FAKE Kubernetes API server
// (fake-kube-api.ts), since no real API server can run here.
import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { kubeSecretReader } from '../../../src/control/operator/controller.js';
import { createKubeClient } from '../../../src/control/operator/kube.js';
import { buildRunConfigAuth } from '../../../src/control/operator/runconfig.js';
import { silentLogger } from '../../../src/shared/index.js';
import {
  awsSts,
  embedded,
  oauth2Provider,
  oidcProvider,
  ROLE_ARN,
  ref,
  resource,
  tokenExchange,
} from '../../unit/operator/fixtures.js';
import { FakeKubeApi } from './fake-kube-api.js';

async function reader(t: TestContext, secrets: Record<string, Record<string, string>>) {
  const api = new FakeKubeApi();
  await api.start();
  t.after(() => api.close());
  for (const [name, data] of Object.entries(secrets)) api.putSecret('team-a', name, data);
  return kubeSecretReader(createKubeClient(api.kubeConfig()), silentLogger);
}

describe('CRD → RunConfig mapping', { timeout: 60_000 }, () => {
  it('000 token_exchange_config: client_secret read from the Secret, short token type → URN, custom header strategy', async (t) => {
    const read = await reader(t, { te: { secret: 's3cr3t' } });
    const out = await buildRunConfigAuth(
      resource(
        tokenExchange({
          clientId: 'cid',
          clientSecretRef: ref('te', 'secret'),
          scopes: ['a', 'b'],
          subjectTokenType: 'id_token',
          externalTokenHeaderName: 'X-Up',
        }),
      ),
      read,
    );
    assert.deepEqual(out.runConfig, {
      token_exchange_config: {
        token_url: 'https://sts.example.com/token',
        audience: 'backend',
        client_id: 'cid',
        client_secret: 's3cr3t',
        scopes: ['a', 'b'],
        subject_token_type: 'urn:ietf:params:oauth:token-type:id_token',
        header_strategy: 'custom',
        external_token_header_name: 'X-Up',
      },
    });
  });

  it('a missing client secret is an error naming the field and Secret', async (t) => {
    const read = await reader(t, {});
    await assert.rejects(
      buildRunConfigAuth(resource(tokenExchange({ clientSecretRef: ref('nope', 'k') })), read),
      /spec\.tokenExchange\.clientSecretRef: Secret team-a\/nope with key "k" cannot be read/,
    );
  });

  it('000 aws_sts_config with schema defaults applied', async (t) => {
    const read = await reader(t, {});
    const out = await buildRunConfigAuth(
      resource(awsSts({ roleMappings: [{ roleArn: ROLE_ARN, claim: 'admins', priority: 1 }] })),
      read,
    );
    assert.deepEqual(out.runConfig['aws_sts_config'], {
      region: 'us-east-1',
      role_claim: 'groups',
      role_mappings: [{ role_arn: ROLE_ARN, claim: 'admins', priority: 1 }],
      service: 'aws-mcp',
      session_duration: 3600,
      session_name_claim: 'sub',
    });
  });

  it('000 header_forward and upstream_swap_config; bearer token as a mounted file', async (t) => {
    const read = await reader(t, {});
    const hi = await buildRunConfigAuth(
      resource({
        type: 'headerInjection',
        headerInjection: { headerName: 'X-Api-Key', valueSecretRef: ref('k', 'v') },
      }),
      read,
    );
    assert.deepEqual(hi.runConfig, {
      header_forward: { add_headers_from_secret: { 'X-Api-Key': 'SKEP_HEADER_X_API_KEY' } },
    });
    assert.deepEqual(hi.env, [{ name: 'SKEP_HEADER_X_API_KEY', secretRef: ref('k', 'v') }]);
    const ui = await buildRunConfigAuth(
      resource({ type: 'upstreamInject', upstreamInject: { providerName: 'github' } }),
      read,
    );
    assert.deepEqual(ui.runConfig, {
      upstream_swap_config: { provider_name: 'github', header_strategy: 'replace' },
    });
    const bt = await buildRunConfigAuth(
      resource({ type: 'bearerToken', bearerToken: { tokenSecretRef: ref('tok', 'token') } }),
      read,
    );
    assert.deepEqual(bt.runConfig, {
      remote_auth_config: { bearer_token_file: '/etc/skep/extauth/bearer-token' },
    });
    assert.deepEqual(bt.files, [{ path: '/etc/skep/extauth/bearer-token', secretRef: ref('tok', 'token') }]);
    const un = await buildRunConfigAuth(resource({ type: 'unauthenticated' }), read);
    assert.deepEqual(un, { runConfig: {}, env: [], files: [] });
  });

  it('000 embedded_auth_server_config: files and env-var references, redis sentinel service, lifespan defaults', async (t) => {
    const read = await reader(t, { hmac: { current: 'h'.repeat(40) } });
    const out = await buildRunConfigAuth(
      resource(
        embedded({
          hmacSecretRefs: [ref('hmac', 'current'), ref('hmac', 'old')],
          signingKeySecretRefs: [ref('keys', 'k0'), ref('keys', 'k1')],
          tokenLifespans: { accessTokenLifespan: '30m' },
          storage: {
            type: 'redis',
            redis: {
              aclUserConfig: {
                passwordSecretRef: ref('redis', 'password'),
                usernameSecretRef: ref('redis', 'user'),
              },
              sentinelConfig: { masterName: 'mymaster', sentinelService: { name: 'sentinel' } },
              sentinelTls: { caCertSecretRef: ref('ca', 'ca.crt') },
            },
          },
          upstreamProviders: [
            oidcProvider('corp', { clientSecretRef: ref('corp', 'secret') }),
            oauth2Provider('gh', {
              clientId: '',
              dcrConfig: {
                registrationEndpoint: 'https://gh.example.com/register',
                initialAccessTokenRef: ref('dcr', 't'),
              },
              tokenResponseMapping: { accessTokenPath: 'data.token' },
            }),
          ],
        }),
      ),
      read,
    );
    const eas = out.runConfig['embedded_auth_server_config'] as Record<string, unknown>;
    assert.equal(eas['issuer'], 'https://auth.example.com');
    assert.deepEqual(eas['hmac_secret_files'], [
      '/etc/skep/authserver/hmac/hmac-0',
      '/etc/skep/authserver/hmac/hmac-1',
    ]);
    assert.deepEqual(eas['signing_key_config'], {
      key_dir: '/etc/skep/authserver/keys',
      signing_key_file: 'key-0.pem',
      fallback_key_files: ['key-1.pem'],
    });
    assert.deepEqual(eas['token_lifespans'], {
      access_token_lifespan: '30m',
      auth_code_lifespan: '10m',
      refresh_token_lifespan: '168h',
    });
    assert.deepEqual(eas['storage'], {
      type: 'redis',
      redis_config: {
        auth_type: 'aclUser',
        sentinel_config: { master_name: 'mymaster', db: 0, sentinel_addrs: ['sentinel.team-a.svc:26379'] },
        acl_user_config: {
          username_env_var: 'SKEP_AUTH_SERVER_REDIS_USERNAME',
          password_env_var: 'SKEP_AUTH_SERVER_REDIS_PASSWORD',
        },
        dial_timeout: '5s',
        read_timeout: '3s',
        write_timeout: '3s',
        sentinel_tls: { ca_cert_file: '/etc/skep/authserver/redis-tls/sentinel-ca.crt' },
      },
    });
    const [corp, gh] = eas['upstreams'] as Array<Record<string, Record<string, unknown>>>;
    assert.deepEqual(corp!['oidc_config'], {
      issuer_url: 'https://login.example.com',
      client_id: 'skep',
      client_secret_env_var: 'SKEP_UPSTREAM_CLIENT_SECRET_CORP',
      scopes: ['openid', 'offline_access'],
    });
    assert.deepEqual(gh!['oauth2_config']!['dcr_config'], {
      registration_endpoint: 'https://gh.example.com/register',
      initial_access_token_env_var: 'SKEP_UPSTREAM_DCR_INITIAL_ACCESS_TOKEN_GH',
    });
    assert.equal(gh!['oauth2_config']!['client_id'], undefined);
    assert.deepEqual(out.runConfig['upstream_swap_config'], {
      provider_name: 'corp',
      header_strategy: 'replace',
    });
    assert.deepEqual(out.env.map((e) => e.name).sort(), [
      'SKEP_AUTH_SERVER_REDIS_PASSWORD',
      'SKEP_AUTH_SERVER_REDIS_USERNAME',
      'SKEP_UPSTREAM_CLIENT_SECRET_CORP',
      'SKEP_UPSTREAM_DCR_INITIAL_ACCESS_TOKEN_GH',
    ]);
    assert.equal(out.files.length, 5);
    assert.doesNotMatch(
      JSON.stringify(out),
      /hhhh/,
      'the HMAC value itself is never copied into the run config',
    );
  });

  it('Limits: a short current HMAC secret read through the API refuses the mapping', async (t) => {
    const read = await reader(t, { hmac: { current: 'short' } });
    await assert.rejects(
      buildRunConfigAuth(resource(embedded({ hmacSecretRefs: [ref('hmac', 'current')] })), read),
      /hmacSecretRefs\[0\]: .*at least 32 bytes/,
    );
  });
});
