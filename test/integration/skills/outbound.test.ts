/**
 * Skill sources under the outbound address policy (`src/shared/net`): an OCI
 * registry or git server on loopback is contacted only when the user listed it as a private
 * skill host, and a refused one receives no connection at all; git connects to the address
 * that was checked (curl's resolve table), not to what the name resolves to later.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import { type AddressInfo, createServer, type Server } from 'node:net';
import { dirname, join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { type Resolver, SkepError } from '../../../src/shared/index.js';
import { checkoutGitSkill, parseGitRef } from '../../../src/skills/git-source.js';
import { OciSession } from '../../../src/skills/oci-client.js';
import { parseOciRef } from '../../../src/skills/oci-ref.js';
import { testApp } from '../../helpers/api.js';
import { hasCommand, requireService } from '../../helpers/services.js';
import { startGitDaemon, startGitHttp, tempDir, writeSkill } from './fixtures.js';

// No private skill hosts in this file: the defaults are under test.
delete process.env['SKEP_SKILLS_PRIVATE_HOSTS'];
process.env['HOME'] = tempDir({ after: () => undefined } as never, 'skep-skills-home-');

interface Listener {
  port: number;
  connections(): number;
}

/** A loopback TCP listener that counts connections; `answer` makes it an HTTP server. */
async function listener(
  t: TestContext,
  answer?: (url: string) => { status: number; headers?: Record<string, string> },
): Promise<Listener> {
  let count = 0;
  let server: Server;
  if (answer === undefined) {
    server = createServer((socket) => socket.destroy());
  } else {
    const http = createHttpServer((req, res) => {
      const out = answer(req.url ?? '');
      res.writeHead(out.status, out.headers).end();
    });
    t.after(() => http.closeAllConnections());
    server = http;
  }
  server.on('connection', () => count++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { port: (server.address() as AddressInfo).port, connections: () => count };
}

test('skills content and install refuse an unlisted loopback OCI registry, which gets no connection', async (t) => {
  const registry = await listener(t);
  const p = registry.port;
  const { app } = await testApp(t);
  for (const host of [
    `127.0.0.1:${p}`,
    `localhost:${p}`,
    `0x7f.1:${p}`,
    `[::ffff:7f00:1]:${p}`,
    `[::1]:${p}`,
  ]) {
    const ref = `${host}/skills/x-skill:1.0.0`;
    const content = await app.inject({
      method: 'GET',
      url: `/api/v1beta/skills/content?ref=${encodeURIComponent(ref)}`,
    });
    assert.equal(content.statusCode, 403, `${ref}: ${content.body}`);
    assert.equal(content.json().code, 'forbidden');
    assert.match(content.json().message, /loopback address; list it in SKEP_SKILLS_PRIVATE_HOSTS/);
    const install = await app.inject({
      method: 'POST',
      url: '/api/v1beta/skills',
      payload: { name: ref, clients: ['claude-code'] },
    });
    assert.equal(install.statusCode, 403, `${ref}: ${install.body}`);
  }
  assert.equal(registry.connections(), 0, 'the registry received no connection');
});

test('a listed registry is reached; its token realm and redirects are held to the same policy', async (t) => {
  const realm = await listener(t);
  const registry = await listener(t, (url): { status: number; headers?: Record<string, string> } =>
    url.startsWith('/v2/skills/to-realm/')
      ? {
          status: 401,
          headers: { 'www-authenticate': `Bearer realm="http://127.0.0.1:${realm.port}/token"` },
        }
      : url.startsWith('/v2/skills/to-metadata/')
        ? { status: 401, headers: { 'www-authenticate': 'Bearer realm="http://169.254.169.254/token"' } }
        : url.startsWith('/v2/skills/moved/')
          ? { status: 307, headers: { location: `http://127.0.0.1:${realm.port}/elsewhere` } }
          : { status: 404 },
  );
  const session = (repo: string, privateHosts: string[]) =>
    new OciSession(parseOciRef(`127.0.0.1:${registry.port}/skills/${repo}:1.0.0`), false, { privateHosts });
  const code = async (promise: Promise<unknown>) => {
    try {
      await promise;
      return 'ok';
    } catch (err) {
      assert.ok(err instanceof SkepError, String(err));
      return err.code;
    }
  };
  // Listed by host:port or by host: reached (the stub answers 404 → not_found).
  assert.equal(
    await code(session('absent', [`127.0.0.1:${registry.port}`]).getManifest('1.0.0')),
    'not_found',
  );
  assert.equal(await code(session('absent', ['127.0.0.1']).getManifest('1.0.0')), 'not_found');
  const reached = registry.connections();
  assert.ok(reached > 0);
  // Another port of the same host is not the listed registry.
  assert.equal(await code(session('absent', [`127.0.0.1:${realm.port}`]).getManifest('1.0.0')), 'forbidden');
  assert.equal(registry.connections(), reached);
  // The registry names the token endpoint and may redirect: neither escapes the policy.
  const listed = [`127.0.0.1:${registry.port}`, '169.254.169.254'];
  assert.equal(await code(session('to-realm', listed).getManifest('1.0.0')), 'forbidden');
  assert.equal(await code(session('to-metadata', listed).getManifest('1.0.0')), 'forbidden');
  assert.equal(await code(session('moved', listed).getManifest('1.0.0')), 'forbidden');
  assert.equal(realm.connections(), 0, 'the unlisted realm/redirect target received no connection');
});

test('a git skill on an unlisted loopback host is refused before git runs', async (t) => {
  const server = await listener(t);
  const { app } = await testApp(t);
  for (const ref of [
    `git://127.0.0.1:${server.port}/owner/repo#skills/x`,
    `git://localhost:${server.port}/owner/repo`,
    `git://2130706433:${server.port}/owner/repo`,
  ]) {
    const res = await app.inject({
      method: 'GET',
      url: `/api/v1beta/skills/content?ref=${encodeURIComponent(ref)}`,
    });
    assert.equal(res.statusCode, 403, `${ref}: ${res.body}`);
    assert.match(res.json().message, /list it in SKEP_SKILLS_PRIVATE_HOSTS/);
  }
  const metadata = await app.inject({
    method: 'GET',
    url: `/api/v1beta/skills/content?ref=${encodeURIComponent('git://169.254.169.254/owner/repo')}`,
  });
  assert.equal(metadata.statusCode, 403);
  assert.match(metadata.json().message, /never contacted/);
  assert.equal(server.connections(), 0);
});

test(
  'git over http connects to the checked address (curl resolve table), once per name',
  { timeout: 120_000 },
  async (t) => {
    if (!requireService(t, 'git', hasCommand('git'), 'apt-get install git')) return;
    const daemon = await startGitDaemon(t);
    writeSkill(join(daemon.repo, 'skills'), 'pinned-skill');
    const commit = daemon.commit('pinned skill');
    const http = await startGitHttp(t, dirname(dirname(daemon.repo)));
    let calls = 0;
    // `git.example.test` exists only in this resolver: git can reach it only through the pin.
    const resolve: Resolver = async (name) => {
      calls++;
      if (name === 'git.example.test') return [{ address: '127.0.0.1', family: 4 }];
      throw Object.assign(new Error(`no such host ${name}`), { code: 'ENOTFOUND' });
    };
    const ref = parseGitRef(`git://git.example.test:${http.port}/owner/repo#skills/pinned-skill`);

    // Not listed: refused after one resolution, and git never connects.
    await assert.rejects(
      checkoutGitSkill(ref, { privateHosts: [], scheme: 'http', timeoutMs: 60_000, resolve }),
      (err: unknown) => err instanceof SkepError && err.code === 'forbidden',
    );
    assert.equal(http.connections(), 0);

    calls = 0;
    const checkout = await checkoutGitSkill(ref, {
      privateHosts: [`git.example.test:${http.port}`],
      scheme: 'http',
      timeoutMs: 60_000,
      resolve,
    });
    t.after(() => checkout.dispose());
    assert.equal(checkout.commit, commit);
    assert.ok(existsSync(join(checkout.dir, 'SKILL.md')));
    assert.equal(calls, 1, 'resolved once; git used the checked address');
    assert.ok(http.connections() > 0);
  },
);
