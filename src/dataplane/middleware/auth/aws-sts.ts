/**
 * `awsSts`: the caller's web identity token is traded at AWS STS
 * (`AssumeRoleWithWebIdentity`) for temporary credentials of the role the role mapper picks,
 * and every request forwarded to the remote server is signed with them (SigV4, for the
 * configured service and region) at the proxy's `signOutbound` stage, where the final URL,
 * headers and body bytes are known. Credentials are cached per (token hash, role, session
 * name, duration) until five minutes before they expire.
 */
import { createHash, createHmac } from 'node:crypto';

import type { ProxyMiddleware, ProxyMiddlewareResult } from '../../proxy/index.js';
import { definedOnly, lazyRequire, type Logger, SkepError } from '../../../shared/index.js';
import { ExpiringCache } from './expiring-cache.js';
import { bearerFrom, challenge, REQUEST_TIMEOUT_MS, sha256Hex } from './http.js';
import { createRoleMapper, type RoleMapper, type RoleMapping } from './role-mapping.js';

// The AWS SDK is large; only workloads that use awsSts load it.
const loadSts = lazyRequire<typeof import('@aws-sdk/client-sts')>('@aws-sdk/client-sts');
const loadSigV4 = lazyRequire<typeof import('@smithy/signature-v4')>('@smithy/signature-v4');

export interface AwsStsOptions {
  region: string;
  /** SigV4 service name; default `aws-mcp`. */
  service?: string;
  fallbackRoleArn?: string;
  roleMappings?: RoleMapping[];
  roleClaim?: string;
  /** Seconds, 900–43200; default 3600. */
  sessionDuration?: number;
  /** Claim used as RoleSessionName; default `sub`. */
  sessionNameClaim?: string;
}

export interface AwsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken: string;
  /** Epoch ms. */
  expiresAt: number;
}

export interface AssumeRoleRequest {
  roleArn: string;
  sessionName: string;
  webIdentityToken: string;
  durationSeconds: number;
}

/** The STS call, injectable for the benchmark; the default uses the AWS SDK. */
export type AssumeRole = (request: AssumeRoleRequest) => Promise<AwsCredentials>;

const REGION = /^[a-z]{2}(-[a-z]+)+-\d+$/;
const SESSION_NAME = /^[\w+=,.@-]{2,64}$/;
/** Credentials are renewed this long before they expire, ms. */
const CREDENTIALS_SKEW_MS = 5 * 60_000;

/** `AssumeRoleWithWebIdentity` through the AWS SDK (unsigned call; `endpoint` for a stand-in). */
export function sdkAssumeRole(region: string, endpoint?: string): { assumeRole: AssumeRole; close(): void } {
  const { AssumeRoleWithWebIdentityCommand, STSClient } = loadSts();
  const client = new STSClient({
    region,
    ...definedOnly({ endpoint }),
    maxAttempts: 2,
  });
  return {
    async assumeRole(r) {
      const out = await client.send(
        new AssumeRoleWithWebIdentityCommand({
          RoleArn: r.roleArn,
          RoleSessionName: r.sessionName,
          WebIdentityToken: r.webIdentityToken,
          DurationSeconds: r.durationSeconds,
        }),
        { abortSignal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) },
      );
      const c = out.Credentials;
      if (!c?.AccessKeyId || !c.SecretAccessKey || !c.SessionToken || !c.Expiration)
        throw new Error('STS returned no credentials');
      return {
        accessKeyId: c.AccessKeyId,
        secretAccessKey: c.SecretAccessKey,
        sessionToken: c.SessionToken,
        expiresAt: c.Expiration.getTime(),
      };
    },
    close: () => client.destroy(),
  };
}

/** node:crypto behind the hash interface the Smithy signer expects (HMAC when given a key). */
class NodeSha256 {
  readonly #hash: ReturnType<typeof createHash> | ReturnType<typeof createHmac>;
  constructor(secret?: string | ArrayBuffer | ArrayBufferView) {
    const key =
      secret === undefined || typeof secret === 'string'
        ? secret
        : ArrayBuffer.isView(secret)
          ? Buffer.from(secret.buffer, secret.byteOffset, secret.byteLength)
          : Buffer.from(secret);
    this.#hash = key === undefined ? createHash('sha256') : createHmac('sha256', key);
  }
  update(data: string | Uint8Array): void {
    this.#hash.update(data);
  }
  async digest(): Promise<Uint8Array> {
    return new Uint8Array(this.#hash.digest());
  }
  reset(): void {
    throw new Error('not supported');
  }
}

export interface SignInput {
  method: string;
  url: string;
  headers: Record<string, string>;
  body: string | undefined;
}

/**
 * Signs a request with SigV4 and returns the headers to add (`authorization`,
 * `x-amz-date`, `x-amz-security-token`, `x-amz-content-sha256`). Signed headers: `host` and
 * every header given (minus those the signer never signs).
 */
export async function signSigV4(
  input: SignInput,
  credentials: Pick<AwsCredentials, 'accessKeyId' | 'secretAccessKey'> & { sessionToken?: string },
  scope: { region: string; service: string },
  signingDate: Date = new Date(),
): Promise<Record<string, string>> {
  const url = new URL(input.url);
  const query: Record<string, string | string[]> = {};
  for (const [k, v] of url.searchParams) {
    const prev = query[k];
    query[k] = prev === undefined ? v : Array.isArray(prev) ? [...prev, v] : [prev, v];
  }
  const { SignatureV4 } = loadSigV4();
  const signer = new SignatureV4({
    service: scope.service,
    region: scope.region,
    credentials: {
      accessKeyId: credentials.accessKeyId,
      secretAccessKey: credentials.secretAccessKey,
      ...definedOnly({ sessionToken: credentials.sessionToken }),
    },
    sha256: NodeSha256,
    // Like the AWS SigV4 test suite (and aws-sdk-go's v4 signer): no X-Amz-Content-Sha256 header.
    applyChecksum: false,
  });
  const signed = await signer.sign(
    {
      method: input.method,
      protocol: url.protocol,
      hostname: url.hostname,
      ...(url.port === '' ? {} : { port: Number(url.port) }),
      path: url.pathname,
      query,
      headers: { ...input.headers, host: url.host },
      body: input.body,
    },
    { signingDate },
  );
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(signed.headers)) {
    const lower = k.toLowerCase();
    if (lower === 'authorization' || lower.startsWith('x-amz-')) out[lower] = v;
  }
  return out;
}

export interface AwsStsDeps {
  logger: Logger;
  assumeRole: AssumeRole;
  now?: () => number;
  maxEntries?: number;
}

export class AwsStsAuthenticator {
  readonly mapper: RoleMapper;
  readonly #options: Required<
    Pick<AwsStsOptions, 'region' | 'service' | 'sessionDuration' | 'sessionNameClaim'>
  >;
  readonly #cache: ExpiringCache<AwsCredentials>;
  readonly #assumeRole: AssumeRole;
  /** Round trips to STS (cache misses). */
  stsCalls = 0;

  constructor(options: AwsStsOptions, deps: Pick<AwsStsDeps, 'assumeRole' | 'now' | 'maxEntries'>) {
    if (!REGION.test(options.region ?? ''))
      throw new SkepError(
        'invalid_config',
        `aws_sts_config.region: "${options.region ?? ''}" is not an AWS region`,
      );
    const duration = options.sessionDuration ?? 3600;
    if (!Number.isInteger(duration) || duration < 900 || duration > 43200)
      throw new SkepError(
        'invalid_config',
        'aws_sts_config.session_duration must be between 900 and 43200 seconds',
      );
    this.mapper = createRoleMapper(options);
    this.#options = {
      region: options.region,
      service: options.service || 'aws-mcp',
      sessionDuration: duration,
      sessionNameClaim: options.sessionNameClaim || 'sub',
    };
    this.#assumeRole = deps.assumeRole;
    this.#cache = new ExpiringCache({
      maxEntries: deps.maxEntries ?? 10_000,
      ...(deps.now ? { now: deps.now } : {}),
    });
  }

  get scope(): { region: string; service: string } {
    return { region: this.#options.region, service: this.#options.service };
  }

  sessionName(claims: Record<string, unknown>): string | undefined {
    const v = claims[this.#options.sessionNameClaim];
    return typeof v === 'string' && SESSION_NAME.test(v) ? v : undefined;
  }

  credentials(roleArn: string, sessionName: string, webIdentityToken: string): Promise<AwsCredentials> {
    const durationSeconds = this.#options.sessionDuration;
    const key = `${sha256Hex(webIdentityToken)}\u0000${roleArn}\u0000${sessionName}\u0000${durationSeconds}`;
    return this.#cache.getOrLoad(key, async () => {
      this.stsCalls++;
      const c = await this.#assumeRole({ roleArn, sessionName, webIdentityToken, durationSeconds });
      return { value: c, expiresAt: c.expiresAt - CREDENTIALS_SKEW_MS };
    });
  }
}

/** The `awssts` middleware. */
export function createAwsStsMiddleware(
  options: AwsStsOptions,
  deps: AwsStsDeps,
): ProxyMiddleware & { readonly sts: AwsStsAuthenticator } {
  const sts = new AwsStsAuthenticator(options, deps);
  const deny = (status: 401 | 403, text: string): ProxyMiddlewareResult =>
    challenge(status, status === 401 ? { error: 'invalid_token', error_description: text } : {}, text);
  return {
    name: 'awssts',
    sts,
    async handle(ctx) {
      const claims = ctx.identity.claims;
      if (claims === undefined) return deny(401, 'Authentication required');
      const role = sts.mapper.select(claims);
      if (role === undefined) return deny(403, 'Failed to determine IAM role');
      const token = bearerFrom(ctx.outboundHeaders['authorization']) ?? ctx.identity.token;
      if (token === undefined) return deny(401, 'Bearer token required');
      const sessionName = sts.sessionName(claims);
      if (sessionName === undefined) return deny(401, 'Invalid session name');
      let credentials: AwsCredentials;
      try {
        credentials = await sts.credentials(role, sessionName, token);
      } catch (err) {
        deps.logger.warn({ role, reason: (err as Error).message }, 'AssumeRoleWithWebIdentity failed');
        return deny(401, 'AWS credential exchange failed');
      }
      // The SigV4 signature replaces any bearer token: AWS must not receive the identity token.
      delete ctx.outboundHeaders['authorization'];
      ctx.signOutbound = async (request) => {
        Object.assign(request.headers, await signSigV4(request, credentials, sts.scope));
      };
      return undefined;
    },
  };
}
