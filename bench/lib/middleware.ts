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
