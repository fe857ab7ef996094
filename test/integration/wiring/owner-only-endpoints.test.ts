/**
 * A workload answers only its owner: real detached runners (server-everything over stdio, one
 * served as streamable HTTP and one as legacy SSE, and a virtual MCP over both), registered
 * with Cursor and VS Code. The owner's clients, reading the URLs Skep wrote into their config
 * files, call tools with the official MCP SDK; a caller without the access token — another
 * local account, created here, included — gets 401 at every endpoint and can read the token
 * from none of the owner's files nor from the runner's process.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { createContext } from '../../../src/control/app/index.js';
import { probeBwrap } from '../../../src/dataplane/runtime/index.js';
import { requireService } from '../../helpers/services.js';
import { tempHome } from '../../helpers/home.js';
import { PROBE_SERVER, probeClient } from '../runtime/probe.js';
import {
  everythingBody,
  removeAllWorkloads,
  waitFor,
  waitForStatus,
  workloadHome,
} from '../workloads/helpers.js';

const OTHER_ACCOUNT = 'skep-test-other';

/** The uid and gid of a second local account, created when missing (needs root). */
function otherAccount(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  if (spawnSync('id', ['-u', OTHER_ACCOUNT]).status !== 0)
    execFileSync('useradd', ['--system', '--no-create-home', '--shell', '/usr/sbin/nologin', OTHER_ACCOUNT]);
  const id = (flag: string) => Number(execFileSync('id', [flag, OTHER_ACCOUNT], { encoding: 'utf8' }).trim());
  return { uid: id('-u'), gid: id('-g') };
}

async function callEcho(
  url: string,
  transport: 'sse' | 'streamable-http',
  headers?: Record<string, string>,
): Promise<string> {
  const client = new Client({ name: 'owner', version: '1.0.0' });
  const target = new URL(url);
  const options = headers === undefined ? {} : { requestInit: { headers } };
  await client.connect(
    transport === 'sse'
      ? new SSEClientTransport(target, { ...options, eventSourceInit: { fetch: withHeaders(headers) } })
      : new StreamableHTTPClientTransport(target, options),
  );
  try {
    const result = (await client.callTool({ name: 'echo', arguments: { message: 'hi' } })) as {
      content: { text: string }[];
    };
    return result.content[0]?.text ?? '';
  } finally {
    await client.close();
  }
}

/** Status of a raw MCP request, as a caller that knows the port but not the token sends it. */
async function statusOf(url: string, init: RequestInit = {}): Promise<number> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
    }),
    ...init,
  });
  await res.body?.cancel();
  return res.status;
}

test('workload endpoints answer only the owner’s clients; the token is nowhere another account can read it', async (t) => {
  const home = tempHome(t);
  // Homes are often 0755 (Debian's default): only the files' own modes protect them.
  chmodSync(home.dir, 0o755);
  const userHome = join(home.dir, 'user-home');
  mkdirSync(join(userHome, '.cursor'), { recursive: true, mode: 0o755 });
  mkdirSync(join(userHome, '.config', 'Code', 'User'), { recursive: true, mode: 0o755 });
  chmodSync(userHome, 0o755);
  const cursorConfig = join(userHome, '.cursor', 'mcp.json');
  const vscodeConfig = join(userHome, '.config', 'Code', 'User', 'mcp.json');
  const windsurfConfig = join(userHome, '.codeium', 'windsurf', 'mcp_config.json');
  // A config file the user made world-readable: Skep's entries carry tokens, so it is tightened.
  writeFileSync(cursorConfig, '{ "mcpServers": {} }\n', { mode: 0o644 });
  chmodSync(cursorConfig, 0o644);
  const ctx = createContext(home.config, {
    env: { ...home.env, HOME: userHome, XDG_CONFIG_HOME: join(userHome, '.config') },
  });
  t.after(async () => {
    await removeAllWorkloads(ctx);
    await ctx.close();
  });

  await ctx.clients.register('cursor', ['default']);
  await ctx.clients.register('vscode', ['default']);
  await ctx.clients.register('windsurf', ['default']);
  await ctx.workloads.create(everythingBody('owned'));
  await ctx.workloads.create({ ...everythingBody('owned-sse'), proxy_mode: 'sse' });
  await waitForStatus(ctx, 'owned', 'running');
  await waitForStatus(ctx, 'owned-sse', 'running');
  // A virtual MCP of its own group over the default group (a vMCP in a registered group
  // replaces that group's entries in the clients).
  ctx.groups.create('team');
  await ctx.workloads.create({
    name: 'owned-virtual',
    group: 'team',
    transport: 'stdio',
    vmcp: { groupRef: 'default' },
  });
  await waitForStatus(ctx, 'owned-virtual', 'running');
  const virtual = ctx.workloads.list({ all: true }).find((w) => w.name === 'owned-virtual')?.url as string;

  type Entry = { url?: string; serverUrl?: string; headers?: Record<string, string> };
  const entries = (file: string, key: string) => async () => {
    const servers = (JSON.parse(readFileSync(file, 'utf8')) as Record<string, Record<string, Entry>>)[key];
    const found = ['owned', 'owned-sse'].flatMap((n) => servers?.[n] ?? []);
    return found.length === 2 ? found : undefined;
  };
  const cursor = await waitFor('Cursor’s config to list the workloads', entries(cursorConfig, 'mcpServers'));
  const vscode = await waitFor('VS Code’s config to list the workloads', entries(vscodeConfig, 'servers'));
  const windsurf = await waitFor(
    'Windsurf’s config to list the workloads',
    entries(windsurfConfig, 'mcpServers'),
  );
  assert.deepEqual(
    vscode.map((e) => [e.url, e.headers]),
    cursor.map((e) => [e.url, e.headers]),
  );
  for (const file of [cursorConfig, vscodeConfig, windsurfConfig])
    assert.equal(statSync(file).mode & 0o077, 0, `${file} is private`);

  // Clients whose config takes headers get the plain URL and the token as a bearer header;
  // a client that takes only a URL (Windsurf) gets the URL that carries it.
  const [plain, sse] = windsurf.map((e) => e.serverUrl) as [string, string];
  assert.match(plain, /\/mcp\?skep_token=[0-9a-f]{64}$/);
  assert.match(sse, /\/sse\?skep_token=[0-9a-f]{64}#owned-sse$/);
  const token = new URL(plain).searchParams.get('skep_token') as string;
  const bare = plain.replace(/\?.*$/, '');
  assert.deepEqual(cursor[0], { url: bare, type: 'http', headers: { Authorization: `Bearer ${token}` } });
  assert.doesNotMatch(JSON.stringify(cursor[1]?.url), /skep_token/);

  // The owner's clients work with what Skep wrote, over both transports and through the vMCP.
  for (const [entry, transport] of [
    [cursor[0], 'streamable-http'],
    [cursor[1], 'sse'],
  ] as const)
    assert.equal(await callEcho(entry?.url as string, transport, entry?.headers), 'Echo: hi');
  assert.equal(await callEcho(plain, 'streamable-http'), 'Echo: hi');
  assert.equal(await callEcho(sse, 'sse'), 'Echo: hi');
  const viaVirtual = new Client({ name: 'owner', version: '1.0.0' });
  await viaVirtual.connect(new StreamableHTTPClientTransport(new URL(virtual)));
  const tools = (await viaVirtual.listTools()).tools.map((tool) => tool.name);
  await viaVirtual.close();
  assert.ok(
    tools.some((name) => name.includes('echo')),
    `the virtual MCP reaches its backends: ${tools.join(', ')}`,
  );
  const cursorUrls = [plain, sse];
  assert.equal(await statusOf(bare, { headers: authorized(token) }), 200);

  // Without the token, or with another workload's, every endpoint refuses.
  const otherToken = new URL(sse).searchParams.get('skep_token') as string;
  for (const url of [...cursorUrls, virtual]) {
    const stripped = url.replace(/\?skep_token=[0-9a-f]+/, '').replace(/#.*$/, '');
    const sseGet = stripped.endsWith('/sse');
    const res = sseGet ? await fetch(stripped) : undefined;
    if (res !== undefined) await res.body?.cancel();
    assert.equal(res?.status ?? (await statusOf(stripped)), 401, `${stripped} without a token`);
    if (!sseGet) {
      assert.equal(
        await statusOf(`${stripped}?skep_token=${'0'.repeat(64)}`),
        401,
        `${stripped}, a wrong token`,
      );
      if (!url.includes(otherToken))
        assert.equal(
          await statusOf(`${stripped}?skep_token=${otherToken}`),
          401,
          `${stripped}, another workload's token`,
        );
    }
  }

  // Another local account: 401 on the port it can reach; the owner's files and the runner's
  // process hold the token where it cannot read them.
  const other = otherAccount();
  if (
    !requireService(t, 'a second local account', other !== undefined, 'run as root to create one') ||
    other === undefined
  )
    return;
  const runnerPid = ctx.workloads.rows.get('owned')?.runnerPid as number;
  const probe = `
    const fs = require('node:fs');
    const read = (f) => { try { return fs.readFileSync(f, 'utf8'); } catch (e) { return 'ERR ' + e.code; } };
    (async () => {
      const res = await fetch(process.argv[1], { method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }) });
      const files = process.argv.slice(2).map(read);
      process.stdout.write(JSON.stringify({ status: res.status, files }));
    })();`;
  const stateFiles = [
    home.config.paths.databaseFile,
    cursorConfig,
    vscodeConfig,
    `/proc/${runnerPid}/environ`,
    `/proc/${runnerPid}/cmdline`,
  ];
  const out = execFileSync(process.execPath, ['-e', probe, bare, ...stateFiles], {
    uid: other.uid,
    gid: other.gid,
    cwd: '/',
    encoding: 'utf8',
  });
  const seen = JSON.parse(out) as { status: number; files: string[] };
  assert.equal(seen.status, 401, 'the other account is refused at the endpoint');
  for (const [i, text] of seen.files.entries()) {
    assert.ok(!text.includes(token), `${stateFiles[i]} shows the other account no token`);
    if (i < 4) assert.match(text, /^ERR EACCES/, `${stateFiles[i]} is unreadable to the other account`);
  }
});

/** The SDK's SSE stream is opened with `fetch`: this one adds the client's headers to it. */
function withHeaders(headers: Record<string, string> | undefined): typeof fetch {
  return (input, init) =>
    fetch(input, { ...init, headers: { ...(init?.headers as Record<string, string>), ...headers } });
}

function authorized(token: string): Record<string, string> {
  return {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    authorization: `Bearer ${token}`,
  };
}

test('a sandboxed server with the host’s network (the default profile) cannot call another workload', async (t) => {
  const probe = probeBwrap('bwrap');
  if (!requireService(t, 'bubblewrap', probe.ok, `${probe.ok ? '' : probe.reason}; apt install bubblewrap`))
    return;
  const { ctx } = workloadHome(t);
  await ctx.workloads.create(everythingBody('victim'));
  await ctx.workloads.create({
    name: 'intruder',
    image: `cmd://${process.execPath}`,
    cmd_arguments: [PROBE_SERVER],
  });
  await waitForStatus(ctx, 'victim', 'running');
  await waitForStatus(ctx, 'intruder', 'running');
  assert.equal(ctx.workloads.list().find((w) => w.name === 'intruder')?.sandbox, 'bwrap');
  const victim = ctx.workloads.list().find((w) => w.name === 'victim')?.url as string;
  const token = new URL(victim).searchParams.get('skep_token') as string;
  const intruder = await probeClient(ctx, 'intruder');
  t.after(() => intruder.close());

  // It reaches the victim's port (the host's loopback is shared) but gets no tool.
  const port = new URL(victim).port;
  assert.equal(await intruder.call('connect', { host: '127.0.0.1', port: Number(port) }), 'connected');
  assert.match(await intruder.call('http_get', { url: `http://127.0.0.1:${port}/mcp` }), /^401 /);
  // Nor can it find the token: the store is hidden, and it sees no runner's process.
  assert.match(await intruder.call('read_file', { path: ctx.config.paths.databaseFile }), /^error /);
  const procs = await intruder.call('list_dir', { path: '/proc' });
  const pids = procs
    .replace(/^ok /, '')
    .split(',')
    .filter((n) => /^\d+$/.test(n));
  for (const pid of pids) {
    const environ = await intruder.call('read_file', { path: `/proc/${pid}/environ` });
    const cmdline = await intruder.call('read_file', { path: `/proc/${pid}/cmdline` });
    assert.ok(!environ.includes(token) && !cmdline.includes(token), `/proc/${pid} holds no token`);
    assert.ok(!cmdline.includes('runner'), `no runner is visible in the sandbox (pid ${pid}: ${cmdline})`);
  }
});
