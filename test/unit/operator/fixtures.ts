/** Small builders for MCPExternalAuthConfig test resources, and shared manifests. */
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

/** A workload with the objects a platform team deploys next to it, from other API groups. */
export const OTHER_GROUPS_YAML = `apiVersion: v1
kind: Namespace
metadata: { name: toolhive }
---
apiVersion: v1
kind: ServiceAccount
metadata: { name: redis, namespace: toolhive }
---
apiVersion: v1
kind: Service
metadata: { name: redis, namespace: toolhive }
spec: { ports: [{ port: 6379 }], selector: { app: redis } }
---
apiVersion: apps/v1
kind: StatefulSet
metadata: { name: redis, namespace: toolhive }
spec: { serviceName: redis, selector: { matchLabels: { app: redis } } }
---
apiVersion: databases.spotahome.com/v1
kind: RedisFailover
metadata: { name: sessions, namespace: toolhive }
spec: { sentinel: { replicas: 3 }, redis: { replicas: 3 } }
---
apiVersion: v1
kind: Secret
metadata: { name: redis-auth, namespace: toolhive }
stringData: { password: not-a-real-password }
---
apiVersion: skep.dev/v1beta1
kind: MCPServer
metadata: { name: web, namespace: toolhive }
spec:
  image: web:1
  transport: streamable-http
  mcpPort: 8080
  proxyPort: 8080
  sessionStorage: { provider: redis, address: "redis:6379", passwordRef: { name: redis-auth, key: password } }
`;
