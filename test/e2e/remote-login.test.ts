/**
 * A remote MCP server behind OAuth, run through the real CLI: `skep run --from-config` with
 * `remote_auth_config` starts a detached runner, which discovers the authorization server
 * (oidc-provider, RFC 9728 → RFC 8414), registers a client and publishes the login URL in the
 * workload's status; `skep run` prints it and returns. The test then plays the user in the
 * browser (the provider's pages over HTTP), and the workload runs and proxies with the token.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { promisify } from 'node:util';
import { AUTHORIZATION_PENDING, cliEntry } from '../../src/workloads/index.js';
import {
  closeServer,
  connectClient,
  type Idp,
  listen,
  startIdp,
  startRemoteMcp,
  textOf,
} from '../integration/auth/harness.js';
import { browserLogin } from '../integration/authserver/harness.js';
import { recordingOpener } from '../helpers/opener.js';
import { waitForStatus, workloadHome } from '../integration/workloads/helpers.js';

const run = promisify(execFile);

/**
 * An IdP, a remote MCP server that names it in its RFC 9728 metadata and accepts what
 * `authorize` accepts, a Skep home with the encrypted secrets store (the runner keeps the
 * client registration and refresh token there), and a run-configuration file for the remote.
 * `skep(...)` runs the real CLI on that home.
 */
async function remoteSetup(
  t: TestContext,
  name: string,
  remoteAuthConfig: Record<string, unknown>,
  authorize: (idp: Idp, authorization: string, resource: string) => Promise<boolean>,
) {
  const idp = await startIdp(t);
  const remote = await startRemoteMcp(t);
  remote.resourceMetadata = { resource: remote.url, authorization_servers: [idp.issuer] };
  remote.authorize = (seen) => authorize(idp, seen.headers['authorization'] ?? '', remote.url);
  const { ctx, home } = workloadHome(t);
  await ctx.secrets.setup({ provider_type: 'encrypted' });
  const configFile = join(home.dir, 'remote.json');
  writeFileSync(
    configFile,
    JSON.stringify({
      name,
      remote_url: remote.url,
      transport: 'streamable-http',
      remote_auth_config: { ...remoteAuthConfig, skip_browser: true },
    }),
  );
  const skep = (...args: string[]) =>
    run(process.execPath, ['--import', 'tsx', cliEntry(), ...args], {
      env: { ...home.env, SKEP_LOG_LEVEL: 'silent' },
      timeout: 120_000,
    });
  return { idp, remote, ctx, configFile, skep };
}

test(
  'skep run of an OAuth-protected remote server prints the login URL; after the login it proxies with the token',
  { timeout: 180_000 },
  async (t) => {
    const { idp, remote, ctx, configFile, skep } = await remoteSetup(
      t,
      'remote-login',
      { scopes: ['openid', 'offline_access', 'mcp:tools'], oauth_params: { prompt: 'consent' } },
      async (idp, authorization, resource) => {
        try {
          await idp.verify(authorization.replace(/^Bearer /, ''), resource);
          return true;
        } catch {
          return false;
        }
      },
    );

    // Human output: the URL on its own line, and no claim that the workload runs yet.
    const human = await skep('run', '--from-config', configFile);
    const printed = /open:\n {2}(\S+)\n/.exec(human.stdout)?.[1];
    assert.ok(printed !== undefined, human.stdout);
    assert.doesNotMatch(human.stdout, /started/);
    const authorize = new URL(printed);
    assert.equal(authorize.origin, idp.issuer);
    assert.equal(authorize.searchParams.get('code_challenge_method'), 'S256');
    assert.equal(authorize.searchParams.get('resource'), remote.url);

    // The status says the same, for `skep list` and the API.
    const status = ctx.workloads.status('remote-login');
    assert.equal(status.status, 'starting');
    assert.equal(status.status_context, `${AUTHORIZATION_PENDING}${printed}`);

    // The user logs in; the provider redirects to the runner's loopback callback.
    const callback = await browserLogin(printed, authorize.searchParams.get('redirect_uri') as string);
    const done = await fetch(callback);
    assert.equal(done.status, 200, await done.text());
    await waitForStatus(ctx, 'remote-login', 'running');
    assert.equal(ctx.workloads.status('remote-login').status_context, '');

    const detail = ctx.workloads.list({ all: true }).find((w) => w.name === 'remote-login');
    assert.ok(detail?.url !== undefined);
    // The working URL, with the workload's access token.
    assert.match(detail.url, /\/mcp\?skep_token=[0-9a-f]{64}$/);
    const client = await connectClient(t, detail.url);
    const whoami = textOf(await client.callTool({ name: 'whoami', arguments: {} }));
    assert.match(whoami, /^Bearer \S+/);
    await idp.verify(whoami.slice(7), remote.url);
  },
);

test(
  'skep run --json of a remote server that needs a login names the URL in authorization_url',
  {
    timeout: 180_000,
  },
  async (t) => {
    const { idp, configFile, skep } = await remoteSetup(
      t,
      'remote-json',
      { scopes: ['openid'] },
      async () => false,
    );
    const { stdout } = await skep('run', '--from-config', configFile, '--json');
    const out = JSON.parse(stdout) as { name: string; port: number; url: string; authorization_url?: string };
    assert.equal(out.name, 'remote-json');
    assert.ok(out.authorization_url?.startsWith(`${idp.issuer}/`), stdout);
    assert.match(out.url, new RegExp(`^http://127\\.0\\.0\\.1:${out.port}/mcp\\?skep_token=[0-9a-f]{64}$`));
  },
);

test(
  'CVE-2025-6514 class: a remote server whose OAuth metadata names a file: authorization endpoint fails with a clear status; the opener never runs',
  { timeout: 180_000 },
  async (t) => {
    // The remote server controls its RFC 9728 and RFC 8414 metadata.
    let origin = '';
    const hostile = createServer((req, res) => {
      const path = (req.url ?? '/').split('?')[0] ?? '/';
      req.resume();
      const json = (body: unknown) =>
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      if (path.startsWith('/.well-known/oauth-protected-resource'))
        json({ resource: `${origin}/mcp`, authorization_servers: [origin] });
      else if (path === '/.well-known/oauth-authorization-server')
        json({
          issuer: origin,
          authorization_endpoint: 'file:///usr/bin/xcalc',
          token_endpoint: `${origin}/token`,
          registration_endpoint: `${origin}/register`,
        });
      else res.writeHead(401, { 'www-authenticate': 'Bearer' }).end();
    });
    origin = await listen(hostile);
    t.after(() => closeServer(hostile));
    const { ctx, home } = workloadHome(t);
    await ctx.secrets.setup({ provider_type: 'encrypted' });
    const configFile = join(home.dir, 'hostile.json');
    writeFileSync(
      configFile,
      JSON.stringify({
        name: 'hostile-remote',
        remote_url: `${origin}/mcp`,
        transport: 'streamable-http',
        remote_auth_config: { scopes: ['openid'] },
      }),
    );
    // A display-less machine would open nothing anyway: the recording opener always runs.
    const opener = recordingOpener(t);
    const result = await run(
      process.execPath,
      // Kept after its failed start, so that its status can be read.
      ['--import', 'tsx', cliEntry(), 'run', '--from-config', configFile, '--keep-on-failure'],
      {
        env: { ...home.env, ...opener.env, SKEP_LOG_LEVEL: 'silent' },
        timeout: 120_000,
      },
    ).catch((err: { code?: number; stdout?: string; stderr?: string }) => err);
    const output = `${String(result.stdout)}${String(result.stderr)}`;
    assert.match(output, /authorization endpoint "file:\/\/\/usr\/bin\/xcalc", which is refused/, output);
    await waitForStatus(ctx, 'hostile-remote', 'error');
    assert.match(ctx.workloads.status('hostile-remote').status_context ?? '', /refused: its scheme is file:/);
    assert.deepEqual(opener.calls(), [], 'nothing was handed to the opener');
  },
);
