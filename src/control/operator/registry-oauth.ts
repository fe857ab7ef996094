/**
 * `auth.mode: oauth` of the MCPRegistry server: every request but the public paths must carry a
 * bearer token (RFC 6750) that one of `auth.oauth.providers` accepts: a JWT signed by a key of the
 * provider's JWKS with its issuer and audience, or, with `introspectionUrl`, an opaque token its
 * RFC 7662 endpoint calls active. The tokens are checked by the verifier of Skep's workload
 * proxies (`oidc_config`), loaded only when a registry uses OAuth. A missing or rejected token
 * gets 401 with a challenge naming the realm and the RFC 9728 protected-resource metadata, which
 * is served at `/.well-known/oauth-protected-resource`.
 */
import { readFileSync } from 'node:fs';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from '../../shared/index.js';
import type { RegistryAuthSpec } from './registry-config.js';

type OAuthSpec = Extract<RegistryAuthSpec, { mode: 'oauth' }>;

export const METADATA_PATH = '/.well-known/oauth-protected-resource';
/** Always reachable without a token: probes and the metadata a client needs to get one. */
const PUBLIC_PATHS = ['/health', '/readiness', '/.well-known/'];

export interface RegistryOAuth {
  /** The `onRequest` hook: answers 401 unless the request is public or its token is accepted. */
  check(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined>;
  /** The RFC 9728 §3.2 metadata document. */
  metadata(request: FastifyRequest): Record<string, unknown>;
}

const quote = (v: string) => `"${v.replace(/["\\]/g, (c) => `\\${c}`)}"`;

export async function createRegistryOAuth(spec: OAuthSpec, logger: Logger): Promise<RegistryOAuth> {
  const { createOidcVerifier, protectedResourceMetadataUrl } =
    await import('../../dataplane/middleware/auth/inbound.js');
  const verifiers = spec.providers.map((p) => ({
    name: p.name,
    verify: createOidcVerifier(
      {
        issuer: p.issuerUrl,
        audience: p.audience,
        ...(p.jwksUrl === undefined ? {} : { jwksUrl: p.jwksUrl }),
        ...(p.caCertPath === undefined ? {} : { caCertPath: p.caCertPath }),
        ...(p.authTokenFile === undefined ? {} : { authTokenFile: p.authTokenFile }),
        ...(p.allowPrivateIP === true ? { allowPrivateIP: true } : {}),
        ...(p.introspectionUrl === undefined
          ? {}
          : {
              introspectionUrl: p.introspectionUrl,
              ...(p.clientId === undefined ? {} : { clientId: p.clientId }),
              // The secret file holds only the secret (trailing whitespace is not part of it).
              ...(p.clientSecretFile === undefined
                ? {}
                : { clientSecret: readFileSync(p.clientSecretFile, 'utf8').trim() }),
            }),
      },
      {},
    ),
  }));
  const resourceOf = (request: FastifyRequest) => spec.resourceUrl ?? `${request.protocol}://${request.host}`;
  const publicPaths = [...PUBLIC_PATHS, ...spec.publicPaths];
  const isPublic = (path: string) =>
    publicPaths.some((p) => (p.endsWith('/') ? path.startsWith(p) : path === p || path.startsWith(`${p}/`)));

  const reject = (request: FastifyRequest, reply: FastifyReply, error?: string) => {
    // RFC 6750 §3 (realm, error, scope) and RFC 9728 §5.1 (resource_metadata).
    const params = [
      `realm=${quote(spec.realm)}`,
      `resource_metadata=${quote(protectedResourceMetadataUrl(resourceOf(request)))}`,
      ...(error === undefined ? [] : [`error=${quote(error)}`]),
      ...(spec.scopesSupported.length > 0 ? [`scope=${quote(spec.scopesSupported.join(' '))}`] : []),
    ];
    return reply
      .code(401)
      .header('www-authenticate', `Bearer ${params.join(', ')}`)
      .header('cache-control', 'no-store')
      .send({
        code: 'unauthorized',
        message: error === undefined ? 'a bearer token is required' : 'the bearer token was not accepted',
      });
  };

  return {
    async check(request, reply) {
      const path = request.url.split('?')[0] ?? '';
      if (isPublic(path)) return undefined;
      const header = request.headers.authorization;
      const m = typeof header === 'string' ? /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i.exec(header) : null;
      // RFC 6750 §3.1: a request without credentials gets a challenge without an error code.
      if (m === null) return reject(request, reply, header === undefined ? undefined : 'invalid_request');
      const token = m[1] as string;
      const reasons: string[] = [];
      for (const v of verifiers) {
        try {
          await v.verify(token);
          return undefined;
        } catch (err) {
          reasons.push(`${v.name}: ${(err as Error).message}`);
        }
      }
      logger.info({ reasons }, 'registry request refused: no provider accepts its bearer token');
      return reject(request, reply, 'invalid_token');
    },
    metadata(request) {
      return {
        resource: resourceOf(request),
        authorization_servers: [...new Set(spec.providers.map((p) => p.issuerUrl))],
        scopes_supported: spec.scopesSupported,
        bearer_methods_supported: ['header'],
      };
    },
  };
}
