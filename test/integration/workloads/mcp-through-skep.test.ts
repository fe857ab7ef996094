/**
 * The whole path with real parts: `skep serve` (startServer on port 0) → API create → detached
 * runner → proxy → server-everything as a `cmd://` process workload, reached by the official
 * MCP SDK client over streamable HTTP and SSE. Then the failure drills: kill -9 of the server
 * child (the runner restarts it, clients recover), `skep serve` stopping and starting (the
 * workload keeps serving), and a reboot-like restart (runner killed, state says running →
 * the next `skep serve` brings it back).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { type RunningServer, startServer } from '../../../src/control/api/server.js';
import { runnerAlive } from '../../../src/workloads/index.js';
import { apiTokenFor } from '../../helpers/api.js';
import { tempHome } from '../../helpers/home.js';
import {
  childPids,
  everythingBody,
  removeAllWorkloads,
  runnerPidOf,
  waitFor,
  waitForStatus,
  workloadEndpoint,
} from './helpers.js';

type Transport = 'streamable-http' | 'sse';

/** The workload's working URLs (with its access token), by transport. */
type Endpoints = Record<Transport, string>;

async function connect(
  endpoints: Endpoints,
  transport: Transport,
  t: { after(fn: () => Promise<void>): void },
): Promise<Client> {
  const client = new Client({ name: 'skep-test', version: '1.0.0' });
  const url = new URL(endpoints[transport]);
  await client.connect(
    transport === 'sse' ? new SSEClientTransport(url) : new StreamableHTTPClientTransport(url),
  );
  t.after(() => client.close());
  return client;
}

async function echo(client: Client, message: string): Promise<string> {
  const result = (await client.callTool({ name: 'echo', arguments: { message } })) as {
    content: { type: string; text: string }[];
  };
  return result.content[0]?.text ?? '';
}

test(
  'MCP SDK client → Skep → server-everything; crash, serve restart and reboot-like resume',
  {
    timeout: 600_000,
  },
  async (t) => {
    const home = tempHome(t);
    let server: RunningServer | undefined = await startServer(home.config, { port: 0 });
    t.after(async () => {
      // Clean up with whichever server is current (or a fresh one), then close it.
      const current = server ?? (await startServer(home.config, { port: 0 }));
      try {
        await removeAllWorkloads(current.ctx);
      } finally {
        await current.close();
      }
    });

    // The token the first start generated; every later start reads the same file.
    const auth = { authorization: `Bearer ${apiTokenFor(home.env)}` };
    const res = await fetch(`${server.url}/api/v1beta/workloads`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...auth },
      body: JSON.stringify(everythingBody('everything')),
    });
    assert.equal(res.status, 201, await res.clone().text());
    await res.body?.cancel();
    await waitForStatus(server.ctx, 'everything', 'running');
    const endpoints: Endpoints = {
      'streamable-http': workloadEndpoint(server.ctx, 'everything'),
      sse: workloadEndpoint(server.ctx, 'everything', '/sse'),
    };

    await t.test('streamable HTTP: list tools and call echo', async (st) => {
      const client = await connect(endpoints, 'streamable-http', st);
      const { tools } = await client.listTools();
      assert.ok(tools.some((tool) => tool.name === 'echo'));
      assert.equal(await echo(client, 'over streamable http'), 'Echo: over streamable http');
    });

    await t.test('legacy SSE: list tools and call echo', async (st) => {
      const client = await connect(endpoints, 'sse', st);
      const { tools } = await client.listTools();
      assert.ok(tools.some((tool) => tool.name === 'echo'));
      assert.equal(await echo(client, 'over sse'), 'Echo: over sse');
    });

    await t.test('20 concurrent sessions on the one stdio child each get their own replies', async (st) => {
      const clients = await Promise.all(
        Array.from({ length: 20 }, () => connect(endpoints, 'streamable-http', st)),
      );
      const replies = await Promise.all(clients.map((c, i) => echo(c, `session ${i}`)));
      assert.deepEqual(
        replies,
        clients.map((_, i) => `Echo: session ${i}`),
      );
    });

    await t.test(
      'kill -9 of the server child: the runner restarts it and the client recovers',
      async (st) => {
        const client = await connect(endpoints, 'streamable-http', st);
        assert.equal(await echo(client, 'before'), 'Echo: before');
        const runner = runnerPidOf((server as RunningServer).ctx, 'everything');
        const [child] = childPids(runner);
        assert.ok(child !== undefined, 'the runner has a server child');
        process.kill(child, 'SIGKILL');
        const replacement = await waitFor('a new server child', () =>
          childPids(runner).find((p) => p !== child),
        );
        assert.notEqual(replacement, child);
        await waitForStatus((server as RunningServer).ctx, 'everything', 'running');
        // The same client session keeps working once the child is back.
        assert.equal(await waitFor('echo after restart', () => echo(client, 'after')), 'Echo: after');
        assert.equal(
          runnerPidOf((server as RunningServer).ctx, 'everything'),
          runner,
          'the runner itself kept running',
        );
      },
    );

    await t.test('skep serve stops and starts again: the workload keeps serving', async (st) => {
      const runner = runnerPidOf((server as RunningServer).ctx, 'everything');
      await (server as RunningServer).close();
      server = undefined;
      assert.ok(runnerAlive(runner, 'everything'), 'the runner outlives skep serve');
      const client = await connect(endpoints, 'streamable-http', st);
      assert.equal(await echo(client, 'without serve'), 'Echo: without serve');
      server = await startServer(home.config, { port: 0 });
      const list = (await (await fetch(`${server.url}/api/v1beta/workloads`, { headers: auth })).json()) as {
        workloads: { name: string; status: string }[];
      };
      assert.deepEqual(
        list.workloads.map((w) => [w.name, w.status]),
        [['everything', 'running']],
      );
      assert.equal(runnerPidOf(server.ctx, 'everything'), runner, 'a live runner is left alone');
      assert.equal(await echo(client, 'with serve'), 'Echo: with serve');
    });

    await t.test(
      'reboot-like: runner killed while the state says running → the next serve resumes it',
      async (st) => {
        const runner = runnerPidOf((server as RunningServer).ctx, 'everything');
        await (server as RunningServer).close();
        server = undefined;
        process.kill(runner, 'SIGKILL');
        await waitFor('the runner to die', () => (runnerAlive(runner, 'everything') ? undefined : true));
        server = await startServer(home.config, { port: 0 });
        const current = server;
        await waitFor('a new runner', () => {
          const pid = current.ctx.workloads.rows.get('everything')?.runnerPid;
          return pid !== undefined && pid !== runner ? pid : undefined;
        });
        await waitForStatus(current.ctx, 'everything', 'running');
        const client = await connect(endpoints, 'streamable-http', st);
        assert.equal(await echo(client, 'after reboot'), 'Echo: after reboot');
      },
    );
  },
);
