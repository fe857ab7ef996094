/**
 * Webhook configuration (ToolHive's shape): one `validating_webhooks` /
 * `mutating_webhooks` entry, checked and turned into a frozen typed object before the proxy
 * serves anything. Every mistake is a `bad_request` naming the list, the webhook and the field;
 * unknown keys are refused rather than ignored (a misspelt `failure_polcy` must not silently
 * fall back to anything). TLS files are read and parsed here, so a bad CA bundle or key fails
 * at start, not on the first call. HMAC secrets come from a file read on every call (an
 * absolute path, so a rotated Kubernetes secret takes effect) or from Skep's secrets store,
 * resolved once.
 */
import { readFileSync, statSync } from 'node:fs';
import { isAbsolute } from 'node:path';
import { createSecureContext } from 'node:tls';
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

const ENTRY_KEYS = new Set(['name', 'url', 'timeout', 'failure_policy', 'tls_config', 'hmac_secret_ref']);
const TLS_KEYS = new Set(['ca_bundle_path', 'client_cert_path', 'client_key_path', 'insecure_skip_verify']);
const PARAMETER_KEYS = new Set(['webhooks', 'server_name', 'transport']);

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

/** Reads a file the TLS options name; `field` and `label` go into the error. */
function readTlsFile(path: unknown, field: string, fail: (message: string) => never): string | undefined {
  if (path === undefined) return undefined;
  if (typeof path !== 'string' || path === '') fail(`tls_config.${field} must be a non-empty file path`);
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

function parseTls(value: unknown, fail: (message: string) => never): WebhookTls | undefined {
  if (value === undefined || value === null) return undefined;
  if (!isRecord(value)) fail('tls_config must be an object');
  for (const key of Object.keys(value))
    if (!TLS_KEYS.has(key)) fail(`tls_config.${key} is not a field (use ${[...TLS_KEYS].join(', ')})`);
  const insecure = value['insecure_skip_verify'];
  if (insecure !== undefined && typeof insecure !== 'boolean')
    fail('tls_config.insecure_skip_verify must be true or false');
  const certPath = value['client_cert_path'];
  const keyPath = value['client_key_path'];
  if ((certPath === undefined || certPath === '') !== (keyPath === undefined || keyPath === ''))
    fail('tls_config.client_cert_path and tls_config.client_key_path go together: set both or neither');
  const ca = readTlsFile(value['ca_bundle_path'], 'ca_bundle_path', fail);
  const cert = readTlsFile(certPath === '' ? undefined : certPath, 'client_cert_path', fail);
  const key = readTlsFile(keyPath === '' ? undefined : keyPath, 'client_key_path', fail);
  // Parse now, so a file that is not PEM (or a key that does not match its certificate) is a
  // start error rather than every call failing.
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
    insecureSkipVerify: insecure === true,
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

async function parseHmac(
  value: unknown,
  secretLookup: SecretLookup,
  fail: (message: string) => never,
): Promise<HmacKeySource | undefined> {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string' || value.trim() === '')
    fail('hmac_secret_ref must be a secret name or an absolute file path');
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

async function parseEntry(
  value: unknown,
  kind: WebhookKind,
  index: number,
  secretLookup: SecretLookup,
): Promise<WebhookConfig> {
  const list = listField(kind);
  const at = `${list}[${index}]`;
  if (!isRecord(value)) throw new SkepError('bad_request', `${at} must be an object`);
  const rawName = value['name'];
  if (typeof rawName !== 'string' || rawName.trim() === '')
    throw new SkepError('bad_request', `${at}.name is required: give the webhook a name`);
  const label = `${at} "${rawName}"`;
  const fail: (message: string) => never = (message) => {
    throw new SkepError('bad_request', `${label}: ${message}`);
  };
  for (const key of Object.keys(value))
    if (!ENTRY_KEYS.has(key)) fail(`${key} is not a webhook field (use ${[...ENTRY_KEYS].join(', ')})`);

  const tls = parseTls(value['tls_config'], fail);
  const rawUrl = value['url'];
  if (typeof rawUrl !== 'string' || rawUrl === '') fail('url is required');
  let url: URL;
  try {
    url = new URL(rawUrl);
  } catch {
    fail(`url "${String(rawUrl)}" is not an absolute URL`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') fail(`url must be https (got ${url.protocol})`);
  if (url.protocol === 'http:' && tls?.insecureSkipVerify !== true)
    fail('url must use https; plain http is allowed only with tls_config.insecure_skip_verify: true');
  if (url.username !== '' || url.password !== '')
    fail('url must not carry credentials; sign calls with hmac_secret_ref instead');

  let timeoutMs: number;
  try {
    timeoutMs = parseWebhookTimeout(value['timeout']);
  } catch (err) {
    fail((err as Error).message);
  }
  const policy = value['failure_policy'];
  if (policy !== 'fail' && policy !== 'ignore')
    fail(
      policy === undefined || policy === ''
        ? 'failure_policy is required: "fail" (deny when the webhook cannot answer) or "ignore"'
        : `failure_policy must be "fail" or "ignore" (got ${JSON.stringify(policy)})`,
    );
  const hmac = await parseHmac(value['hmac_secret_ref'], secretLookup, fail);
  return Object.freeze({
    kind,
    name: rawName,
    label,
    url,
    timeoutMs,
    failurePolicy: policy,
    tls,
    hmac,
  });
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
  const list = listField(kind);
  if (!Array.isArray(value) || value.length === 0)
    throw new SkepError('bad_request', `${list} must be a non-empty list of webhooks`);
  const out: WebhookConfig[] = [];
  const seen = new Set<string>();
  for (const [index, entry] of value.entries()) {
    const config = await parseEntry(entry, kind, index, secretLookup);
    if (seen.has(config.name))
      throw new SkepError(
        'bad_request',
        `${config.label}: the name is used twice in ${list}; names must be unique`,
      );
    seen.add(config.name);
    out.push(config);
  }
  return Object.freeze(out);
}

/** Checks the stage parameters `{webhooks, server_name?, transport?}` (ToolHive's parameters). */
export async function parseWebhookStageConfig(
  parameters: unknown,
  kind: WebhookKind,
  secretLookup: SecretLookup,
): Promise<WebhookStageConfig> {
  const type = `${kind}-webhook`;
  if (!isRecord(parameters))
    throw new SkepError(
      'bad_request',
      `${type} parameters must be an object {webhooks, server_name, transport}`,
    );
  for (const key of Object.keys(parameters))
    if (!PARAMETER_KEYS.has(key))
      throw new SkepError(
        'bad_request',
        `${type} parameters: ${key} is not a field (use webhooks, server_name, transport)`,
      );
  const serverName = parameters['server_name'];
  const transport = parameters['transport'];
  for (const [field, v] of [
    ['server_name', serverName],
    ['transport', transport],
  ] as const)
    if (v !== undefined && typeof v !== 'string')
      throw new SkepError('bad_request', `${type} parameters: ${field} must be a string`);
  const webhooks = await parseWebhookList(parameters['webhooks'], kind, secretLookup);
  return Object.freeze({
    webhooks,
    serverName: serverName === '' ? undefined : (serverName as string | undefined),
    transport: transport === '' ? undefined : (transport as string | undefined),
  });
}
