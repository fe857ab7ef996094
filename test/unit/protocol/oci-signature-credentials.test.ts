/**
 * Where the image check finds a registry login (containers-auth.json(5)): the files in their
 * order, the most specific key in a file, Docker's spellings, and a credential helper reported
 * rather than skipped in silence. The reader answers a Bearer challenge with the login (the
 * Docker Registry token authentication flow) and a Basic one with the login itself, and never
 * sends it over plain HTTP to another machine.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { authFiles, findRegistryCredentials } from '../../../src/protocol/oci-signature-credentials.js';
import { parseImageRef, registryReader } from '../../../src/protocol/oci-signature-registry.js';

function home(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'skep-auth-files-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function write(path: string, value: unknown): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, JSON.stringify(value));
}

const auth = (user: string, password: string) => ({
  auth: Buffer.from(`${user}:${password}`).toString('base64'),
});

test('containers-auth.json(5): the search order of the files', (t) => {
  const dir = home(t);
  const env = { HOME: dir, XDG_RUNTIME_DIR: join(dir, 'run') };
  assert.deepEqual(authFiles(env), [
    join(dir, 'run', 'containers', 'auth.json'),
    join(dir, '.config', 'containers', 'auth.json'),
    join(dir, '.docker', 'config.json'),
    join(dir, '.dockercfg'),
  ]);
  assert.equal(authFiles({ ...env, REGISTRY_AUTH_FILE: '/x/auth.json' })[0], '/x/auth.json');
  assert.equal(
    authFiles({ HOME: dir, XDG_CONFIG_HOME: join(dir, 'cfg'), DOCKER_CONFIG: join(dir, 'd') })[1],
    join(dir, 'cfg', 'containers', 'auth.json'),
  );
  assert.match(authFiles({ HOME: dir })[0] ?? '', /^\/run\/containers\/\d+\/auth\.json$/);
});

test('containers-auth.json(5): the first file with a login wins; in it, the most specific key', async (t) => {
  const dir = home(t);
  const env = { HOME: dir, XDG_RUNTIME_DIR: join(dir, 'run') };
  write(join(dir, 'run', 'containers', 'auth.json'), {
    auths: {
      'ghcr.io': auth('host', 'h'),
      'ghcr.io/acme': auth('namespace', 'n'),
      'ghcr.io/acme/app': auth('repository', 'r'),
    },
  });
  write(join(dir, '.docker', 'config.json'), {
    auths: { 'https://index.docker.io/v1/': { username: 'hub', password: 'p' } },
    credHelpers: { 'quay.io': 'secretservice' },
  });
  const found = async (registry: string, repository: string) =>
    (await findRegistryCredentials(registry, repository, env)).found;
  assert.deepEqual(await found('ghcr.io', 'acme/app'), {
    username: 'repository',
    password: 'r',
    source: join(dir, 'run', 'containers', 'auth.json'),
  });
  assert.equal((await found('ghcr.io', 'acme/other'))?.username, 'namespace');
  assert.equal((await found('ghcr.io', 'other/x'))?.username, 'host');
  // Docker Hub's legacy key, in the last file of the search.
  assert.deepEqual(await found('docker.io', 'library/node'), {
    username: 'hub',
    password: 'p',
    source: join(dir, '.docker', 'config.json'),
  });
  // Only a helper: not used, and said.
  const helper = await findRegistryCredentials('quay.io', 'acme/app', env);
  assert.equal(helper.found, undefined);
  assert.equal(helper.found === undefined ? helper.helper : undefined, 'secretservice');
  assert.equal((await findRegistryCredentials('example.com', 'a', env)).found, undefined);
});

/** A registry that asks for a Bearer token from `realm`, recording what each request carried. */
function tokenRegistry(realm: string) {
  const seen: { url: string; authorization: string | null }[] = [];
  const fetcher = (async (input: string | URL | Request, init?: RequestInit) => {
    const url = String(input);
    const authorization = new Headers(init?.headers).get('authorization');
    seen.push({ url, authorization });
    if (url.startsWith(realm)) {
      return authorization === `Basic ${Buffer.from('u:p').toString('base64')}`
        ? Response.json({ token: 'T' })
        : new Response('', { status: 401 });
    }
    if (authorization !== 'Bearer T')
      return new Response('', {
        status: 401,
        headers: { 'www-authenticate': `Bearer realm="${realm}",service="reg"` },
      });
    return new Response('{}', { status: 200 });
  }) as typeof fetch;
  return { seen, fetcher };
}

test('Docker Registry token authentication: the token is asked for with the login', async () => {
  const { seen, fetcher } = tokenRegistry('https://auth.example.com/token');
  const reader = registryReader(parseImageRef('registry.example.com/acme/app:1'), {
    fetch: fetcher,
    credentials: { username: 'u', password: 'p' },
  });
  const digest = await reader.resolveDigest('1');
  assert.match(digest, /^sha256:/);
  const token = seen.find((s) => s.url.startsWith('https://auth.example.com/token'));
  assert.ok(token !== undefined);
  assert.equal(new URL(token.url).searchParams.get('scope'), 'repository:acme/app:pull');
  assert.equal(new URL(token.url).searchParams.get('service'), 'reg');
  assert.equal(seen.at(-1)?.authorization, 'Bearer T');
});

test('a login never goes over plain HTTP to another machine', async () => {
  const { seen, fetcher } = tokenRegistry('http://auth.example.com/token');
  const reader = registryReader(parseImageRef('registry.example.com/acme/app:1'), {
    fetch: fetcher,
    credentials: { username: 'u', password: 'p' },
  });
  await assert.rejects(reader.resolveDigest('1'), /HTTP 401/);
  const token = seen.find((s) => s.url.startsWith('http://auth.example.com/'));
  assert.equal(token?.authorization, null, 'the token request went without the login');
});
