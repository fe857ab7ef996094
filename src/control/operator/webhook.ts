/**
 * Validating admission webhook for MCPExternalAuthConfig (`admission.k8s.io/v1` AdmissionReview
 * over HTTPS). It runs the same validation library as the controller and the CLI, including the
 * rules ToolHive checks beyond CEL (its Go `Validate()`), and reads Secrets (when allowed) to check
 * the HMAC secret length.
 */

import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { BodyBudget, LISTENER_DEFAULTS, listenerOptions, type Logger, readBody } from '../../shared/index.js';
import { EXTAUTH_KIND } from '../../schemas/extauth/index.js';
import { validateResource } from './resource-validate.js';
import { formatProblem, type SecretReader, validateExtAuthConfigWithSecrets } from './validate.js';

export const WEBHOOK_PATH = '/validate-skep-dev-v1beta1-mcpexternalauthconfig';
const MAX_BODY = 3 * 1024 * 1024; // the API server's own request limit

export interface WebhookOptions {
  cert: string;
  key: string;
  host?: string;
  port?: number;
  readSecret?: SecretReader;
  logger: Logger;
}

export interface WebhookServer {
  readonly port: number;
  readonly url: string;
  close(): Promise<void>;
}

interface AdmissionRequest {
  uid: string;
  operation?: string;
  namespace?: string;
  object?: Record<string, unknown> | null;
  oldObject?: Record<string, unknown> | null;
}

export interface AdmissionResponse {
  uid: string;
  allowed: boolean;
  status?: { code: number; reason: string; message: string };
}

const specOf = (o: Record<string, unknown> | null | undefined) => JSON.stringify(o?.['spec'] ?? null);

/** Decides one AdmissionRequest. Exported for the controller-free unit path and the server. */
export async function review(
  request: AdmissionRequest,
  readSecret?: SecretReader,
): Promise<AdmissionResponse> {
  const { uid } = request;
  const object = request.object;
  if (request.operation === 'DELETE' || object == null) return { uid, allowed: true };
  const meta = (object['metadata'] ?? {}) as Record<string, unknown>;
  // Objects being deleted, and metadata-only updates (finalizers, annotations), must never be
  // blocked: otherwise an invalid object created before the webhook could not be cleaned up.
  if (meta['deletionTimestamp'] !== undefined) return { uid, allowed: true };
  if (
    request.operation === 'UPDATE' &&
    request.oldObject != null &&
    specOf(object) === specOf(request.oldObject)
  ) {
    return { uid, allowed: true };
  }
  const withNamespace =
    meta['namespace'] === undefined && request.namespace !== undefined
      ? { ...object, metadata: { ...meta, namespace: request.namespace } }
      : object;
  // The workload kinds go through the same shared library as `skep operator validate`.
  const kind = String(object['kind'] ?? EXTAUTH_KIND);
  const { problems } =
    kind === EXTAUTH_KIND
      ? await validateExtAuthConfigWithSecrets(withNamespace, readSecret)
      : validateResource(withNamespace);
  if (problems.length === 0) return { uid, allowed: true };
  const name = `${String(request.namespace ?? meta['namespace'] ?? '')}/${String(meta['name'] ?? '')}`;
  return {
    uid,
    allowed: false,
    status: {
      code: 422,
      reason: 'Invalid',
      message: `${kind} ${name} is invalid: ${problems.map(formatProblem).join('; ')}`,
    },
  };
}

function send(res: ServerResponse, status: number, body: unknown): void {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  res.writeHead(status, { 'content-type': typeof body === 'string' ? 'text/plain' : 'application/json' });
  res.end(text);
}

export async function startWebhook(options: WebhookOptions): Promise<WebhookServer> {
  const { logger } = options;
  // The API server is its only client, but the listener is bounded all the same.
  const budget = new BodyBudget(LISTENER_DEFAULTS.maxUnfinishedBodyBytes);
  const server: Server = createServer(
    { cert: options.cert, key: options.key, minVersion: 'TLSv1.2', ...listenerOptions(LISTENER_DEFAULTS) },
    (req, res) => {
      void handle(req, res).catch((err: unknown) => {
        logger.error({ err }, 'webhook request failed');
        if (!res.headersSent) send(res, 500, 'internal error');
      });
    },
  );

  server.maxConnections = LISTENER_DEFAULTS.maxConnections;

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method === 'GET' && (path === '/healthz' || path === '/readyz')) return send(res, 200, 'ok');
    if (path !== WEBHOOK_PATH) return send(res, 404, 'not found');
    if (req.method !== 'POST') return send(res, 405, 'method not allowed');
    let review_: { apiVersion?: string; kind?: string; request?: AdmissionRequest };
    try {
      review_ = JSON.parse(await readBody(req, MAX_BODY, budget)) as typeof review_;
    } catch (err) {
      return send(res, 400, `bad AdmissionReview: ${err instanceof Error ? err.message : String(err)}`);
    }
    if (review_.kind !== 'AdmissionReview' || review_.apiVersion !== 'admission.k8s.io/v1') {
      return send(res, 400, 'expected an admission.k8s.io/v1 AdmissionReview');
    }
    const request = review_.request;
    if (request === undefined || typeof request.uid !== 'string')
      return send(res, 400, 'AdmissionReview.request.uid is required');
    const response = await review(request, options.readSecret);
    logger.info(
      { uid: request.uid, operation: request.operation, allowed: response.allowed },
      'admission review',
    );
    send(res, 200, { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response });
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  let closed: Promise<void> | undefined;
  return {
    port,
    url: `https://${options.host ?? '127.0.0.1'}:${port}${WEBHOOK_PATH}`,
    close() {
      closed ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closed;
    },
  };
}
