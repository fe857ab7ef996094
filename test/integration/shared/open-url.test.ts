/**
 * `openInBrowser` with a recording opener (a real process): what reaches the opener's
 * command line, the page only the user can read, its lifetime, and the URLs it refuses.
 */
import assert from 'node:assert/strict';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { authorizationEndpointRefusal, openInBrowser } from '../../../src/shared/index.js';
import { recordingOpener } from '../../helpers/opener.js';
import { waitFor } from '../../helpers/wait.js';

function folder(t: TestContext): string {
  const base = mkdtempSync(join(tmpdir(), 'skep-open-url-'));
  t.after(() => rmSync(base, { recursive: true, force: true }));
  return join(base, 'state', 'open');
}

test('the opener gets one file:// path; the 0600 page forwards to the URL, escaped', async (t) => {
  const dir = folder(t);
  const opener = recordingOpener(t);
  const url = 'http://127.0.0.1:8080/auth/login?ticket=SECRET-TICKET&x="><script>alert(1)</script>';
  const result = await openInBrowser(url, { dir, env: { ...opener.env }, platform: 'linux' });
  assert.equal(result.opened, true);
  const call = await opener.waitForCall();
  assert.deepEqual(call.argv, [`file://${result.file}`]);
  assert.equal(fileURLToPath(call.argv[0] ?? ''), result.file);
  assert.ok(!call.argv.join(' ').includes('SECRET-TICKET'));
  assert.equal(call.mode, 0o600);
  assert.equal(statSync(dir).mode & 0o777, 0o700);
  assert.doesNotMatch(call.page ?? '', /<script/);
  assert.equal(opener.forwardsTo(call), new URL(url).href);
});

test('only http(s) URLs are opened: file:, javascript: and credentials in the URL are refused, nothing is written or run', async (t) => {
  const dir = folder(t);
  const opener = recordingOpener(t);
  for (const url of [
    'file:///usr/bin/xcalc',
    'javascript:alert(1)',
    'smb://host/share',
    'http://user:pw@example.com/',
    'not a url',
  ])
    await assert.rejects(openInBrowser(url, { dir, env: { ...opener.env } }), { code: 'bad_request' }, url);
  assert.equal(existsSync(dir), false);
  assert.deepEqual(opener.calls(), []);
});

test('without a display (Linux) nothing is written or opened; a missing opener program is reported and its page removed', async (t) => {
  const dir = folder(t);
  const headless = await openInBrowser('https://example.com/', { dir, env: {}, platform: 'linux' });
  assert.deepEqual(headless, {
    opened: false,
    reason: 'no display (DISPLAY and WAYLAND_DISPLAY are unset)',
    headless: true,
  });
  assert.equal(existsSync(dir), false);
  const missing = await openInBrowser('https://example.com/', {
    dir,
    env: { SKEP_BROWSER: join(dir, 'no-such-opener') },
  });
  assert.equal(missing.opened, false);
  assert.match(missing.reason ?? '', /ENOENT/);
  assert.deepEqual(readdirSync(dir), []);
});

test('a page is removed after its lifetime; the next open sweeps pages left by an exited process; a loose folder is closed to others', async (t) => {
  const dir = folder(t);
  const opener = recordingOpener(t);
  mkdirSync(dir, { recursive: true });
  chmodSync(dir, 0o755);
  const left = join(dir, `open-${'a'.repeat(32)}.html`);
  writeFileSync(left, 'old', { mode: 0o600 });
  utimesSync(left, new Date(Date.now() - 120_000), new Date(Date.now() - 120_000));
  const result = await openInBrowser('https://example.com/', { dir, env: { ...opener.env }, ttlMs: 300 });
  assert.equal(existsSync(left), false, 'swept');
  assert.equal(statSync(dir).mode & 0o777, 0o700);
  assert.ok(result.file !== undefined && existsSync(result.file));
  await opener.waitForCall();
  const file = result.file;
  await waitFor('the page file to be removed after ttlMs', () => !existsSync(file), 10_000);
});

test('RFC 6749 §3.1: an authorization endpoint is https, or http on loopback, or http where the user opted in', () => {
  assert.equal(authorizationEndpointRefusal('https://idp.example.com/authorize'), undefined);
  for (const loopback of ['http://127.0.0.1:9000/a', 'http://localhost/a', 'http://[::1]:1/a'])
    assert.equal(authorizationEndpointRefusal(loopback), undefined, loopback);
  assert.match(authorizationEndpointRefusal('http://idp.example.com/a') ?? '', /not loopback/);
  assert.equal(authorizationEndpointRefusal('http://idp.example.com/a', true), undefined);
  for (const bad of ['file:///usr/bin/xcalc', 'javascript:alert(1)', 'data:text/html,x', 'ms-settings:'])
    assert.match(authorizationEndpointRefusal(bad, true) ?? '', /https is required/, bad);
  assert.match(authorizationEndpointRefusal('/relative') ?? '', /not an absolute URL/);
});
