/**
 * Domain errors with stable, documented codes. Every surface (HTTP API, CLI) maps a
 * `SkepError` to its own shape in exactly one place; anything that is not a `SkepError`
 * is an unexpected failure and is reported as an opaque internal error.
 */

/** The code table: one entry per code, with the HTTP status it maps to and its meaning. */
export const ERROR_CODES = {
  // Generic request problems
  bad_request: {
    status: 400,
    description: 'The request is malformed or a field is invalid; the message names it.',
  },
  invalid_name: { status: 400, description: 'A resource name does not follow the naming rule.' },
  invalid_config: {
    status: 400,
    description:
      "A configuration value is invalid: a workload's run configuration or one of its middlewares' settings (authorization, webhooks, rate limits, auth), or the server's config file; the message names the field.",
  },
  invalid_reference: {
    status: 400,
    description:
      'A reference cannot be parsed: a secret reference, an OCI or image reference, a package spec; the message names it.',
  },
  invalid_path: {
    status: 400,
    description:
      'A filesystem path in the request cannot be used: not absolute, with `..` or a null byte, missing, not a directory, through a symlink, or not a git repository where one is needed; the message names the field.',
  },
  unauthorized: {
    status: 401,
    description:
      'Credentials are missing or were rejected: the API token (`Authorization: Bearer`, see `WWW-Authenticate`) or browser session on TCP, a login link, or an upstream registry.',
  },
  forbidden: { status: 403, description: 'The request is not allowed (policy, or a protected resource).' },
  forbidden_host: {
    status: 403,
    description:
      "Host is not a name this server answers to (DNS-rebinding guard), or Origin is neither the server's own nor a configured one.",
  },
  not_found: { status: 404, description: 'No such route or resource.' },
  method_not_allowed: { status: 405, description: 'The route exists but not with this HTTP method.' },
  conflict: { status: 409, description: 'The resource already exists or is in a conflicting state.' },
  payload_too_large: { status: 413, description: 'The request body is larger than 1 MiB.' },
  unsupported_media_type: { status: 415, description: 'The request body is not JSON.' },
  rate_limited: { status: 429, description: 'Too many requests to an upstream service.' },
  internal_error: { status: 500, description: 'An unexpected failure; details are in the server log only.' },
  not_implemented: { status: 501, description: 'The operation is not supported.' },
  bad_gateway: { status: 502, description: 'An upstream service answered with something unusable.' },
  unavailable: { status: 503, description: 'A dependency (runtime, registry) is not available right now.' },
  gateway_timeout: { status: 504, description: 'An upstream service did not answer in time.' },
  // Groups
  group_not_found: { status: 404, description: 'The group does not exist.' },
  group_exists: { status: 409, description: 'A group with this name already exists.' },
  group_protected: { status: 400, description: 'The `default` group cannot be deleted.' },
  group_not_empty: {
    status: 409,
    description:
      'The group still holds workloads (named in `workloads`); delete them with it (`with-workloads=true`) or remove them first.',
  },
  // Workloads
  workload_not_found: { status: 404, description: 'The workload does not exist.' },
  workload_exists: { status: 409, description: 'A workload with this name already exists.' },
  port_unavailable: { status: 400, description: 'The requested proxy port is busy.' },
  server_needs_input: {
    status: 400,
    description:
      'The registry server requires an environment variable (or a secret for it) that the request does not give; the message and `missing` name them.',
  },
  upgrade_needs_input: {
    status: 422,
    description: 'The upgraded server requires environment variables the workload does not supply.',
  },
  executable_not_found: {
    status: 400,
    description:
      'The program a process workload runs (cmd://, or npx/uvx) is not installed, not on PATH, or cannot be executed.',
  },
  runtime_unavailable: {
    status: 400,
    description: 'The workload needs a container engine (a container image) and none is available.',
  },
  image_verification_failed: {
    status: 403,
    description:
      "The container image did not pass the workload's `image_verification` policy `enforce` (unsigned, a signature that does not verify with a trusted key, or not checkable); the message says which.",
  },
  sandbox_unavailable: {
    status: 400,
    description:
      'The local server must run sandboxed (its permission profile asks for isolation, or `runtime.sandbox`/the workload asks for bwrap) and no sandbox works here.',
  },
  privileged_not_allowed: {
    status: 403,
    description: 'The permission profile asks for a privileged container and the config does not allow it.',
  },
  unsupported_field: {
    status: 400,
    description:
      'A run-configuration field is set to something this build does not honour yet (or not for this kind of server); the message names the field and what to do instead.',
  },
  package_not_runnable: {
    status: 400,
    description:
      'The npx:// package has no program to run, or several and none named like the package; run one with cmd:// instead.',
  },
  // Registry
  registry_not_found: { status: 404, description: 'The registry does not exist (only `default` is served).' },
  server_not_found: { status: 404, description: 'The server is not in the registry.' },
  skill_not_found: { status: 404, description: 'The skill is not in the registry or not installed.' },
  server_name_ambiguous: {
    status: 400,
    description: 'A short server name matches several registry servers; use the full reverse-DNS name.',
  },
  registry_private_address: {
    status: 403,
    description:
      'The registry source resolves to a private or loopback address and `allow_private_ip` is not set.',
  },
  registry_unavailable: { status: 504, description: 'The registry source could not be reached in time.' },
  registry_invalid: {
    status: 502,
    description: 'The registry source returned content that fails validation.',
  },
  registry_auth_required: {
    status: 503,
    description:
      'The registry source needs a login, or refused the token: POST /api/v1beta/registry/auth/login (after configuring `auth`). The body also carries `auth_status`, `auth_type` and `auth_config`.',
  },
  registry_auth_not_configured: {
    status: 400,
    description:
      'Registry login or logout needs registry authentication: PUT /api/v1beta/registry/default with a url or api_url and `auth` first.',
  },
  // Secrets
  secrets_not_setup: {
    status: 404,
    description: 'No secrets provider is set up; POST /api/v1beta/secrets first.',
  },
  secret_not_found: { status: 404, description: 'The secret does not exist.' },
  secret_exists: { status: 409, description: 'A secret with this key already exists.' },
  secrets_read_only: {
    status: 405,
    description: 'The configured secrets provider cannot perform this operation.',
  },
  secrets_locked: { status: 400, description: 'The secrets store cannot be opened with the given password.' },
  secrets_password_from_env: {
    status: 400,
    description:
      "SKEP_SECRETS_PASSWORD is set in the server's environment and decides the password: setup with a different `password`, or a `new_password`, is refused; omit the password, or unset the variable to change it.",
  },
  secrets_provider_unavailable: {
    status: 400,
    description:
      'The chosen secrets provider cannot be used here (for 1Password: the `op` CLI is missing, not signed in, or failed); the message says what to install or do, or choose another provider.',
  },
  secrets_corrupt: {
    status: 500,
    description:
      'The encrypted secrets file failed its integrity check (modified or damaged); it was left unchanged.',
  },
  // Clients
  client_unknown: { status: 400, description: 'The client type is not one Skep supports.' },
  client_config_invalid: {
    status: 409,
    description:
      "A client's existing config file cannot be parsed (or has an unexpected shape); Skep leaves it alone until it is fixed.",
  },
  no_client_detected: {
    status: 400,
    description: 'No skill-capable client is installed here; name the clients to install for.',
  },
  // Skills
  skill_invalid: { status: 400, description: 'The skill definition or archive is invalid.' },
  skill_exists: {
    status: 409,
    description: 'A skill folder is already present and was not installed by Skep.',
  },
  skill_artifact_invalid: {
    status: 422,
    description:
      'The skill artifact is unusable: bad manifest or layer, name mismatch, or a dependency cycle.',
  },
  skill_lock_invalid: {
    status: 400,
    description:
      "The project's skills lock file cannot be read (not YAML, not a map, or a newer version); Skep leaves it unchanged.",
  },
} as const satisfies Record<string, { status: number; description: string }>;

export type ErrorCode = keyof typeof ERROR_CODES;

/**
 * `bad_request` stays for what no narrower code covers (a malformed request or value) and is
 * the code the reference's registry routes send; `invalid_config`, `invalid_reference`,
 * `invalid_path` and `invalid_name` say which kind of input was wrong, with the same HTTP status.
 */
export class SkepError extends Error {
  /** A subclass names itself (`TokenExchangeError`, `BootRefused`); the code is what callers read. */
  override readonly name: string = 'SkepError';
  readonly code: ErrorCode;
  /** Optional machine-readable details that are safe to show to the caller. */
  readonly details: Record<string, unknown> | undefined;

  constructor(
    code: ErrorCode,
    message: string,
    options?: { cause?: unknown; details?: Record<string, unknown> },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.details = options?.details;
  }

  get status(): number {
    return ERROR_CODES[this.code].status;
  }
}

export function isSkepError(err: unknown): err is SkepError {
  return err instanceof SkepError;
}

/**
 * The table code an error carries: a `SkepError`'s, or an `ErrorCode` in the `code` of another
 * error class (`BodyTooLargeError`, `OAuthResponseError`, ...); undefined for anything else,
 * such as a Node system error (`ENOENT`).
 */
export function errorCodeOf(err: unknown): ErrorCode | undefined {
  if (err instanceof SkepError) return err.code;
  const code = err instanceof Error ? (err as Error & { code?: unknown }).code : undefined;
  return typeof code === 'string' && Object.hasOwn(ERROR_CODES, code) ? (code as ErrorCode) : undefined;
}

/** A short, safe description of any thrown value, for logs. */
export function describeError(err: unknown): string {
  if (err instanceof Error) return err.message;
  return String(err);
}
