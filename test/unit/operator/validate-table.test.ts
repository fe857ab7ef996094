// Table-driven check of the validation library against ToolHive's MCPExternalAuthConfig rules.
// Each row names the rule it exercises; `expect` is either 'valid' or the field path
// (and a fragment of the message) that a problem must name.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatProblem, validateExtAuthConfig } from '../../../src/control/operator/validate.js';
import {
  awsSts,
  embedded,
  oauth2Provider,
  oidcProvider,
  ROLE_ARN,
  redisStorage,
  ref,
  resource,
  tokenExchange,
} from './fixtures.js';

interface Row {
  rule: string;
  spec?: unknown;
  whole?: Record<string, unknown>;
  expect: 'valid' | string[];
}

const rows: Row[] = [
  // ---- spec.type and blocks
  { rule: 'spec.type tokenExchange with audience and tokenUrl', spec: tokenExchange(), expect: 'valid' },
  {
    rule: 'spec.tokenExchange all optional fields',
    spec: tokenExchange({
      clientId: 'c',
      clientSecretRef: ref('te'),
      externalTokenHeaderName: 'X-Upstream-Token',
      scopes: ['read', 'write'],
      subjectProviderName: 'corp',
      subjectTokenType: 'access_token',
    }),
    expect: 'valid',
  },
  {
    rule: 'subjectTokenType short form id_token',
    spec: tokenExchange({ subjectTokenType: 'id_token' }),
    expect: 'valid',
  },
  {
    rule: 'subjectTokenType full URN jwt',
    spec: tokenExchange({ subjectTokenType: 'urn:ietf:params:oauth:token-type:jwt' }),
    expect: 'valid',
  },
  {
    rule: 'subjectTokenType empty string accepted',
    spec: tokenExchange({ subjectTokenType: '' }),
    expect: 'valid',
  },
  {
    rule: 'subjectTokenType rejects other values',
    spec: tokenExchange({ subjectTokenType: 'saml2' }),
    expect: ['spec.tokenExchange.subjectTokenType'],
  },
  {
    rule: 'tokenExchange.audience is required',
    spec: { type: 'tokenExchange', tokenExchange: { tokenUrl: 'https://x' } },
    expect: ['spec.tokenExchange.audience: is required'],
  },
  {
    rule: 'tokenExchange.tokenUrl is required',
    spec: { type: 'tokenExchange', tokenExchange: { audience: 'a' } },
    expect: ['spec.tokenExchange.tokenUrl: is required'],
  },
  { rule: 'spec.type is required', spec: {}, expect: ['spec.type: is required'] },
  {
    rule: 'spec.type is one of the seven types',
    spec: { type: 'obo' },
    expect: ['spec.type: must be one of'],
  },
  {
    rule: 'type tokenExchange needs the tokenExchange block',
    spec: { type: 'tokenExchange' },
    expect: ["spec.tokenExchange: tokenExchange must be set if and only if type is 'tokenExchange'"],
  },
  {
    rule: 'type unauthenticated has no object of its own',
    spec: { type: 'unauthenticated' },
    expect: 'valid',
  },
  {
    rule: 'type unauthenticated rejects a tokenExchange block',
    spec: { type: 'unauthenticated', tokenExchange: { audience: 'a', tokenUrl: 'b' } },
    expect: ['spec.tokenExchange: tokenExchange must be set if and only if'],
  },
  {
    rule: 'blocks are used only with their type (headerInjection + bearerToken block)',
    spec: {
      type: 'headerInjection',
      headerInjection: { headerName: 'X-Key', valueSecretRef: ref('k') },
      bearerToken: { tokenSecretRef: ref('t') },
    },
    expect: ['spec.bearerToken: bearerToken must be set if and only if'],
  },
  {
    rule: 'headerInjection with headerName and valueSecretRef',
    spec: { type: 'headerInjection', headerInjection: { headerName: 'X-Key', valueSecretRef: ref('k') } },
    expect: 'valid',
  },
  {
    rule: 'headerInjection.headerName minLength 1',
    spec: { type: 'headerInjection', headerInjection: { headerName: '', valueSecretRef: ref('k') } },
    expect: ['spec.headerInjection.headerName'],
  },
  {
    rule: 'SecretRef.key is required',
    spec: { type: 'headerInjection', headerInjection: { headerName: 'X', valueSecretRef: { name: 'k' } } },
    expect: ['spec.headerInjection.valueSecretRef.key: is required'],
  },
  {
    rule: 'bearerToken with tokenSecretRef',
    spec: { type: 'bearerToken', bearerToken: { tokenSecretRef: ref('t') } },
    expect: 'valid',
  },
  {
    rule: 'bearerToken.tokenSecretRef is required',
    spec: { type: 'bearerToken', bearerToken: {} },
    expect: ['spec.bearerToken.tokenSecretRef: is required'],
  },
  {
    rule: 'upstreamInject with providerName',
    spec: { type: 'upstreamInject', upstreamInject: { providerName: 'github' } },
    expect: 'valid',
  },
  {
    rule: 'upstreamInject.providerName minLength 1',
    spec: { type: 'upstreamInject', upstreamInject: { providerName: '' } },
    expect: ['spec.upstreamInject.providerName'],
  },
  {
    rule: 'unknown spec fields are rejected',
    spec: { type: 'unauthenticated', mode: 'x' },
    expect: ['spec.mode: is not a known field'],
  },
  {
    rule: 'identity: apiVersion is skep.dev/v1beta1',
    whole: { ...resource({ type: 'unauthenticated' }), apiVersion: 'skep.dev/v1alpha1' },
    expect: ['apiVersion'],
  },
  // ---- awsSts
  { rule: 'awsSts with fallbackRoleArn only', spec: awsSts({ fallbackRoleArn: ROLE_ARN }), expect: 'valid' },
  {
    rule: 'awsSts with a claim role mapping only',
    spec: awsSts({ roleMappings: [{ roleArn: ROLE_ARN, claim: 'admins' }] }),
    expect: 'valid',
  },
  {
    rule: 'awsSts matcher is CEL over claims',
    spec: awsSts({
      roleMappings: [
        { roleArn: ROLE_ARN, matcher: '"admins" in claims.groups && claims.sub.startsWith("u")' },
      ],
    }),
    expect: 'valid',
  },
  {
    rule: 'awsSts region with several groups (us-gov-west-1)',
    spec: awsSts({ region: 'us-gov-west-1', fallbackRoleArn: ROLE_ARN }),
    expect: 'valid',
  },
  {
    rule: 'awsSts ARN partition aws-cn',
    spec: awsSts({ fallbackRoleArn: 'arn:aws-cn:iam::123456789012:role/path/to/role' }),
    expect: 'valid',
  },
  {
    rule: 'awsSts ARN partition aws-us-gov',
    spec: awsSts({ fallbackRoleArn: 'arn:aws-us-gov:iam::123456789012:role/r+=,.@-_' }),
    expect: 'valid',
  },
  {
    rule: 'awsSts sessionDuration minimum 900',
    spec: awsSts({ fallbackRoleArn: ROLE_ARN, sessionDuration: 900 }),
    expect: 'valid',
  },
  {
    rule: 'awsSts sessionDuration maximum 43200',
    spec: awsSts({ fallbackRoleArn: ROLE_ARN, sessionDuration: 43200 }),
    expect: 'valid',
  },
  {
    rule: 'awsSts sessionDuration below 900',
    spec: awsSts({ fallbackRoleArn: ROLE_ARN, sessionDuration: 899 }),
    expect: ['spec.awsSts.sessionDuration: must be >= 900'],
  },
  {
    rule: 'awsSts sessionDuration above 43200',
    spec: awsSts({ fallbackRoleArn: ROLE_ARN, sessionDuration: 43201 }),
    expect: ['spec.awsSts.sessionDuration: must be <= 43200'],
  },
  {
    rule: 'awsSts sessionDuration is an integer',
    spec: awsSts({ fallbackRoleArn: ROLE_ARN, sessionDuration: 1000.5 }),
    expect: ['spec.awsSts.sessionDuration: must be integer'],
  },
  {
    rule: 'awsSts.region is required',
    spec: { type: 'awsSts', awsSts: { fallbackRoleArn: ROLE_ARN } },
    expect: ['spec.awsSts.region: is required'],
  },
  {
    rule: 'awsSts.region pattern',
    spec: awsSts({ region: 'useast1', fallbackRoleArn: ROLE_ARN }),
    expect: ['spec.awsSts.region: must match pattern'],
  },
  {
    rule: 'awsSts: at least one of fallbackRoleArn or roleMappings',
    spec: awsSts({}),
    expect: ['spec.awsSts: at least one of fallbackRoleArn or roleMappings must be configured'],
  },
  {
    rule: 'awsSts: an empty roleMappings list does not count',
    spec: awsSts({ roleMappings: [] }),
    expect: ['spec.awsSts: at least one of fallbackRoleArn or roleMappings'],
  },
  {
    rule: 'awsSts ARN: unknown partition',
    spec: awsSts({ fallbackRoleArn: 'arn:aws-eu:iam::123456789012:role/x' }),
    expect: ['spec.awsSts.fallbackRoleArn: must match pattern'],
  },
  {
    rule: 'awsSts ARN: 12-digit account',
    spec: awsSts({ fallbackRoleArn: 'arn:aws:iam::12345678901:role/x' }),
    expect: ['spec.awsSts.fallbackRoleArn: must match pattern'],
  },
  {
    rule: 'roleMappings[].roleArn is required',
    spec: awsSts({ roleMappings: [{ claim: 'a' }] }),
    expect: ['spec.awsSts.roleMappings[0].roleArn: is required'],
  },
  {
    rule: 'roleMappings[]: claim xor matcher (both)',
    spec: awsSts({ roleMappings: [{ roleArn: ROLE_ARN, claim: 'a', matcher: 'true' }] }),
    expect: ['spec.awsSts.roleMappings[0]: exactly one of claim or matcher must be set'],
  },
  {
    rule: 'roleMappings[]: claim xor matcher (neither)',
    spec: awsSts({ roleMappings: [{ roleArn: ROLE_ARN, priority: 1 }] }),
    expect: ['spec.awsSts.roleMappings[0]: exactly one of claim or matcher must be set'],
  },
  {
    rule: 'roleMappings[].claim minLength 1',
    spec: awsSts({ roleMappings: [{ roleArn: ROLE_ARN, claim: '' }] }),
    expect: ['spec.awsSts.roleMappings[0].claim'],
  },
  {
    rule: 'roleMappings[].matcher must compile',
    spec: awsSts({
      roleMappings: [
        { roleArn: ROLE_ARN, claim: 'x' },
        { roleArn: ROLE_ARN, matcher: 'claims.groups.exists(g, ' },
      ],
    }),
    expect: ['spec.awsSts.roleMappings[1].matcher: CEL expression does not compile'],
  },
  {
    rule: 'roleMappings[].matcher may only use the claims variable',
    spec: awsSts({ roleMappings: [{ roleArn: ROLE_ARN, matcher: 'user.admin == true' }] }),
    expect: ['spec.awsSts.roleMappings[0].matcher: CEL expression does not compile'],
  },
  {
    rule: 'roleMappings[].matcher must yield a bool',
    spec: awsSts({ roleMappings: [{ roleArn: ROLE_ARN, matcher: '1 + 2' }] }),
    expect: ['spec.awsSts.roleMappings[0].matcher: CEL expression must yield a bool'],
  },
  {
    rule: 'roleMappings[].priority minimum 0 (0 ok)',
    spec: awsSts({ roleMappings: [{ roleArn: ROLE_ARN, claim: 'a', priority: 0 }] }),
    expect: 'valid',
  },
  {
    rule: 'roleMappings[].priority minimum 0',
    spec: awsSts({ roleMappings: [{ roleArn: ROLE_ARN, claim: 'a', priority: -1 }] }),
    expect: ['spec.awsSts.roleMappings[0].priority: must be >= 0'],
  },
  // ---- embeddedAuthServer
  { rule: 'embeddedAuthServer with one oidc upstream', spec: embedded(), expect: 'valid' },
  {
    rule: 'issuer: HTTP allowed for localhost',
    spec: embedded({ issuer: 'http://localhost:8080' }),
    expect: 'valid',
  },
  {
    rule: 'issuer: a path is allowed',
    spec: embedded({ issuer: 'https://auth.example.com/tenant-1' }),
    expect: 'valid',
  },
  {
    rule: 'issuer: no trailing slash (RFC 8414)',
    spec: embedded({ issuer: 'https://auth.example.com/' }),
    expect: ['spec.embeddedAuthServer.issuer'],
  },
  {
    rule: 'issuer: no query',
    spec: embedded({ issuer: 'https://auth.example.com?x=1' }),
    expect: ['spec.embeddedAuthServer.issuer'],
  },
  {
    rule: 'issuer: no fragment',
    spec: embedded({ issuer: 'https://auth.example.com#f' }),
    expect: ['spec.embeddedAuthServer.issuer'],
  },
  {
    rule: 'issuer: HTTP only for localhost',
    spec: embedded({ issuer: 'http://auth.example.com' }),
    expect: ['spec.embeddedAuthServer.issuer: must use https (http is allowed only for localhost)'],
  },
  {
    rule: 'authorizationEndpointBaseUrl: same URL format as issuer',
    spec: embedded({ authorizationEndpointBaseUrl: 'http://public.example.com' }),
    expect: ['spec.embeddedAuthServer.authorizationEndpointBaseUrl: must use https'],
  },
  {
    rule: 'issuer is required',
    spec: { type: 'embeddedAuthServer', embeddedAuthServer: { upstreamProviders: [oidcProvider()] } },
    expect: ['spec.embeddedAuthServer.issuer: is required'],
  },
  {
    rule: 'upstreamProviders is required',
    spec: { type: 'embeddedAuthServer', embeddedAuthServer: { issuer: 'https://a.example.com' } },
    expect: ['spec.embeddedAuthServer.upstreamProviders: is required'],
  },
  {
    rule: 'upstreamProviders needs at least one entry',
    spec: embedded({ upstreamProviders: [] }),
    expect: ['spec.embeddedAuthServer.upstreamProviders'],
  },
  {
    rule: 'upstreamProviders: several with unique names (VirtualMCPServer)',
    spec: embedded({ upstreamProviders: [oidcProvider('corp'), oauth2Provider('github')] }),
    expect: 'valid',
  },
  {
    rule: 'upstreamProviders[].name must be unique',
    spec: embedded({ upstreamProviders: [oidcProvider('corp'), oauth2Provider('corp')] }),
    expect: ['spec.embeddedAuthServer.upstreamProviders[1].name: duplicate name "corp"'],
  },
  {
    rule: 'upstreamProviders[].name lowercase alphanumerics and hyphens',
    spec: embedded({ upstreamProviders: [oidcProvider('Corp')] }),
    expect: ['spec.embeddedAuthServer.upstreamProviders[0].name: must match pattern'],
  },
  {
    rule: 'upstreamProviders[].name starts and ends alphanumeric',
    spec: embedded({ upstreamProviders: [oidcProvider('corp-')] }),
    expect: ['spec.embeddedAuthServer.upstreamProviders[0].name: must match pattern'],
  },
  {
    rule: 'upstreamProviders[].name maxLength 63',
    spec: embedded({ upstreamProviders: [oidcProvider('a'.repeat(64))] }),
    expect: ['spec.embeddedAuthServer.upstreamProviders[0].name: must NOT have more than 63 characters'],
  },
  {
    rule: 'upstreamProviders[].name 63 characters is fine',
    spec: embedded({ upstreamProviders: [oidcProvider('a'.repeat(63))] }),
    expect: 'valid',
  },
  {
    rule: 'upstreamProviders[].type oidc or oauth2',
    spec: embedded({ upstreamProviders: [{ name: 'x', type: 'saml' }] }),
    expect: ['spec.embeddedAuthServer.upstreamProviders[0].type: must be one of'],
  },
  {
    rule: 'oidcConfig must be absent when type is oauth2',
    spec: embedded({ upstreamProviders: [{ ...oauth2Provider(), oidcConfig: oidcProvider().oidcConfig }] }),
    expect: [
      "spec.embeddedAuthServer.upstreamProviders[0].oidcConfig: oidcConfig must be set if and only if type is 'oidc'",
    ],
  },
  {
    rule: 'oauth2Config required when type is oauth2',
    spec: embedded({ upstreamProviders: [{ name: 'gh', type: 'oauth2' }] }),
    expect: [
      "spec.embeddedAuthServer.upstreamProviders[0].oauth2Config: oauth2Config must be set if and only if type is 'oauth2'",
    ],
  },
  {
    rule: 'oidcConfig.issuerUrl is an HTTPS URL',
    spec: embedded({ upstreamProviders: [oidcProvider('corp', { issuerUrl: 'http://login.example.com' })] }),
    expect: ['spec.embeddedAuthServer.upstreamProviders[0].oidcConfig.issuerUrl: must match pattern'],
  },
  {
    rule: 'oauth2Config with dcrConfig and no clientId',
    spec: embedded({
      upstreamProviders: [
        oauth2Provider('gh', {
          clientId: undefined,
          dcrConfig: { discoveryUrl: 'https://gh.example.com/.well-known/oauth-authorization-server' },
        }),
      ],
    }),
    expect: 'valid',
  },
  {
    rule: 'oauth2Config: clientId xor dcrConfig (both)',
    spec: embedded({
      upstreamProviders: [
        oauth2Provider('gh', { dcrConfig: { registrationEndpoint: 'https://gh.example.com/register' } }),
      ],
    }),
    expect: [
      'spec.embeddedAuthServer.upstreamProviders[0].oauth2Config.clientId: exactly one of clientId or dcrConfig must be set',
    ],
  },
  {
    rule: 'oauth2Config: clientId must be empty when dcrConfig is set (empty string counts as absent)',
    spec: embedded({
      upstreamProviders: [
        oauth2Provider('gh', {
          clientId: '',
          dcrConfig: { registrationEndpoint: 'https://gh.example.com/register' },
        }),
      ],
    }),
    expect: 'valid',
  },
  {
    rule: 'oauth2Config: clientId xor dcrConfig (neither)',
    spec: embedded({ upstreamProviders: [oauth2Provider('gh', { clientId: undefined })] }),
    expect: [
      'spec.embeddedAuthServer.upstreamProviders[0].oauth2Config.clientId: exactly one of clientId or dcrConfig',
    ],
  },
  {
    rule: 'oauth2Config.dcrConfig: one of discoveryUrl or registrationEndpoint',
    spec: embedded({
      upstreamProviders: [
        oauth2Provider('gh', {
          clientId: undefined,
          dcrConfig: {
            discoveryUrl: 'https://a.example.com',
            registrationEndpoint: 'https://a.example.com/register',
          },
        }),
      ],
    }),
    expect: [
      'spec.embeddedAuthServer.upstreamProviders[0].oauth2Config.dcrConfig: exactly one of discoveryUrl or registrationEndpoint',
    ],
  },
  {
    rule: 'oauth2Config.additionalAuthorizationParams: "state" is not allowed',
    spec: embedded({
      upstreamProviders: [
        oauth2Provider('gh', { additionalAuthorizationParams: { prompt: 'consent', state: 'x' } }),
      ],
    }),
    expect: ['spec.embeddedAuthServer.upstreamProviders[0].oauth2Config.additionalAuthorizationParams.state'],
  },
  {
    rule: 'oidcConfig.additionalAuthorizationParams: same forbidden names ("nonce")',
    spec: embedded({
      upstreamProviders: [oidcProvider('corp', { additionalAuthorizationParams: { nonce: 'n' } })],
    }),
    expect: ['spec.embeddedAuthServer.upstreamProviders[0].oidcConfig.additionalAuthorizationParams.nonce'],
  },
  {
    rule: 'additionalAuthorizationParams: other names are allowed',
    spec: embedded({
      upstreamProviders: [
        oidcProvider('corp', {
          additionalAuthorizationParams: { access_type: 'offline', prompt: 'consent' },
        }),
      ],
    }),
    expect: 'valid',
  },
  {
    rule: 'oauth2Config.authorizationEndpoint starts with http:// or https://',
    spec: embedded({ upstreamProviders: [oauth2Provider('gh', { authorizationEndpoint: 'ftp://x/auth' })] }),
    expect: [
      'spec.embeddedAuthServer.upstreamProviders[0].oauth2Config.authorizationEndpoint: must match pattern',
    ],
  },
  {
    rule: 'userInfo.httpMethod GET or POST',
    spec: embedded({
      upstreamProviders: [
        oauth2Provider('gh', { userInfo: { endpointUrl: 'https://api.github.com/user', httpMethod: 'PUT' } }),
      ],
    }),
    expect: ['spec.embeddedAuthServer.upstreamProviders[0].oauth2Config.userInfo.httpMethod: must be one of'],
  },
  {
    rule: 'userInfo.endpointUrl is required',
    spec: embedded({ upstreamProviders: [oauth2Provider('gh', { userInfo: { httpMethod: 'GET' } })] }),
    expect: ['spec.embeddedAuthServer.upstreamProviders[0].oauth2Config.userInfo.endpointUrl: is required'],
  },
  {
    rule: 'tokenResponseMapping.accessTokenPath minLength 1',
    spec: embedded({
      upstreamProviders: [oauth2Provider('gh', { tokenResponseMapping: { accessTokenPath: '' } })],
    }),
    expect: [
      'spec.embeddedAuthServer.upstreamProviders[0].oauth2Config.tokenResponseMapping.accessTokenPath',
    ],
  },
  {
    rule: 'tokenLifespans are durations',
    spec: embedded({
      tokenLifespans: { accessTokenLifespan: '1h30m', authCodeLifespan: '90s', refreshTokenLifespan: '1.5h' },
    }),
    expect: 'valid',
  },
  {
    rule: 'tokenLifespans: "1d" is not a duration',
    spec: embedded({ tokenLifespans: { refreshTokenLifespan: '7d' } }),
    expect: ['spec.embeddedAuthServer.tokenLifespans.refreshTokenLifespan: must match pattern'],
  },
  // ---- storage
  { rule: 'storage.type memory', spec: embedded({ storage: { type: 'memory' } }), expect: 'valid' },
  {
    rule: 'storage.type memory or redis',
    spec: embedded({ storage: { type: 'etcd' } }),
    expect: ['spec.embeddedAuthServer.storage.type: must be one of'],
  },
  {
    rule: 'storage.redis required when type is redis',
    spec: embedded({ storage: { type: 'redis' } }),
    expect: ["spec.embeddedAuthServer.storage.redis: redis must be set if and only if type is 'redis'"],
  },
  {
    rule: 'storage.redis used only when type is redis (type defaults to memory)',
    spec: embedded({
      storage: { redis: { aclUserConfig: { passwordSecretRef: ref('r') }, addr: 'redis:6379' } },
    }),
    expect: ["spec.embeddedAuthServer.storage.redis: redis must be set if and only if type is 'redis'"],
  },
  { rule: 'redis standalone addr', spec: redisStorage({ addr: 'redis.default.svc:6379' }), expect: 'valid' },
  {
    rule: 'redis cluster mode with addr',
    spec: redisStorage({ addr: 'redis:6379', clusterMode: true, tls: {} }),
    expect: 'valid',
  },
  {
    rule: 'redis sentinel with sentinelAddrs',
    spec: redisStorage({
      sentinelConfig: { masterName: 'mymaster', sentinelAddrs: ['10.0.0.1:26379', '[::1]:26379'] },
      sentinelTls: { insecureSkipVerify: true },
    }),
    expect: 'valid',
  },
  {
    rule: 'redis sentinel with sentinelService',
    spec: redisStorage({
      sentinelConfig: { masterName: 'mymaster', sentinelService: { name: 'redis-sentinel' } },
    }),
    expect: 'valid',
  },
  {
    rule: 'redis: addr xor sentinelConfig (both)',
    spec: redisStorage({
      addr: 'redis:6379',
      sentinelConfig: { masterName: 'm', sentinelAddrs: ['s:26379'] },
    }),
    expect: ['spec.embeddedAuthServer.storage.redis: exactly one of addr or sentinelConfig must be set'],
  },
  {
    rule: 'redis: addr xor sentinelConfig (neither)',
    spec: redisStorage({}),
    expect: ['spec.embeddedAuthServer.storage.redis: exactly one of addr or sentinelConfig must be set'],
  },
  {
    rule: 'redis: clusterMode requires addr',
    spec: redisStorage({
      clusterMode: true,
      sentinelConfig: { masterName: 'm', sentinelAddrs: ['s:26379'] },
    }),
    expect: ['spec.embeddedAuthServer.storage.redis.clusterMode: clusterMode requires addr to be set'],
  },
  {
    rule: 'redis.aclUserConfig is required',
    spec: embedded({ storage: { type: 'redis', redis: { addr: 'redis:6379' } } }),
    expect: ['spec.embeddedAuthServer.storage.redis.aclUserConfig: is required'],
  },
  {
    rule: 'redis.aclUserConfig.passwordSecretRef is required',
    spec: embedded({
      storage: {
        type: 'redis',
        redis: { addr: 'redis:6379', aclUserConfig: { usernameSecretRef: ref('u') } },
      },
    }),
    expect: ['spec.embeddedAuthServer.storage.redis.aclUserConfig.passwordSecretRef: is required'],
  },
  {
    rule: 'redis.addr is host:port',
    spec: redisStorage({ addr: 'redis' }),
    expect: ['spec.embeddedAuthServer.storage.redis.addr: must match pattern'],
  },
  {
    rule: 'redis timeouts are durations',
    spec: redisStorage({ addr: 'redis:6379', dialTimeout: '5 seconds' }),
    expect: ['spec.embeddedAuthServer.storage.redis.dialTimeout: must match pattern'],
  },
  {
    rule: 'sentinelConfig.masterName is required',
    spec: redisStorage({ sentinelConfig: { sentinelAddrs: ['s:26379'] } }),
    expect: ['spec.embeddedAuthServer.storage.redis.sentinelConfig.masterName: is required'],
  },
  {
    rule: 'sentinelConfig: sentinelAddrs xor sentinelService',
    spec: redisStorage({
      sentinelConfig: { masterName: 'm', sentinelAddrs: ['s:26379'], sentinelService: { name: 's' } },
    }),
    expect: [
      'spec.embeddedAuthServer.storage.redis.sentinelConfig: exactly one of sentinelAddrs or sentinelService',
    ],
  },
  // ---- status
  {
    rule: 'status.conditions[].status True, False or Unknown',
    whole: resource(
      { type: 'unauthenticated' },
      {
        status: {
          conditions: [
            {
              type: 'Valid',
              status: 'Maybe',
              reason: 'X',
              message: '',
              lastTransitionTime: '2026-01-01T00:00:00Z',
            },
          ],
        },
      },
    ),
    expect: ['status.conditions[0].status: must be one of'],
  },
  {
    rule: 'status.conditions[].reason may not be empty',
    whole: resource(
      { type: 'unauthenticated' },
      {
        status: {
          conditions: [
            {
              type: 'Valid',
              status: 'True',
              reason: '',
              message: '',
              lastTransitionTime: '2026-01-01T00:00:00Z',
            },
          ],
        },
      },
    ),
    expect: ['status.conditions[0].reason'],
  },
  {
    rule: 'status.referencingWorkloads[].kind MCPServer, VirtualMCPServer or MCPRemoteProxy',
    whole: resource(
      { type: 'unauthenticated' },
      { status: { referencingWorkloads: [{ kind: 'Pod', name: 'x' }] } },
    ),
    expect: ['status.referencingWorkloads[0].kind: must be one of'],
  },
];

describe('MCPExternalAuthConfig validation table', () => {
  it(`has at least 60 rows (${rows.length})`, () => assert.ok(rows.length >= 60));
  for (const row of rows) {
    const title = `${row.rule} → ${row.expect === 'valid' ? 'valid' : 'invalid'}`;
    it(title, () => {
      const input = row.whole ?? resource(row.spec);
      const { problems, resource: out } = validateExtAuthConfig(input);
      const text = problems.map(formatProblem);
      if (row.expect === 'valid') {
        assert.deepEqual(text, []);
        assert.ok(out !== undefined);
      } else {
        assert.equal(out, undefined);
        for (const fragment of row.expect) {
          assert.ok(
            text.some((t) => t.includes(fragment)),
            `expected a problem containing ${JSON.stringify(fragment)}, got ${JSON.stringify(text)}`,
          );
        }
      }
    });
  }
});
