/**
 * `skep mcp list tools|resources|prompts NAME` and `skep mcp call NAME TOOL`: talk to a
 * workload as any of its clients does, through its proxy at its working URL (which carries
 * the owner's access token), over streamable HTTP (MCP 2025-11-25 "Transports"). One session
 * per command: initialize, the requests, then the session is ended (DELETE).
 *
 * The client is the virtual MCP server's backend session, loaded only when one of these
 * commands runs (it brings undici, which the rest of the CLI does not load up front). What a
 * server sends is untrusted text: the tables and the text output pass `terminalSafe`.
 */
import { METHOD_NOT_FOUND, REQUEST_TIMEOUT } from '../../../protocol/index.js';
import { SkepError, SKEP_VERSION, terminalSafe } from '../../../shared/index.js';
import { type EndpointAccess, endpointAccessOf, proxyUrlOf } from '../../../workloads/index.js';
import { withContext } from '../context.js';
import { UsageError } from '../errors.js';
import { type Cell, printJson, printTable } from '../output.js';
import type { ListKind } from '../commands/mcp.js';

/** The vMCP's backend client, loaded when a session opens (see the module comment). */
const loadBackendClient = () => import('../../../dataplane/vmcp/backend-client.js');
type BackendClient = Awaited<ReturnType<typeof loadBackendClient>>;
type BackendSession = InstanceType<BackendClient['BackendSession']>;

/** `tools/list`, `resources/list`, `prompts/list` pages followed at most. */
const MAX_PAGES = 100;
/** A description in a table: its first line, cut to this many characters. */
const DESCRIPTION_WIDTH = 80;
const DEFAULT_TIMEOUT_MS = 60_000;

/**
 * `--arg key=value` pairs as tool arguments: a value that parses as JSON is that JSON value
 * (`n=3`, `flag=true`, `o={"a":1}`), anything else is the string as typed.
 */
export function parseToolArgs(pairs: readonly string[]): Record<string, unknown> {
  const args: Record<string, unknown> = {};
  for (const pair of pairs) {
    const at = pair.indexOf('=');
    if (at <= 0) throw new UsageError(`invalid --arg '${pair}': use KEY=VALUE`);
    const raw = pair.slice(at + 1);
    let value: unknown = raw;
    try {
      value = JSON.parse(raw);
    } catch {
      // Not JSON: the text itself.
    }
    args[pair.slice(0, at)] = value;
  }
  return args;
}

/** `--json '{...}'`: the tool's arguments as one JSON object. */
function parseJsonArgs(text: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    value = undefined;
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw new UsageError(
      `--json '${text}' is not a JSON object: give the tool's arguments as '{"key": "value"}' after NAME and TOOL, or use --arg key=value`,
    );
  return value as Record<string, unknown>;
}

/** The first line of a description, shortened for a table cell. */
function firstLine(text: unknown): string {
  if (typeof text !== 'string') return '';
  const line = text.trim().split('\n', 1)[0] ?? '';
  return line.length > DESCRIPTION_WIDTH ? `${line.slice(0, DESCRIPTION_WIDTH - 1)}…` : line;
}

interface Target {
  name: string;
  url: string;
  endpointAccess: EndpointAccess;
}

/** The workload's working URL; a workload that is not running is refused with what to do. */
async function targetOf(name: string): Promise<Target> {
  return withContext((ctx) => {
    const { status, status_context } = ctx.workloads.status(name);
    if (status !== 'running') {
      const why = status_context === '' ? '' : ` (${status_context})`;
      const hint =
        status === 'starting' ? "wait for it ('skep list --all')" : `start it with 'skep restart ${name}'`;
      throw new SkepError('unavailable', `workload '${name}' is ${status}${why}: ${hint}`);
    }
    const row = ctx.workloads.rows.get(name);
    if (row === undefined) throw new SkepError('workload_not_found', `workload '${name}' not found`);
    return {
      name,
      // Streamable HTTP whatever the advertised proxy mode: the proxy serves `/mcp` for every server.
      url: proxyUrlOf(row, 'streamable-http'),
      endpointAccess: endpointAccessOf(row.config),
    };
  });
}

/** Opens a session at the workload, runs `fn`, and ends the session whatever happens. */
async function withSession<T>(
  target: Target,
  timeoutMs: number,
  fn: (session: BackendSession, client: BackendClient) => Promise<T>,
): Promise<T> {
  // On demand: the client module imports undici (see the module comment).
  const client = await loadBackendClient();
  const session = new client.BackendSession(target.url, async () => ({}), {
    // No client capabilities are declared, so a server asks nothing but ping (MCP 2025-11-25
    // "Utilities / Ping").
    onServerRequest: async (m) => {
      if (m.method === 'ping') return {};
      throw new client.BackendError(METHOD_NOT_FOUND, `skep mcp does not answer ${m.method ?? 'requests'}`);
    },
    onNotification: () => undefined,
  });
  try {
    await session.open(timeoutMs, {}, { name: 'skep-cli', version: SKEP_VERSION });
    return await fn(session, client);
  } catch (err) {
    throw explain(err, target, client);
  } finally {
    session.close();
    await client.closePools();
  }
}

/** A client failure in words that say what happened and what to do. */
function explain(err: unknown, target: Target, client: BackendClient): unknown {
  if (err instanceof SkepError || err instanceof UsageError) return err;
  if (err instanceof client.BackendHttpError) {
    const why =
      target.endpointAccess === 'inbound-auth'
        ? 'it authenticates its callers itself (OIDC or its own authorization server), and skep mcp cannot log in to it'
        : 'its access token was not accepted';
    return new SkepError(
      'bad_gateway',
      `workload '${target.name}' refused the request (HTTP ${err.status}): ${why}`,
      {
        cause: err,
      },
    );
  }
  if (err instanceof client.BackendError && err.code === REQUEST_TIMEOUT) {
    return new SkepError(
      'gateway_timeout',
      `workload '${target.name}': ${err.message} (--timeout waits longer)`,
      {
        cause: err,
      },
    );
  }
  if (err instanceof client.BackendError) {
    const what = err.unreachable ? 'cannot be reached' : 'answered with an error';
    return new SkepError('bad_gateway', `workload '${target.name}' ${what}: ${err.message}`, { cause: err });
  }
  return err;
}

/** Every page of a list method. */
async function listAll(
  session: BackendSession,
  kind: ListKind,
  timeoutMs: number,
): Promise<Record<string, unknown>[]> {
  const items: Record<string, unknown>[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < MAX_PAGES; page++) {
    const result = (await session.request(`${kind}/list`, cursor === undefined ? {} : { cursor }, {
      timeoutMs,
    })) as Record<string, unknown> | null;
    const list = result?.[kind];
    if (Array.isArray(list))
      for (const item of list as unknown[])
        if (item !== null && typeof item === 'object') items.push(item as Record<string, unknown>);
    const next = result?.['nextCursor'];
    cursor = typeof next === 'string' && next !== '' ? next : undefined;
    if (cursor === undefined) break;
  }
  return items;
}

function printList(kind: ListKind, items: Record<string, unknown>[]): void {
  if (kind === 'tools') {
    printTable(
      ['NAME', 'DESCRIPTION'],
      items.map((t) => [t['name'] as Cell, firstLine(t['description'])]),
    );
  } else if (kind === 'resources') {
    printTable(
      ['URI', 'NAME', 'DESCRIPTION'],
      items.map((r) => [r['uri'] as Cell, r['name'] as Cell, firstLine(r['description'])]),
    );
  } else {
    printTable(
      ['NAME', 'ARGUMENTS', 'DESCRIPTION'],
      items.map((p) => [p['name'] as Cell, promptArguments(p['arguments']), firstLine(p['description'])]),
    );
  }
}

/** A prompt's argument names; required ones marked with `*`. */
function promptArguments(value: unknown): string {
  if (!Array.isArray(value)) return '';
  return (value as { name?: unknown; required?: unknown }[])
    .filter((a) => typeof a?.name === 'string')
    .map((a) => `${String(a.name)}${a.required === true ? '*' : ''}`)
    .join(', ');
}

/**
 * A `tools/call` result as text (MCP 2025-11-25 "Server Features / Tools / Tool Result"): text
 * content as is; other content named with its type and size; `structuredContent` as JSON when
 * there is no content to show.
 */
export function describeToolResult(result: Record<string, unknown>): string {
  const content = Array.isArray(result['content']) ? (result['content'] as Record<string, unknown>[]) : [];
  const parts = content.map(describeContent);
  if (parts.length === 0 && result['structuredContent'] !== undefined)
    parts.push(JSON.stringify(result['structuredContent'], null, 2));
  return parts.join('\n');
}

function describeContent(block: Record<string, unknown>): string {
  const type = block['type'];
  const size = (data: unknown) =>
    typeof data === 'string' ? `, ${Math.floor((data.length * 3) / 4)} bytes` : '';
  switch (type) {
    case 'text':
      return typeof block['text'] === 'string' ? block['text'] : '';
    case 'image':
    case 'audio':
      return `[${type} ${String(block['mimeType'] ?? '')}${size(block['data'])}]`;
    case 'resource_link':
      return `[resource link ${String(block['uri'] ?? '')}${typeof block['name'] === 'string' ? ` (${block['name']})` : ''}]`;
    case 'resource': {
      const r = (block['resource'] ?? {}) as Record<string, unknown>;
      const head = `[resource ${String(r['uri'] ?? '')}${typeof r['mimeType'] === 'string' ? ` ${r['mimeType']}` : ''}`;
      return typeof r['text'] === 'string' ? `${head}]\n${r['text']}` : `${head}${size(r['blob'])}]`;
    }
    default:
      return `[${String(type)} content]`;
  }
}

interface ListOptions {
  json?: boolean;
  timeout?: number;
}

interface CallOptions {
  arg: string[];
  json?: string | true;
  timeout?: number;
}

export async function list(kind: ListKind, name: string, opts: ListOptions): Promise<void> {
  const target = await targetOf(name);
  const timeoutMs = opts.timeout ?? DEFAULT_TIMEOUT_MS;
  const items = await withSession(target, timeoutMs, (session) => listAll(session, kind, timeoutMs));
  if (opts.json === true) printJson({ [kind]: items });
  else printList(kind, items);
}

export async function call(name: string, tool: string, opts: CallOptions): Promise<void> {
  const args = {
    ...(typeof opts.json === 'string' ? parseJsonArgs(opts.json) : {}),
    ...parseToolArgs(opts.arg),
  };
  const target = await targetOf(name);
  const timeoutMs = opts.timeout ?? DEFAULT_TIMEOUT_MS;
  const result = await withSession(target, timeoutMs, async (session) => {
    const answer = (await session.request(
      'tools/call',
      { name: tool, arguments: args },
      { timeoutMs },
    )) as Record<string, unknown> | null;
    return answer ?? {};
  });
  // MCP 2025-11-25: a tool's own failure is a result with `isError`, not a protocol error.
  const failed = result['isError'] === true;
  if (opts.json !== undefined) {
    printJson(result);
    if (failed) process.exitCode = 1;
    return;
  }
  const text = describeToolResult(result);
  if (failed) throw new SkepError('bad_gateway', `tool '${tool}' of workload '${name}' failed: ${text}`);
  process.stdout.write(`${terminalSafe(text)}${text.endsWith('\n') ? '' : '\n'}`);
}
