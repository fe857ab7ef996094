// `skep operator registry-server` (the MCPRegistry pod): the registry routes of `skep serve` over
// the file the configuration names, read-only, on a real port with real HTTP requests.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { startRegistryServer } from '../../../src/control/operator/registry-server.js';

const REGISTRY = {
  $schema:
    'https://raw.githubusercontent.com/stacklok/toolhive-core/main/registry/types/data/upstream-registry.schema.json',
  version: '1.0.0',
  meta: { last_updated: '2025-09-08T12:00:00Z' },
  data: {
    servers: [
      {
        name: 'io.github.example/filesystem',
        description: 'Allows you to do filesystem operations',
        version: '1.0.0',
        packages: [
          {
            registryType: 'oci',
            identifier: 'docker.io/mcp/filesystem:latest',
            transport: { type: 'stdio' },
          },
        ],
      },
    ],
  },
};

describe('operator registry-server', { timeout: 60_000 }, () => {
  it('serves the v0.1 and native lists from the configured file, and refuses every write', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'skep-registry-server-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    writeFileSync(join(dir, 'registry.json'), JSON.stringify(REGISTRY));
    writeFileSync(
      join(dir, 'config.yaml'),
      `sources:\n  - name: prod\n    file:\n      path: ${join(dir, 'registry.json')}\n    syncPolicy:\n      interval: 1h\nregistries:\n  - name: default\n    sources: [prod]\ndatabase:\n  host: postgres\nauth:\n  mode: anonymous\n`,
    );
    const server = await startRegistryServer({
      configFile: join(dir, 'config.yaml'),
      host: '127.0.0.1',
      port: 0,
      env: { SKEP_HOME: join(dir, 'home') },
    });
    t.after(() => server.close());

    const list = await fetch(`${server.url}/registry/default/v0.1/servers`);
    assert.equal(list.status, 200);
    const body = (await list.json()) as { servers: Array<{ name: string }> };
    assert.deepEqual(
      body.servers.map((s) => s.name),
      ['io.github.example/filesystem'],
    );
    const native = await fetch(`${server.url}/api/v1beta/registry/default/servers`);
    assert.equal(native.status, 200);
    assert.equal(((await native.json()) as { servers: unknown[] }).servers.length, 1);
    assert.equal((await fetch(`${server.url}/health`)).status, 200);

    for (const [method, path] of [
      ['PUT', '/api/v1beta/registry/default'],
      ['POST', '/api/v1beta/registry/auth/login'],
      ['POST', '/api/v1beta/registry/default/refresh'],
    ] as const) {
      const res = await fetch(`${server.url}${path}`, {
        method,
        body: '{}',
        headers: { 'content-type': 'application/json' },
      });
      assert.equal(res.status, 405, `${method} ${path}`);
      assert.equal(((await res.json()) as { code: string }).code, 'method_not_allowed');
    }
  });

  it('refuses a configuration it cannot serve, naming the setting', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'skep-registry-server-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    writeFileSync(
      join(dir, 'config.yaml'),
      'sources:\n  - name: m\n    managed: {}\nregistries:\n  - name: default\n    sources: [m]\n',
    );
    await assert.rejects(
      startRegistryServer({
        configFile: join(dir, 'config.yaml'),
        port: 0,
        env: { SKEP_HOME: join(dir, 'h') },
      }),
      (err: Error & { code?: string }) =>
        err.code === 'invalid_config' &&
        /sources\[0\]\.managed: Skep's registry server is read-only/.test(err.message),
    );
  });

  it("a file source's filter (the reference's example: tags include production, exclude experimental)", async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'skep-registry-server-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const tagged = (name: string, id: string, tags: string[]) => ({
      name,
      description: `${name} server`,
      version: '1.0.0',
      packages: [{ registryType: 'oci', identifier: id, transport: { type: 'stdio' } }],
      _meta: {
        'io.modelcontextprotocol.registry/publisher-provided': { 'io.github.example': { [id]: { tags } } },
      },
    });
    writeFileSync(
      join(dir, 'registry.json'),
      JSON.stringify({
        ...REGISTRY,
        data: {
          servers: [
            tagged('io.github.example/filesystem', 'docker.io/mcp/filesystem:latest', [
              'filesystem',
              'production',
            ]),
            tagged('io.github.example/github', 'ghcr.io/github/github-mcp-server:latest', [
              'github',
              'production',
            ]),
            tagged('io.github.example/experimental-ai', 'docker.io/mcp/experimental-ai:latest', [
              'ai',
              'experimental',
            ]),
          ],
        },
      }),
    );
    writeFileSync(
      join(dir, 'config.yaml'),
      `sources:\n  - name: prod\n    file:\n      path: ${join(dir, 'registry.json')}\n    filter:\n      tags:\n        include: [production]\n        exclude: [experimental]\nregistries:\n  - name: default\n    sources: [prod]\n`,
    );
    const server = await startRegistryServer({
      configFile: join(dir, 'config.yaml'),
      host: '127.0.0.1',
      port: 0,
      env: { SKEP_HOME: join(dir, 'home') },
    });
    t.after(() => server.close());
    const body = (await (await fetch(`${server.url}/registry/default/v0.1/servers`)).json()) as {
      servers: Array<{ name: string }>;
    };
    assert.deepEqual(
      body.servers.map((s) => s.name),
      ['io.github.example/filesystem', 'io.github.example/github'],
    );
  });
});
