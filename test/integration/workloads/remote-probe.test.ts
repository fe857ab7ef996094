/**
 * The runner's reachability probe of a remote server: it carries the
 * headers the proxy adds to every request for that server — `header_forward` plaintext and
 * from-secret values, and a fixed bearer token from `remote_auth_config.bearer_token_file` —
 * so the server sees the probe as it sees proxied traffic. The runner runs for real in this
 * process (`runInProcess`); the remote is the MCP SDK's streamable-HTTP server on loopback,
 * which records every request's headers and refuses (401) requests without the credentials.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { connectClient, startRemoteMcp, textOf } from '../auth/harness.js';
import { inProcessManager, runInProcess, waitFor, workloadEndpoint } from './helpers.js';

const API_KEY = 'remote-api-key-3f9c2a71';
const TOKEN = 'remote-bearer-token-8d41e0';

test(
  'a remote workload: the start-up probe carries the same static headers as proxied requests (header_forward, secret header, bearer token file)',
  { timeout: 90_000 },
  async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'skep-remote-probe-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const tokenFile = join(dir, 'token');
    writeFileSync(tokenFile, `${TOKEN}\n`);

    const remote = await startRemoteMcp(t);
    remote.authorize = async (req) =>
      req.headers['x-api-key'] === API_KEY && req.headers['authorization'] === `Bearer ${TOKEN}`;

    const { ctx, manager } = inProcessManager(t);
    await manager.createFromConfig({
      name: 'guarded-remote',
      image: '',
      remote_url: remote.url,
      transport: 'streamable-http',
      header_forward: {
        add_plaintext_headers: { 'X-Tenant': 'acme' },
        add_headers_from_secret: { 'X-Api-Key': 'remote-api-key' },
      },
      remote_auth_config: { bearer_token_file: tokenFile },
    });
    const stop = new AbortController();
    const done = runInProcess(ctx, 'guarded-remote', stop.signal, undefined, async (name) =>
      name === 'remote-api-key' ? API_KEY : undefined,
    );
    // Only if the test fails early; normally it is stopped below, before the store closes.
    t.after(() => stop.abort());
    await waitFor('running', () =>
      manager.rows.get('guarded-remote')?.status === 'running' ? true : undefined,
    );

    // The probe is the runner's own `ping` (id skep-health), sent before any client request.
    const probes = remote.seen.filter((r) => r.body.includes('"skep-health"'));
    assert.ok(probes.length >= 1, 'the runner probed the remote');
    const probe = probes[0]!;
    assert.equal(probe.method, 'POST');
    assert.equal(probe.headers['x-api-key'], API_KEY);
    assert.equal(probe.headers['x-tenant'], 'acme');
    assert.equal(probe.headers['authorization'], `Bearer ${TOKEN}`);

    // A client's call through the proxy reaches the remote (authorized) with the same headers.
    const client = await connectClient(t, workloadEndpoint(manager, 'guarded-remote'));
    assert.equal(textOf(await client.callTool({ name: 'whoami', arguments: {} })), `Bearer ${TOKEN}`);
    const call = remote.seen.find((r) => r.body.includes('"tools/call"'));
    assert.ok(call, 'the tool call reached the remote');
    for (const header of ['x-api-key', 'x-tenant', 'authorization'])
      assert.equal(
        probe.headers[header],
        call.headers[header],
        `${header}: probe and proxied request differ`,
      );

    stop.abort();
    assert.equal(await done, 0);
  },
);
