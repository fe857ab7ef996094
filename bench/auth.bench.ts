/**
 * Auth middleware benchmark.
 *
 * Part 1, `middleware`: the cost of each middleware's `handle()` (plus, for awssts, the SigV4
 * signing stage) on a fresh request context, in-process, mean µs per request:
 *   header-forward, header-injection, bearer-token   (fixed headers)
 *   auth            inbound RS256 JWT checked against a cached JWKS (served on loopback)
 *   tokenexchange   cache hit, and cache miss (a loopback token endpoint, distinct subjects)
 *   awssts          cache hit (+ SigV4 signing), and cache miss (AWS SDK → loopback STS stand-in)
 *
 * Part 2, `proxy`: p50/mean latency of a JSON-RPC POST through Skep's proxy to a loopback
 * HTTP upstream with each chain, against the same proxy with no middleware; `overheadMs` is
 * the difference of medians.
 *
 * The token endpoint and STS are loopback stand-ins (AWS cannot be reached here); the target
 * is a cache hit under 0.05 ms. Prints one JSON object on stdout; progress on stderr.
 */
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { Pool } from 'undici';
import { createAwsStsMiddleware, sdkAssumeRole } from '../src/dataplane/middleware/auth/aws-sts.js';
import { buildPipeline } from '../src/dataplane/pipeline/index.js';
import { createTokenExchangeMiddleware } from '../src/dataplane/middleware/auth/token-exchange.js';
import type { ProxyMiddleware, ProxyRequestContext } from '../src/dataplane/proxy/index.js';
import { newRequestContext, startProxy } from '../src/dataplane/proxy/index.js';
import { silentLogger } from '../src/shared/index.js';
import { parseRunConfig } from '../src/workloads/index.js';

const log = (m: string) => process.stderr.write(`[auth.bench] ${m}\n`);
const ITER = Number(process.env['BENCH_CALLS'] ?? 20_000);
const HTTP_CALLS = Number(process.env['BENCH_HTTP_CALLS'] ?? 3000);
const ROLE = 'arn:aws:iam::123456789012:role/bench';

async function listen(server: Server): Promise<string> {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function ctxFor(token: string | undefined, claims?: Record<string, unknown>): ProxyRequestContext {
  const { ctx } = newRequestContext({
    method: 'POST',
    path: '/mcp',
    headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
    remoteAddress: '127.0.0.1',
    body: { json: { jsonrpc: '2.0', id: 1, method: 'tools/list' } },
    serverName: 'bench',
    backendTransport: 'streamable-http',
  });
  if (token !== undefined)
    ctx.identity = { token, ...(claims ? { claims, subject: String(claims['sub']) } : {}) };
  return ctx;
}

/** Mean µs per call of `fn` over `n` calls (after a warm-up). */
async function measure(n: number, fn: (i: number) => unknown): Promise<number> {
  for (let i = 0; i < Math.min(1000, n); i++) await fn(i);
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) await fn(i);
  return Number(process.hrtime.bigint() - start) / 1000 / n;
}

const round = (x: number, d = 2) => Math.round(x * 10 ** d) / 10 ** d;

async function main() {
  const servers: Server[] = [];
  // --- loopback stand-ins: JWKS, token endpoint, STS, upstream ---
  const { privateKey, publicKey } = await generateKeyPair('RS256');
  const jwks = { keys: [{ ...(await exportJWK(publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' }] };
  const issuerServer = createServer((req, res) => {
    if (req.url === '/jwks') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(jwks));
      return;
    }
    // RFC 8693 token endpoint stand-in.
    req.resume();
    req.on('end', () =>
      res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          access_token: 'exchanged-token',
          issued_token_type: 'urn:ietf:params:oauth:token-type:access_token',
          token_type: 'Bearer',
          expires_in: 300,
        }),
      ),
    );
  });
  servers.push(issuerServer);
  const issuer = await listen(issuerServer);
  const stsServer = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const exp = new Date(Date.now() + 3600_000).toISOString();
      res
        .writeHead(200, { 'content-type': 'text/xml' })
        .end(
          `<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><AssumeRoleWithWebIdentityResult><Credentials><AccessKeyId>ASIABENCH</AccessKeyId><SecretAccessKey>secret</SecretAccessKey><SessionToken>session</SessionToken><Expiration>${exp}</Expiration></Credentials></AssumeRoleWithWebIdentityResult></AssumeRoleWithWebIdentityResponse>`,
        );
    });
  });
  servers.push(stsServer);
  const stsUrl = await listen(stsServer);
  const upstreamServer = createServer((req, res) => {
    req.resume();
    req.on('end', () =>
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"jsonrpc":"2.0","id":1,"result":{}}'),
    );
  });
  servers.push(upstreamServer);
  const upstream = await listen(upstreamServer);

  const sign = (sub: string) =>
    new SignJWT({ groups: ['eng'] })
      .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
      .setIssuer(issuer)
      .setAudience('bench')
      .setSubject(sub)
      .setIssuedAt()
      .setExpirationTime('1h')
      .sign(privateKey);
  const token = await sign('bench-user');
  const claims = { sub: 'bench-user', groups: ['eng'], exp: Math.floor(Date.now() / 1000) + 3600 };

  // --- part 1: handle() cost per middleware ---
  const middleware: Record<string, number> = {};
  const base = { name: 'bench', image: '', remote_url: `${upstream}/mcp`, transport: 'streamable-http' };
  const chainOf = async (extra: Record<string, unknown>) =>
    buildPipeline(parseRunConfig({ ...base, ...extra }), {
      logger: silentLogger,
      secretLookup: async () => 'secret-value',
      stsEndpoint: stsUrl,
    });
  const run = async (mw: ProxyMiddleware, tok = token, c: Record<string, unknown> | undefined = claims) =>
    measure(ITER, () => mw.handle(ctxFor(tok, c)));

  const fixed = await chainOf({
    header_forward: { add_plaintext_headers: { 'X-A': 'a' }, add_headers_from_secret: { 'X-B': 'b' } },
    remote_auth_config: { bearer_token: 't,target=bearer_token' },
  });
  for (const mw of fixed.middlewares) middleware[`${mw.name}_us`] = round(await run(mw));
  log('fixed headers done');

  const inbound = await chainOf({ oidc_config: { issuer, jwksurl: `${issuer}/jwks`, audience: 'bench' } });
  middleware['auth_jwt_us'] = round(
    await measure(ITER / 4, () => (inbound.middlewares[0] as ProxyMiddleware).handle(ctxFor(token))),
  );
  log('auth done');

  const te = createTokenExchangeMiddleware(
    { tokenUrl: `${issuer}/token`, clientId: 'c', clientSecret: 's', audience: 'remote', scopes: ['a', 'b'] },
    { logger: silentLogger },
  );
  await te.handle(ctxFor(token, claims));
  middleware['tokenexchange_hit_us'] = round(await run(te));
  // Every miss uses a subject token never seen before (warm-up included).
  let fresh = 0;
  middleware['tokenexchange_miss_us'] = round(
    await measure(500, () => te.handle(ctxFor(`subject-token-${fresh++}`))),
  );
  log('tokenexchange done');

  const sdk = sdkAssumeRole('us-east-1', stsUrl);
  const sts = createAwsStsMiddleware(
    { region: 'us-east-1', roleMappings: [{ claim: 'eng', roleArn: ROLE }] },
    { logger: silentLogger, assumeRole: sdk.assumeRole },
  );
  await sts.handle(ctxFor(token, claims));
  middleware['awssts_hit_us'] = round(await run(sts));
  const signInput = () => ({
    method: 'POST',
    url: `${upstream}/mcp`,
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: '{"jsonrpc":"2.0","id":1,"method":"tools/list"}',
  });
  middleware['awssts_hit_plus_sigv4_us'] = round(
    await measure(ITER / 4, async () => {
      const c = ctxFor(token, claims);
      await sts.handle(c);
      await c.signOutbound?.(signInput());
    }),
  );
  middleware['awssts_miss_us'] = round(
    await measure(300, () => sts.handle(ctxFor(`web-identity-${fresh++}`, claims))),
  );
  sdk.close();
  log('awssts done');

  // --- part 2: proxy path latency ---
  const proxyResults: Record<string, { p50Ms: number; meanMs: number; overheadMs?: number }> = {};
  const configs: Array<[string, Record<string, unknown>]> = [
    ['none', {}],
    ['header-forward', { header_forward: { add_plaintext_headers: { 'X-A': 'a' } } }],
    ['header-injection', { header_forward: { add_headers_from_secret: { 'X-B': 'b' } } }],
    ['bearer-token', { remote_auth_config: { bearer_token: 't,target=bearer_token' } }],
    ['auth', { oidc_config: { issuer, jwksurl: `${issuer}/jwks`, audience: 'bench' } }],
    [
      'auth+tokenexchange',
      {
        oidc_config: { issuer, jwksurl: `${issuer}/jwks`, audience: 'bench' },
        token_exchange_config: {
          token_url: `${issuer}/token`,
          client_id: 'c',
          client_secret: 's',
          audience: 'r',
        },
      },
    ],
    [
      'auth+awssts',
      {
        oidc_config: { issuer, jwksurl: `${issuer}/jwks`, audience: 'bench' },
        aws_sts_config: { region: 'us-east-1', fallback_role_arn: ROLE },
      },
    ],
  ];
  for (const [name, extra] of configs) {
    const chain = await chainOf(extra);
    const proxy = await startProxy({ port: 0, logger: silentLogger, middlewares: chain.middlewares });
    await proxy.setUpstream({ kind: 'http', url: `${upstream}/mcp`, transport: 'streamable-http' });
    const pool = new Pool(proxy.url, { connections: 1 });
    const call = async () => {
      const res = await pool.request({
        path: '/mcp',
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          authorization: `Bearer ${token}`,
        },
        body: '{"jsonrpc":"2.0","id":1,"method":"tools/list"}',
      });
      await res.body.text();
      if (res.statusCode !== 200) throw new Error(`${name}: status ${res.statusCode}`);
    };
    for (let i = 0; i < 300; i++) await call();
    const samples: number[] = [];
    for (let i = 0; i < HTTP_CALLS; i++) {
      const t0 = process.hrtime.bigint();
      await call();
      samples.push(Number(process.hrtime.bigint() - t0) / 1e6);
    }
    samples.sort((a, b) => a - b);
    const p50 = samples[Math.floor(samples.length / 2)] as number;
    const mean = samples.reduce((a, b) => a + b, 0) / samples.length;
    proxyResults[name] = { p50Ms: round(p50, 3), meanMs: round(mean, 3) };
    await pool.close();
    await proxy.close();
    await chain.close();
    log(`proxy ${name}: p50 ${round(p50, 3)} ms`);
  }
  const baseline = proxyResults['none']?.p50Ms ?? 0;
  for (const r of Object.values(proxyResults)) r.overheadMs = round(r.p50Ms - baseline, 3);

  for (const s of servers) {
    s.closeAllConnections();
    s.close();
  }
  const targetMs = 0.05;
  process.stdout.write(
    `${JSON.stringify({
      node: process.version,
      iterations: ITER,
      httpCalls: HTTP_CALLS,
      middleware,
      proxy: proxyResults,
      cacheHitTargetMs: targetMs,
      cacheHitUnderTarget:
        (middleware['tokenexchange_hit_us'] ?? Infinity) / 1000 < targetMs &&
        (middleware['awssts_hit_us'] ?? Infinity) / 1000 < targetMs,
    })}\n`,
  );
}

main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
