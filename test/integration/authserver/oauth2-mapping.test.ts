/**
 * An `oauth2` upstream whose token response is non-standard (fields nested under `data`),
 * read through `token_response_mapping`, and without `userinfo`: synthesis mode, where the
 * subject is derived from the access token. No real provider with such a response runs
 * here, so the test stands one up: a small node:http server that plays that provider
 * (authorize redirect with PKCE check, token and refresh endpoints).
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { decodeJwt } from 'jose';
import { syntheticSubject } from '../../../src/authserver/upstream.js';
import { authorize, callResource, mountAuthServer, refresh, registerClient, startHost } from './harness.js';

test('tokenResponseMapping + synthesis mode: nested token fields, subject tk-<sha256 prefix>', async (t) => {
  const codes = new Map<string, string>(); // code -> code_challenge
  const issued: string[] = [];
  const provider = createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname === '/authorize') {
      const code = randomBytes(8).toString('hex');
      codes.set(code, url.searchParams.get('code_challenge') ?? '');
      const back = new URL(url.searchParams.get('redirect_uri') as string);
      back.searchParams.set('code', code);
      back.searchParams.set('state', url.searchParams.get('state') as string);
      res.writeHead(302, { location: back.href });
      res.end();
      return;
    }
    let body = '';
    for await (const c of req) body += c;
    const form = new URLSearchParams(body);
    if (form.get('grant_type') === 'authorization_code') {
      const challenge = codes.get(form.get('code') ?? '');
      codes.delete(form.get('code') ?? '');
      const verifier = form.get('code_verifier') ?? '';
      if (!challenge || createHash('sha256').update(verifier).digest('base64url') !== challenge) {
        res.writeHead(400, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: 'invalid_grant' }));
        return;
      }
    } else if (form.get('refresh_token') !== 'renew-1') {
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: 'invalid_grant' }));
      return;
    }
    const token = `at-${randomBytes(8).toString('hex')}`;
    issued.push(token);
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ ok: true, data: { token, ttl: 60, renew: 'renew-1', granted: ['repo'] } }));
  });
  provider.listen(0, '127.0.0.1');
  await once(provider, 'listening');
  t.after(() => new Promise<void>((r) => provider.close(() => r())));
  const base = `http://127.0.0.1:${(provider.address() as AddressInfo).port}`;

  const host = await startHost(t);
  let skewMs = 0;
  const auth = await mountAuthServer(
    host,
    {
      issuer: host.url,
      allowed_audiences: [host.resource],
      upstreams: [
        {
          name: 'idp',
          type: 'oauth2',
          oauth2_config: {
            authorization_endpoint: `${base}/authorize`,
            token_endpoint: `${base}/token`,
            client_id: 'skep',
            scopes: ['repo'],
            token_response_mapping: {
              access_token_path: 'data.token',
              expires_in_path: 'data.ttl',
              refresh_token_path: 'data.renew',
              scope_path: 'data.granted',
            },
            insecure_allow_http: true,
          },
        },
      ],
    },
    { now: () => Date.now() + skewMs },
  );
  const session = await registerClient(host);
  const tokens = await authorize(session);
  const claims = decodeJwt(tokens.access_token);
  assert.equal(
    claims.sub,
    syntheticSubject(issued[0] as string),
    'synthesis: subject derived from the token',
  );
  assert.equal(claims['name'], undefined, 'no name in synthesis mode');
  assert.equal(claims['email'], undefined, 'no email in synthesis mode');
  const res = await callResource(host, tokens.access_token);
  assert.equal((JSON.parse(res.body) as { upstream: string }).upstream, issued[0]);

  // The mapped expiry (data.ttl = 60 s) drives the upstream refresh through the mapped refresh token.
  skewMs = 120_000;
  assert.equal(await auth.upstreamToken(String(claims['tsid']), 'idp'), issued[1]);
  skewMs = 0;
  const refreshed = await refresh(session, tokens.refresh_token);
  assert.equal(decodeJwt(refreshed.access_token).sub, claims.sub);
});
