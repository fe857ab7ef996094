/**
 * The one validation library for MCPExternalAuthConfig, used by the admission webhook, the
 * controller and `skep extauth validate`. Three layers, in the order the API server applies
 * them, plus what ToolHive checks in code beyond CEL (its Go `Validate()`):
 *  1. structure (ajv over the TypeBox schema: types, enums, patterns, bounds, required; defaults
 *     are applied to a copy), plus unknown fields (kubectl's strict field validation);
 *  2. the cross-field CEL rules carried by the schema (`x-kubernetes-validations`), evaluated
 *     with cel-js exactly as they appear in the CRD;
 *  3. rules that need code: CEL matchers compile, issuer host, forbidden authorization
 *     parameters, unique upstream names, and the HMAC secret length when the Secret is readable.
 * Every problem names the field path (`spec.awsSts.roleMappings[0].matcher: ...`).
 */
import {
  type ExtAuthConfig,
  ExtAuthConfigSchema,
  FORBIDDEN_AUTHORIZATION_PARAMS,
} from '../../schemas/extauth/index.js';
import { checkMatcher, createValidator } from '../../validation/index.js';
import { evaluateCelRules } from './cel-rules.js';
import { isRecord } from '../../shared/index.js';
import { at } from './json-fields.js';

export interface Problem {
  path: string;
  message: string;
}

export interface ValidationResult {
  /** Empty when the resource is valid. */
  problems: Problem[];
  /** The resource with schema defaults applied (a copy); present only when valid. */
  resource?: ExtAuthConfig;
}

/** Reads one key of a Secret in a namespace; `undefined` when it cannot be read. */
export type SecretReader = (namespace: string, name: string, key: string) => Promise<Buffer | undefined>;

/** ToolHive's limit: the current `hmacSecretRefs` secret holds at least 32 bytes. */
export const MIN_HMAC_BYTES = 32;

const structural = createValidator(ExtAuthConfigSchema);

export function formatProblem(p: Problem): string {
  return p.path === '' ? p.message : `${p.path}: ${p.message}`;
}

/** Splits the shared validator's `a.b.0.c: message` text into a path with `[i]` indexes. */
function fromAjv(text: string): Problem {
  const at = text.indexOf(': ');
  const raw = at < 0 ? '' : text.slice(0, at);
  const message = at < 0 ? text : text.slice(at + 2);
  const path = raw === '(root)' ? '' : raw.replace(/\.(\d+)(?=\.|$)/g, '[$1]');
  return { path, message };
}

/** Fields the schema does not know: the API server would prune them, kubectl (strict) rejects them. */
function unknownFields(schema: unknown, value: unknown, path: string, out: Problem[]): void {
  if (isRecord(value)) {
    const props = at(schema, 'properties');
    if (isRecord(props) && path !== 'metadata') {
      for (const key of Object.keys(value)) {
        const sub = props[key];
        const child = path === '' ? key : `${path}.${key}`;
        if (sub === undefined) out.push({ path: child, message: 'is not a known field' });
        else unknownFields(sub, value[key], child, out);
      }
    }
  } else if (Array.isArray(value)) {
    const items = at(schema, 'items');
    if (isRecord(items)) for (const [i, v] of value.entries()) unknownFields(items, v, `${path}[${i}]`, out);
  }
}

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/**
 * ToolHive's rule for embeddedAuthServer.issuer: HTTPS (HTTP only for localhost), no query,
 * fragment or trailing slash.
 */
export function checkIssuerUrl(value: string): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'must be an absolute URL';
  }
  if (url.protocol === 'http:' && !LOOPBACK_HOSTS.has(url.hostname) && !url.hostname.endsWith('.localhost')) {
    return 'must use https (http is allowed only for localhost)';
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'must use https';
  if (url.search !== '' || value.includes('?')) return 'must not contain a query';
  if (url.hash !== '' || value.includes('#')) return 'must not contain a fragment';
  if (value.endsWith('/')) return 'must not end with a slash';
  return undefined;
}

function codeRules(resource: ExtAuthConfig, out: Problem[]): void {
  const spec = resource.spec;
  spec.awsSts?.roleMappings?.forEach((m, i) => {
    if (m.matcher === undefined) return;
    const why = checkMatcher(m.matcher);
    if (why !== undefined) out.push({ path: `spec.awsSts.roleMappings[${i}].matcher`, message: why });
  });
  const eas = spec.embeddedAuthServer;
  if (eas === undefined) return;
  for (const field of ['issuer', 'authorizationEndpointBaseUrl'] as const) {
    const value = eas[field];
    if (value === undefined) continue;
    const why = checkIssuerUrl(value);
    if (why !== undefined) out.push({ path: `spec.embeddedAuthServer.${field}`, message: why });
  }
  const seen = new Map<string, number>();
  eas.upstreamProviders.forEach((p, i) => {
    const base = `spec.embeddedAuthServer.upstreamProviders[${i}]`;
    const first = seen.get(p.name);
    if (first !== undefined) {
      out.push({
        path: `${base}.name`,
        message: `duplicate name "${p.name}" (also upstreamProviders[${first}])`,
      });
    } else {
      seen.set(p.name, i);
    }
    const params: Array<[string, Record<string, string> | undefined]> = [
      ['oauth2Config', p.oauth2Config?.additionalAuthorizationParams],
      ['oidcConfig', p.oidcConfig?.additionalAuthorizationParams],
    ];
    for (const [block, map] of params) {
      for (const key of Object.keys(map ?? {})) {
        if (FORBIDDEN_AUTHORIZATION_PARAMS.some((p) => p === key)) {
          out.push({
            path: `${base}.${block}.additionalAuthorizationParams.${key}`,
            message: `parameter "${key}" is managed by the server and cannot be set`,
          });
        }
      }
    }
  });
}

/** Offline validation: structure, CEL rules and code rules. */
export function validateExtAuthConfig(input: unknown): ValidationResult {
  const copy = structuredClone(input);
  const problems: Problem[] = [];
  unknownFields(ExtAuthConfigSchema, copy, '', problems);
  // ajv applies schema defaults to `copy` in place (useDefaults), as the API server would.
  problems.push(...structural.problems(copy).map(fromAjv));
  problems.push(...evaluateCelRules(ExtAuthConfigSchema, copy));
  try {
    codeRules(copy as ExtAuthConfig, problems);
  } catch {
    // Only a structurally broken value can make the code rules throw; that is reported above.
  }
  return problems.length > 0 ? { problems } : { problems, resource: copy as ExtAuthConfig };
}

/** Full validation: the offline rules plus those that need to read Secrets (when readable). */
export async function validateExtAuthConfigWithSecrets(
  input: unknown,
  readSecret: SecretReader | undefined,
): Promise<ValidationResult> {
  const result = validateExtAuthConfig(input);
  if (result.resource === undefined || readSecret === undefined) return result;
  const current = result.resource.spec.embeddedAuthServer?.hmacSecretRefs?.[0];
  const namespace = result.resource.metadata.namespace ?? 'default';
  if (current !== undefined) {
    const value = await readSecret(namespace, current.name, current.key);
    if (value !== undefined && value.length < MIN_HMAC_BYTES) {
      return {
        problems: [
          {
            // Never the length: whoever may create this resource in the namespace (or asks the
            // webhook with a dry run) would learn the size of a Secret they may not read.
            path: 'spec.embeddedAuthServer.hmacSecretRefs[0]',
            message: `Secret ${current.name} key ${current.key} is shorter than ${MIN_HMAC_BYTES} bytes; the current HMAC secret must be at least ${MIN_HMAC_BYTES} bytes`,
          },
        ],
      };
    }
  }
  return result;
}
