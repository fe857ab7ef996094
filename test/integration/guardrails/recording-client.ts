/**
 * The official MCP SDK client the server-message tests talk to the proxy with: it declares
 * sampling and elicitation, answers both, and records what the server sent on its own (log
 * lines, sampling and elicitation requests) as it reached the client.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  LoggingMessageNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';

export interface Recorded {
  logs: unknown[];
  sampling: unknown[];
  elicitation: unknown[];
}

export function recordingClient(): { client: Client; recorded: Recorded } {
  const client = new Client(
    { name: 'guardrails-test', version: '1.0.0' },
    { capabilities: { sampling: {}, elicitation: {} } },
  );
  const recorded: Recorded = { logs: [], sampling: [], elicitation: [] };
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
    recorded.logs.push(n.params.data);
  });
  client.setRequestHandler(CreateMessageRequestSchema, (r) => {
    recorded.sampling.push(r.params);
    return { model: 'test', role: 'assistant', content: { type: 'text', text: 'a summary' } };
  });
  client.setRequestHandler(ElicitRequestSchema, (r) => {
    recorded.elicitation.push(r.params);
    return { action: 'accept', content: { ok: true } };
  });
  return { client, recorded };
}
