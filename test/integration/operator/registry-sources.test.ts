// The MCPRegistry server (`skep operator registry-server`) over the sources of the reference's
// configuration beyond one file: several sources and registries, git over smart HTTP (a real
// `git http-backend`, with and without basic auth), OAuth bearer tokens (a real local issuer:
// discovery + JWKS on a port, tokens signed with jose), and a kubernetes source against the FAKE
// Kubernetes API server of fake-kube-api.ts (a real API server cannot run on these machines).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { createKubeClient } from '../../../src/control/operator/kube.js';
import {
  MAX_REGISTRY_SOURCE_BYTES,
  parseRegistryServerConfig,
} from '../../../src/control/operator/registry-config.js';
import { startRegistryServer } from '../../../src/control/operator/registry-server.js';
import { RegistrySync } from '../../../src/control/operator/registry-sync.js';
import { createLineLogger } from '../../../src/shared/index.js';
import { waitFor } from '../../helpers/wait.js';
import { startGitHttp, tempDir } from '../skills/fixtures.js';
import { FakeKubeApi } from './fake-kube-api.js';

const server = (name: string, description = `${name} server`) => ({
  name,
  description,
  version: '1.0.0',
  packages: [
    {
      registryType: 'oci',
      identifier: `docker.io/mcp/${name.split('/')[1]}:1`,
      transport: { type: 'stdio' },
    },
  ],
});
const registryDoc = (...servers: unknown[]) => ({
  version: '1.0.0',
  meta: { last_updated: '2025-09-08T12:00:00Z' },
  data: { servers },
});

async function start(
  t: TestContext,
  dir: string,
  yaml: string,
  extra: { kube?: FakeKubeApi; namespace?: string } = {},
) {
  writeFileSync(join(dir, 'config.yaml'), yaml);
  const running = await startRegistryServer({
    configFile: join(dir, 'config.yaml'),
    host: '127.0.0.1',
    port: 0,
    env: { SKEP_HOME: join(dir, 'home'), SKEP_RUNNER_LOG_LEVEL: 'silent' },
    ...(extra.kube === undefined ? {} : { kube: createKubeClient(extra.kube.kubeConfig()) }),
    ...(extra.namespace === undefined ? {} : { namespace: extra.namespace }),
  });
  t.after(() => running.close());
  return running;
}

async function names(url: string, init?: RequestInit): Promise<string[]> {
  const res = await fetch(url, init);
  assert.equal(res.status, 200, `${url}: ${res.status}`);
  return ((await res.json()) as { servers: Array<{ name: string }> }).servers.map((s) => s.name);
}

describe('operator registry-server sources', { timeout: 120_000 }, () => {
  it('serves each registry at its own name, the union of its sources (first source wins a clash)', async (t) => {
    const dir = tempDir(t, 'skep-registry-multi-');
    writeFileSync(
      join(dir, 'a.json'),
      JSON.stringify(registryDoc(server('io.example/one', 'from a'), server('io.example/shared', 'from a'))),
    );
    writeFileSync(
      join(dir, 'b.json'),
      JSON.stringify(registryDoc(server('io.example/two', 'from b'), server('io.example/shared', 'from b'))),
    );
    const running = await start(
      t,
      dir,
      [
        'sources:',
        `  - {name: a, file: {path: ${join(dir, 'a.json')}}}`,
        `  - {name: b, file: {path: ${join(dir, 'b.json')}}}`,
        'registries:',
        '  - {name: all, sources: [a, b]}',
        '  - {name: only-b, sources: [b]}',
        'auth: {mode: anonymous}',
      ].join('\n'),
    );
    assert.deepEqual(await names(`${running.url}/registry/all/v0.1/servers`), [
      'io.example/one',
      'io.example/shared',
      'io.example/two',
    ]);
    const shared = await fetch(
      `${running.url}/registry/all/v0.1/servers/${encodeURIComponent('io.example/shared')}/versions/latest`,
    );
    assert.equal(((await shared.json()) as { description: string }).description, 'from a');
    assert.deepEqual(await names(`${running.url}/registry/only-b/v0.1/servers`), [
      'io.example/shared',
      'io.example/two',
    ]);
    const native = await fetch(`${running.url}/api/v1beta/registry/only-b/servers`);
    assert.equal(native.status, 200);
    const list = (await (await fetch(`${running.url}/api/v1beta/registry`)).json()) as {
      registries: Array<{ name: string; server_count: number }>;
    };
    assert.deepEqual(
      list.registries.map((r) => [r.name, r.server_count]),
      [
        ['all', 3],
        ['only-b', 2],
      ],
    );
    const missing = await fetch(`${running.url}/registry/nope/v0.1/servers`);
    assert.equal(missing.status, 404);
    assert.equal(((await missing.json()) as { code: string }).code, 'registry_not_found');

    // A change of a source file reaches the union.
    writeFileSync(join(dir, 'b.json'), JSON.stringify(registryDoc(server('io.example/three'))));
    await waitFor(
      'the changed source in the union',
      async () => (await names(`${running.url}/registry/all/v0.1/servers`)).includes('io.example/three'),
      20_000,
    );
  });

  for (const withAuth of [false, true]) {
    it(`a git source over smart HTTP${withAuth ? ' with basic auth (auth.passwordFile)' : ''}`, async (t) => {
      const dir = tempDir(t, 'skep-registry-git-');
      const work = join(dir, 'work');
      mkdirSync(work);
      const git = (...args: string[]) =>
        execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], { cwd: work });
      git('init', '-q', '-b', 'main');
      mkdirSync(join(work, 'reg'));
      writeFileSync(
        join(work, 'reg', 'registry.json'),
        JSON.stringify(registryDoc(server('io.example/from-git'))),
      );
      git('add', '.');
      git('commit', '-q', '-m', 'registry');
      git('clone', '-q', '--bare', work, join(dir, 'repos', 'r.git'));
      const backend = await startGitHttp(t, join(dir, 'repos'));
      let port = backend.port;
      const password = 'ghp_not-a-real-token-1234';
      const seen: Array<string | undefined> = [];
      if (withAuth) {
        // RFC 7617 basic auth in front of the backend, as a git host asks for a token.
        const expected = `Basic ${Buffer.from(`git:${password}`).toString('base64')}`;
        const gate = createServer((req, res) => {
          seen.push(req.headers.authorization);
          if (req.headers.authorization !== expected) {
            res.writeHead(401, { 'www-authenticate': 'Basic realm="git"' }).end();
            return;
          }
          const upstream = httpRequest(
            {
              host: '127.0.0.1',
              port: backend.port,
              path: req.url,
              method: req.method,
              headers: req.headers,
            },
            (up) => {
              res.writeHead(up.statusCode ?? 502, up.headers);
              up.pipe(res);
            },
          );
          req.pipe(upstream);
        });
        await new Promise<void>((resolve) => gate.listen(0, '127.0.0.1', resolve));
        t.after(() => new Promise<void>((resolve) => gate.close(() => resolve())));
        port = (gate.address() as AddressInfo).port;
        writeFileSync(join(dir, 'token'), `${password}\n`);
      }
      const running = await start(
        t,
        dir,
        [
          'sources:',
          '  - name: repo',
          '    git:',
          `      repository: http://127.0.0.1:${port}/r.git`,
          '      branch: main',
          '      path: reg/registry.json',
          ...(withAuth
            ? ['      auth:', '        username: git', `        passwordFile: ${join(dir, 'token')}`]
            : []),
          'registries:',
          '  - {name: default, sources: [repo]}',
          'auth: {mode: anonymous}',
        ].join('\n'),
      );
      assert.deepEqual(await names(`${running.url}/registry/default/v0.1/servers`), ['io.example/from-git']);
      if (withAuth) {
        assert.equal(seen[0], undefined, 'the first request goes without credentials');
        assert.ok(seen.some((h) => h?.startsWith('Basic ')));
      }
    });
  }

  it('file.url (fetched over HTTP from loopback, redirects not followed) and file.data (inline) in one union', async (t) => {
    const dir = tempDir(t, 'skep-registry-url-');
    const asked: string[] = [];
    const upstream = createServer((req, res) => {
      asked.push(req.url ?? '');
      if (req.url === '/moved') {
        res.writeHead(302, { location: '/target.json' }).end();
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(registryDoc(server('io.example/from-url'))));
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    t.after(() => upstream.close());
    const base = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
    const inline = JSON.stringify(registryDoc(server('io.example/inline')));
    const running = await start(
      t,
      dir,
      [
        'sources:',
        `  - {name: u, file: {url: "${base}/registry.json", timeout: 5s}}`,
        `  - {name: d, file: {data: ${JSON.stringify(inline)}}}`,
        `  - {name: moved, file: {url: "${base}/moved"}}`,
        'registries:',
        '  - {name: default, sources: [u, d]}',
        '  - {name: moved, sources: [moved]}',
        'auth: {mode: anonymous}',
      ].join('\n'),
    );
    assert.deepEqual(await names(`${running.url}/registry/default/v0.1/servers`), [
      'io.example/from-url',
      'io.example/inline',
    ]);
    // A redirect is not followed: the source has no copy, so its registry lists nothing.
    assert.deepEqual(await names(`${running.url}/registry/moved/v0.1/servers`), []);
    assert.ok(asked.includes('/registry.json') && asked.includes('/moved'), asked.join(' '));
    assert.ok(!asked.includes('/target.json'), 'the redirect was not followed');
  });

  it('file.timeout: a url source that stalls (before its headers, or mid-body) is abandoned after the timeout, named in the message', async (t) => {
    const dir = tempDir(t, 'skep-registry-url-timeout-');
    const asked: string[] = [];
    // Accepts every request and never finishes one: /silent sends nothing, /partial its headers and
    // half a document.
    const stalling = createServer((req, res) => {
      asked.push(req.url ?? '');
      if (req.url === '/partial') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('{"version": "1.0.0", "data": {"servers": [');
      }
    });
    await new Promise<void>((resolve) => stalling.listen(0, '127.0.0.1', resolve));
    t.after(() => new Promise<void>((resolve) => stalling.close(() => resolve())));
    t.after(() => stalling.closeAllConnections());
    const base = `http://127.0.0.1:${(stalling.address() as AddressInfo).port}`;
    const { config, problems } = parseRegistryServerConfig({
      sources: [
        { name: 'silent', file: { url: `${base}/silent`, timeout: '1500ms' } },
        { name: 'partial', file: { url: `${base}/partial`, timeout: '1500ms' } },
      ],
      registries: [{ name: 'default', sources: ['silent', 'partial'] }],
      auth: { mode: 'anonymous' },
    });
    assert.deepEqual(problems, []);
    const warnings: Array<{ source: string; err: string }> = [];
    const logger = createLineLogger({
      level: 'warn',
      write: (line) => warnings.push(JSON.parse(line) as { source: string; err: string }),
    });
    const sync = new RegistrySync(config?.registries ?? [], {
      home: dir,
      logger,
      kube: () => assert.fail('no kubernetes source'),
      namespace: () => 'default',
    });
    t.after(() => sync.close());
    const started = performance.now();
    await sync.start(); // the first read of every source, done when both were abandoned
    const took = performance.now() - started;
    assert.deepEqual(asked.sort(), ['/partial', '/silent'], 'both requests reached the server');
    assert.ok(took >= 1400, `abandoned only after file.timeout (took ${Math.round(took)} ms)`);
    assert.ok(took < 15_000, `abandoned at file.timeout, not the 30 s default (took ${Math.round(took)} ms)`);
    assert.deepEqual(warnings.map((w) => [w.source, w.err]).sort(), [
      ['partial', `GET ${base}/partial: no complete answer within 1500 ms (file.timeout)`],
      ['silent', `GET ${base}/silent: no complete answer within 1500 ms (file.timeout)`],
    ]);
    // The registry of the two sources is served empty meanwhile.
    assert.deepEqual(JSON.parse(readFileSync(sync.pathOf('default'), 'utf8')).data, { servers: [] });
  });

  it('a git source at a tag and at a commit (not the branch head)', async (t) => {
    const dir = tempDir(t, 'skep-registry-git-refs-');
    const work = join(dir, 'work');
    mkdirSync(work);
    const git = (...args: string[]) =>
      execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], { cwd: work })
        .toString()
        .trim();
    git('init', '-q', '-b', 'main');
    const commitWith = (name: string) => {
      writeFileSync(join(work, 'registry.json'), JSON.stringify(registryDoc(server(name))));
      git('add', '.');
      git('commit', '-q', '-m', name);
      return git('rev-parse', 'HEAD');
    };
    const first = commitWith('io.example/first');
    commitWith('io.example/tagged');
    git('tag', '-a', 'v1', '-m', 'v1'); // an annotated tag: a tag object pointing at the commit
    commitWith('io.example/head');
    git('clone', '-q', '--bare', work, join(dir, 'repos', 'r.git'));
    const backend = await startGitHttp(t, join(dir, 'repos'));
    const repo = `http://127.0.0.1:${backend.port}/r.git`;
    const running = await start(
      t,
      dir,
      [
        'sources:',
        `  - {name: at-tag, git: {repository: "${repo}", tag: v1}}`,
        `  - {name: at-commit, git: {repository: "${repo}", commit: ${first}}}`,
        'registries:',
        '  - {name: tag, sources: [at-tag]}',
        '  - {name: commit, sources: [at-commit]}',
        'auth: {mode: anonymous}',
      ].join('\n'),
    );
    assert.deepEqual(await names(`${running.url}/registry/tag/v0.1/servers`), ['io.example/tagged']);
    assert.deepEqual(await names(`${running.url}/registry/commit/v0.1/servers`), ['io.example/first']);
  });

  it('an api source in a union (another registry server as the upstream API)', async (t) => {
    const upstreamDir = tempDir(t, 'skep-registry-upstream-');
    writeFileSync(
      join(upstreamDir, 'registry.json'),
      JSON.stringify(registryDoc(server('io.example/upstream'))),
    );
    const upstream = await start(
      t,
      upstreamDir,
      `sources: [{name: f, file: {path: ${join(upstreamDir, 'registry.json')}}}]\nregistries: [{name: default, sources: [f]}]\nauth: {mode: anonymous}\n`,
    );
    const dir = tempDir(t, 'skep-registry-api-union-');
    writeFileSync(join(dir, 'local.json'), JSON.stringify(registryDoc(server('io.example/local'))));
    const running = await start(
      t,
      dir,
      [
        'sources:',
        `  - {name: up, api: {endpoint: "${upstream.url}/registry/default"}}`,
        `  - {name: local, file: {path: ${join(dir, 'local.json')}}}`,
        'registries:',
        '  - {name: default, sources: [local, up]}',
        'auth: {mode: anonymous}',
      ].join('\n'),
    );
    assert.deepEqual(await names(`${running.url}/registry/default/v0.1/servers`), [
      'io.example/local',
      'io.example/upstream',
    ]);
  });

  it('a git source the server refuses (wrong password) serves nothing and logs no secret', async (t) => {
    const dir = tempDir(t, 'skep-registry-git-bad-');
    const gate = createServer((_req, res) =>
      res.writeHead(401, { 'www-authenticate': 'Basic realm="git"' }).end(),
    );
    await new Promise<void>((resolve) => gate.listen(0, '127.0.0.1', resolve));
    t.after(() => new Promise<void>((resolve) => gate.close(() => resolve())));
    writeFileSync(join(dir, 'token'), 'sekret-value-9876');
    const { readGitSource } = await import('../../../src/control/operator/registry-git.js');
    await assert.rejects(
      readGitSource({
        repository: `http://127.0.0.1:${(gate.address() as AddressInfo).port}/r.git`,
        ref: { branch: 'main' },
        path: 'registry.json',
        auth: { username: 'git', passwordFile: join(dir, 'token') },
        workDir: dir,
      }),
      (err: Error) =>
        /git source http:\/\/127\.0\.0\.1:\d+\/r\.git/.test(err.message) && !err.message.includes('sekret'),
    );
  });

  it('a git source is held to 32 MiB: a larger pack is cut off, a pack whose file inflates past it is refused', async (t) => {
    const dir = tempDir(t, 'skep-registry-git-large-');
    const work = join(dir, 'work');
    mkdirSync(work);
    const git = (...args: string[]) =>
      execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], { cwd: work });
    const limit = MAX_REGISTRY_SOURCE_BYTES;
    const small = JSON.stringify(registryDoc(server('io.example/small')));
    const commitOn = (branch: string, files: Record<string, string | Buffer>) => {
      git('checkout', '-q', '--orphan', branch);
      git('rm', '-rfq', '--ignore-unmatch', '.');
      for (const [name, content] of Object.entries(files)) writeFileSync(join(work, name), content);
      git('add', '.');
      git('commit', '-q', '-m', branch);
    };
    git('init', '-q', '-b', 'main');
    commitOn('main', { 'registry.json': small });
    // Random bytes do not compress: the pack itself is past the limit.
    commitOn('big-pack', { 'registry.json': small, 'noise.bin': randomBytes(limit + 1024) });
    // Spaces compress a thousandfold: a small pack whose registry file inflates past the limit,
    // refused before anything inflates it.
    commitOn('big-file', { 'registry.json': small + ' '.repeat(limit) });
    git('clone', '-q', '--bare', '--no-local', work, join(dir, 'repos', 'r.git'));
    const backend = await startGitHttp(t, join(dir, 'repos'));
    const repository = `http://127.0.0.1:${backend.port}/r.git`;
    const { readGitSource } = await import('../../../src/control/operator/registry-git.js');
    const read = (branch: string) =>
      readGitSource({ repository, ref: { branch }, path: 'registry.json', workDir: dir });

    assert.equal(await read('main'), small, 'a repository within the limit is read');
    const limitText = `more than ${limit} bytes (32 MiB, the limit of a git source)`;
    await assert.rejects(read('big-pack'), (err: Error) => {
      assert.equal(
        err.message,
        `git source ${repository} (branch big-pack, registry.json): the server sent ${limitText}`,
      );
      return true;
    });
    await assert.rejects(read('big-file'), (err: Error) => {
      assert.equal(
        err.message,
        `git source ${repository} (branch big-file, registry.json): the pack holds an object of ${small.length + limit} bytes, ${limitText}`,
      );
      return true;
    });
  });

  it('RFC 6750 / RFC 9728: auth.mode oauth takes bearer JWTs of the provider, 401 with a challenge otherwise', async (t) => {
    const dir = tempDir(t, 'skep-registry-oauth-');
    const { privateKey, publicKey } = await generateKeyPair('RS256');
    const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
    const idp = createServer((req, res) => {
      const issuer = `http://127.0.0.1:${(idp.address() as AddressInfo).port}`;
      const body =
        req.url === '/.well-known/openid-configuration'
          ? { issuer, jwks_uri: `${issuer}/jwks` }
          : req.url === '/jwks'
            ? { keys: [jwk] }
            : undefined;
      res.writeHead(body === undefined ? 404 : 200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body ?? {}));
    });
    await new Promise<void>((resolve) => idp.listen(0, '127.0.0.1', resolve));
    t.after(() => new Promise<void>((resolve) => idp.close(() => resolve())));
    const issuer = `http://127.0.0.1:${(idp.address() as AddressInfo).port}`;
    const token = (aud: string) =>
      new SignJWT({ sub: 'alice' })
        .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
        .setIssuer(issuer)
        .setAudience(aud)
        .setIssuedAt()
        .setExpirationTime('5m')
        .sign(privateKey);
    writeFileSync(join(dir, 'registry.json'), JSON.stringify(registryDoc(server('io.example/secure'))));
    const running = await start(
      t,
      dir,
      [
        'sources:',
        `  - {name: production, file: {path: ${join(dir, 'registry.json')}}}`,
        'registries:',
        '  - {name: default, sources: [production]}',
        'auth:',
        '  mode: oauth',
        '  oauth:',
        '    resourceUrl: https://registry.example.com',
        '    realm: mcp-registry',
        '    providers:',
        `      - {name: local, issuerUrl: "${issuer}", audience: mcp-registry}`,
      ].join('\n'),
    );
    const url = `${running.url}/registry/default/v0.1/servers`;
    const none = await fetch(url);
    assert.equal(none.status, 401);
    const challenge = none.headers.get('www-authenticate') ?? '';
    assert.match(challenge, /^Bearer realm="mcp-registry"/);
    assert.match(
      challenge,
      /resource_metadata="https:\/\/registry\.example\.com\/\.well-known\/oauth-protected-resource"/,
    );
    assert.doesNotMatch(challenge, /error=/, 'RFC 6750 §3.1: no error code without credentials');
    const wrongAudience = await fetch(url, { headers: { authorization: `Bearer ${await token('other')}` } });
    assert.equal(wrongAudience.status, 401);
    assert.match(wrongAudience.headers.get('www-authenticate') ?? '', /error="invalid_token"/);
    assert.deepEqual(
      await names(url, { headers: { authorization: `Bearer ${await token('mcp-registry')}` } }),
      ['io.example/secure'],
    );
    const metadata = await fetch(`${running.url}/.well-known/oauth-protected-resource`);
    assert.equal(metadata.status, 200);
    assert.deepEqual(await metadata.json(), {
      resource: 'https://registry.example.com',
      authorization_servers: [issuer],
      scopes_supported: ['mcp-registry:read', 'mcp-registry:write'],
      bearer_methods_supported: ['header'],
    });
    assert.equal((await fetch(`${running.url}/health`)).status, 200);
  });

  it('RFC 7662: with introspectionUrl an opaque token is accepted when active, the client authenticated by clientSecretFile', async (t) => {
    const dir = tempDir(t, 'skep-registry-introspect-');
    const secret = 'introspection-secret-5678';
    writeFileSync(join(dir, 'client-secret'), `${secret}\n`);
    const calls: string[] = [];
    const idp = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        const form = new URLSearchParams(body);
        const basic = req.headers.authorization?.startsWith('Basic ')
          ? Buffer.from(req.headers.authorization.slice(6), 'base64').toString()
          : undefined;
        const authenticated =
          basic === `registry:${secret}` ||
          (form.get('client_id') === 'registry' && form.get('client_secret') === secret);
        calls.push(`${req.url} ${authenticated}`);
        const issuer = `http://127.0.0.1:${(idp.address() as AddressInfo).port}`;
        const active = authenticated && form.get('token') === 'opaque-good';
        res.writeHead(authenticated ? 200 : 401, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify(
            active ? { active: true, iss: issuer, aud: 'mcp-registry', sub: 'bob' } : { active: false },
          ),
        );
      });
    });
    await new Promise<void>((resolve) => idp.listen(0, '127.0.0.1', resolve));
    t.after(() => new Promise<void>((resolve) => idp.close(() => resolve())));
    const issuer = `http://127.0.0.1:${(idp.address() as AddressInfo).port}`;
    writeFileSync(join(dir, 'registry.json'), JSON.stringify(registryDoc(server('io.example/opaque'))));
    const running = await start(
      t,
      dir,
      [
        'sources:',
        `  - {name: f, file: {path: ${join(dir, 'registry.json')}}}`,
        'registries:',
        '  - {name: default, sources: [f]}',
        'auth:',
        '  mode: oauth',
        '  oauth:',
        '    providers:',
        `      - {name: idp, issuerUrl: "${issuer}", audience: mcp-registry, introspectionUrl: "${issuer}/introspect", clientId: registry, clientSecretFile: ${join(dir, 'client-secret')}}`,
      ].join('\n'),
    );
    const url = `${running.url}/registry/default/v0.1/servers`;
    assert.deepEqual(await names(url, { headers: { authorization: 'Bearer opaque-good' } }), [
      'io.example/opaque',
    ]);
    const bad = await fetch(url, { headers: { authorization: 'Bearer opaque-revoked' } });
    assert.equal(bad.status, 401);
    assert.ok(calls.length >= 2 && calls.every((c) => c === '/introspect true'), calls.join('\n'));
  });

  it('a kubernetes source serves the opted-in MCPServer, VirtualMCPServer and MCPRemoteProxy objects (fake API server)', async (t) => {
    const dir = tempDir(t, 'skep-registry-kube-');
    const kube = new FakeKubeApi();
    await kube.start();
    t.after(() => kube.close());
    const exported = (url: string, extra: Record<string, string> = {}) => ({
      'skep.dev/registry-export': 'true',
      'skep.dev/registry-description': 'exported',
      'skep.dev/registry-url': url,
      ...extra,
    });
    kube.create('skep.dev/v1beta1/mcpservers', {
      apiVersion: 'skep.dev/v1beta1',
      kind: 'MCPServer',
      metadata: { name: 'fetch', namespace: 'team-a', annotations: exported('http://fetch.team-a:8080/mcp') },
      spec: { image: 'ghcr.io/example/fetch:1.2.3', transport: 'stdio' },
    });
    kube.create('skep.dev/v1beta1/mcpservers', {
      apiVersion: 'skep.dev/v1beta1',
      kind: 'MCPServer',
      metadata: {
        name: 'hidden',
        namespace: 'team-a',
        annotations: { 'skep.dev/registry-description': 'x' },
      },
      spec: { image: 'ghcr.io/example/hidden:1' },
    });
    kube.create('skep.dev/v1beta1/mcpremoteproxies', {
      apiVersion: 'skep.dev/v1beta1',
      kind: 'MCPRemoteProxy',
      metadata: {
        name: 'remote',
        namespace: 'team-a',
        annotations: {
          'toolhive.stacklok.dev/registry-export': 'true',
          'toolhive.stacklok.dev/registry-description': 'a proxy',
          'toolhive.stacklok.dev/registry-url': 'http://remote.team-a:8080/mcp',
        },
      },
      spec: { remoteUrl: 'https://mcp.example.com' },
    });
    kube.create('skep.dev/v1beta1/virtualmcpservers', {
      apiVersion: 'skep.dev/v1beta1',
      kind: 'VirtualMCPServer',
      metadata: { name: 'other-ns', namespace: 'team-b', annotations: exported('http://v.team-b/mcp') },
      spec: {},
    });
    const running = await start(
      t,
      dir,
      'sources:\n  - {name: k8s, kubernetes: {}}\nregistries:\n  - {name: default, sources: [k8s]}\nauth: {mode: anonymous}\n',
      { kube, namespace: 'team-a' },
    );
    const url = `${running.url}/registry/default/v0.1/servers`;
    assert.deepEqual(await names(url), ['com.toolhive.k8s.team-a/fetch', 'com.toolhive.k8s.team-a/remote']);
    const fetchEntry = (await (
      await fetch(
        `${running.url}/registry/default/v0.1/servers/${encodeURIComponent('com.toolhive.k8s.team-a/fetch')}/versions/latest`,
      )
    ).json()) as {
      version: string;
      remotes: Array<{ url: string }>;
      packages: Array<{ identifier: string }>;
    };
    assert.equal(fetchEntry.version, '1.2.3');
    assert.equal(fetchEntry.remotes[0]?.url, 'http://fetch.team-a:8080/mcp');
    assert.equal(fetchEntry.packages[0]?.identifier, 'ghcr.io/example/fetch:1.2.3');
    assert.ok(
      kube.requests.some((r) => r.path.startsWith('/apis/skep.dev/v1beta1/namespaces/team-a/mcpservers')),
    );
    assert.ok(!kube.requests.some((r) => r.path.includes('/namespaces/team-b/')));

    // An object that opts in later shows up on a later read (every 10 s).
    kube.update('skep.dev/v1beta1/mcpservers', 'team-a', 'hidden', (o) => {
      o.metadata['annotations'] = exported('http://hidden.team-a/mcp');
    });
    await waitFor(
      'the object that opted in later',
      async () => (await names(url)).includes('com.toolhive.k8s.team-a/hidden'),
      30_000,
    );
  });

  it('a kubernetes source with no opted-in object serves an empty registry (the reference minimal example)', async (t) => {
    const dir = tempDir(t, 'skep-registry-kube-empty-');
    const kube = new FakeKubeApi();
    await kube.start();
    t.after(() => kube.close());
    const running = await start(
      t,
      dir,
      'sources:\n  - {name: k8s, kubernetes: {}}\nregistries:\n  - {name: default, sources: [k8s]}\ndatabase: {host: postgres}\nauth: {mode: anonymous}\n',
      { kube, namespace: 'toolhive-system' },
    );
    assert.deepEqual(await names(`${running.url}/registry/default/v0.1/servers`), []);
  });
});
