/**
 * MCPExternalAuthConfig → a vMCP backend strategy (as ToolHive's operator resolves
 * `spec.outgoingAuth` and passes SecretRefs to pods): how the operator resolves a
 * VirtualMCPServer's outgoing auth into its pod's configuration (the reference's inline mode, which
 * Skep uses for both sources — the pod never reads the API). Secret values never enter the
 * configuration: the strategy names an env var (`*Env`), and the pod gets that variable from the
 * Secret (`valueFrom.secretKeyRef`). Variable names carry the config's name
 * (`SKEP_HEADER_INJECTION_VALUE_<CFG>`), so two backends never collide.
 */
import { SkepError } from '../../shared/index.js';
import type { BackendAuthStrategy } from '../../dataplane/vmcp/index.js';
import { envName, type SecretEnv } from './runconfig.js';
import { formatProblem, type SecretReader, validateExtAuthConfigWithSecrets } from './validate.js';

export interface VmcpStrategy {
  strategy: BackendAuthStrategy;
  /** Env vars the vMCP pod must get from Secrets. */
  env: SecretEnv[];
}

/** Throws a SkepError (its message becomes a render problem) when the config cannot serve a vMCP. */
export async function vmcpStrategyFor(input: unknown, readSecret: SecretReader): Promise<VmcpStrategy> {
  const { problems, resource } = await validateExtAuthConfigWithSecrets(input, readSecret);
  if (resource === undefined) {
    throw new SkepError(
      'invalid_config',
      `invalid MCPExternalAuthConfig: ${problems.map(formatProblem).join('; ')}`,
    );
  }
  const cfg = resource.metadata.name;
  const spec = resource.spec;
  const refuse = (why: string) =>
    new SkepError('unsupported_field', `MCPExternalAuthConfig ${cfg} (${spec.type}) ${why}`);
  switch (spec.type) {
    case 'unauthenticated':
      return { strategy: { type: 'unauthenticated' }, env: [] };
    case 'headerInjection': {
      const h = spec.headerInjection!;
      const name = envName('SKEP_HEADER_INJECTION_VALUE', cfg);
      return {
        strategy: {
          type: 'header_injection',
          headerInjection: { headerName: h.headerName, headerValueEnv: name },
        },
        env: [{ name, secretRef: h.valueSecretRef }],
      };
    }
    case 'tokenExchange': {
      const te = spec.tokenExchange!;
      if (te.externalTokenHeaderName !== undefined && te.externalTokenHeaderName !== '')
        throw refuse('sets externalTokenHeaderName, which a virtual MCP server cannot honour');
      if (te.subjectProviderName !== undefined && te.subjectProviderName !== '')
        throw refuse('names a subjectProviderName; a VirtualMCPServer runs no embedded authorization server');
      const env: SecretEnv[] = [];
      const strategy: BackendAuthStrategy = {
        type: 'token_exchange',
        tokenExchange: { tokenUrl: te.tokenUrl, audience: te.audience },
      };
      const t = strategy.tokenExchange!;
      if (te.clientId !== undefined) t.clientId = te.clientId;
      if (te.scopes !== undefined) t.scopes = te.scopes;
      if (te.subjectTokenType !== undefined && te.subjectTokenType !== '')
        t.subjectTokenType = te.subjectTokenType;
      if (te.clientSecretRef !== undefined) {
        t.clientSecretEnv = envName('SKEP_TOKEN_EXCHANGE_CLIENT_SECRET', cfg);
        env.push({ name: t.clientSecretEnv, secretRef: te.clientSecretRef });
      }
      return { strategy, env };
    }
    case 'upstreamInject':
    case 'embeddedAuthServer':
      throw refuse('needs an embedded authorization server, which a VirtualMCPServer does not run');
    case 'awsSts':
      throw refuse('is not supported for virtual MCP backends (requests are not SigV4-signed there)');
    case 'bearerToken':
      throw refuse('is not a virtual MCP backend strategy; use headerInjection with an Authorization header');
  }
}
