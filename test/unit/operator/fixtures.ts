/** Small builders for MCPExternalAuthConfig test resources. */
export const ROLE_ARN = 'arn:aws:iam::123456789012:role/mcp-reader';
export const ref = (name: string, key = 'value') => ({ name, key });

export function resource(spec: unknown, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    apiVersion: 'skep.dev/v1beta1',
    kind: 'MCPExternalAuthConfig',
    metadata: { name: 'cfg', namespace: 'team-a' },
    spec,
    ...extra,
  };
}

export const oidcProvider = (name = 'corp', extra: Record<string, unknown> = {}) => ({
  name,
  type: 'oidc',
  oidcConfig: { clientId: 'skep', issuerUrl: 'https://login.example.com', ...extra },
});

export const oauth2Provider = (name = 'github', extra: Record<string, unknown> = {}) => ({
  name,
  type: 'oauth2',
  oauth2Config: {
    authorizationEndpoint: 'https://github.com/login/oauth/authorize',
    tokenEndpoint: 'https://github.com/login/oauth/access_token',
    clientId: 'abc',
    ...extra,
  },
});

export const embedded = (extra: Record<string, unknown> = {}) => ({
  type: 'embeddedAuthServer',
  embeddedAuthServer: { issuer: 'https://auth.example.com', upstreamProviders: [oidcProvider()], ...extra },
});

export const redisStorage = (redis: Record<string, unknown>) =>
  embedded({
    storage: {
      type: 'redis',
      redis: { aclUserConfig: { passwordSecretRef: ref('redis', 'password') }, ...redis },
    },
  });

export const awsSts = (extra: Record<string, unknown>) => ({
  type: 'awsSts',
  awsSts: { region: 'us-east-1', ...extra },
});

export const tokenExchange = (extra: Record<string, unknown> = {}) => ({
  type: 'tokenExchange',
  tokenExchange: { audience: 'backend', tokenUrl: 'https://sts.example.com/token', ...extra },
});
