/**
 * The OAuth client's requests (registration, authorization, grants) against a fake `fetch`
 * (no network): what is sent, and how answers and refusals come back.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import type { AuthorizationServer } from 'oauth4webapi';
import {
  authorizationCodeGrant,
  authorizationRequest,
  checkAuthorizationResponse,
  type FetchLike,
  OAuthResponseError,
  refreshGrant,
  registerClient,
  TOKEN_EXCHANGE_GRANT,
  tokenExchangeGrant,
} from '../../../../src/protocol/oauth/index.js';

interface Sent {
  url: string;
  method: string;
  headers: Headers;
  body: string;
}

/** A fetch that records the request and answers `status` with `body` as JSON. */
function answering(status: number, body: unknown): { fetch: FetchLike; sent: Sent[] } {
  const sent: Sent[] = [];
  const fetchFn = async (input: Parameters<FetchLike>[0], init?: RequestInit) => {
    sent.push({
      url: String(input),
      method: init?.method ?? 'GET',
      headers: new Headers(init?.headers),
      body: init?.body === undefined || init.body === null ? '' : String(init.body),
    });
    return new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
  };
  return { fetch: fetchFn, sent };
}

const AS: AuthorizationServer = {
  issuer: 'https://as.example.com',
  authorization_endpoint: 'https://as.example.com/authorize',
  token_endpoint: 'https://as.example.com/token',
  registration_endpoint: 'https://as.example.com/register',
};
const TOKENS = { access_token: 'at-1', token_type: 'Bearer', expires_in: 600, refresh_token: 'rt-1' };

test('RFC 7636 §4.2: the authorization request carries an S256 challenge of the verifier; protocol parameters win over extra ones', async () => {
  const request = await authorizationRequest(
    AS.authorization_endpoint as string,
    'client-1',
    'http://127.0.0.1:9/callback',
    {
      extra: { prompt: 'consent', response_type: 'token', state: 'forged' },
      params: { resource: 'https://mcp.example.com/mcp', scope: 'openid' },
    },
  );
  const p = request.url.searchParams;
  assert.equal(p.get('prompt'), 'consent');
  assert.equal(p.get('response_type'), 'code');
  assert.equal(p.get('state'), request.state);
  assert.notEqual(request.state, 'forged');
  assert.equal(p.get('code_challenge_method'), 'S256');
  assert.equal(
    p.get('code_challenge'),
    createHash('sha256').update(request.codeVerifier).digest('base64url'),
  );
  assert.equal(p.get('resource'), 'https://mcp.example.com/mcp');
  assert.equal(p.get('client_id'), 'client-1');
});

test('RFC 6749 §10.12 / RFC 9207: the callback is checked for state, issuer, error and code', () => {
  const checkFor = (issuer: string | undefined, query: string) =>
    checkAuthorizationResponse(issuer, 'client-1', new URLSearchParams(query), 'st');
  const check = (query: string) => checkFor(AS.issuer, query);
  assert.deepEqual(check('state=other&code=c'), { kind: 'invalid', problem: 'state mismatch' });
  assert.deepEqual(check('code=c'), { kind: 'invalid', problem: 'state mismatch' });
  assert.deepEqual(check('state=st&code=c&iss=https://evil.example'), {
    kind: 'invalid',
    problem: 'issuer mismatch',
  });
  assert.equal(
    checkFor(undefined, 'state=st&code=c&iss=https://evil.example').kind,
    'code',
    'no issuer known',
  );
  assert.deepEqual(check('state=st&error=access_denied'), { kind: 'error', error: 'access_denied' });
  assert.deepEqual(check('state=st'), { kind: 'invalid', problem: 'no code' });
  const ok = check(`state=st&code=c&iss=${AS.issuer}`);
  assert.equal(ok.kind, 'code');
});

test('RFC 6749 §4.1.3: the code grant sends the verifier, the redirect URI and the RFC 8707 resource; a public client names itself', async () => {
  const callback = checkAuthorizationResponse(
    AS.issuer,
    'client-1',
    new URLSearchParams('state=st&code=the-code'),
    'st',
  );
  assert.equal(callback.kind, 'code');
  if (callback.kind !== 'code') return;
  const { fetch, sent } = answering(200, { ...TOKENS, id_token: 'not.a.jwt' });
  const tokens = await authorizationCodeGrant(
    AS,
    { clientId: 'client-1' },
    callback.parameters,
    'http://127.0.0.1:9/callback',
    'verifier-123',
    { resource: 'https://mcp.example.com/mcp' },
    fetch,
  );
  assert.deepEqual(
    tokens,
    { accessToken: 'at-1', expiresIn: 600, refreshToken: 'rt-1' },
    'the ID token is not used',
  );
  const form = new URLSearchParams(sent[0]?.body);
  assert.equal(sent[0]?.url, AS.token_endpoint);
  assert.equal(form.get('grant_type'), 'authorization_code');
  assert.equal(form.get('code'), 'the-code');
  assert.equal(form.get('code_verifier'), 'verifier-123');
  assert.equal(form.get('redirect_uri'), 'http://127.0.0.1:9/callback');
  assert.equal(form.get('resource'), 'https://mcp.example.com/mcp');
  assert.equal(form.get('client_id'), 'client-1');
  assert.equal(sent[0]?.headers.get('authorization'), null);
});

test('RFC 6749 §2.3.1: a confidential client refreshes with Basic authentication', async () => {
  const { fetch, sent } = answering(200, TOKENS);
  await refreshGrant(AS, { clientId: 'skep-client', clientSecret: 'a b:c' }, 'rt-0', {}, fetch);
  assert.equal(
    sent[0]?.headers.get('authorization'),
    `Basic ${Buffer.from('skep-client:a+b%3Ac').toString('base64')}`,
    'form-urlencoded, "-" kept as it is',
  );
  const form = new URLSearchParams(sent[0]?.body);
  assert.equal(form.get('grant_type'), 'refresh_token');
  assert.equal(form.get('refresh_token'), 'rt-0');
  assert.equal(form.get('client_id'), null);
});

test('RFC 6749 §5.2: a refusal is an OAuthResponseError with the status and the error code', async () => {
  const { fetch } = answering(400, { error: 'invalid_grant' });
  await assert.rejects(refreshGrant(AS, { clientId: 'c' }, 'rt-0', {}, fetch), (err: unknown) => {
    assert.ok(err instanceof OAuthResponseError);
    assert.equal(err.status, 400);
    assert.equal(err.error, 'invalid_grant');
    assert.equal(err.field, undefined);
    assert.equal(err.code, 'unauthorized', 'a refused grant is a refusal of credentials');
    return true;
  });
  for (const [status, body, code] of [
    [401, {}, 'unauthorized'],
    [400, { error: 'invalid_client' }, 'unauthorized'],
    [400, { error: 'invalid_request' }, 'bad_gateway'],
    [429, {}, 'rate_limited'],
    [503, {}, 'bad_gateway'],
  ] as const) {
    const answer = answering(status, body);
    await assert.rejects(refreshGrant(AS, { clientId: 'c' }, 'rt-0', {}, answer.fetch), { status, code });
  }
});

test('RFC 6749 §5.1: a success without access_token names the missing field', async () => {
  const { fetch } = answering(200, { token_type: 'Bearer' });
  await assert.rejects(refreshGrant(AS, { clientId: 'c' }, 'rt-0', {}, fetch), {
    field: 'access_token',
    status: 200,
    code: 'bad_gateway',
  });
});

test('RFC 8693 §2.1: token exchange sends the grant and its parameters; without a client, no client is named', async () => {
  const { fetch, sent } = answering(200, {
    access_token: 'exchanged',
    token_type: 'Bearer',
    issued_token_type: 'urn:ietf:params:oauth:token-type:access_token',
  });
  const answer = await tokenExchangeGrant(
    'http://127.0.0.1:9/token',
    undefined,
    {
      subject_token: 'subject',
      subject_token_type: 'urn:ietf:params:oauth:token-type:access_token',
      audience: 'api',
    },
    fetch,
  );
  assert.equal(answer.accessToken, 'exchanged');
  assert.equal(answer.issuedTokenType, 'urn:ietf:params:oauth:token-type:access_token');
  const form = new URLSearchParams(sent[0]?.body);
  assert.equal(form.get('grant_type'), TOKEN_EXCHANGE_GRANT);
  assert.equal(form.get('subject_token'), 'subject');
  assert.equal(form.get('audience'), 'api');
  assert.equal(form.get('client_id'), null);
  assert.equal(sent[0]?.headers.get('authorization'), null);
});

test('RFC 7591 §3.1: registration posts the client metadata; a 200 is taken like a 201', async () => {
  const { fetch, sent } = answering(200, { client_id: 'registered' });
  const client = await registerClient(AS, { redirect_uris: ['http://127.0.0.1:9/callback'] }, fetch);
  assert.deepEqual(client, { clientId: 'registered' });
  assert.equal(sent[0]?.url, AS.registration_endpoint);
  assert.deepEqual(JSON.parse(sent[0]?.body ?? '{}'), { redirect_uris: ['http://127.0.0.1:9/callback'] });
  const refused = answering(400, { error: 'invalid_redirect_uri' });
  await assert.rejects(registerClient(AS, {}, refused.fetch), { status: 400, error: 'invalid_redirect_uri' });
});
