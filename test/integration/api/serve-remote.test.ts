/**
 * The API beyond loopback (`--host 0.0.0.0` must not open it to anyone): binding beyond loopback is
 * an explicit choice. Through the real CLI: a non-loopback `--host` without `--allow-remote` is
 * refused before anything binds; bad origins, TLS files and ports are clear errors without a stack
 * trace; with `--allow-remote` the token is still required, origins are exact, and with
 * `--tls-cert`/`--tls-key` a real HTTPS request (verified against the test's own CA) works and
 * `skep ui` pins the server's certificate.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { runCli, startServe } from '../../helpers/cli.js';
import { tempHome } from '../../helpers/home.js';
import { hasCommand, requireService } from '../../helpers/services.js';

const STACK_LINE = /\n\s+at /;

function assertRefused(args: string[], env: NodeJS.ProcessEnv, status: number, message: RegExp): string {
  const res = runCli(['serve', ...args], env);
  assert.equal(res.status, status, `skep serve ${args.join(' ')}: ${res.stderr}`);
  assert.match(res.stderr, message);
  assert.doesNotMatch(res.stderr, STACK_LINE, 'no stack trace');
  return res.stderr;
}

/** A self-signed certificate for localhost and 127.0.0.1 (and a second, unrelated key). */
function certificate(t: TestContext): { cert: string; key: string; otherKey: string } | undefined {
  if (!requireService(t, 'openssl', hasCommand('openssl'), 'apt-get install openssl')) return undefined;
  const dir = mkdtempSync(join(tmpdir(), 'skep-tls-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const cert = join(dir, 'cert.pem');
  const key = join(dir, 'key.pem');
  const otherKey = join(dir, 'other-key.pem');
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  const made = spawnSync(
    'openssl',
    [
      'req',
      '-x509',
      ...ec,
      ['-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=localhost'],
      ['-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1'],
    ].flat(),
    { encoding: 'utf8' },
  );
  assert.equal(made.status, 0, made.stderr);
  const other = spawnSync('openssl', ['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256'], {
    encoding: 'utf8',
  });
  assert.equal(other.status, 0, other.stderr);
  writeFileSync(otherKey, other.stdout, { mode: 0o600 });
  return { cert, key, otherKey };
}

function httpsCall(
  url: string,
  ca: string,
  headers: Record<string, string> = {},
  method = 'GET',
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(url, { method, headers, ca }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (d: string) => {
        body += d;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

test('--host beyond loopback without --allow-remote is refused before binding (exit 1, says why and what to add)', (t) => {
  const home = tempHome(t);
  for (const host of ['0.0.0.0', '::']) {
    const stderr = assertRefused(['--host', host, '--port', '0'], home.env, 1, /--allow-remote/);
    assert.match(stderr, /refusing to listen on every interface/);
    assert.match(stderr, /bind 127\.0\.0\.1/);
  }
  assertRefused(['--host', '192.0.2.10', '--port', '0'], home.env, 1, /refusing to listen on 192\.0\.2\.10/);
  assert.equal(existsSync(home.config.paths.discoveryFile), false, 'nothing was started');
});

test('bad listener settings are clear errors without a stack trace', (t) => {
  const home = tempHome(t);
  assertRefused(['--port', '99999'], home.env, 2, /--port <port>.*99999.*0 to 65535/);
  assertRefused(['--port', 'http'], home.env, 2, /0 to 65535/);
  const remote = ['--host', '0.0.0.0', '--port', '0', '--allow-remote'];
  assertRefused(
    [...remote, '--allowed-origin', 'ui.example.com'],
    home.env,
    1,
    /--allowed-origin: 'ui\.example\.com' is not an origin/,
  );
  assertRefused(
    [...remote, '--allowed-origin', 'https://ui.example.com/app'],
    home.env,
    1,
    /is not an origin; write scheme, host and optional port/,
  );
  assertRefused(
    [...remote, '--tls-cert', '/nonexistent/cert.pem', '--tls-key', '/nonexistent/key.pem'],
    home.env,
    1,
    /cannot read the TLS certificate \/nonexistent\/cert\.pem: no such file/,
  );
  assertRefused(
    [...remote, '--tls-cert', '/nonexistent/cert.pem'],
    home.env,
    1,
    /both a certificate and its key/,
  );
  assert.equal(existsSync(home.config.paths.discoveryFile), false);
});

test('--allow-remote without TLS: the token is still required, and a loud warning says it travels in clear text', async (t) => {
  const home = tempHome(t);
  const env = { ...home.env, SKEP_LOG_LEVEL: 'info' };
  const serve = await startServe(t, env, home.config.paths.discoveryFile, [
    '--host',
    '0.0.0.0',
    '--port',
    '0',
    '--allow-remote',
  ]);
  // A wildcard bind is announced with a loopback address local clients can use.
  assert.match(serve.url, /^http:\/\/127\.0\.0\.1:\d+$/);
  assert.equal((await fetch(`${serve.url}/api/v1beta/version`)).status, 401);
  assert.equal((await fetch(`${serve.url}/api/v1beta/version`, { headers: serve.auth })).status, 200);
  assert.equal(await serve.stop(), 0);
  assert.match(
    serve.stderr(),
    /"level":40.*WITHOUT TLS: the API token and every request travel in clear text/,
  );
});

test('--allow-remote with --tls-cert/--tls-key: a real HTTPS request with the token works; origins are exact; skep ui pins the certificate', async (t) => {
  const tls = certificate(t);
  if (tls === undefined) return;
  const home = tempHome(t);
  const base = ['--host', '0.0.0.0', '--port', '0', '--allow-remote'];
  assertRefused(
    [...base, '--tls-cert', tls.cert, '--tls-key', tls.otherKey],
    home.env,
    1,
    /is not the private key of the certificate/,
  );
  assertRefused(
    [...base, '--tls-cert', tls.key, '--tls-key', tls.key],
    home.env,
    1,
    /is not a PEM certificate/,
  );

  const env = { ...home.env, SKEP_LOG_LEVEL: 'info' };
  const serve = await startServe(t, env, home.config.paths.discoveryFile, [
    ...base,
    '--tls-cert',
    tls.cert,
    '--tls-key',
    tls.key,
    '--allowed-origin',
    'https://ui.example.com',
  ]);
  assert.match(serve.url, /^https:\/\/127\.0\.0\.1:\d+$/);
  const info = JSON.parse(readFileSync(home.config.paths.discoveryFile, 'utf8')) as {
    tls_cert_sha256?: string;
  };
  assert.match(info.tls_cert_sha256 ?? '', /^([0-9A-F]{2}:){31}[0-9A-F]{2}$/);
  const ca = readFileSync(tls.cert, 'utf8');

  assert.equal((await httpsCall(`${serve.url}/health`, ca)).status, 204);
  const without = await httpsCall(`${serve.url}/api/v1beta/groups`, ca);
  assert.equal(without.status, 401);
  const ok = await httpsCall(`${serve.url}/api/v1beta/groups`, ca, serve.auth);
  assert.equal(ok.status, 200);
  assert.equal((JSON.parse(ok.body) as { groups: { name: string }[] }).groups[0]?.name, 'default');
  // The configured origin passes; any other (including this server's http:// twin) is refused.
  const configured = await httpsCall(`${serve.url}/api/v1beta/groups`, ca, {
    ...serve.auth,
    origin: 'https://ui.example.com',
  });
  assert.equal(configured.status, 200);
  for (const origin of ['https://evil.example', `${serve.url.replace('https:', 'http:')}`]) {
    const refused = await httpsCall(`${serve.url}/api/v1beta/groups`, ca, { ...serve.auth, origin });
    assert.equal(refused.status, 403, origin);
  }
  // Plain HTTP on the TLS port gets nothing.
  await assert.rejects(
    fetch(`${serve.url.replace('https:', 'http:')}/api/v1beta/groups`, { headers: serve.auth }),
  );

  // skep ui: the certificate is pinned to the discovery file's fingerprint (no CA needed).
  const printed = runCli(['ui', '--print'], home.env);
  assert.equal(printed.status, 0, printed.stderr);
  const link = printed.stdout.trim();
  assert.match(link, /^https:\/\/127\.0\.0\.1:\d+\/auth\/login\?ticket=/);
  const login = await httpsCall(link, ca);
  assert.equal(login.status, 200, 'the login page, which forwards to the UI with its CSRF token');
  assert.match(String(login.headers['set-cookie']), /; Secure$/, 'the cookie is Secure under TLS');

  // Another certificate than the one announced: skep ui stops before sending the token.
  const file = home.config.paths.discoveryFile;
  const announced = readFileSync(file, 'utf8');
  writeFileSync(file, JSON.stringify({ ...JSON.parse(announced), tls_cert_sha256: `${'AB:'.repeat(31)}AB` }));
  const mismatch = runCli(['ui', '--print'], home.env);
  writeFileSync(file, announced);
  assert.equal(mismatch.status, 1);
  assert.match(
    mismatch.stderr,
    /presented another certificate than skep serve announced; not sending the token/,
  );

  assert.equal(await serve.stop(), 0);
  assert.doesNotMatch(serve.stderr(), /WITHOUT TLS/);
  assert.ok(!serve.stderr().includes(serve.token ?? '<none>'));
});
