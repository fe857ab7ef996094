/**
 * Real workloads for the virtual MCP tests: backends (server-everything and the team fixture,
 * stdio or streamable HTTP) and virtual workloads, each runner run in this process through
 * `inProcessManager`, reached with the official MCP SDK client.
 */
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import type { TestContext } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { type ApiContext, createContext } from '../../../src/control/app/index.js';
import { WorkloadManager } from '../../../src/workloads/index.js';
import { tempHome } from '../../helpers/home.js';
import { everythingBody, runInProcess, waitFor, workloadEndpoint } from '../workloads/helpers.js';

export const TEAM_SERVER = fileURLToPath(new URL('../../fixtures/mcp/team-server.ts', import.meta.url));
/** tsx's loader by absolute URL: the runner starts servers in another working directory. */
const TSX = import.meta.resolve('tsx');

export interface Lab {
  ctx: ApiContext;
  manager: WorkloadManager;
  /** Starts the runner of an existing workload; resolves once it is running. */
  run(name: string): Promise<void>;
  /** Stops a running runner (abort) and waits for it to exit cleanly. */
  stop(name: string): Promise<void>;
  port(name: string): number;
  /**
   * The working URL of the workload's `/mcp` (or `path`): with its access token, unless it
   * authenticates its callers itself.
   */
  url(name: string, path?: string): string;
}

export function lab(t: TestContext): Lab {
  const home = tempHome(t);
  const ctx = createContext(home.config);
  const manager = new WorkloadManager({
    store: ctx.store,
    config: home.config,
    groups: ctx.groups,
    secretLookup: async () => undefined,
    // Runners run in this process (`run`); spawning only records a pid no process has.
    spawnRunner: () => 99_999_999,
  });
  ctx.groups.attachMembers(manager);
  const runners = new Map<string, { abort: AbortController; done: Promise<number> }>();
  t.after(async () => {
    // Runners first: they write their status to the store the manager closes.
    for (const r of runners.values()) r.abort.abort();
    await Promise.all([...runners.values()].map((r) => r.done));
    await manager.close();
    await ctx.close();
  });
  const l: Lab = {
    ctx,
    manager,
    async run(name) {
      const abort = new AbortController();
      const done = runInProcess(ctx, name, abort.signal);
      runners.set(name, { abort, done });
      await waitFor(`${name} to be running`, () => {
        const row = manager.rows.get(name);
        if (row?.status === 'error') throw new Error(`${name}: ${row.statusContext}`);
        return row?.status === 'running' ? true : undefined;
      });
    },
    async stop(name) {
      const r = runners.get(name);
      if (r === undefined) throw new Error(`${name} is not running`);
      runners.delete(name);
      r.abort.abort();
      assert.equal(await r.done, 0);
    },
    port: (name) => manager.rows.get(name)?.port as number,
    url: (name, path) => workloadEndpoint(manager, name, path),
  };
  return l;
}

export async function addGroup(l: Lab, group: string): Promise<void> {
  if (!l.ctx.groups.list().some((g) => g.name === group)) l.ctx.groups.create(group);
}

/** server-everything (stdio) in `group`. */
export async function everything(l: Lab, name: string, group: string): Promise<void> {
  await l.manager.create(Object.assign(everythingBody(name), { group }));
  await l.run(name);
}

/** The team fixture; `http` runs it as a streamable-HTTP server (it then sees request headers). */
export async function team(
  l: Lab,
  name: string,
  group: string,
  extra: Record<string, unknown> = {},
  http = false,
): Promise<void> {
  await l.manager.create(
    Object.assign(
      {
        name,
        group,
        image: `cmd://${process.execPath}`,
        cmd_arguments: ['--import', TSX, TEAM_SERVER, name],
      },
      http ? { transport: 'streamable-http' as const } : {},
      extra,
    ),
  );
  await l.run(name);
}

/** A virtual workload over `group`. */
export async function virtual(
  l: Lab,
  name: string,
  group: string,
  vmcp: Record<string, unknown> = {},
  extra: Record<string, unknown> = {},
): Promise<void> {
  await l.manager.create(Object.assign({ name, group, vmcp }, extra));
  await l.run(name);
}

/** An MCP SDK client of `url` (a workload's working URL: `Lab.url`), closed when `t` ends. */
export async function connect(
  t: TestContext,
  url: string,
  options: { token?: string; capabilities?: Record<string, unknown> } = {},
): Promise<Client> {
  const client = new Client(
    { name: 'vmcp-test', version: '1.0.0' },
    { capabilities: options.capabilities ?? {} },
  );
  const init =
    options.token === undefined
      ? {}
      : { requestInit: { headers: { authorization: `Bearer ${options.token}` } } };
  await client.connect(new StreamableHTTPClientTransport(new URL(url), init));
  t.after(() => client.close());
  return client;
}

export async function toolNames(client: Client): Promise<string[]> {
  return (await client.listTools()).tools.map((x) => x.name).sort();
}

export async function callText(
  client: Client,
  name: string,
  args: Record<string, unknown> = {},
): Promise<string> {
  const result = (await client.callTool({ name, arguments: args })) as {
    content: { text: string }[];
    isError?: boolean;
  };
  return result.content.map((c) => c.text).join('');
}

export { waitFor };
