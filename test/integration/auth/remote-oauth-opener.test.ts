/**
 * What the remote OAuth client hands the desktop's opener, with a
 * recording opener (`SKEP_BROWSER`) and real HTTP servers: the login URL reaches the opener
 * only inside a 0600 page, so no `state` or PKCE challenge is on a command line; and an
 * authorization endpoint a remote server's metadata names must be https (http on loopback),
 * or nothing is registered, fetched or opened (RFC 6749 §3.1; CVE-2025-6514: `file:` handed
 * to xdg-open runs a program).
 */
import assert from 'node:assert/strict';
import { statSync } from 'node:fs';
import { createServer } from 'node:http';
import { dirname, join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { RemoteOAuthClient } from '../../../src/dataplane/middleware/auth/remote-oauth.js';
import { tempHome } from '../../helpers/home.js';
import { recordingOpener } from '../../helpers/opener.js';
import { browserLogin } from '../authserver/harness.js';
import { captureLogs, closeServer, listen, startIdp, startRemoteMcp } from './harness.js';

/** The client reads the opener and Skep's folders from the process environment. */
function useEnvironment(t: TestContext, values: Record<string, string>): void {
  const saved = Object.fromEntries(Object.keys(values).map((k) => [k, process.env[k]]));
  Object.assign(process.env, values);
  t.after(() => {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  });
}

test(
  'RFC 9700 §4.7: the authorization URL (state, PKCE challenge) reaches the opener only inside a 0600 page; the login completes from it',
  { timeout: 120_000 },
  async (t) => {
    const home = tempHome(t);
    const opener = recordingOpener(t);
    useEnvironment(t, { SKEP_HOME: home.env['SKEP_HOME'] ?? '', ...opener.env });
    const idp = await startIdp(t);
    const remote = await startRemoteMcp(t);
    remote.resourceMetadata = { resource: remote.url, authorization_servers: [idp.issuer] };
    const { logger } = captureLogs();
    const client = new RemoteOAuthClient(
      { workload: 'opener', remoteUrl: remote.url, scopes: ['openid', 'offline_access', 'mcp:tools'] },
      { logger, secrets: undefined },
    );
    t.after(() => client.close());
    const started = client.start();
    const call = await opener.waitForCall();
    assert.equal(call.argv.length, 1);
    const page = fileURLToPath(call.argv[0] ?? '');
    assert.equal(dirname(page), join(home.config.paths.stateDir, 'open'));
    assert.equal(call.mode, 0o600);
    const url = new URL(opener.forwardsTo(call));
    assert.equal(url.origin, idp.issuer);
    const state = url.searchParams.get('state') ?? '';
    const challenge = url.searchParams.get('code_challenge') ?? '';
    assert.ok(state.length >= 16 && challenge.length >= 43);
    const argv = call.argv.join(' ');
    for (const secret of [state, challenge, 'state=', 'code_challenge', idp.issuer])
      assert.ok(!argv.includes(secret), `${secret} is not on the command line: ${argv}`);

    // The user's browser follows the page to the provider and back to the callback.
    const callback = await browserLogin(url.href, url.searchParams.get('redirect_uri') ?? '', 'alice');
    assert.equal((await fetch(callback)).status, 200);
    await started;
    assert.match(await client.accessToken(), /\S{20,}/);
    assert.equal(statSync(dirname(page)).mode & 0o777, 0o700);
  },
);

/** A remote server whose RFC 9728 and RFC 8414 metadata it controls, naming `endpoint` for authorization. */
async function hostileRemote(t: TestContext, endpoint: (origin: string) => string) {
  const hits: string[] = [];
  let origin = '';
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    hits.push(`${req.method} ${path}`);
    req.resume();
    const json = (status: number, body: unknown) =>
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    if (path.startsWith('/.well-known/oauth-protected-resource'))
      json(200, { resource: `${origin}/mcp`, authorization_servers: [origin] });
    else if (path === '/.well-known/oauth-authorization-server')
      json(200, {
        issuer: origin,
        authorization_endpoint: endpoint(origin),
        token_endpoint: `${origin}/token`,
        registration_endpoint: `${origin}/register`,
      });
    else if (path === '/register') json(201, { client_id: 'c' });
    else res.writeHead(401, { 'www-authenticate': 'Bearer' }).end();
  });
  origin = await listen(server);
  t.after(() => closeServer(server));
  return { url: `${origin}/mcp`, hits };
}

test('CVE-2025-6514 class: an authorization_endpoint of file:, javascript: or http on another host is refused before anything is registered or opened', async (t) => {
  const home = tempHome(t);
  const opener = recordingOpener(t);
  useEnvironment(t, { SKEP_HOME: home.env['SKEP_HOME'] ?? '', ...opener.env });
  const { logger } = captureLogs();
  for (const endpoint of [
    'file:///usr/bin/xcalc',
    'javascript:alert(document.domain)',
    'http://auth.example.com/authorize',
    'smb://attacker.example/share',
  ]) {
    const remote = await hostileRemote(t, () => endpoint);
    const client = new RemoteOAuthClient(
      { workload: 'hostile', remoteUrl: remote.url, loginTimeoutMs: 2_000 },
      { logger, secrets: undefined },
    );
    t.after(() => client.close());
    await assert.rejects(client.start(), (err: Error & { code?: string }) => {
      assert.equal(err.code, 'bad_gateway', endpoint);
      assert.match(err.message, /names the authorization endpoint .* which is refused/, endpoint);
      return true;
    });
    assert.ok(!remote.hits.includes('POST /register'), `${endpoint}: no client registration`);
  }
  assert.deepEqual(opener.calls(), [], 'the opener was never started');

  // A configured authorize_url is held to the same rule (a 400: the user's own setting).
  const configured = new RemoteOAuthClient(
    {
      workload: 'configured',
      remoteUrl: 'https://mcp.example.com/mcp',
      clientId: 'c',
      authorizeUrl: 'file:///etc/passwd',
      tokenUrl: 'https://auth.example.com/token',
    },
    { logger, secrets: undefined },
  );
  await assert.rejects(configured.start(), { code: 'invalid_config' });
  assert.deepEqual(opener.calls(), []);

  // The control: http on loopback is allowed (development), and reaches the opener.
  const loopback = await hostileRemote(t, (origin) => `${origin}/authorize`);
  const allowed = new RemoteOAuthClient(
    { workload: 'loopback', remoteUrl: loopback.url, loginTimeoutMs: 60_000 },
    { logger, secrets: undefined },
  );
  t.after(() => allowed.close());
  const pending = allowed.start().catch((err: Error) => err);
  const call = await opener.waitForCall();
  assert.match(opener.forwardsTo(call), /^http:\/\/127\.0\.0\.1:\d+\/authorize\?/);
  allowed.close();
  await pending;
});
