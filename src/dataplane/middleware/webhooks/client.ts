/**
 * One webhook call (as ToolHive's webhook middleware makes it): `POST <url>` with the JSON request
 * envelope, signed with HMAC-SHA256 when a secret is configured, over TLS 1.2 or later with the
 * webhook's own CA bundle / client certificate / verification choice, bounded by the configured
 * timeout as a whole (the reference also stops at 10 s for headers whatever the timeout; here the
 * configured 1–30 s is what counts), with at most 1 MiB read back. The result is one of three: an
 * answer (HTTP 200 with a JSON object of the right shape), an always-deny (HTTP 422, which ignores
 * `failure_policy`), or a failure (timeout, network error, any other status, bad JSON, too large),
 * which the chain maps through `failure_policy`. Redirects are not followed: a 3xx is a failure, so
 * a signed request never goes elsewhere.
 */
import { createHmac, randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { Dispatcher, Pool } from 'undici';
import { lazyRequire } from '../../../shared/index.js';
import { WEBHOOK_LIMITS, type WebhookConfig } from './config.js';
import { principalJson, type WebhookPrincipal } from './principal.js';

// undici loads only in runners that have webhooks.
const loadUndici = lazyRequire<typeof import('undici')>('undici');

export const WEBHOOK_API_VERSION = 'v0.1.0';
export const TIMESTAMP_HEADER = 'X-ToolHive-Timestamp';
export const SIGNATURE_HEADER = 'X-ToolHive-Signature';

/** `context` of the request envelope; `backend_server` and `namespace` are never set on a proxy. */
export interface WebhookRequestContext {
  server_name: string;
  source_ip: string;
  transport: string;
}

/**
 * The request body ToolHive's webhooks receive, in the reference's key order. `mcpRequest` is the
 * JSON-RPC body as text, embedded verbatim (it was parsed already, so it is valid JSON).
 */
export function webhookRequestBody(input: {
  uid: string;
  timestamp: Date;
  principal: Readonly<WebhookPrincipal> | null;
  mcpRequest: string;
  context: WebhookRequestContext;
}): string {
  return (
    `{"version":${JSON.stringify(WEBHOOK_API_VERSION)},"uid":${JSON.stringify(input.uid)},` +
    `"timestamp":${JSON.stringify(input.timestamp.toISOString())},` +
    `"principal":${principalJson(input.principal)},` +
    `"mcp_request":${input.mcpRequest},` +
    `"context":${JSON.stringify({
      server_name: input.context.server_name,
      source_ip: input.context.source_ip,
      transport: input.context.transport,
    })}}`
  );
}

/** `sha256=<lowercase hex>` of HMAC-SHA256(key, "<unix seconds>." + body), as ToolHive signs. */
export function signPayload(key: Buffer, timestamp: number, body: string): string {
  return `sha256=${createHmac('sha256', key).update(`${timestamp}.`).update(body).digest('hex')}`;
}

/** The fields of a webhook answer that Skep reads; the others are type-checked and dropped. */
export interface WebhookResponse {
  allowed: boolean;
  reason?: string;
  message?: string;
  patchType?: string;
  /** The raw `patch` member (decoded by the mutating chain). */
  patch?: unknown;
}

export type WebhookCallResult =
  | { readonly kind: 'answer'; readonly response: WebhookResponse }
  /** HTTP 422: deny whatever `failure_policy` says (ToolHive's rule). */
  | { readonly kind: 'always-deny' }
  /** The webhook could not be asked or answered unusably; `reason` is for logs (no secrets). */
  | { readonly kind: 'failure'; readonly reason: string };

const STRING_FIELDS = ['version', 'uid', 'message', 'reason', 'patch_type'] as const;

/**
 * The answer's shape as the reference decodes it: an object; `allowed` a boolean (absent →
 * false, a denial); `code` an integer; `details` a map of strings; the string fields strings.
 * A wrong type is an unusable answer, not a decision.
 */
export function readWebhookResponse(value: unknown): WebhookResponse | string {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return 'the answer is not a JSON object';
  const body = value as Record<string, unknown>;
  const allowed = body['allowed'];
  if (allowed !== undefined && allowed !== null && typeof allowed !== 'boolean')
    return '"allowed" is not a boolean';
  for (const field of STRING_FIELDS) {
    const v = body[field];
    if (v !== undefined && v !== null && typeof v !== 'string') return `"${field}" is not a string`;
  }
  const code = body['code'];
  if (code !== undefined && code !== null && !Number.isInteger(code)) return '"code" is not an integer';
  const details = body['details'];
  if (details !== undefined && details !== null) {
    if (typeof details !== 'object' || Array.isArray(details)) return '"details" is not an object';
    if (Object.values(details).some((d) => typeof d !== 'string')) return '"details" values must be strings';
  }
  const out: WebhookResponse = { allowed: allowed === true };
  if (typeof body['reason'] === 'string') out.reason = body['reason'];
  if (typeof body['message'] === 'string') out.message = body['message'];
  if (typeof body['patch_type'] === 'string') out.patchType = body['patch_type'];
  if (body['patch'] !== undefined) out.patch = body['patch'];
  return out;
}

export interface WebhookClientOptions {
  /** Clock for the signature timestamp, ms since the epoch; default `Date.now`. */
  now?: () => number;
}

/** What a chain needs of a webhook: its configuration and a way to call it. */
export type WebhookCaller = Pick<WebhookClient, 'config' | 'call'>;

/** One call of a chain: the request envelope (a fresh uid, the time, `mcpRequest` as given). */
export function callWebhook(
  client: WebhookCaller,
  input: { principal: Readonly<WebhookPrincipal> | null; context: WebhookRequestContext },
  mcpRequest: string,
  now: () => number,
): ReturnType<WebhookCaller['call']> {
  return client.call(
    webhookRequestBody({
      uid: WebhookClient.uid(),
      timestamp: new Date(now()),
      principal: input.principal,
      mcpRequest,
      context: input.context,
    }),
  );
}

/** Calls one configured webhook; holds its connection pool until `close()`. */
export class WebhookClient {
  readonly config: WebhookConfig;
  readonly #now: () => number;
  /** The webhook's origin and path, parsed once (a URL parse per call costs µs). */
  readonly #origin: string;
  readonly #path: string;
  #pool: Pool | undefined;
  #closed = false;

  constructor(config: WebhookConfig, options: WebhookClientOptions = {}) {
    this.config = config;
    this.#now = options.now ?? Date.now;
    const url = new URL(config.url);
    this.#origin = url.origin;
    this.#path = `${url.pathname}${url.search}`;
  }

  /** A fresh request id: each call gets its own `uid` (the reference's idempotency key). */
  static uid(): string {
    return randomUUID();
  }

  /** Sends `body` (a `webhookRequestBody`) and classifies the outcome; never throws. */
  async call(body: string): Promise<WebhookCallResult> {
    if (this.#closed) return { kind: 'failure', reason: 'the webhook client is closed' };
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (this.config.hmac !== undefined) {
      try {
        const key = await this.#hmacKey(this.config.hmac);
        const timestamp = Math.floor(this.#now() / 1000);
        headers[TIMESTAMP_HEADER] = String(timestamp);
        headers[SIGNATURE_HEADER] = signPayload(key, timestamp, body);
      } catch (err) {
        return { kind: 'failure', reason: `cannot read the HMAC secret: ${(err as Error).message}` };
      }
    }
    const read = await new Promise<AnswerRead>((resolve) => {
      this.#connections().dispatch(
        { path: this.#path, method: 'POST', headers, body },
        new AnswerReader(resolve, this.config.timeoutMs),
      );
    });
    if (read.kind === 'timeout')
      return { kind: 'failure', reason: `no answer within ${this.config.timeoutMs} ms` };
    if (read.kind === 'too-large')
      return { kind: 'failure', reason: `answer larger than ${WEBHOOK_LIMITS.maxResponseBytes} bytes` };
    if (read.kind === 'error') return { kind: 'failure', reason: describeNetworkError(read.error) };
    const { status, text } = read;
    if (status === 422) return { kind: 'always-deny' };
    if (status !== 200) return { kind: 'failure', reason: `HTTP ${status}` };
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      return { kind: 'failure', reason: 'the answer is not JSON' };
    }
    const response = readWebhookResponse(json);
    if (typeof response === 'string') return { kind: 'failure', reason: response };
    return { kind: 'answer', response };
  }

  /**
   * Ends the connection pool; idempotent. Calls still waiting are cut (they count as failed)
   * rather than awaited: a stopping workload must not wait up to 30 s for a slow webhook.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const pool = this.#pool;
    this.#pool = undefined;
    await pool?.destroy();
  }

  async #hmacKey(source: NonNullable<WebhookConfig['hmac']>): Promise<Buffer> {
    if (source.kind === 'value') return source.key;
    // Read on every call so a rotated secret file takes effect (as in ToolHive).
    const key = await readFile(source.path);
    if (key.length === 0) throw new Error('the secret file is empty');
    return key;
  }

  /** Keep-alive connections to the webhook's origin (one pool per webhook). */
  #connections(): Pool {
    if (this.#pool === undefined) {
      const tls = this.config.tls;
      this.#pool = new (loadUndici().Pool)(this.#origin, {
        connect: {
          // A connection is given no longer than the call: a call whose deadline passed while it
          // waited for one is refused at once (AnswerReader), and the attempt ends with it.
          timeout: Math.ceil(this.config.timeoutMs),
          minVersion: 'TLSv1.2',
          rejectUnauthorized: tls?.insecureSkipVerify !== true,
          ...(tls?.ca === undefined ? {} : { ca: tls.ca }),
          ...(tls?.cert === undefined ? {} : { cert: tls.cert }),
          ...(tls?.key === undefined ? {} : { key: tls.key }),
        },
      });
    }
    return this.#pool;
  }
}

/** How reading one answer ended. */
type AnswerRead =
  | { readonly kind: 'answer'; readonly status: number; readonly text: string }
  | { readonly kind: 'timeout' }
  | { readonly kind: 'too-large' }
  | { readonly kind: 'error'; readonly error: Error };

/**
 * One call's answer, read from undici's dispatch callbacks: the body collected up to
 * `WEBHOOK_LIMITS.maxResponseBytes` (past it the call is aborted), the whole call bounded by the
 * webhook's timeout. Compared with `request()` and an `AbortSignal`, there is no body stream and
 * no signal listener per call: the deadline aborts the dispatch's own controller.
 */
class AnswerReader implements Dispatcher.DispatchHandler {
  #status = 0;
  #size = 0;
  readonly #chunks: Buffer[] = [];
  #controller: Dispatcher.DispatchController | undefined;
  #settled = false;
  readonly #timer: NodeJS.Timeout;
  readonly #resolve: (read: AnswerRead) => void;

  constructor(resolve: (read: AnswerRead) => void, timeoutMs: number) {
    this.#resolve = resolve;
    // The deadline starts now, before a connection is made; the call is aborted as soon as
    // undici hands over its controller if the deadline passed before that.
    this.#timer = setTimeout(() => {
      this.#settle({ kind: 'timeout' });
      this.#controller?.abort(new Error('webhook timeout'));
    }, Math.ceil(timeoutMs));
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller;
    if (this.#settled) controller.abort(new Error('webhook timeout'));
  }

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number): void {
    this.#status = statusCode;
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.#settled) return;
    this.#size += chunk.length;
    if (this.#size > WEBHOOK_LIMITS.maxResponseBytes) {
      // Past the limit the rest is not read.
      this.#chunks.length = 0;
      this.#settle({ kind: 'too-large' });
      controller.abort(new Error('webhook answer too large'));
      return;
    }
    this.#chunks.push(chunk);
  }

  onResponseEnd(): void {
    const chunks = this.#chunks;
    const text = chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks).toString('utf8');
    this.#settle({ kind: 'answer', status: this.#status, text });
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    this.#settle({ kind: 'error', error });
  }

  #settle(read: AnswerRead): void {
    if (this.#settled) return;
    this.#settled = true;
    clearTimeout(this.#timer);
    this.#resolve(read);
  }
}

/** A network error for logs: its code and message (undici wraps the cause). */
function describeNetworkError(err: unknown): string {
  const e = err as { code?: string; message?: string; cause?: { code?: string; message?: string } };
  const code = e.code ?? e.cause?.code;
  const message = e.cause?.message ?? e.message ?? String(err);
  return code === undefined ? message : `${code}: ${message}`;
}
