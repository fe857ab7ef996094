/**
 * The OAuth client to a remote MCP server (`remote_auth_config`), end to end: the remote
 * server (MCP SDK) demands a token for itself and publishes RFC 9728 metadata naming
 * oidc-provider; Skep discovers it (RFC 9728 → RFC 8414), registers a client (RFC 7591),
 * runs authorization code + PKCE with an RFC 8707 resource — the login pages are driven over
 * HTTP as a browser would — keeps the registration and refresh token in the (encrypted)
 * secrets store, and refreshes before expiry.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { remoteSecretNames } from '../../../src/dataplane/middleware/auth/remote-oauth.js';
import { testApp } from '../../helpers/api.js';
import { browserLogin } from '../authserver/harness.js';
import {
  captureLogs,
  connectClient,
  serveThroughProxy,
  startIdp,
  startRemoteMcp,
  textOf,
} from './harness.js';

/** Plays the user: follows the login URL through the provider's pages, then hits the callback. */
async function loginOverHttp(url: string): Promise<void> {
  const redirect = new URL(url).searchParams.get('redirect_uri') as string;
  const callback = await browserLogin(url, redirect, 'alice');
  const res = await fetch(callback);
  assert.equal(res.status, 200, await res.text());
}

test(
  'remote OAuth: RFC 9728 → RFC 8414 discovery, DCR, code + PKCE login, token for the remote resource, refresh before expiry, secrets in the secrets store',
  {
    timeout: 120_000,
  },
  async (t) => {
    const idp = await startIdp(t);
    const remote = await startRemoteMcp(t);
    remote.resourceMetadata = { resource: remote.url, authorization_servers: [idp.issuer] };
    remote.authorize = async (seen) => {
      const token = (seen.headers['authorization'] ?? '').replace(/^Bearer /, '');
      try {
        await idp.verify(token, remote.url);
        return true;
      } catch {
        return false;
      }
    };
    const { ctx } = await testApp(t);
    await ctx.secrets.setup({ provider_type: 'encrypted', password: 'secrets-password-for-tests' });
    const { logger, lines } = captureLogs();
    const runConfig = {
      remote_auth_config: {
        scopes: ['openid', 'offline_access', 'mcp:tools'],
        oauth_params: { prompt: 'consent' },
      },
    };
    let logins = 0;
    let offsetMs = 0;
    const served = await serveThroughProxy(t, remote, runConfig, {
      logger,
      secrets: ctx.secrets,
      now: () => Date.now() + offsetMs,
      openUrl: async (url) => {
        logins++;
        const u = new URL(url);
        assert.equal(u.searchParams.get('code_challenge_method'), 'S256');
        assert.equal(
          u.searchParams.get('resource'),
          remote.url,
          'RFC 8707 resource from the RFC 9728 metadata',
        );
        await loginOverHttp(url);
      },
    });
    assert.equal(logins, 1);
    assert.deepEqual(served.chain.names, ['remote-auth']);

    const client = await connectClient(t, served.proxy.url);
    const first = textOf(await client.callTool({ name: 'whoami', arguments: {} })).slice(7);
    const claims = await idp.verify(first, remote.url);
    assert.equal(claims['sub'], 'alice');

    // Registration and refresh token live in the secrets store, not in the run configuration.
    const names = remoteSecretNames('remote-auth-test');
    const registration = JSON.parse((await ctx.secrets.get(names.client)) ?? '{}') as { client_id?: string };
    assert.ok(registration.client_id);
    const refreshToken = await ctx.secrets.get(names.refreshToken);
    assert.ok(refreshToken);
    assert.ok(!JSON.stringify(served.config).includes(registration.client_id));

    // 11 minutes later (tokens live 10): the next request refreshes first.
    offsetMs = 11 * 60_000;
    const second = textOf(await client.callTool({ name: 'whoami', arguments: {} })).slice(7);
    assert.notEqual(second, first);
    await idp.verify(second, remote.url);
    assert.equal(logins, 1, 'no new login for a refresh');

    // A restarted workload resumes from the stored refresh token without a login.
    const restarted = await serveThroughProxy(t, remote, runConfig, {
      logger,
      secrets: ctx.secrets,
      openUrl: () => {
        throw new Error('a login was asked for although a refresh token is stored');
      },
    });
    const again = await connectClient(t, restarted.proxy.url);
    await idp.verify(textOf(await again.callTool({ name: 'whoami', arguments: {} })).slice(7), remote.url);

    const log = lines.join('');
    for (const secret of [first, second, refreshToken]) assert.ok(!log.includes(secret), 'token in the logs');
  },
);

test(
  'remote_auth_config.bearer_token_file: the file token is sent; an unreadable file is an invalid_config naming the path',
  {
    timeout: 30_000,
  },
  async (t) => {
    const { mkdtempSync, writeFileSync, rmSync } = await import('node:fs');
    const { join } = await import('node:path');
    const { tmpdir } = await import('node:os');
    const dir = mkdtempSync(join(tmpdir(), 'skep-bearer-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, 'token');
    writeFileSync(file, 'file-bearer-token-77\n', { mode: 0o600 });
    const remote = await startRemoteMcp(t);
    const { logger } = captureLogs();
    const served = await serveThroughProxy(
      t,
      remote,
      { remote_auth_config: { bearer_token_file: file } },
      { logger },
    );
    const client = await connectClient(t, served.proxy.url);
    assert.equal(
      textOf(await client.callTool({ name: 'whoami', arguments: {} })),
      'Bearer file-bearer-token-77',
    );
    await assert.rejects(
      serveThroughProxy(
        t,
        remote,
        { remote_auth_config: { bearer_token_file: join(dir, 'missing') } },
        { logger },
      ),
      (err: Error & { code?: string }) => err.code === 'invalid_config' && err.message.includes('missing'),
    );
  },
);
