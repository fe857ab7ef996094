/**
 * The composition root wires the registry into the workload engine: `skep run <name>` and
 * create with `registry` + `server` take image, transport, args and env from the catalog.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createContext, registryResolver } from '../../../src/control/app/index.js';
import { tempHome } from '../../helpers/home.js';
import { removeAllWorkloads } from '../workloads/helpers.js';

test('registry resolver: an image server maps to image, transport and default env; secrets get no value', async (t) => {
  const home = tempHome(t);
  const ctx = createContext(home.config);
  t.after(() => ctx.close());
  const resolve = registryResolver(ctx.registry);
  const everything = await resolve('everything');
  assert.ok(everything);
  assert.equal(everything.image, 'npx://@modelcontextprotocol/server-everything');
  assert.equal(everything.transport, 'stdio');
  assert.equal(everything.url, undefined);
  const github = await resolve('io.github.github/github');
  assert.ok(github);
  assert.equal(
    github.env?.['GITHUB_PERSONAL_ACCESS_TOKEN'],
    undefined,
    'secret env vars are never defaulted',
  );
  assert.equal(await resolve('no-such-server-anywhere'), undefined);
});

test('registry resolver: a remote server maps to its URL', async (t) => {
  const home = tempHome(t);
  const ctx = createContext(home.config);
  t.after(() => ctx.close());
  const remote = await registryRegistryRemote(ctx);
  const spec = await registryResolver(ctx.registry)(remote.name);
  assert.ok(spec);
  assert.equal(spec.image, '');
  assert.equal(spec.url, remote.url);
});

test('create with registry + server for a remote entry stores remote_url and its transport', async (t) => {
  const home = tempHome(t);
  const ctx = createContext(home.config);
  t.after(async () => {
    await removeAllWorkloads(ctx);
    await ctx.close();
  });
  const remote = await registryRegistryRemote(ctx);
  const created = await ctx.workloads.create({
    name: 'from-registry',
    registry: 'default',
    server: remote.name,
  });
  const exported = ctx.workloads.exportConfig(created.name);
  assert.equal(exported.remote_url, remote.url);
  assert.equal(exported.registry_server_name, remote.name);
  assert.equal(exported.image, '');
});

async function registryRegistryRemote(
  ctx: ReturnType<typeof createContext>,
): Promise<{ name: string; url: string }> {
  const list = await ctx.registry.listNativeServers('default');
  const first = list.remote_servers.find((s) => s.name.includes('linear')) ?? list.remote_servers[0];
  assert.ok(first, 'the built-in catalog has remote servers');
  return { name: first.name, url: first.url };
}
