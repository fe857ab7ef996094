/**
 * CRD → run configuration: maps a validated MCPExternalAuthConfig onto the run-configuration fields
 * ToolHive's run configuration has (`token_exchange_config`, `aws_sts_config`,
 * `embedded_auth_server_config`, `upstream_swap_config`, `header_forward`, and
 * `remote_auth_config.bearer_token_file` for bearer tokens), in their snake_case shapes. Secret
 * references become what the run configuration expects: values it holds directly
 * (`token_exchange_config.client_secret`) are read from the Kubernetes Secret through the API;
 * fields that name an env var or a file (`*_env_var`, `*_file`, `hmac_secret_files`,
 * `signing_key_config`) are emitted as references, with the pod wiring (env from secretKeyRef,
 * Secret files) returned alongside for the workload controller.
 */
import type {
  SecretRef,
  UpstreamProvider,
  UserInfoConfig as CrdUserInfoConfig,
} from '../../schemas/extauth/index.js';
import type {
  EmbeddedAuthServerConfig,
  RedisConfig,
  UpstreamConfig,
  UserInfoConfig,
} from '../../schemas/index.js';
import { definedOnly, SkepError } from '../../shared/index.js';
import { formatProblem, type SecretReader, validateExtAuthConfigWithSecrets } from './validate.js';

export const AUTH_SERVER_DIR = '/etc/skep/authserver';
export const BEARER_TOKEN_FILE = '/etc/skep/extauth/bearer-token';

export interface SecretEnv {
  name: string;
  secretRef: SecretRef;
}

export interface SecretFile {
  path: string;
  secretRef: SecretRef;
}

export interface RunConfigAuth {
  runConfig: Record<string, unknown>;
  /** Env vars the pod must get from Secrets (valueFrom.secretKeyRef). */
  env: SecretEnv[];
  /** Files the pod must get from Secrets (read-only Secret volume items). */
  files: SecretFile[];
}

/** CRD `tokenExchange.subjectTokenType`: short forms map onto RFC 8693 URNs, as in ToolHive. */
const TOKEN_TYPE_URN = 'urn:ietf:params:oauth:token-type:';

/** Env-var names use upper-case letters, digits and underscores only. */
export function envName(...parts: string[]): string {
  return parts
    .join('_')
    .toUpperCase()
    .replace(/[^A-Z0-9_]/g, '_');
}

function userInfo(u: CrdUserInfoConfig | undefined): UserInfoConfig | undefined {
  if (u === undefined) return undefined;
  return definedOnly({
    endpoint_url: u.endpointUrl,
    http_method: u.httpMethod ?? 'GET',
    additional_headers: u.additionalHeaders,
    field_mapping:
      u.fieldMapping === undefined
        ? undefined
        : definedOnly({
            subject_fields: u.fieldMapping.subjectFields,
            name_fields: u.fieldMapping.nameFields,
            email_fields: u.fieldMapping.emailFields,
          }),
  });
}

export interface BuildOptions {
  /**
   * `true` (default): values the run configuration holds directly (the token-exchange client
   * secret) are read from the Secret. `false` (pods): they become a secret reference
   * (`<ENV>,target=<field>`) to an env var the pod fills from the Secret, so no value is
   * written into a ConfigMap.
   */
  secretValues?: boolean;
}

export const TOKEN_EXCHANGE_SECRET_ENV = 'SKEP_TOKEN_EXCHANGE_CLIENT_SECRET';

export async function buildRunConfigAuth(
  input: unknown,
  readSecret: SecretReader,
  options: BuildOptions = {},
): Promise<RunConfigAuth> {
  const { problems, resource } = await validateExtAuthConfigWithSecrets(input, readSecret);
  if (resource === undefined) {
    throw new SkepError(
      'invalid_config',
      `invalid MCPExternalAuthConfig: ${problems.map(formatProblem).join('; ')}`,
    );
  }
  const namespace = resource.metadata.namespace ?? 'default';
  const env: SecretEnv[] = [];
  const files: SecretFile[] = [];
  const runConfig: Record<string, unknown> = {};
  const spec = resource.spec;

  const read = async (ref: SecretRef, field: string): Promise<string> => {
    const value = await readSecret(namespace, ref.name, ref.key);
    if (value === undefined) {
      throw new SkepError(
        'secret_not_found',
        `${field}: Secret ${namespace}/${ref.name} with key "${ref.key}" cannot be read`,
      );
    }
    return value.toString('utf8');
  };

  switch (spec.type) {
    case 'tokenExchange': {
      const te = spec.tokenExchange!;
      const type = te.subjectTokenType ?? '';
      runConfig['token_exchange_config'] = definedOnly({
        token_url: te.tokenUrl,
        audience: te.audience,
        client_id: te.clientId,
        client_secret:
          te.clientSecretRef === undefined
            ? undefined
            : options.secretValues === false
              ? (env.push({ name: TOKEN_EXCHANGE_SECRET_ENV, secretRef: te.clientSecretRef }),
                `${TOKEN_EXCHANGE_SECRET_ENV},target=token_exchange_config.client_secret`)
              : await read(te.clientSecretRef, 'spec.tokenExchange.clientSecretRef'),
        scopes: te.scopes,
        subject_token_type:
          type === '' ? undefined : type.startsWith(TOKEN_TYPE_URN) ? type : TOKEN_TYPE_URN + type,
        header_strategy: te.externalTokenHeaderName ? 'custom' : 'replace',
        external_token_header_name: te.externalTokenHeaderName || undefined,
      });
      break;
    }
    case 'awsSts': {
      const a = spec.awsSts!;
      runConfig['aws_sts_config'] = definedOnly({
        region: a.region,
        fallback_role_arn: a.fallbackRoleArn,
        role_claim: a.roleClaim,
        role_mappings: a.roleMappings?.map((m) =>
          definedOnly({ role_arn: m.roleArn, claim: m.claim, matcher: m.matcher, priority: m.priority }),
        ),
        service: a.service,
        session_duration: a.sessionDuration,
        session_name_claim: a.sessionNameClaim,
        subject_provider_name: a.subjectProviderName,
      });
      break;
    }
    case 'headerInjection': {
      const h = spec.headerInjection!;
      // header_forward.add_headers_from_secret maps a header to the name of an env secret.
      const name = envName('SKEP_HEADER', h.headerName);
      env.push({ name, secretRef: h.valueSecretRef });
      runConfig['header_forward'] = { add_headers_from_secret: { [h.headerName]: name } };
      break;
    }
    case 'bearerToken': {
      files.push({ path: BEARER_TOKEN_FILE, secretRef: spec.bearerToken!.tokenSecretRef });
      runConfig['remote_auth_config'] = { bearer_token_file: BEARER_TOKEN_FILE };
      break;
    }
    case 'upstreamInject': {
      runConfig['upstream_swap_config'] = {
        provider_name: spec.upstreamInject!.providerName,
        header_strategy: 'replace',
      };
      break;
    }
    case 'embeddedAuthServer': {
      const e = spec.embeddedAuthServer!;
      const hmacFiles = (e.hmacSecretRefs ?? []).map((ref, i) => {
        const path = `${AUTH_SERVER_DIR}/hmac/hmac-${i}`;
        files.push({ path, secretRef: ref });
        return path;
      });
      const keyFiles = (e.signingKeySecretRefs ?? []).map((ref, i) => {
        files.push({ path: `${AUTH_SERVER_DIR}/keys/key-${i}.pem`, secretRef: ref });
        return `key-${i}.pem`;
      });
      const storage = e.storage ?? { type: 'memory' };
      let redisConfig: RedisConfig | undefined;
      const r = storage.redis;
      if (storage.type === 'redis' && r !== undefined) {
        env.push({ name: 'SKEP_AUTH_SERVER_REDIS_PASSWORD', secretRef: r.aclUserConfig.passwordSecretRef });
        if (r.aclUserConfig.usernameSecretRef !== undefined) {
          env.push({ name: 'SKEP_AUTH_SERVER_REDIS_USERNAME', secretRef: r.aclUserConfig.usernameSecretRef });
        }
        const tls = (t: typeof r.tls, file: string) => {
          if (t === undefined) return undefined;
          if (t.caCertSecretRef !== undefined) files.push({ path: file, secretRef: t.caCertSecretRef });
          return definedOnly({
            ca_cert_file: t.caCertSecretRef === undefined ? undefined : file,
            insecure_skip_verify: t.insecureSkipVerify,
          });
        };
        const s = r.sentinelConfig;
        redisConfig = definedOnly({
          auth_type: 'aclUser' as const,
          addr: r.addr,
          cluster_mode: r.clusterMode,
          sentinel_config:
            s === undefined
              ? undefined
              : {
                  master_name: s.masterName,
                  db: s.db ?? 0,
                  sentinel_addrs:
                    s.sentinelAddrs ??
                    (s.sentinelService === undefined
                      ? []
                      : [
                          `${s.sentinelService.name}.${s.sentinelService.namespace ?? namespace}.svc:${s.sentinelService.port ?? 26379}`,
                        ]),
                },
          acl_user_config: definedOnly({
            username_env_var:
              r.aclUserConfig.usernameSecretRef === undefined ? undefined : 'SKEP_AUTH_SERVER_REDIS_USERNAME',
            password_env_var: 'SKEP_AUTH_SERVER_REDIS_PASSWORD',
          }),
          dial_timeout: r.dialTimeout ?? '5s',
          read_timeout: r.readTimeout ?? '3s',
          write_timeout: r.writeTimeout ?? '3s',
          tls: tls(r.tls, `${AUTH_SERVER_DIR}/redis-tls/ca.crt`),
          sentinel_tls:
            s === undefined ? undefined : tls(r.sentinelTls, `${AUTH_SERVER_DIR}/redis-tls/sentinel-ca.crt`),
        });
      }
      const embedded: EmbeddedAuthServerConfig = definedOnly({
        issuer: e.issuer,
        authorization_endpoint_base_url: e.authorizationEndpointBaseUrl,
        hmac_secret_files: hmacFiles.length > 0 ? hmacFiles : undefined,
        signing_key_config:
          keyFiles.length === 0
            ? undefined
            : {
                key_dir: `${AUTH_SERVER_DIR}/keys`,
                signing_key_file: keyFiles[0]!,
                fallback_key_files: keyFiles.slice(1),
              },
        // ToolHive's `tokenLifespans` defaults when empty: 1h, 10m and 168h.
        token_lifespans: {
          access_token_lifespan: e.tokenLifespans?.accessTokenLifespan || '1h',
          auth_code_lifespan: e.tokenLifespans?.authCodeLifespan || '10m',
          refresh_token_lifespan: e.tokenLifespans?.refreshTokenLifespan || '168h',
        },
        storage: definedOnly({ type: storage.type ?? 'memory', redis_config: redisConfig }),
        upstreams: e.upstreamProviders.map((p) => upstream(p, env)),
      });
      runConfig['embedded_auth_server_config'] = embedded;
      // The proxy swaps the embedded server's token for the upstream one (first provider).
      runConfig['upstream_swap_config'] = {
        provider_name: e.upstreamProviders[0]!.name,
        header_strategy: 'replace',
      };
      break;
    }
    case 'unauthenticated':
      break;
  }
  return { runConfig, env, files };
}

function upstream(p: UpstreamProvider, env: SecretEnv[]): UpstreamConfig {
  const clientSecretEnv = (ref: SecretRef | undefined) => {
    if (ref === undefined) return undefined;
    const name = envName('SKEP_UPSTREAM_CLIENT_SECRET', p.name);
    env.push({ name, secretRef: ref });
    return name;
  };
  if (p.type === 'oidc') {
    const o = p.oidcConfig!;
    return {
      name: p.name,
      type: 'oidc',
      oidc_config: definedOnly({
        issuer_url: o.issuerUrl,
        client_id: o.clientId,
        client_secret_env_var: clientSecretEnv(o.clientSecretRef),
        redirect_uri: o.redirectUri,
        // ToolHive's `oidcConfig.scopes` default: openid, offline_access.
        scopes: o.scopes ?? ['openid', 'offline_access'],
        additional_authorization_params: o.additionalAuthorizationParams,
        userinfo_override: userInfo(o.userInfoOverride),
      }),
    };
  }
  const o = p.oauth2Config!;
  const dcr = o.dcrConfig;
  let initialTokenEnv: string | undefined;
  if (dcr?.initialAccessTokenRef !== undefined) {
    initialTokenEnv = envName('SKEP_UPSTREAM_DCR_INITIAL_ACCESS_TOKEN', p.name);
    env.push({ name: initialTokenEnv, secretRef: dcr.initialAccessTokenRef });
  }
  return {
    name: p.name,
    type: 'oauth2',
    oauth2_config: definedOnly({
      authorization_endpoint: o.authorizationEndpoint,
      token_endpoint: o.tokenEndpoint,
      client_id: o.clientId || undefined,
      client_secret_env_var: clientSecretEnv(o.clientSecretRef),
      redirect_uri: o.redirectUri,
      scopes: o.scopes,
      additional_authorization_params: o.additionalAuthorizationParams,
      dcr_config:
        dcr === undefined
          ? undefined
          : definedOnly({
              discovery_url: dcr.discoveryUrl,
              registration_endpoint: dcr.registrationEndpoint,
              initial_access_token_env_var: initialTokenEnv,
              software_id: dcr.softwareId,
              software_statement: dcr.softwareStatement,
            }),
      token_response_mapping:
        o.tokenResponseMapping === undefined
          ? undefined
          : {
              access_token_path: o.tokenResponseMapping.accessTokenPath,
              expires_in_path: o.tokenResponseMapping.expiresInPath ?? 'expires_in',
              refresh_token_path: o.tokenResponseMapping.refreshTokenPath ?? 'refresh_token',
              scope_path: o.tokenResponseMapping.scopePath ?? 'scope',
            },
      userinfo: userInfo(o.userInfo),
    }),
  };
}
