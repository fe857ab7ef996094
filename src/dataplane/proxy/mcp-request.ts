/**
 * The proxy's parser (the reference's "mcp-parser" middleware in ToolHive): what one JSON-RPC
 * message from a client is about, for the middlewares that judge or record it (authorization,
 * audit, webhooks). It reads; it never changes the message.
 */
import { isJsonObject, isValidId, type JsonRpcMessage } from '../../protocol/index.js';
import type { McpRequestInfo } from './types.js';

const asString = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);

/** The subject of a message per method; undefined when the method names none. */
function resourceIdOf(method: string, params: Record<string, unknown>): string | undefined {
  switch (method) {
    case 'tools/call':
    case 'prompts/get':
      return asString(params['name']);
    case 'resources/read':
    case 'resources/subscribe':
    case 'resources/unsubscribe':
      return asString(params['uri']);
    case 'tools/list':
    case 'prompts/list':
    case 'resources/list':
    case 'resources/templates/list':
    case 'roots/list':
    case 'tasks/list':
      return asString(params['cursor']);
    case 'initialize': {
      const info = params['clientInfo'];
      return isJsonObject(info) ? asString(info['name']) : undefined;
    }
    case 'completion/complete': {
      const ref = params['ref'];
      return isJsonObject(ref) ? (asString(ref['name']) ?? asString(ref['uri'])) : undefined;
    }
    case 'logging/setLevel':
      return asString(params['level']);
    case 'notifications/progress': {
      const token = params['progressToken'];
      return typeof token === 'number' ? String(token) : asString(token);
    }
    case 'ping':
      return 'ping';
    default:
      return method.startsWith('notifications/') && method.endsWith('_changed') ? method : undefined;
  }
}

/**
 * Parses one client message; undefined for anything that is not a request or notification
 * (a response to a server request, a batch, a non-object). `toolName` maps a client-visible
 * tool name to the server's own (`tools_override`), so policies name real tools.
 */
export function parseMcpRequest(
  body: unknown,
  toolName: (visible: string) => string = (n) => n,
): McpRequestInfo | undefined {
  if (!isJsonObject(body) || Array.isArray(body)) return undefined;
  const message = body as unknown as JsonRpcMessage;
  const method = message.method;
  if (typeof method !== 'string') return undefined;
  const params = isJsonObject(message.params) ? message.params : {};
  let resourceId = resourceIdOf(method, params);
  if (method === 'tools/call' && resourceId !== undefined) resourceId = toolName(resourceId);
  const args = params['arguments'];
  return {
    method,
    id: isValidId(message.id) ? message.id : undefined,
    resourceId,
    arguments:
      (method === 'tools/call' || method === 'prompts/get') && isJsonObject(args) && !Array.isArray(args)
        ? args
        : undefined,
    message,
  };
}
