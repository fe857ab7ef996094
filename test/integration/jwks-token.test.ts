/**
 * The run configuration's top-level `jwks_auth_token_file` (the reference's older name for
 * `oidc_config.authTokenFile`), through a real runner (in this process) over server-everything
 * on stdio: the issuer's discovery document and JWKS are served only to a caller presenting the
 * current bearer token (RFC 6750 §2.1), as a Kubernetes API server serves them to a projected
 * service-account token. The runner reads the file on every fetch, so a rotated token is used
 * without a restart; the token is never part of what a client gets back. Import refuses the
 * field where it would have no effect.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { generateKeyPair, SignJWT } from 'jose';
import { buildPipeline } from '../../src/dataplane/pipeline/index.js';
import { isSkepError, silentLogger } from '../../src/shared/index.js';
import { parseRunConfig } from '../../src/workloads/index.js';
import { startGuardedIssuer } from '../helpers/guarded-issuer.js';
import { lab } from './vmcp/helpers.js';
import { EVERYTHING_ENTRY } from './workloads/helpers.js';

const AUDIENCE = 'jwks-token-test';

function tokenFile(t: TestContext, content: string): { path: string; write(content: string): void } {
  const dir = mkdtempSync(join(tmpdir(), 'skep-jwks-token-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'token');
  writeFileSync(path, content);
  return { path, write: (c) => writeFileSync(path, c) };
}

const everything = (name: string, extra: Record<string, unknown>) => ({
  schema_version: 'v0.1.0',
  name,
  image: `cmd://${process.execPath}`,
  cmd_args: [EVERYTHING_ENTRY, 'stdio'],
  transport: 'stdio',
  ...extra,
});

/** An MCP `initialize` with `authorization`: the HTTP status and the body's text. */
async function initialize(url: string, authorization: string): Promise<{ status: number; text: string }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: {
      authorization,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: {
        protocolVersion: '2025-06-18',
        capabilities: {},
        clientInfo: { name: 'jwks-token-test', version: '1' },
      },
    }),
  });
  const text = await res.text();
  return { status: res.status, text };
}

test(
  'jwks_auth_token_file: discovery and the JWKS are fetched with the file’s token, re-read on every fetch (rotation without restart)',
  { timeout: 120_000 },
  async (t) => {
    const idp = await startGuardedIssuer(t, { acceptedToken: 'fresh-token' });
    const file = tokenFile(t, 'stale-token\n');
    const l = lab(t);
    await l.manager.createFromConfig(
      everything('guarded', {
        oidc_config: { issuer: idp.issuer, audience: AUDIENCE },
        jwks_auth_token_file: file.path,
      }),
    );
    await l.run('guarded');
    const url = l.url('guarded', '/mcp');
    const jwt = `Bearer ${await idp.sign({ sub: 'alice', aud: AUDIENCE })}`;

    // The file holds a token the issuer refuses: no key, so even a valid JWT is refused.
    const refused = await initialize(url, jwt);
    assert.equal(refused.status, 401);
    assert.ok(idp.seen.length >= 1, 'the issuer was asked');
    assert.ok(
      idp.seen.every((h): boolean => h === 'Bearer stale-token'),
      `every request carried the file’s (trimmed) token: ${idp.seen.join(', ')}`,
    );
    const before = idp.seen.length;
    assert.ok(!refused.text.includes('stale-token'), 'the token is not in the answer');

    // The token is rotated in place (a projected service-account token): the next fetch uses it.
    file.write('fresh-token');
    const accepted = await initialize(url, jwt);
    assert.equal(accepted.status, 200, accepted.text);
    assert.match(accepted.text, /"serverInfo"/);
    const after = idp.seen.slice(before);
    assert.ok(after.length >= 2, 'discovery, then the JWKS');
    assert.ok(
      after.every((h): boolean => h === 'Bearer fresh-token'),
      `every later request carried the new token: ${after.join(', ')}`,
    );

    // A token signed by someone else is still refused (the key set is the issuer's).
    const { privateKey } = await generateKeyPair('RS256');
    const forged = await new SignJWT({ sub: 'mallory' })
      .setProtectedHeader({ alg: 'RS256', kid: idp.kid })
      .setIssuer(idp.issuer)
      .setAudience(AUDIENCE)
      .setExpirationTime('5m')
      .sign(privateKey);
    assert.equal((await initialize(url, `Bearer ${forged}`)).status, 401);
  },
);

test('jwks_auth_token_file: accepted on import beside the same oidc_config.authTokenFile; refused by name where it would do nothing', async (t) => {
  const l = lab(t);
  const oidc = { issuer: 'https://idp.example.com', audience: AUDIENCE };
  await l.manager.createFromConfig(
    everything('same-file', {
      oidc_config: { ...oidc, authTokenFile: '/var/run/token' },
      jwks_auth_token_file: '/var/run/token',
    }),
  );
  assert.equal(l.manager.rows.get('same-file')?.config.jwks_auth_token_file, '/var/run/token');
  for (const [extra, message] of [
    [
      {},
      /^jwks_auth_token_file is not supported without oidc_config\.issuer or oidc_config\.jwksurl: .*remove it/,
    ],
    [
      { oidc_config: { introspectionURL: 'https://idp.example.com/introspect' } },
      /^jwks_auth_token_file is not supported without oidc_config\.issuer or oidc_config\.jwksurl/,
    ],
    [
      { oidc_config: { ...oidc, authTokenFile: '/var/run/other' } },
      /^jwks_auth_token_file is not supported when oidc_config\.authTokenFile names another file: .*keep one/,
    ],
  ] as const) {
    await assert.rejects(
      l.manager.createFromConfig(everything('refused', { ...extra, jwks_auth_token_file: '/var/run/token' })),
      (err) =>
        isSkepError(err) &&
        err.code === 'unsupported_field' &&
        err.status === 400 &&
        message.test(err.message),
      JSON.stringify(extra),
    );
  }
  assert.equal(l.manager.rows.get('refused'), undefined, 'a refused import stores nothing');
});

test('jwks_auth_token_file: a file that cannot be read is a start error naming the field and the path', async () => {
  const config = parseRunConfig(
    everything('missing', {
      oidc_config: { issuer: 'https://idp.example.com', audience: AUDIENCE },
      jwks_auth_token_file: '/nonexistent/skep-jwks-token',
    }),
  );
  await assert.rejects(
    buildPipeline(config, { logger: silentLogger, secretLookup: async () => undefined }),
    (err) =>
      isSkepError(err) &&
      err.code === 'invalid_config' &&
      /^jwks_auth_token_file: cannot read \/nonexistent\/skep-jwks-token \(ENOENT\)$/.test(err.message),
  );
});
