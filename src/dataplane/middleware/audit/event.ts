/**
 * One audit event per HTTP exchange, in the reference's wire format (ToolHive's audit log),
 * so pipelines built for ToolHive's audit log read Skep's unchanged. Field names, the
 * top-level key order (`audit_id, type, logged_at, outcome, component, source, subjects,
 * delegation?, target, metadata?, data?`) and the line prefix (`time`, `level:"AUDIT"`,
 * `msg:"audit_event"`) are the reference's. Inside `subjects`, `target`, `source.extra`,
 * `metadata.extra` and `data` the keys are in alphabetical order, because that is what the
 * reference writes: those are Go maps, and Go's JSON encoder sorts map keys (ToolHive's
 * documented sample lists them in another order, which no real log line has).
 *
 * Deliberate differences, each better than the reference: `X-Forwarded-For` / `X-Real-IP`
 * are believed only with `trust_proxy_headers`; application errors are found in the parsed
 * answer whatever its framing (SSE) or size, and in tool results with `isError: true`
 * (`metadata.extra.tool_error: true` and `tool_error_message`, no `jsonrpc_error_*`);
 * `transport` says which client transport the request used (`sse` on the legacy SSE
 * endpoints, else `http`), not which one the server speaks.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { JsonRpcMessage } from '../../../protocol/index.js';
import { type DelegationChain, delegationChainOf } from '../../../shared/index.js';
import { type AuditConfig, auditsEventType } from './config.js';

export type AuditOutcome = 'success' | 'failure' | 'error' | 'denied' | 'application_error';

export interface AuditEvent {
  audit_id: string;
  type: string;
  logged_at: string;
  outcome: AuditOutcome;
  component: string;
  source: { type: 'network'; value: string; extra: Record<string, string> };
  subjects: Record<string, string>;
  delegation?: DelegationChain;
  target: Record<string, string>;
  metadata?: { extra: Record<string, unknown> };
  data?: { request?: unknown; response?: unknown };
}

/** What the stage knows about one exchange when it writes the event. */
export interface ExchangeFacts {
  /** HTTP method, upper case. */
  readonly httpMethod: string;
  /** URL path without the query. */
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly remoteAddress: string | undefined;
  /** The parsed JSON-RPC request (after any mutating webhook), when the body was one. */
  readonly mcp: { readonly method: string; readonly resourceId: string | undefined } | undefined;
  /** The caller's claims; undefined when nobody was authenticated. */
  readonly claims: Record<string, unknown> | undefined;
  /** The HTTP status the client got. */
  readonly status: number;
  readonly durationMs: number;
  /** The JSON-RPC answer, when one was seen. */
  readonly reply: Pick<JsonRpcMessage, 'error' | 'result'> | undefined;
  /** The request body as received. */
  readonly requestText: string | undefined;
}

export interface EventSettings {
  readonly config: AuditConfig;
  /** Resolved `component`. */
  readonly component: string;
  /** `trust_proxy_headers` of the run configuration. */
  readonly trustProxyHeaders: boolean;
  /** Clock (ms since the epoch); tests freeze it. */
  readonly now?: () => number;
  readonly newId?: () => string;
}

/** The reference's JSON-RPC error message cap in `metadata.extra`, characters. */
const MAX_ERROR_MESSAGE = 256;

const METHOD_EVENT_TYPES: ReadonlyMap<string, string> = new Map([
  ['initialize', 'mcp_initialize'],
  ['tools/call', 'mcp_tool_call'],
  ['tools/list', 'mcp_tools_list'],
  ['resources/read', 'mcp_resource_read'],
  ['resources/list', 'mcp_resources_list'],
  ['prompts/get', 'mcp_prompt_get'],
  ['prompts/list', 'mcp_prompts_list'],
  ['notifications/message', 'mcp_notification'],
  ['ping', 'mcp_ping'],
  ['logging/setLevel', 'mcp_logging'],
  ['completion/complete', 'mcp_completion'],
  ['notifications/roots/list_changed', 'mcp_roots_list_changed'],
]);

const TARGET_TYPES: ReadonlyMap<string, string> = new Map([
  ['mcp_tool_call', 'tool'],
  ['mcp_resource_read', 'resource'],
  ['mcp_prompt_get', 'prompt'],
]);

/** The 2024-11-05 HTTP+SSE transport's endpoints (the proxy serves both transports for every server). */
export function isLegacySsePath(path: string): boolean {
  return path === '/sse' || path === '/messages' || path === '/message';
}

/** A GET that opens a server → client stream (legacy `/sse` or streamable `GET /mcp`). */
export function isStreamOpen(httpMethod: string, headers: IncomingHttpHeaders): boolean {
  if (httpMethod !== 'GET') return false;
  const accept = headers['accept'];
  return typeof accept === 'string' && accept.toLowerCase().includes('text/event-stream');
}

/** ToolHive's event types: by MCP method when the body parsed; else by endpoint and HTTP method. */
export function auditEventType(httpMethod: string, path: string, mcpMethod: string | undefined): string {
  if (mcpMethod !== undefined) return METHOD_EVENT_TYPES.get(mcpMethod) ?? 'mcp_request';
  if (isLegacySsePath(path)) {
    if (httpMethod === 'GET') return 'sse_connection';
    if (httpMethod === 'POST') return 'mcp_request';
  }
  return 'http_request';
}

/** ToolHive's outcome: from the final HTTP status (0: none, the exchange never completed). */
export function outcomeForStatus(status: number): AuditOutcome {
  if (status === 401 || status === 403) return 'denied';
  if (status >= 500) return 'error';
  if (status >= 400) return 'failure';
  // No status at all: the exchange never completed (the proxy shut down with it in flight).
  if (status < 100) return 'error';
  return 'success';
}

export type ApplicationError =
  | { readonly kind: 'jsonrpc'; readonly code: number; readonly message: string }
  | { readonly kind: 'tool'; readonly message: string | undefined };

function capped(text: string): string {
  if (text.length <= MAX_ERROR_MESSAGE) return text;
  // By code points, so a surrogate pair is never cut in half.
  return Array.from(text).slice(0, MAX_ERROR_MESSAGE).join('');
}

/**
 * An error carried by a successful HTTP answer: a JSON-RPC `error` member, or a tool result
 * with `isError: true` (MCP 2025-11-25 "Tools": tool execution errors are reported in the
 * result so the model can see them). The message is capped at 256 characters.
 */
export function applicationError(
  reply: Pick<JsonRpcMessage, 'error' | 'result'> | undefined,
): ApplicationError | undefined {
  if (reply === undefined) return undefined;
  const error: unknown = reply.error;
  if (typeof error === 'object' && error !== null) {
    const { code, message } = error as { code?: unknown; message?: unknown };
    return {
      kind: 'jsonrpc',
      code: typeof code === 'number' ? code : 0,
      message: typeof message === 'string' ? capped(message) : '',
    };
  }
  const result: unknown = reply.result;
  if (typeof result !== 'object' || result === null || (result as { isError?: unknown }).isError !== true)
    return undefined;
  const content = (result as { content?: unknown }).content;
  let message: string | undefined;
  if (Array.isArray(content)) {
    for (const item of content as unknown[]) {
      const { type, text } = (item ?? {}) as { type?: unknown; text?: unknown };
      if (type === 'text' && typeof text === 'string') {
        message = capped(text);
        break;
      }
    }
  }
  return { kind: 'tool', message };
}

function firstHeader(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function socketHost(remoteAddress: string | undefined): string {
  if (remoteAddress === undefined) return '';
  // An IPv4 client of a dual-stack listener, as Go's RemoteAddr would show it.
  return remoteAddress.startsWith('::ffff:') && remoteAddress.includes('.')
    ? remoteAddress.slice(7)
    : remoteAddress;
}

/**
 * `source.value`: the first `X-Forwarded-For` entry, then `X-Real-IP`, then the socket's
 * address — the headers only when the run configuration trusts a proxy in front
 * (`trust_proxy_headers`); any client can send them, so by default they are ignored (the
 * reference believes them unconditionally).
 */
export function clientAddress(
  headers: IncomingHttpHeaders,
  remoteAddress: string | undefined,
  trustProxyHeaders: boolean,
): string {
  if (trustProxyHeaders) {
    const forwarded = firstHeader(headers['x-forwarded-for'])?.split(',')[0]?.trim();
    if (forwarded !== undefined && forwarded !== '') return forwarded;
    const real = firstHeader(headers['x-real-ip'])?.trim();
    if (real !== undefined && real !== '') return real;
  }
  return socketHost(remoteAddress);
}

function claimString(claims: Record<string, unknown> | undefined, name: string): string | undefined {
  const value = claims?.[name];
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/**
 * `subjects` (as ToolHive writes them): `user_id` = `sub`; `user` = `name`, else
 * `preferred_username`, else `email`, else `"anonymous"`; `client_name` / `client_version` from
 * claims of those names.
 */
export function subjectsOf(claims: Record<string, unknown> | undefined): Record<string, string> {
  const subjects: Record<string, string> = {};
  const clientName = claimString(claims, 'client_name');
  const clientVersion = claimString(claims, 'client_version');
  if (clientName !== undefined) subjects['client_name'] = clientName;
  if (clientVersion !== undefined) subjects['client_version'] = clientVersion;
  subjects['user'] =
    claimString(claims, 'name') ??
    claimString(claims, 'preferred_username') ??
    claimString(claims, 'email') ??
    'anonymous';
  const sub = claimString(claims, 'sub');
  if (sub !== undefined) subjects['user_id'] = sub;
  return subjects;
}

function userAgent(headers: IncomingHttpHeaders): string {
  return firstHeader(headers['user-agent']) ?? '';
}

function sourceOf(facts: ExchangeFacts, trustProxyHeaders: boolean): AuditEvent['source'] {
  const extra: Record<string, string> = {};
  const requestId = firstHeader(facts.headers['x-request-id']);
  if (requestId !== undefined && requestId !== '') extra['request_id'] = requestId;
  const agent = userAgent(facts.headers);
  if (agent !== '') extra['user_agent'] = agent;
  return {
    type: 'network',
    value: clientAddress(facts.headers, facts.remoteAddress, trustProxyHeaders),
    extra,
  };
}

/** Recorded body: parsed JSON when it parses, else the text; undefined when over the limit. */
function captured(text: string | undefined, maxBytes: number): { value: unknown; bytes: number } | undefined {
  if (text === undefined || text === '') return undefined;
  // Cheap bound first: a UTF-8 encoding is at least as long as the UTF-16 length.
  if (text.length > maxBytes) return undefined;
  const bytes = Buffer.byteLength(text);
  if (bytes > maxBytes) return undefined;
  try {
    return { value: JSON.parse(text) as unknown, bytes };
  } catch {
    return { value: text, bytes };
  }
}

function head(
  type: string,
  outcome: AuditOutcome,
  facts: ExchangeFacts,
  settings: EventSettings,
): Omit<AuditEvent, 'target'> {
  const now = settings.now?.() ?? Date.now();
  const event: Omit<AuditEvent, 'target'> = {
    audit_id: settings.newId?.() ?? randomUUID(),
    type,
    logged_at: rfc3339(now, true),
    outcome,
    component: settings.component,
    source: sourceOf(facts, settings.trustProxyHeaders),
    subjects: subjectsOf(facts.claims),
  };
  const delegation = delegationChainOf(facts.claims?.['act'], settings.config.maxDelegationDepth);
  if (delegation !== undefined) event.delegation = delegation;
  return event;
}

/**
 * The event of one request/response exchange, or undefined when the filters leave its type
 * out (applied after the outcome is known, as in the reference).
 */
export function exchangeEvent(facts: ExchangeFacts, settings: EventSettings): AuditEvent | undefined {
  const { config } = settings;
  const type = auditEventType(facts.httpMethod, facts.path, facts.mcp?.method);
  if (!auditsEventType(config, type)) return undefined;
  let outcome = outcomeForStatus(facts.status);
  const appError =
    outcome === 'success' && config.detectApplicationErrors ? applicationError(facts.reply) : undefined;
  if (appError !== undefined) outcome = 'application_error';

  const event = head(type, outcome, facts, settings) as AuditEvent;
  const target: Record<string, string> = {
    endpoint: facts.path,
    method: facts.mcp?.method ?? facts.httpMethod,
  };
  const name = facts.mcp?.resourceId;
  if (name !== undefined && name !== '') target['name'] = name;
  target['type'] = TARGET_TYPES.get(type) ?? 'endpoint';
  event.target = target;

  const request = config.includeRequestData ? captured(facts.requestText, config.maxDataSize) : undefined;
  const response =
    config.includeResponseData && facts.reply !== undefined
      ? captured(JSON.stringify(facts.reply), config.maxDataSize)
      : undefined;

  const extra: Record<string, unknown> = { duration_ms: Math.max(0, Math.floor(facts.durationMs)) };
  if (appError?.kind === 'jsonrpc') {
    extra['jsonrpc_error_code'] = appError.code;
    extra['jsonrpc_error_message'] = appError.message;
  }
  if (config.includeResponseData) extra['response_size_bytes'] = response?.bytes ?? 0;
  if (appError?.kind === 'tool') {
    extra['tool_error'] = true;
    if (appError.message !== undefined) extra['tool_error_message'] = appError.message;
  }
  extra['transport'] = isLegacySsePath(facts.path) ? 'sse' : 'http';
  event.metadata = { extra };

  if (request !== undefined || response !== undefined) {
    const data: NonNullable<AuditEvent['data']> = {};
    if (request !== undefined) data.request = request.value;
    if (response !== undefined) data.response = response.value;
    event.data = data;
  }
  return event;
}

/**
 * The one `sse_connection` event of a stream open (ToolHive's): target type `sse_endpoint`, and
 * `metadata.extra.transport` naming the client transport (`sse` or `streamable-http`).
 */
export function streamOpenEvent(facts: ExchangeFacts, settings: EventSettings): AuditEvent | undefined {
  if (!auditsEventType(settings.config, 'sse_connection')) return undefined;
  const event = head('sse_connection', outcomeForStatus(facts.status), facts, settings) as AuditEvent;
  event.target = { endpoint: facts.path, method: facts.httpMethod, type: 'sse_endpoint' };
  event.metadata = {
    extra: {
      transport: isLegacySsePath(facts.path) ? 'sse' : 'streamable-http',
      user_agent: userAgent(facts.headers),
    },
  };
  return event;
}

const pad = (n: number, width = 2): string => String(n).padStart(width, '0');

/**
 * Go's RFC 3339 with fractional seconds (`time.RFC3339Nano`): trailing zeros of the fraction
 * dropped, `Z` for a zero offset. `utc` false renders the local time with its offset, as the
 * reference's `time` key does.
 */
export function rfc3339(ms: number, utc: boolean): string {
  // Everything up to the seconds, and the zone, change once a second: kept per second and
  // form (two strings), so an event pays only for its fraction.
  const second = Math.floor(ms / 1000);
  const cache = utc ? utcSecond : localSecond;
  if (cache.second !== second) {
    const offset = utc ? 0 : -new Date(ms).getTimezoneOffset();
    const shifted = new Date(second * 1000 + offset * 60_000);
    cache.second = second;
    cache.head =
      `${pad(shifted.getUTCFullYear(), 4)}-${pad(shifted.getUTCMonth() + 1)}-${pad(shifted.getUTCDate())}` +
      `T${pad(shifted.getUTCHours())}:${pad(shifted.getUTCMinutes())}:${pad(shifted.getUTCSeconds())}`;
    cache.zone =
      offset === 0
        ? 'Z'
        : `${offset > 0 ? '+' : '-'}${pad(Math.floor(Math.abs(offset) / 60))}:${pad(Math.abs(offset) % 60)}`;
  }
  const millis = Math.floor(ms - second * 1000);
  if (millis === 0) return cache.head + cache.zone;
  let fraction = pad(millis, 3);
  while (fraction.endsWith('0')) fraction = fraction.slice(0, -1);
  return `${cache.head}.${fraction}${cache.zone}`;
}

const utcSecond = { second: Number.NaN, head: '', zone: '' };
const localSecond = { second: Number.NaN, head: '', zone: '' };

/**
 * The JSON text of a string, as `JSON.stringify` writes it. Most of an event's strings are
 * printable ASCII without quotes or backslashes, which need no escaping; checking that is
 * several times cheaper than `JSON.stringify` of a short string (~0.2 µs in Node 20).
 */
function quote(text: string): string {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x20 || c > 0x7e || c === 0x22 || c === 0x5c) return JSON.stringify(text);
  }
  return `"${text}"`;
}

/**
 * `{"k":"v",...}` of a map of strings, in its own key order. Kept apart from `extraMap`: one
 * function for both kinds of map measured 4–5 µs more per event (`stages-micro`, audit alone).
 */
function stringMap(map: Readonly<Record<string, string>>): string {
  let out = '';
  for (const key in map) {
    const value = map[key];
    if (value === undefined) continue;
    out += `${out === '' ? '{' : ','}${quote(key)}:${quote(value)}`;
  }
  return out === '' ? '{}' : `${out}}`;
}

/** `metadata.extra`: strings, numbers and booleans written here, anything else by `JSON.stringify`. */
function extraMap(map: Readonly<Record<string, unknown>>): string {
  let out = '';
  for (const key in map) {
    const value = map[key];
    let text: string | undefined;
    if (typeof value === 'string') text = quote(value);
    else if (typeof value === 'boolean') text = value ? 'true' : 'false';
    else if (typeof value === 'number' && Number.isFinite(value)) text = String(value);
    else text = JSON.stringify(value);
    if (text === undefined) continue;
    out += `${out === '' ? '{' : ','}${quote(key)}:${text}`;
  }
  return out === '' ? '{}' : `${out}}`;
}

/** The last `logged_at` formatted and its `time` (events of one millisecond share them). */
let lastLoggedAt = '';
let lastTime = '';

/**
 * The event as one line of the audit file: the reference's slog JSON handler line
 * (`time` in local time, `level:"AUDIT"`, `msg:"audit_event"`, then the event's keys in the
 * wire format's order, whatever order the object was built in).
 */
export function auditLine(event: AuditEvent): string {
  if (event.logged_at !== lastLoggedAt) {
    lastTime = rfc3339(Date.parse(event.logged_at), false);
    lastLoggedAt = event.logged_at;
  }
  return `{"time":"${lastTime}","level":"AUDIT","msg":"audit_event",${auditMembers(event)}}\n`;
}

/**
 * The event's keys and values as JSON object members, without the braces (`"audit_id":"…",
 * "type":…`), in the wire format's order whatever order the object was built in. Written field
 * by field: the event's shape is known, and `JSON.stringify` of the whole object cost twice as
 * much (Node 20); the request and response data, the delegation chain and any other value are
 * still written by `JSON.stringify`.
 */
export function auditMembers(event: AuditEvent): string {
  const { source } = event;
  let members =
    `"audit_id":${quote(event.audit_id)}` +
    `,"type":${quote(event.type)},"logged_at":${quote(event.logged_at)},"outcome":${quote(event.outcome)}` +
    `,"component":${quote(event.component)},"source":{"type":${quote(source.type)}` +
    `,"value":${quote(source.value)},"extra":${stringMap(source.extra)}}` +
    `,"subjects":${stringMap(event.subjects)}`;
  if (event.delegation !== undefined) members += `,"delegation":${JSON.stringify(event.delegation)}`;
  members += `,"target":${stringMap(event.target)}`;
  if (event.metadata !== undefined) members += `,"metadata":{"extra":${extraMap(event.metadata.extra)}}`;
  if (event.data !== undefined) members += `,"data":${JSON.stringify(event.data)}`;
  return members;
}
