/**
 * The web UI's routes (src/control/api/ui.ts) on the real app, through inject: who gets the page
 * (a live session from the server's own pages, or the token) and who gets the login hint;
 * the headers (CSP, caching); the assets. It builds the UI with esbuild first, so it is a build
 * test; the playground's pass-through, which needs no built UI, is tested in
 * test/unit/api/ui.test.ts.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { BrowserSessions } from '../../src/control/api/browser-sessions.js';
import { findUiDir, UI_PATHS } from '../../src/control/api/ui.js';
import { testApp } from '../helpers/api.js';
import { ensureUiBuilt } from '../helpers/ui.js';

const NO_TOKEN = { authorization: '' };
const HTML = { accept: 'text/html,application/xhtml+xml' };

test('the UI page: the token or a live own-page session gets it; anything else gets the login hint', async (t) => {
  await ensureUiBuilt();
  const sessions = new BrowserSessions();
  const { app } = await testApp(t, { sessions });
  const session = sessions.login(sessions.mintTicket());
  assert.ok(session);
  const cookie = `skep_session=${session}`;

  for (const path of UI_PATHS) {
    const url = path.replace(/:[a-z]+/g, 'io.example%2Fecho');
    const hint = await app.inject({ method: 'GET', url, headers: Object.assign({}, NO_TOKEN, HTML) });
    assert.equal(hint.statusCode, 401, url);
    assert.match(hint.headers['content-type'] as string, /^text\/html/);
    assert.match(hint.body, /skep ui/);
    assert.doesNotMatch(hint.body, /<script/);

    const page = await app.inject({ method: 'GET', url, headers: HTML });
    assert.equal(page.statusCode, 200, url);
    assert.match(page.body, /<script type="module" src="\/assets\/app-[A-Z0-9]+\.js"><\/script>/);
    assert.equal(page.headers['cache-control'], 'no-cache');
    const csp = page.headers['content-security-policy'] as string;
    assert.match(csp, /default-src 'none'/);
    assert.match(csp, /script-src 'self';/);
    assert.doesNotMatch(csp, /unsafe/);
    assert.equal(page.headers['x-frame-options'], 'DENY');
  }

  const own = (site: string) =>
    app.inject({
      method: 'GET',
      url: '/servers',
      headers: Object.assign({}, NO_TOKEN, HTML, { cookie, 'sec-fetch-site': site }),
    });
  assert.equal((await own('same-origin')).statusCode, 200);
  assert.equal((await own('none')).statusCode, 200, 'typed or bookmarked');
  assert.equal((await own('same-site')).statusCode, 401, 'another port of this host');
  assert.equal((await own('cross-site')).statusCode, 401);
  sessions.end(session);
  assert.equal((await own('same-origin')).statusCode, 401, 'after logout');

  // A client that does not ask for HTML gets the API's JSON 404.
  const json = await app.inject({ method: 'GET', url: '/servers', headers: { accept: 'application/json' } });
  assert.equal(json.statusCode, 404);
  assert.equal(json.json<{ code: string }>().code, 'not_found');
});

test('assets: hashed names, a year of cache, the right type; other names refused', async (t) => {
  await ensureUiBuilt();
  const { app } = await testApp(t);
  const dir = findUiDir();
  assert.ok(dir);
  const script = /src="\/assets\/(app-[A-Z0-9]+\.js)"/.exec(
    readFileSync(join(dir, 'index.html'), 'utf8'),
  )?.[1];
  assert.ok(script);
  const res = await app.inject({ method: 'GET', url: `/assets/${script}`, headers: NO_TOKEN });
  assert.equal(res.statusCode, 200, 'public: the code is no secret, and the login hint needs none');
  assert.equal(res.headers['cache-control'], 'public, max-age=31536000, immutable');
  assert.match(res.headers['content-type'] as string, /^text\/javascript/);
  assert.equal(res.headers['x-content-type-options'], 'nosniff');
  assert.equal((await app.inject({ method: 'GET', url: '/assets/app-NOPE.js' })).statusCode, 404);
  for (const bad of ['/assets/..%2F..%2Fpackage.json', '/assets/index.html', '/assets/a.txt'])
    assert.equal((await app.inject({ method: 'GET', url: bad })).statusCode, 400, bad);
});
