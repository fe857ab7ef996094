/**
 * What the authorization stage asks an authorizer (Cedar in-process, or an external decision
 * point) and what it gets back. One question per MCP operation on one feature: call a tool,
 * get a prompt, read a resource (the MCP methods ToolHive authorizes).
 */

export type AuthzFeature = 'tool' | 'prompt' | 'resource';

/** The four MCP tool annotations the reference passes to policies, when the server gave them. */
export type ToolAnnotations = Partial<
  Record<'readOnlyHint' | 'destructiveHint' | 'idempotentHint' | 'openWorldHint', boolean>
>;

export const ANNOTATION_KEYS = [
  'readOnlyHint',
  'destructiveHint',
  'idempotentHint',
  'openWorldHint',
] as const;

/** The known boolean annotations of a listed tool (`tools/list` item `annotations`). */
export function annotationsOf(tool: unknown): ToolAnnotations | undefined {
  if (typeof tool !== 'object' || tool === null) return undefined;
  const raw = (tool as { annotations?: unknown }).annotations;
  if (typeof raw !== 'object' || raw === null) return undefined;
  const out: ToolAnnotations = {};
  let any = false;
  for (const key of ANNOTATION_KEYS) {
    const v = (raw as Record<string, unknown>)[key];
    if (typeof v === 'boolean') {
      out[key] = v;
      any = true;
    }
  }
  return any ? out : undefined;
}

export interface AuthzRequest {
  /** The caller's claims (verified token, upstream token, or the local user). */
  readonly claims: Readonly<Record<string, unknown>>;
  /**
   * The claims are the synthetic local user's (ToolHive's, without OIDC): its `exp`/`iat`/`nbf` are
   * integers and become Cedar Longs, where every number of a token becomes a decimal.
   */
  readonly localUser: boolean;
  readonly feature: AuthzFeature;
  /** Tool or prompt name, or the resource's exact URI. */
  readonly resourceId: string;
  /** `tools/call` / `prompts/get` arguments. */
  readonly arguments?: Readonly<Record<string, unknown>> | undefined;
  /** Tools only: the annotations the server listed for this tool, when known. */
  readonly annotations?: ToolAnnotations | undefined;
}

export interface AuthzDecision {
  readonly allow: boolean;
  /** Why, for the WARN log of a denial: policy ids and error kinds, never claim or argument values. */
  readonly reason: string;
}

export interface Authorizer {
  authorize(request: AuthzRequest): AuthzDecision | Promise<AuthzDecision>;
  /** Releases connections; idempotent. */
  close?(): Promise<void>;
}
