/**
 * The authorizer configuration (`authz_config`, the file `authz_config_path` names): the
 * reference's two shapes (ToolHive's), `cedarv1` (Cedar policies evaluated in the
 * proxy) and `httpv1` (an external decision point). `parseAuthzConfig` checks the shape with
 * the generated validator of the type's schema (src/schemas/authz.ts: unknown keys refused,
 * nothing silently ignored), compiles every Cedar policy and the static entities, and returns
 * a frozen config with the defaults filled in. What it cannot judge alone (the embedded authorization server's upstreams) is
 * checked against the run configuration by `checkAuthzConfig`.
 */
import { readFileSync } from 'node:fs';
import { extname, isAbsolute, resolve } from 'node:path';
import {
  type GeneratedValidator,
  validateCedarAuthzConfig,
  validateHttpAuthzConfig,
  validationProblem,
} from '../../../schemas/validators/index.js';
import { isRecord, jsonSyntaxError, lazyRequire, SkepError, yamlSyntaxError } from '../../../shared/index.js';
import { type CedarEntity, compileEntities, compilePolicies } from './cedar-engine.js';

/** YAML files are rare; a workload runner loads the parser only for one (runner-footprint check). */
const loadYaml = lazyRequire<typeof import('yaml')>('yaml');

export interface CedarOptions {
  /** Cedar source, one policy per entry; ids `policy0` … `policy<N>`. */
  readonly policies: readonly string[];
  /** The static entity store as given (a JSON string holding an array), '' for none. */
  readonly entities_json: string;
  /** Claims come from this upstream's access token (embedded authorization server). */
  readonly primary_upstream_provider: string;
  readonly group_claim_name: string;
  readonly role_claim_name: string;
  /** Entity type of group parents; default `THVGroup`. */
  readonly group_entity_type: string;
  readonly multi_valued_claims: readonly string[];
}

export interface CedarAuthzConfig {
  readonly version: string;
  readonly type: 'cedarv1';
  readonly cedar: CedarOptions;
  /** `entities_json`, parsed and normalised (uids as `{type, id}`). */
  readonly entities: readonly CedarEntity[];
}

export type ClaimMapping = 'mpe' | 'standard';

export interface PdpOptions {
  readonly http: {
    readonly url: string;
    /** Seconds; default 30. */
    readonly timeout: number;
    readonly insecure_skip_verify: boolean;
  };
  readonly claim_mapping: ClaimMapping;
  readonly context: { readonly include_args: boolean; readonly include_operation: boolean };
}

export interface HttpAuthzConfig {
  readonly version: string;
  readonly type: 'httpv1';
  readonly pdp: PdpOptions;
}

export type AuthzConfig = CedarAuthzConfig | HttpAuthzConfig;

/** Defaults, with units, in one table. */
export const AUTHZ_DEFAULTS = {
  groupEntityType: 'THVGroup',
  /** The decision point's answer must arrive within this, seconds (reference `defaultTimeout`). */
  pdpTimeoutSeconds: 30,
} as const;

/** Cedar's reserved words cannot name an entity type. */
const CEDAR_RESERVED = new Set(['true', 'false', 'if', 'then', 'else', 'in', 'is', 'like', 'has', '__cedar']);
const CEDAR_IDENT = /^[A-Za-z_][A-Za-z0-9_]*$/;

function bad(message: string): SkepError {
  return new SkepError('invalid_config', message);
}

/** What `CedarAuthzConfigSchema` lets through. */
interface RawCedar {
  readonly policies: readonly string[];
  readonly entities_json?: string;
  readonly primary_upstream_provider?: string;
  readonly group_claim_name?: string;
  readonly role_claim_name?: string;
  readonly group_entity_type?: string;
  readonly multi_valued_claims?: readonly string[];
}

/** What `HttpAuthzConfigSchema` lets through. */
interface RawPdp {
  readonly http: { readonly url: string; readonly timeout?: number; readonly insecure_skip_verify?: boolean };
  readonly claim_mapping: ClaimMapping;
  readonly context?: { readonly include_args?: boolean; readonly include_operation?: boolean };
}

function checked(validate: GeneratedValidator, value: unknown, field: string): void {
  const problem = validationProblem(validate, value, field);
  if (problem !== undefined) throw bad(problem);
}

/** The Cedar options, after the rules the schema cannot state: policies and entities compile. */
function cedarOptions(c: RawCedar, field: string): CedarOptions & { entities: CedarEntity[] } {
  compilePolicies(c.policies, `${field}.policies`);
  const entitiesJson = c.entities_json ?? '';
  const entities = compileEntities(entitiesJson, `${field}.entities_json`);
  const groupEntityType = c.group_entity_type ?? '';
  // Rule: Cedar's grammar for an entity type name (no namespace), reserved words excluded.
  if (groupEntityType !== '' && (!CEDAR_IDENT.test(groupEntityType) || CEDAR_RESERVED.has(groupEntityType)))
    throw bad(
      `${field}.group_entity_type: "${groupEntityType}" is not a Cedar identifier (letters, digits and _, no namespace '::')`,
    );
  return {
    policies: Object.freeze([...c.policies]),
    entities_json: entitiesJson,
    entities,
    primary_upstream_provider: c.primary_upstream_provider ?? '',
    group_claim_name: c.group_claim_name ?? '',
    role_claim_name: c.role_claim_name ?? '',
    group_entity_type: groupEntityType === '' ? AUTHZ_DEFAULTS.groupEntityType : groupEntityType,
    multi_valued_claims: Object.freeze([...(c.multi_valued_claims ?? [])]),
  };
}

/** The decision point's options, after the rule the schema cannot state: an http(s) URL. */
function pdpOptions(p: RawPdp, field: string): PdpOptions {
  const url = p.http.url;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw bad(`${field}.http.url: "${url}" is not a URL`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
    throw bad(`${field}.http.url must be an http or https URL`);
  if (parsed.username !== '' || parsed.password !== '')
    throw bad(`${field}.http.url must not carry credentials`);
  const timeout = p.http.timeout;
  return {
    http: Object.freeze({
      url,
      timeout: timeout === undefined || timeout === 0 ? AUTHZ_DEFAULTS.pdpTimeoutSeconds : timeout,
      insecure_skip_verify: p.http.insecure_skip_verify ?? false,
    }),
    claim_mapping: p.claim_mapping,
    context: Object.freeze({
      include_args: p.context?.include_args ?? false,
      include_operation: p.context?.include_operation ?? false,
    }),
  };
}

/**
 * Validates an authorizer configuration (`field` names it in errors, e.g. `authz_config`)
 * and returns it frozen, with defaults. Throws `invalid_config` naming the field — for a Cedar
 * policy, its id `policy<N>` and Cedar's own message.
 */
export function parseAuthzConfig(value: unknown, field = 'authz_config'): AuthzConfig {
  if (!isRecord(value)) throw bad(`${field} must be an object`);
  const root = value;
  const version = root['version'];
  if (typeof version !== 'string' || version === '')
    throw bad(`${field}.version is required (a string, e.g. "1.0")`);
  const type = root['type'];
  // `type` picks the schema.
  if (type === 'cedarv1') {
    checked(validateCedarAuthzConfig, root, field);
    const { entities, ...cedar } = cedarOptions(root['cedar'] as RawCedar, `${field}.cedar`);
    return Object.freeze({ version, type, cedar: Object.freeze(cedar), entities });
  }
  if (type === 'httpv1') {
    checked(validateHttpAuthzConfig, root, field);
    return Object.freeze({
      version,
      type,
      pdp: Object.freeze(pdpOptions(root['pdp'] as RawPdp, `${field}.pdp`)),
    });
  }
  throw bad(
    `${field}.type must be "cedarv1" or "httpv1"${typeof type === 'string' ? `, not "${type}"` : ''}`,
  );
}

/**
 * Reads an authorizer file, JSON or YAML by extension as the reference does (`.json` or none:
 * JSON; `.yaml`/`.yml`: YAML; anything else refused), and returns its content unvalidated.
 * A path with a `..` segment is refused (as ToolHive does). Relative paths resolve against `cwd`.
 */
export function readAuthzConfigFile(path: string, field: string, cwd = process.cwd()): unknown {
  if (path.split(/[\\/]/).includes('..')) throw bad(`${field}: the path "${path}" must not contain '..'`);
  const ext = extname(path).toLowerCase();
  const yaml = ext === '.yaml' || ext === '.yml';
  if (!yaml && ext !== '.json' && ext !== '')
    throw bad(`${field}: "${path}" must be a .json, .yaml or .yml file (or have no extension: JSON)`);
  const full = isAbsolute(path) ? path : resolve(cwd, path);
  let text: string;
  try {
    text = readFileSync(full, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why =
      code === 'ENOENT'
        ? 'no such file'
        : code === 'EACCES'
          ? 'permission denied'
          : code === 'EISDIR'
            ? 'it is a directory'
            : (code ?? 'unreadable');
    throw bad(`${field}: cannot read "${path}" (${why})`);
  }
  try {
    return yaml ? (loadYaml().parse(text) as unknown) : (JSON.parse(text) as unknown);
  } catch (err) {
    // The parsers' messages quote the text; the file may be any file this process can read.
    const where = yaml ? yamlSyntaxError(err) : jsonSyntaxError(text, err);
    throw bad(`${field}: "${path}" is not valid ${yaml ? 'YAML' : 'JSON'} (${where})`);
  }
}

/** Reads and validates an authorizer file: `{ raw }` is what the run configuration stores. */
export function loadAuthzConfigFile(
  path: string,
  field = 'authz_config',
  cwd?: string,
): { raw: Record<string, unknown>; config: AuthzConfig } {
  const raw = readAuthzConfigFile(path, field, cwd);
  // A file that is not an authorizer configuration at all (a key file, /etc/passwd read as a
  // YAML string) is refused before validation, whose messages name its keys.
  if (!isRecord(raw) || (raw['type'] !== 'cedarv1' && raw['type'] !== 'httpv1'))
    throw bad(
      `${field}: "${path}" is not an authorizer configuration (expected an object with version and type "cedarv1" or "httpv1")`,
    );
  const config = parseAuthzConfig(raw, field);
  return { raw, config };
}
