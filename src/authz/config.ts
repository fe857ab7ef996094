/**
 * The authorizer configuration (`authz_config`, the file `authz_config_path` names): the
 * reference's two shapes (ToolHive's), `cedarv1` (Cedar policies evaluated in the
 * proxy) and `httpv1` (an external decision point). `parseAuthzConfig` is the one validator:
 * it checks the shape, refuses keys it does not know (nothing is silently ignored), compiles
 * every Cedar policy and the static entities, and returns a frozen config with the defaults
 * filled in. What it cannot judge alone (the embedded authorization server's upstreams) is
 * checked against the run configuration by `checkAuthzConfig`.
 */
import { readFileSync } from 'node:fs';
import { extname, isAbsolute, resolve } from 'node:path';
import { isRecord, jsonSyntaxError, lazyRequire, SkepError, yamlSyntaxError } from '../shared/index.js';
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
  return new SkepError('bad_request', message);
}

function objectAt(value: unknown, field: string): Record<string, unknown> {
  if (!isRecord(value)) throw bad(`${field} must be an object`);
  return value;
}

function onlyKeys(value: Record<string, unknown>, allowed: readonly string[], field: string): void {
  const unknown = Object.keys(value).filter((k) => !allowed.includes(k));
  if (unknown.length > 0)
    throw bad(
      `${field}: unknown ${unknown.length === 1 ? 'key' : 'keys'} ${unknown.map((k) => `'${k}'`).join(', ')} (allowed: ${allowed.join(', ')})`,
    );
}

function stringAt(value: unknown, field: string, fallback?: string): string {
  if (value === undefined && fallback !== undefined) return fallback;
  if (typeof value !== 'string') throw bad(`${field} must be a string`);
  return value;
}

function boolAt(value: unknown, field: string): boolean {
  if (value === undefined) return false;
  if (typeof value !== 'boolean') throw bad(`${field} must be true or false`);
  return value;
}

function stringsAt(value: unknown, field: string): string[] {
  if (value === undefined) return [];
  if (!Array.isArray(value) || value.some((v) => typeof v !== 'string'))
    throw bad(`${field} must be an array of strings`);
  return value as string[];
}

function parseCedar(value: unknown, field: string): CedarOptions & { entities: CedarEntity[] } {
  const c = objectAt(value, field);
  onlyKeys(
    c,
    [
      'policies',
      'entities_json',
      'primary_upstream_provider',
      'group_claim_name',
      'role_claim_name',
      'group_entity_type',
      'multi_valued_claims',
    ],
    field,
  );
  const policies = stringsAt(c['policies'], `${field}.policies`);
  if (policies.length === 0) throw bad(`${field}.policies: at least one policy is required`);
  compilePolicies(policies, `${field}.policies`);
  const entitiesJson = stringAt(c['entities_json'], `${field}.entities_json`, '');
  const entities = compileEntities(entitiesJson, `${field}.entities_json`);
  const groupEntityType = stringAt(c['group_entity_type'], `${field}.group_entity_type`, '');
  if (groupEntityType !== '' && (!CEDAR_IDENT.test(groupEntityType) || CEDAR_RESERVED.has(groupEntityType)))
    throw bad(
      `${field}.group_entity_type: "${groupEntityType}" is not a Cedar identifier (letters, digits and _, no namespace '::')`,
    );
  return {
    policies: Object.freeze([...policies]),
    entities_json: entitiesJson,
    entities,
    primary_upstream_provider: stringAt(
      c['primary_upstream_provider'],
      `${field}.primary_upstream_provider`,
      '',
    ),
    group_claim_name: stringAt(c['group_claim_name'], `${field}.group_claim_name`, ''),
    role_claim_name: stringAt(c['role_claim_name'], `${field}.role_claim_name`, ''),
    group_entity_type: groupEntityType === '' ? AUTHZ_DEFAULTS.groupEntityType : groupEntityType,
    multi_valued_claims: Object.freeze(stringsAt(c['multi_valued_claims'], `${field}.multi_valued_claims`)),
  };
}

function parsePdp(value: unknown, field: string): PdpOptions {
  const p = objectAt(value, field);
  onlyKeys(p, ['http', 'claim_mapping', 'context'], field);
  const http = objectAt(p['http'], `${field}.http`);
  onlyKeys(http, ['url', 'timeout', 'insecure_skip_verify'], `${field}.http`);
  const url = stringAt(http['url'], `${field}.http.url`);
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
  const timeout = http['timeout'];
  // The reference treats 0 (and absence) as the default; fractions are accepted (sub-second PDPs).
  if (timeout !== undefined && (typeof timeout !== 'number' || !Number.isFinite(timeout) || timeout < 0))
    throw bad(
      `${field}.http.timeout must be a number of seconds (0 or absent: ${AUTHZ_DEFAULTS.pdpTimeoutSeconds})`,
    );
  const mapping = p['claim_mapping'];
  if (mapping !== 'mpe' && mapping !== 'standard')
    throw bad(`${field}.claim_mapping is required: "mpe" or "standard"`);
  const context = p['context'] === undefined ? {} : objectAt(p['context'], `${field}.context`);
  onlyKeys(context, ['include_args', 'include_operation'], `${field}.context`);
  return {
    http: Object.freeze({
      url,
      timeout: timeout === undefined || timeout === 0 ? AUTHZ_DEFAULTS.pdpTimeoutSeconds : timeout,
      insecure_skip_verify: boolAt(http['insecure_skip_verify'], `${field}.http.insecure_skip_verify`),
    }),
    claim_mapping: mapping,
    context: Object.freeze({
      include_args: boolAt(context['include_args'], `${field}.context.include_args`),
      include_operation: boolAt(context['include_operation'], `${field}.context.include_operation`),
    }),
  };
}

/**
 * Validates an authorizer configuration (`field` names it in errors, e.g. `authz_config`)
 * and returns it frozen, with defaults. Throws `bad_request` naming the field — for a Cedar
 * policy, its id `policy<N>` and Cedar's own message.
 */
export function parseAuthzConfig(value: unknown, field = 'authz_config'): AuthzConfig {
  const root = objectAt(value, field);
  const version = root['version'];
  if (typeof version !== 'string' || version === '')
    throw bad(`${field}.version is required (a string, e.g. "1.0")`);
  const type = root['type'];
  if (type === 'cedarv1') {
    onlyKeys(root, ['version', 'type', 'cedar'], field);
    const { entities, ...cedar } = parseCedar(root['cedar'], `${field}.cedar`);
    return Object.freeze({ version, type, cedar: Object.freeze(cedar), entities });
  }
  if (type === 'httpv1') {
    onlyKeys(root, ['version', 'type', 'pdp'], field);
    return Object.freeze({ version, type, pdp: Object.freeze(parsePdp(root['pdp'], `${field}.pdp`)) });
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
