/**
 * The middleware the policy and CPU benchmarks put in front of a workload, one definition for
 * both so their numbers describe the same configuration: Cedar authorization with ten policies,
 * and a validating webhook whose receiver (its own process, on loopback) allows every call.
 */
import type { ChildProcess } from 'node:child_process';
import { startLoopbackServer } from './workloads.js';

/** Ten Cedar policies: permits by tool, a forbid on an argument, group and client rules. */
export const POLICIES: readonly string[] = [
  'permit(principal, action == Action::"call_tool", resource == Tool::"echo");',
  ...[1, 2, 3, 4, 5].map(
    (i) => `permit(principal, action == Action::"call_tool", resource == Tool::"tool_${i}");`,
  ),
  'forbid(principal, action == Action::"call_tool", resource) when { resource has arg_secret };',
  'permit(principal in THVGroup::"admins", action, resource);',
  'forbid(principal == Client::"mallory", action, resource);',
  'permit(principal, action == Action::"get_prompt", resource);',
];

/** The run-configuration field that authorizes every call with `policies` (cedarv1). */
export function authzConfig(policies: readonly string[] = POLICIES): Record<string, unknown> {
  return { authz_config: { version: '1.0', type: 'cedarv1', cedar: { policies } } };
}

/** The receiver's script: answers every review `allowed: true`, echoing its `uid`. */
const RECEIVER = `
const http = require('node:http');
http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const uid = JSON.parse(Buffer.concat(chunks).toString()).uid;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ version: 'v0.1.0', uid, allowed: true }));
  });
}).listen(Number(process.argv[1]), '127.0.0.1', () => console.log('ready'));
`;

/** A running webhook receiver; the caller kills `child` when done. */
export interface WebhookReceiver {
  port: number;
  child: ChildProcess;
  /** The run-configuration field that sends every call through this receiver. */
  config: Record<string, unknown>;
}

/** Starts the validating-webhook receiver; resolves once it listens. */
export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  const { port, child } = await startLoopbackServer(RECEIVER, 'webhook receiver');
  const config = {
    validating_webhooks: [
      {
        name: 'bench',
        url: `http://127.0.0.1:${port}/validate`,
        timeout: '5s',
        failure_policy: 'fail',
        tls_config: { insecure_skip_verify: true },
      },
    ],
  };
  return { port, child, config };
}

/** A body the size of a validating webhook's envelope around one tools/call (the bare POST's). */
export const webhookEnvelope = (n: number): string =>
  `{"version":"v0.1.0","uid":"${String(n).padStart(36, '0')}","timestamp":"${new Date().toISOString()}","principal":null,"mcp_request":{"jsonrpc":"2.0","id":${n},"method":"tools/call","params":{"name":"echo","arguments":{"message":"hello"}}},"context":{"server_name":"bench-webhook","source_ip":"127.0.0.1","transport":"stdio"}}`;

/**
 * The OTLP/HTTP sink's script: answers every export 200 with an empty body (a valid empty
 * Export*ServiceResponse) and counts requests and bytes per path; `GET /stats` reports them.
 */
const OTLP_SINK = `
const http = require('node:http');
const stats = {};
http.createServer((req, res) => {
  if (req.method === 'GET') {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(stats));
    return;
  }
  const s = (stats[req.url] ??= { requests: 0, bytes: 0 });
  req.on('data', (c) => { s.bytes += c.length; });
  req.on('end', () => {
    s.requests++;
    res.writeHead(200, { 'content-type': 'application/x-protobuf' });
    res.end();
  });
}).listen(Number(process.argv[1]), '127.0.0.1', () => console.log('ready'));
`;

/** What the OTLP sink received on one path. */
export interface OtlpPathStats {
  requests: number;
  bytes: number;
}

/** A running OTLP/HTTP sink; the caller kills `child` when done. */
export interface OtlpSink {
  port: number;
  child: ChildProcess;
  /** The run-configuration field that exports every span and metric (sampling 1.0) here. */
  config: Record<string, unknown>;
  /** What it has received so far, by path (`/v1/traces`, `/v1/metrics`). */
  stats(): Promise<Record<string, OtlpPathStats | undefined>>;
}

/** Starts the OTLP/HTTP sink; resolves once it listens. */
export async function startOtlpSink(): Promise<OtlpSink> {
  const { port, child } = await startLoopbackServer(OTLP_SINK, 'OTLP sink');
  return {
    port,
    child,
    config: { telemetry_config: { endpoint: `127.0.0.1:${port}`, insecure: true, samplingRate: '1.0' } },
    stats: async () =>
      (await (await fetch(`http://127.0.0.1:${port}/stats`)).json()) as Record<string, OtlpPathStats>,
  };
}
