/**
 * The run-configuration builder: a create request (with its registry entry, if any), an
 * update request over a stored configuration, or a configuration file becomes a `RunConfig`.
 * Nothing is looked up or written here; the one file read is the authorization config a
 * request names by path (reference behaviour). What needs a lookup (groups, secrets, the
 * container engine, free ports, taken names) is checked by `config-checks.ts` and the manager.
 */
import { loadAuthzConfigFile } from '../dataplane/middleware/authz/index.js';
import { DEFAULT_GROUP } from '../groups/index.js';
import { definedOnly, SkepError } from '../shared/index.js';
import { baseNameFor, validateWorkloadName } from './names.js';
import type { RegistryServerSpec } from './registry-server.js';
import {
  type CreateWorkloadRequest,
  defaultGuardrailsConfig,
  RUN_CONFIG_SCHEMA_VERSION,
  type UpdateWorkloadRequest,
} from '../schemas/index.js';
import { parseRunConfig, type RunConfig } from './run-config.js';
import {
  formatSecretReference as formatSecretRef,
  type SecretReference,
  validateSecretRef,
} from './secrets.js';

/** Package references the runner starts as local processes (everything else is an image or a URL). */
export const IMAGE_SCHEMES = /^(npx|uvx|cmd):\/\/./;

/** A reference with a registry path, tag or digest separator names an image, not a registry server. */
export function looksLikeImage(ref: string): boolean {
  return /[/:@]/.test(ref);
}

/** The create request's registry fields, checked before the registry is asked. */
export function checkRegistryFields(request: CreateWorkloadRequest): void {
  if ((request.registry === undefined) !== (request.server === undefined)) {
    throw new SkepError('invalid_config', "both 'registry' and 'server' must be specified together");
  }
  if (request.registry !== undefined && request.registry !== 'default') {
    throw new SkepError(
      'registry_not_found',
      `registry '${request.registry}' does not exist; only 'default' is served`,
    );
  }
}

/**
 * A create request over its registry entry's defaults, named (the explicit name, or one
 * derived from the source: the same source always gives the same name, so repeating a create
 * finds the workload it made instead of making `name-2`, as the reference does). Port and
 * target port are left to the manager, which knows which are free.
 */
export function configFromCreate(
  request: CreateWorkloadRequest,
  registryEntry: RegistryServerSpec | undefined,
): RunConfig {
  const sources = [request.image, request.url, registryEntry?.image, registryEntry?.url].filter(
    (s) => s !== undefined && s !== '',
  );
  if (request.vmcp !== undefined) {
    if (sources.length > 0)
      throw new SkepError(
        'invalid_config',
        "a virtual MCP server ('vmcp') takes no 'image', 'url' or 'server'",
      );
  } else if (sources.length === 0)
    throw new SkepError(
      'invalid_config',
      "one of 'image', 'url', 'registry' + 'server' or 'vmcp' is required",
    );
  if (request.image !== undefined && request.url !== undefined) {
    throw new SkepError('invalid_config', "'image' and 'url' cannot be used together");
  }

  const base: RunConfig = parseRunConfig({
    name: '',
    image: registryEntry?.image ?? '',
    ...definedOnly({ remote_url: registryEntry?.url }),
    transport: registryEntry?.transport ?? (registryEntry?.url === undefined ? 'stdio' : 'streamable-http'),
    cmd_args: registryEntry?.args ?? [],
    env_vars: registryEntry?.env ?? {},
    ...definedOnly({
      permission_profile: registryEntry?.permissions,
      target_port: registryEntry?.target_port,
      tools_filter: registryEntry?.tools,
      registry_server_name: request.server,
      // A signed entry's image is checked before it starts; `warn` is the reference's default.
      image_verification:
        registryEntry?.provenance === undefined ||
        !/^[a-z0-9]/.test(registryEntry.image) ||
        registryEntry.image.includes('://')
          ? undefined
          : {
              policy: 'warn' as const,
              ...definedOnly({
                public_keys:
                  registryEntry.provenance.public_key === undefined
                    ? undefined
                    : [registryEntry.provenance.public_key],
                signer_identity: registryEntry.provenance.signer_identity,
                cert_issuer: registryEntry.provenance.cert_issuer,
                repository_uri: registryEntry.provenance.repository_uri,
              }),
            },
    }),
    proxy_mode: 'streamable-http',
    isolate_network: true,
    // Guardrails on for every new workload, written out so that export and list show them.
    guardrails_config: defaultGuardrailsConfig(),
  });
  if (request.url !== undefined && request.transport === undefined) base.transport = 'streamable-http';
  const config = applyRequest(base, request);
  // The entry's defaults stay unless the request sets the same variables.
  if (registryEntry?.env !== undefined) config.env_vars = { ...registryEntry.env, ...config.env_vars };

  const explicitName = request.name !== undefined && request.name !== '';
  if (explicitName) validateWorkloadName(request.name as string);
  // A registry entry names its workload (`skep run fetch` → `fetch`, a remote entry
  // `app.linear/linear` → `linear`, not its URL's last path segment such as `sse`).
  const source =
    request.server ??
    config.remote_url ??
    (config.image !== '' ? config.image : config.vmcp ? 'vmcp' : 'workload');
  config.name = explicitName ? (request.name as string) : baseNameFor(source);
  config.base_name = config.name;
  config.container_name = config.name;
  return config;
}

/**
 * A registry entry's required environment variables (no default) that `config` leaves unset:
 * neither a value in `env_vars` nor a secret reference targeting it. The server would fail
 * without them, so create refuses, naming each and how to give it.
 */
export function requireEntryInputs(
  server: string,
  entry: RegistryServerSpec | undefined,
  config: RunConfig,
): void {
  const targets = new Set(config.secrets.map((ref) => /,target=(.+)$/.exec(ref)?.[1]));
  const missing = (entry?.envVars ?? []).filter(
    (v) =>
      v.required === true &&
      (v.default ?? '') === '' &&
      (config.env_vars[v.name] ?? '') === '' &&
      !targets.has(v.name),
  );
  if (missing.length === 0) return;
  const listed = missing
    .map((v) => {
      const about = [v.secret === true ? 'secret' : '', v.description ?? '']
        .filter((x) => x !== '')
        .join(': ');
      return about === '' ? v.name : `${v.name} (${about})`;
    })
    .join(', ');
  const first = missing[0]?.name ?? 'NAME';
  throw new SkepError(
    'server_needs_input',
    `registry server '${server}' needs ${listed}; nothing was created. Give ${missing.length === 1 ? 'it' : 'each'} ` +
      `as an environment variable (env_vars; skep run -e ${first}=VALUE) or a secret reference ` +
      `(secrets with target ${first}; skep run --secret <secret>,target=${first})`,
    { details: { missing: missing.map((v) => v.name) } },
  );
}

/** `skep run --from-config`: a RunConfig (e.g. an export), at this schema version, renamed if asked. */
export function configFromFile(value: unknown, name: string | undefined): RunConfig {
  const parsed = parseRunConfig(value, 'run configuration file');
  const config: RunConfig = { ...parsed, schema_version: RUN_CONFIG_SCHEMA_VERSION };
  if (name !== undefined) config.name = name;
  validateWorkloadName(config.name);
  config.base_name = config.name;
  return config;
}

/** Applies the fields present in `request` over `base` (merge semantics); `base` is not changed. */
export function applyRequest(base: RunConfig, request: UpdateWorkloadRequest): RunConfig {
  const c: RunConfig = structuredClone(base);
  const r = request;
  if (r.image !== undefined) {
    c.image = r.image;
    if (r.image !== '') delete c.remote_url;
  }
  if (r.url !== undefined) {
    if (r.url === '') delete c.remote_url;
    else {
      c.remote_url = r.url;
      c.image = '';
    }
  }
  if (r.host !== undefined) c.host = r.host === '' ? '127.0.0.1' : r.host;
  if (r.allowed_origins !== undefined) {
    if (r.allowed_origins.length === 0) delete c.allowed_origins;
    else c.allowed_origins = [...r.allowed_origins];
  }
  if (r.cmd_arguments !== undefined) c.cmd_args = [...r.cmd_arguments];
  if (r.target_port !== undefined) c.target_port = r.target_port;
  if (r.env_vars !== undefined) c.env_vars = { ...r.env_vars };
  if (r.secrets !== undefined) {
    for (const ref of r.secrets) validateSecretRef(ref);
    c.secrets = r.secrets.map(formatSecretRef);
  }
  if (r.volumes !== undefined) c.volumes = [...r.volumes];
  if (r.transport !== undefined) c.transport = r.transport;
  if (r.authz_config !== undefined) {
    // A path to a JSON or YAML file (reference): read and validated now, stored inline so the
    // runner enforces what was checked; '' removes both.
    if (r.authz_config === '') {
      delete c.authz_config_path;
      delete c.authz_config;
    } else {
      c.authz_config = loadAuthzConfigFile(r.authz_config, 'authz_config').raw;
      c.authz_config_path = r.authz_config;
    }
  }
  if (r.oidc !== undefined) {
    // The client secret is never stored in plain text (the reference ignores it too).
    const o = r.oidc;
    c.oidc_config = definedOnly({
      issuer: o.issuer,
      audience: o.audience,
      jwksurl: o.jwks_url,
      introspectionURL: o.introspection_url,
      clientID: o.client_id,
      scopes: o.scopes,
    });
  }
  if (r.permission_profile !== undefined) c.permission_profile = structuredClone(r.permission_profile);
  if (r.proxy_mode !== undefined) c.proxy_mode = r.proxy_mode;
  if (r.network_isolation !== undefined) c.isolate_network = r.network_isolation ?? true;
  if (r.trust_proxy_headers !== undefined) c.trust_proxy_headers = r.trust_proxy_headers;
  if (r.allow_docker_gateway !== undefined) c.allow_docker_gateway = r.allow_docker_gateway;
  if (r.tools !== undefined) {
    if (r.tools.length === 0) delete c.tools_filter;
    else c.tools_filter = [...r.tools];
  }
  if (r.tools_override !== undefined) {
    for (const [tool, o] of Object.entries(r.tools_override)) {
      if ((o.name ?? '') === '' && (o.description ?? '') === '' && o.annotations === undefined) {
        throw new SkepError(
          'invalid_config',
          `tools_override.${tool}: set a name, a description or annotations`,
        );
      }
    }
    c.tools_override = structuredClone(r.tools_override);
  }
  if (r.group !== undefined) c.group = r.group === '' ? DEFAULT_GROUP : r.group;
  if (r.oauth_config !== undefined) {
    const o = r.oauth_config;
    if (o.client_secret !== undefined) validateSecretRef(o.client_secret);
    if (o.bearer_token !== undefined) validateSecretRef(o.bearer_token);
    // Secrets are stored as references (`name,target=...`), never as values.
    const ref = (secret: SecretReference | undefined) =>
      secret === undefined ? undefined : formatSecretRef(secret);
    c.remote_auth_config = definedOnly({
      headers: c.remote_auth_config?.headers,
      issuer: o.issuer,
      authorize_url: o.authorize_url,
      token_url: o.token_url,
      client_id: o.client_id,
      client_secret: ref(o.client_secret),
      bearer_token: ref(o.bearer_token),
      scopes: o.scopes,
      use_pkce: o.use_pkce,
      oauth_params: o.oauth_params,
      callback_port: o.callback_port,
      skip_browser: o.skip_browser,
      resource: o.resource,
    });
  }
  if (r.headers !== undefined)
    c.remote_auth_config = { ...(c.remote_auth_config ?? {}), headers: structuredClone(r.headers) };
  if (r.header_forward !== undefined) c.header_forward = structuredClone(r.header_forward);
  if (r.runtime_config !== undefined) c.runtime_config = structuredClone(r.runtime_config);
  if (r.sandbox !== undefined) c.sandbox = r.sandbox;
  if (r.endpoint_access !== undefined) c.endpoint_access = r.endpoint_access;
  if (r.guardrails_config !== undefined) c.guardrails_config = structuredClone(r.guardrails_config);
  if (r.vmcp !== undefined) c.vmcp = structuredClone(r.vmcp);
  return c;
}
