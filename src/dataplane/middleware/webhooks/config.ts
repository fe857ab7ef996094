/**
 * Webhook configuration (ToolHive's shape): one `validating_webhooks` /
 * `mutating_webhooks` entry, checked and turned into a frozen typed object before the proxy
 * serves anything. The shape is checked by the validator generated from
 * `WebhookStageParametersSchema` (src/schemas/webhooks.ts: unknown keys refused, so a misspelt
 * `failure_polcy` falls back to nothing); the rules JSON Schema cannot state follow, each named.
 * Every mistake is an `invalid_config` naming the list, the webhook and the field. TLS files are
 * read and parsed here, so a bad CA bundle or key fails at start, not on the first call. HMAC
 * secrets come from a file read on every call (an absolute path, so a rotated Kubernetes secret
 * takes effect) or from Skep's secrets store, resolved once.
 */
import { readFileSync, statSync } from 'node:fs';
import { isAbsolute } from 'node:path';
import { createSecureContext } from 'node:tls';
import {
  formatValidatorError,
  validateWebhookStageParameters,
  type ValidatorError,
  type WebhookEntry,
  type WebhookStageParameters,
} from '../../../schemas/validators/webhooks/index.js';
import type { SecretLookup } from '../../../secrets/index.js';
import { goDurationNs, isRecord, SkepError } from '../../../shared/index.js';

/** ToolHive's limits and defaults, in one table. */
export const WEBHOOK_LIMITS = Object.freeze({
  /** `timeout` missing, null or 0, ms. */
  defaultTimeoutMs: 10_000,
  minTimeoutMs: 1_000,
  maxTimeoutMs: 30_000,
  /** Largest MCP request body sent to webhooks, bytes (larger → 413). */
  maxRequestBytes: 1024 * 1024,
  /** Largest webhook answer read, bytes (larger → the call failed). */
  maxResponseBytes: 1024 * 1024,
});

export type WebhookKind = 'validating' | 'mutating';
export type FailurePolicy = 'fail' | 'ignore';

export interface WebhookTls {
  /** PEM CA bundle replacing the system roots, as read at start. */
  readonly ca?: string;
  /** PEM client certificate and key for mutual TLS, as read at start. */
  readonly cert?: string;
  readonly key?: string;
  readonly insecureSkipVerify: boolean;
}

/** Where the HMAC key comes from: a file read on every call, or a value resolved at start. */
export type HmacKeySource =
  { readonly kind: 'file'; readonly path: string } | { readonly kind: 'value'; readonly key: Buffer };

export interface WebhookConfig {
  readonly kind: WebhookKind;
  readonly name: string;
  /** Where it is in the configuration, for messages: `validating_webhooks[0] "policy"`. */
  readonly label: string;
  readonly url: URL;
  readonly timeoutMs: number;
  readonly failurePolicy: FailurePolicy;
  readonly tls: WebhookTls | undefined;
  readonly hmac: HmacKeySource | undefined;
}

/** The stage parameters (`middleware_configs` `{webhooks, server_name, transport}`). */
export interface WebhookStageConfig {
  readonly webhooks: readonly WebhookConfig[];
  /** Undefined: the proxy's own server name. */
  readonly serverName: string | undefined;
  /** Undefined: the proxy's backend transport. */
  readonly transport: string | undefined;
}

function listField(kind: WebhookKind): string {
  return `${kind}_webhooks`;
}

/**
 * A webhook `timeout` in ms: a Go duration string or integer nanoseconds (what the
 * reference's run configuration JSON holds); missing, null or 0 → 10 s; 1–30 s. Throws a
 * plain `Error` saying what is wrong, which the caller prefixes with the webhook's name.
 */
export function parseWebhookTimeout(value: unknown): number {
  let nanos: number;
  if (value === undefined || value === null) {
    nanos = 0;
  } else if (typeof value === 'number') {
    if (!Number.isInteger(value))
      throw new Error(
        `timeout ${value} is not an integer number of nanoseconds; write e.g. "5s" or 5000000000`,
      );
    nanos = value;
  } else if (typeof value === 'string') {
    const parsed = goDurationNs(value.trim());
    if (parsed === undefined)
      throw new Error(
        `timeout "${value}" is not a duration; write e.g. "5s", "1500ms" or 5000000000 (nanoseconds)`,
      );
    nanos = parsed;
  } else {
    throw new Error('timeout must be a duration string ("5s") or an integer number of nanoseconds');
  }
  if (nanos < 0) throw new Error(`timeout must not be negative (got ${String(value)})`);
  const ms = nanos === 0 ? WEBHOOK_LIMITS.defaultTimeoutMs : nanos / 1e6;
  if (ms < WEBHOOK_LIMITS.minTimeoutMs || ms > WEBHOOK_LIMITS.maxTimeoutMs)
    throw new Error(`timeout ${String(value)} is out of range: use 1s to 30s (0 or none means 10s)`);
  return ms;
}

type Fail = (message: string) => never;

/** Reads a file the TLS options name. */
function readTlsFile(path: string | undefined, field: string, fail: Fail): string | undefined {
  if (path === undefined) return undefined;
  let isFile: boolean;
  try {
    isFile = statSync(path).isFile();
  } catch {
    fail(`tls_config.${field}: file ${path} does not exist`);
  }
  if (!isFile) fail(`tls_config.${field}: ${path} is not a file`);
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    fail(`tls_config.${field}: cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
}

function parseTls(value: WebhookEntry['tls_config'], fail: Fail): WebhookTls | undefined {
  if (value === undefined) return undefined;
  // An empty client certificate or key path means none (ToolHive writes "" for unset).
  const certPath = value.client_cert_path === '' ? undefined : value.client_cert_path;
  const keyPath = value.client_key_path === '' ? undefined : value.client_key_path;
  // Rule: the client certificate and its key go together.
  if ((certPath === undefined) !== (keyPath === undefined))
    fail('tls_config.client_cert_path and tls_config.client_key_path go together: set both or neither');
  // Rule: the files exist and hold PEM, parsed now, so a file that is not PEM (or a key that does
  // not match its certificate) is a start error rather than every call failing.
  const ca = readTlsFile(value.ca_bundle_path, 'ca_bundle_path', fail);
  const cert = readTlsFile(certPath, 'client_cert_path', fail);
  const key = readTlsFile(keyPath, 'client_key_path', fail);
  if (ca !== undefined) {
    try {
      createSecureContext({ ca });
    } catch (err) {
      fail(`tls_config.ca_bundle_path: not a PEM certificate bundle (${(err as Error).message})`);
    }
    if (!ca.includes('-----BEGIN CERTIFICATE-----'))
      fail('tls_config.ca_bundle_path: the file holds no PEM certificate');
  }
  if (cert !== undefined && key !== undefined) {
    try {
      createSecureContext({ cert, key });
    } catch (err) {
      fail(`tls_config.client_cert_path/client_key_path: cannot load the pair (${(err as Error).message})`);
    }
  }
  return Object.freeze({
    insecureSkipVerify: value.insecure_skip_verify === true,
    ...(ca === undefined ? {} : { ca }),
    ...(cert === undefined ? {} : { cert }),
    ...(key === undefined ? {} : { key }),
  });
}

/** The secret name of a store reference: `name` or `name,target=X` (the reference's CLI form). */
function secretNameOf(ref: string): string {
  const comma = ref.indexOf(',');
  return comma === -1 ? ref : ref.slice(0, comma);
}

/** Rule: the HMAC key exists and is not empty (a file now and on every call, or a stored secret). */
async function parseHmac(
  value: string | undefined,
  secretLookup: SecretLookup,
  fail: Fail,
): Promise<HmacKeySource | undefined> {
  if (value === undefined) return undefined;
  if (isAbsolute(value)) {
    // Read once now so a missing or empty file is a start error; calls read it again (rotation).
    let key: Buffer;
    try {
      key = readFileSync(value);
    } catch (err) {
      fail(
        `hmac_secret_ref: cannot read the file ${value} (${(err as NodeJS.ErrnoException).code ?? 'error'})`,
      );
    }
    if (key.length === 0) fail(`hmac_secret_ref: the file ${value} is empty`);
    return Object.freeze({ kind: 'file', path: value });
  }
  const name = secretNameOf(value.trim());
  if (name === '') fail('hmac_secret_ref: the secret name is empty');
  let secret: string | undefined;
  try {
    secret = await secretLookup(name);
  } catch (err) {
    fail(
      `hmac_secret_ref: cannot read secret '${name}' from the secrets provider (${(err as Error).message})`,
    );
  }
  if (secret === undefined)
    fail(
      `hmac_secret_ref: secret '${name}' is not in the secrets provider; create it with 'skep secret set ${name}'`,
    );
  if (secret === '') fail(`hmac_secret_ref: secret '${name}' is empty`);
  return Object.freeze({ kind: 'value', key: Buffer.from(secret, 'utf8') });
}

/** Rule: the URL is absolute, https unless TLS verification is off, and carries no credentials. */
function parseUrl(value: string, tls: WebhookTls | undefined, fail: Fail): URL {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    fail(`url "${value}" is not an absolute URL`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') fail(`url must be https (got ${url.protocol})`);
  if (url.protocol === 'http:' && tls?.insecureSkipVerify !== true)
    fail('url must use https; plain http is allowed only with tls_config.insecure_skip_verify: true');
  if (url.username !== '' || url.password !== '')
    fail('url must not carry credentials; sign calls with hmac_secret_ref instead');
  return url;
}

/** The rules of one entry the schema let through. */
async function parseEntry(
  entry: WebhookEntry,
  kind: WebhookKind,
  index: number,
  secretLookup: SecretLookup,
): Promise<WebhookConfig> {
  const label = `${listField(kind)}[${index}] "${entry.name}"`;
  const fail: Fail = (message) => {
    throw new SkepError('invalid_config', `${label}: ${message}`);
  };
  const tls = parseTls(entry.tls_config, fail);
  const url = parseUrl(entry.url, tls, fail);
  let timeoutMs: number;
  try {
    timeoutMs = parseWebhookTimeout(entry.timeout);
  } catch (err) {
    fail((err as Error).message);
  }
  const hmac = await parseHmac(entry.hmac_secret_ref, secretLookup, fail);
  return Object.freeze({
    kind,
    name: entry.name,
    label,
    url,
    timeoutMs,
    failurePolicy: entry.failure_policy,
    tls,
    hmac,
  });
}

/** ToolHive's JSON writes an unset optional member as null: these read as absent. */
const NULL_MEANS_ABSENT = ['timeout', 'tls_config', 'hmac_secret_ref'];

function withoutNullMembers(entry: unknown): unknown {
  if (!isRecord(entry)) return entry;
  return Object.fromEntries(
    Object.entries(entry).filter(([key, v]) => !(v === null && NULL_MEANS_ABSENT.includes(key))),
  );
}

/** The message of a schema error below `base` (a path in the checked value): `url is required`. */
function relativeProblem(error: ValidatorError, base: string): string {
  const relative = Object.assign({}, error, { instancePath: error.instancePath.slice(base.length) });
  return formatValidatorError('', relative).replace(/^[.:]?\s*/, '');
}

/**
 * The first schema problem of stage parameters, in the words of the reference's checks: the
 * list, then the webhook by index and name, then the field.
 */
function schemaProblem(errors: readonly ValidatorError[], parameters: unknown, kind: WebhookKind): string {
  const type = `${kind}-webhook`;
  const list = listField(kind);
  // The parameters' own members first, then the entries.
  const error = errors.find((e) => !e.instancePath.startsWith('/webhooks/')) ?? errors[0];
  if (error === undefined) return `${type} parameters are invalid`;
  if (
    error.instancePath === '/webhooks' ||
    (error.keyword === 'required' && error.params['missingProperty'] === 'webhooks')
  )
    return `${list} must be a non-empty list of webhooks`;
  const entryAt = /^\/webhooks\/(\d+)/.exec(error.instancePath);
  if (entryAt === null) {
    const problem = relativeProblem(error, '');
    return error.instancePath === '' && error.keyword === 'type'
      ? `${type} parameters ${problem}`
      : `${type} parameters: ${problem}`;
  }
  const index = Number(entryAt[1]);
  const at = `${list}[${index}]`;
  const entry =
    isRecord(parameters) && Array.isArray(parameters['webhooks']) ? parameters['webhooks'][index] : undefined;
  // An entry's name labels every other message about it, so it is checked first.
  if (!isRecord(entry)) return `${at} must be an object`;
  const name = entry['name'];
  if (typeof name !== 'string' || name.trim() === '')
    return `${at}.name is required: give the webhook a name`;
  return `${at} "${name}": ${relativeProblem(error, entryAt[0])}`;
}

/** Checks stage parameters against the schema; `invalid_config` naming the field, or the typed value. */
function checkShape(parameters: unknown, kind: WebhookKind): WebhookStageParameters {
  const value =
    isRecord(parameters) && Array.isArray(parameters['webhooks'])
      ? Object.assign({}, parameters, { webhooks: parameters['webhooks'].map(withoutNullMembers) })
      : parameters;
  if (!validateWebhookStageParameters(value))
    throw new SkepError(
      'invalid_config',
      schemaProblem(validateWebhookStageParameters.errors ?? [], value, kind),
    );
  return value as WebhookStageParameters;
}

async function parseEntries(
  entries: readonly WebhookEntry[],
  kind: WebhookKind,
  secretLookup: SecretLookup,
): Promise<readonly WebhookConfig[]> {
  const out: WebhookConfig[] = [];
  const seen = new Set<string>();
  for (const [index, entry] of entries.entries()) {
    const config = await parseEntry(entry, kind, index, secretLookup);
    // Rule: names are unique within a list.
    if (seen.has(config.name))
      throw new SkepError(
        'invalid_config',
        `${config.label}: the name is used twice in ${listField(kind)}; names must be unique`,
      );
    seen.add(config.name);
    out.push(config);
  }
  return Object.freeze(out);
}

/**
 * Checks one webhook list (`validating_webhooks` or `mutating_webhooks` entries) and resolves
 * its secrets. An empty list is an error: a stage exists only for webhooks.
 */
export async function parseWebhookList(
  value: unknown,
  kind: WebhookKind,
  secretLookup: SecretLookup,
): Promise<readonly WebhookConfig[]> {
  const { webhooks } = checkShape({ webhooks: value }, kind);
  return parseEntries(webhooks, kind, secretLookup);
}

/** Checks the stage parameters `{webhooks, server_name?, transport?}` (ToolHive's parameters). */
export async function parseWebhookStageConfig(
  parameters: unknown,
  kind: WebhookKind,
  secretLookup: SecretLookup,
): Promise<WebhookStageConfig> {
  const checked = checkShape(parameters, kind);
  const webhooks = await parseEntries(checked.webhooks, kind, secretLookup);
  return Object.freeze({
    webhooks,
    serverName: checked.server_name === '' ? undefined : checked.server_name,
    transport: checked.transport === '' ? undefined : checked.transport,
  });
}
