/**
 * awsSts end to end. AWS STS cannot be reached from here, so a local STS stand-in (an HTTP
 * server answering `AssumeRoleWithWebIdentity` with the documented XML) takes its place; the
 * call to it is made by the real AWS SDK client. The remote MCP server re-signs every request
 * it receives with the Smithy SigV4 signer the AWS SDK uses and compares signatures.
 */
import assert from 'node:assert/strict';
import { createHash, createHmac } from 'node:crypto';
import { createServer } from 'node:http';
import { test } from 'node:test';
import { SignatureV4 } from '@smithy/signature-v4';
import {
  captureLogs,
  closeServer,
  connectClient,
  listen,
  PROXY_AUDIENCE,
  type SeenRequest,
  serveThroughProxy,
  startIdp,
  startRemoteMcp,
} from './harness.js';

const ADMIN_ROLE = 'arn:aws:iam::123456789012:role/mcp-admin';
const ENG_ROLE = 'arn:aws:iam::123456789012:role/mcp-eng';
const CREDS = {
  accessKeyId: 'ASIATESTSTANDIN0001',
  secretAccessKey: 'stand-in-secret-access-key/0123456789abcdef',
  sessionToken: 'stand-in-session-token-FwoGZXIvYXdzEXAMPLE',
};

interface StsCall {
  action: string;
  roleArn: string;
  sessionName: string;
  token: string;
  duration: string;
}

async function startStsStandIn(t: import('node:test').TestContext) {
  const calls: StsCall[] = [];
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const form = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
    calls.push({
      action: form.get('Action') ?? '',
      roleArn: form.get('RoleArn') ?? '',
      sessionName: form.get('RoleSessionName') ?? '',
      token: form.get('WebIdentityToken') ?? '',
      duration: form.get('DurationSeconds') ?? '',
    });
    const expiration = new Date(Date.now() + 3600_000).toISOString();
    res.writeHead(200, { 'content-type': 'text/xml' });
    res.end(`<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <AssumeRoleWithWebIdentityResult>
    <Credentials>
      <AccessKeyId>${CREDS.accessKeyId}</AccessKeyId>
      <SecretAccessKey>${CREDS.secretAccessKey}</SecretAccessKey>
      <SessionToken>${CREDS.sessionToken}</SessionToken>
      <Expiration>${expiration}</Expiration>
    </Credentials>
    <SubjectFromWebIdentityToken>${form.get('RoleSessionName')}</SubjectFromWebIdentityToken>
    <AssumedRoleUser><Arn>${form.get('RoleArn')}/${form.get('RoleSessionName')}</Arn><AssumedRoleId>AROA:x</AssumedRoleId></AssumedRoleUser>
  </AssumeRoleWithWebIdentityResult>
  <ResponseMetadata><RequestId>stand-in</RequestId></ResponseMetadata>
</AssumeRoleWithWebIdentityResponse>`);
  });
  const url = await listen(server);
  t.after(() => closeServer(server));
  return { url, calls };
}

/** node:crypto behind the Smithy hash interface (the AWS SDK plugs in its own; same algorithm). */
class Sha256 {
  readonly #h;
  constructor(secret?: string | ArrayBuffer | ArrayBufferView) {
    const key =
      secret === undefined || typeof secret === 'string' ? secret : Buffer.from(secret as Uint8Array);
    this.#h = key === undefined ? createHash('sha256') : createHmac('sha256', key);
  }
  update(d: string | Uint8Array) {
    this.#h.update(d);
  }
  async digest() {
    return new Uint8Array(this.#h.digest());
  }
  reset() {}
}

/** Re-signs what the remote server received, with the SDK signer, from the signed headers only. */
async function resign(seen: SeenRequest, origin: string): Promise<string> {
  const auth = seen.headers['authorization'] ?? '';
  const signedHeaders = /SignedHeaders=([^,]+)/.exec(auth)?.[1]?.split(';') ?? [];
  const scope = /Credential=[^/]+\/\d{8}\/([^/]+)\/([^/]+)\/aws4_request/.exec(auth);
  assert.ok(scope, 'SigV4 credential scope present');
  const headers: Record<string, string> = {};
  for (const h of signedHeaders) headers[h] = seen.headers[h] ?? '';
  const amzDate = seen.headers['x-amz-date'] ?? '';
  const date = new Date(
    `${amzDate.slice(0, 4)}-${amzDate.slice(4, 6)}-${amzDate.slice(6, 8)}T${amzDate.slice(9, 11)}:${amzDate.slice(11, 13)}:${amzDate.slice(13, 15)}Z`,
  );
  const url = new URL(seen.path, origin);
  const signer = new SignatureV4({
    service: scope[2] as string,
    region: scope[1] as string,
    credentials: CREDS,
    sha256: Sha256,
    applyChecksum: false,
  });
  const signed = await signer.sign(
    {
      method: seen.method,
      protocol: 'http:',
      hostname: url.hostname,
      port: Number(url.port),
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      headers,
      body: seen.body,
    },
    { signingDate: date },
  );
  return signed.headers['authorization'] as string;
}

test(
  'awsSts: role by priority-ordered mappings, AssumeRoleWithWebIdentity (stand-in STS), SigV4 the remote server can verify, credentials cached',
  {
    timeout: 60_000,
  },
  async (t) => {
    const idp = await startIdp(t, { groups: ['eng', 'admins'] });
    const sts = await startStsStandIn(t);
    const remote = await startRemoteMcp(t);
    const { logger, lines } = captureLogs();
    const { proxy } = await serveThroughProxy(
      t,
      remote,
      {
        oidc_config: { issuer: idp.issuer, audience: PROXY_AUDIENCE, insecureAllowHTTP: true },
        aws_sts_config: {
          region: 'eu-west-1',
          service: 'aws-mcp',
          session_duration: 900,
          role_mappings: [
            { matcher: 'claims.groups.exists(g, g == "eng")', role_arn: ENG_ROLE, priority: 5 },
            { claim: 'admins', role_arn: ADMIN_ROLE, priority: 1 },
          ],
        },
      },
      { logger, stsEndpoint: sts.url },
    );
    const token = await idp.clientToken();
    const client = await connectClient(t, proxy.url, token);
    await client.listTools();
    await client.callTool({ name: 'echo', arguments: {} });

    assert.equal(sts.calls.length, 1, 'one STS call for the whole session (cache)');
    const call = sts.calls[0] as StsCall;
    assert.equal(call.action, 'AssumeRoleWithWebIdentity');
    assert.equal(call.roleArn, ADMIN_ROLE, 'priority 1 beats priority 5');
    assert.equal(call.token, token, 'the caller token is the web identity token');
    assert.equal(call.sessionName, (await idp.verify(token, PROXY_AUDIENCE))['sub']);
    assert.equal(call.duration, '900');

    assert.ok(remote.seen.length >= 3);
    for (const seen of remote.seen) {
      const auth = seen.headers['authorization'] ?? '';
      assert.match(
        auth,
        /^AWS4-HMAC-SHA256 Credential=ASIATESTSTANDIN0001\/\d{8}\/eu-west-1\/aws-mcp\/aws4_request, /,
      );
      assert.match(auth, /SignedHeaders=[^,]*host[^,]*x-amz-date;x-amz-security-token/);
      assert.equal(seen.headers['x-amz-security-token'], CREDS.sessionToken);
      assert.equal(await resign(seen, remote.origin), auth, 'the SDK signer reproduces the signature');
    }
    // A request changed in transit no longer verifies.
    const tampered = { ...(remote.seen.at(-1) as SeenRequest) };
    tampered.body = tampered.body.replace('echo', 'whoami');
    assert.notEqual(await resign(tampered, remote.origin), tampered.headers['authorization']);

    const log = lines.join('');
    for (const secret of [CREDS.secretAccessKey, CREDS.sessionToken, token]) assert.ok(!log.includes(secret));
  },
);

test(
  'awsSts: no mapping matches and no fallback → 403 and no STS call; fallback used otherwise',
  {
    timeout: 60_000,
  },
  async (t) => {
    const idp = await startIdp(t, { groups: ['visitors'] });
    const sts = await startStsStandIn(t);
    const remote = await startRemoteMcp(t);
    const { logger } = captureLogs();
    const base = {
      oidc_config: { issuer: idp.issuer, audience: PROXY_AUDIENCE, insecureAllowHTTP: true },
    };
    const strict = await serveThroughProxy(
      t,
      remote,
      {
        ...base,
        aws_sts_config: { region: 'us-east-1', role_mappings: [{ claim: 'admins', role_arn: ADMIN_ROLE }] },
      },
      { logger, stsEndpoint: sts.url },
    );
    const token = await idp.clientToken();
    const res = await fetch(`${strict.proxy.url}/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
    });
    assert.equal(res.status, 403);
    assert.equal(await res.text(), 'Failed to determine IAM role');
    assert.equal(sts.calls.length, 0);
    assert.equal(remote.seen.length, 0);

    const lenient = await serveThroughProxy(
      t,
      remote,
      {
        ...base,
        aws_sts_config: {
          region: 'us-east-1',
          fallback_role_arn: ENG_ROLE,
          role_mappings: [{ claim: 'admins', role_arn: ADMIN_ROLE }],
        },
      },
      { logger, stsEndpoint: sts.url },
    );
    const client = await connectClient(t, lenient.proxy.url, token);
    await client.listTools();
    assert.equal(sts.calls[0]?.roleArn, ENG_ROLE);
  },
);
