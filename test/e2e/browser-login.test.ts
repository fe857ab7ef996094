/**
 * The API's authentication on TCP and the browser login, in a real headless Chromium (Debian's
 * package, driven by playwright-core) against a real `skep serve`. The browser logs in as a user
 * does: `skep ui` hands the opener a page only the user can read, which forwards to the one-time
 * link; the session cookie then works from the API's own pages together with the CSRF token the
 * login gave the page, and does not from a page on another port of the same machine — which the
 * browser treats as same-site, so it *does* attach the SameSite=Strict cookie there (checked
 * below): Fetch Metadata, the origin guard and the missing token refuse it. A program that saw the
 * cookie and replays it with forged headers gets 403.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { chromiumAvailable, launchChromium } from '../helpers/browser.js';
import { runCli, startServe } from '../helpers/cli.js';
import { tempHome } from '../helpers/home.js';
import { recordingOpener } from '../helpers/opener.js';
import { ensureUiBuilt } from '../helpers/ui.js';

test(
  'F1 in Chromium: the login link gives the API’s own pages a session; a page on another local port gets 401/403 with the cookie attached',
  { timeout: 180_000 },
  async (t) => {
    if (!chromiumAvailable(t)) return;
    await ensureUiBuilt();
    const home = tempHome(t);
    const serve = await startServe(t, home.env, home.config.paths.discoveryFile);
    const api = serve.url;

    // Another program on this machine: a page on another loopback port.
    const other = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>other</title><p>hi</p>');
    });
    await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
    t.after(() => new Promise<void>((resolve) => other.close(() => resolve())));
    const otherOrigin = `http://127.0.0.1:${(other.address() as AddressInfo).port}`;

    const browser = await launchChromium(t);
    const context = await browser.newContext();
    const page = await context.newPage();
    // What went over the wire, from DevTools (a CORS-refused answer has no page-level response
    // event, but its status and the Cookie header actually sent are in the Network domain).
    const cdp = await context.newCDPSession(page);
    await cdp.send('Network.enable');
    const wire = new Map<string, { call: string; status?: number; cookie?: boolean }>();
    const entry = (id: string) => wire.get(id) ?? wire.set(id, { call: '' }).get(id)!;
    cdp.on('Network.requestWillBeSent', (e) => {
      entry(e.requestId).call = `${e.request.method} ${e.request.url}`;
    });
    cdp.on('Network.requestWillBeSentExtraInfo', (e) => {
      const cookie = Object.entries(e.headers).find(([name]) => name.toLowerCase() === 'cookie')?.[1];
      entry(e.requestId).cookie = String(cookie ?? '').includes('skep_session=');
    });
    cdp.on('Network.responseReceivedExtraInfo', (e) => {
      entry(e.requestId).status = e.statusCode;
    });
    const seen = (call: string) =>
      [...wire.values()].filter((w) => w.call === call).map((w) => [w.status, w.cookie === true]);

    // Before login the docs page is refused.
    assert.equal((await page.goto(`${api}/api/doc`))?.status(), 401);

    // Log in as the user does: `skep ui` gives the opener the path of a 0600 page, never the
    // link; the browser opens that page, which forwards to the link, whose page forwards to
    // the UI with the CSRF token in the fragment.
    const opener = recordingOpener(t);
    const ui = runCli(['ui'], { ...home.env, ...opener.env });
    assert.equal(ui.status, 0, ui.stderr);
    const call = await opener.waitForCall();
    assert.equal(call.argv.length, 1);
    assert.match(call.argv[0] ?? '', /^file:\/\/\/.*\/open-[0-9a-f]{32}\.html$/);
    assert.equal(call.mode, 0o600);
    await page.goto(call.argv[0] ?? '');
    await page.waitForURL(`${api}/`);
    assert.equal(new URL(page.url()).hash, '', 'the token left the address bar');
    await page.getByRole('heading', { name: 'Servers' }).waitFor();
    const token = await page.evaluate("localStorage.getItem('skep-csrf')");
    assert.match(String(token), /^[A-Za-z0-9_-]{43}$/);
    const cookies = await context.cookies(api);
    const session = cookies.find((c) => c.name === 'skep_session');
    assert.ok(session);
    assert.equal(session.httpOnly, true);
    assert.equal(session.sameSite, 'Strict');

    // The API's own pages (the web UI; the docs page's CSP allows it no fetch): the cookie
    // with the page's CSRF token authenticates reads and writes; without the token it does not.
    assert.equal((await page.goto(`${api}/api/doc`))?.status(), 200);
    assert.equal((await page.goto(`${api}/`))?.status(), 200);
    const own = await page.evaluate(async (token: string) => {
      const csrf = { 'x-skep-csrf': token };
      const list = await fetch('/api/v1beta/groups', { headers: csrf });
      const create = await fetch('/api/v1beta/groups', {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...csrf },
        body: JSON.stringify({ name: 'from-own-page' }),
      });
      const bareList = await fetch('/api/v1beta/groups');
      const bareCreate = await fetch('/api/v1beta/groups', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'without-token' }),
      });
      return [list.status, create.status, bareList.status, bareCreate.status];
    }, String(token));
    assert.deepEqual(own, [200, 201, 403, 403]);

    // A program that saw the cookie (cookies ignore ports) replays it with forged Fetch
    // Metadata: without the token nothing happens.
    for (const site of ['none', 'same-origin']) {
      const replay = await fetch(`${api}/api/v1beta/workloads`, {
        method: 'POST',
        headers: {
          cookie: `skep_session=${session.value}`,
          'sec-fetch-site': site,
          'content-type': 'application/json',
        },
        body: JSON.stringify({ name: 'replayed-shell', url: 'cmd:///bin/sh' }),
      });
      assert.equal(replay.status, 403, `replayed cookie, Sec-Fetch-Site: ${site}`);
    }

    // A page on another port of this machine, in the same browser, with the session cookie.
    await page.goto(otherOrigin);
    await page.evaluate(async (target: string) => {
      // Simple requests (no preflight): the browser sends them with the cookie. A CORS request
      // carries Origin (the origin guard answers 403); a no-cors GET carries none, so Fetch
      // Metadata (`Sec-Fetch-Site: same-site`) is what refuses it (401). (No named functions in
      // here: tsx would wrap them in a helper the page does not have.)
      await fetch(`${target}/api/v1beta/groups`, { credentials: 'include' }).catch(() => undefined);
      await fetch(`${target}/api/v1beta/groups`, { credentials: 'include', mode: 'no-cors' }).catch(
        () => undefined,
      );
      await fetch(`${target}/api/v1beta/groups`, {
        credentials: 'include',
        method: 'POST',
        headers: { 'content-type': 'text/plain' },
        body: JSON.stringify({ name: 'from-other-port' }),
      }).catch(() => undefined);
      await fetch(`${target}/api/v1beta/version`, { credentials: 'include', mode: 'no-cors' }).catch(
        () => undefined,
      );
    }, api);
    // A top-level navigation from that page (a link the user clicks) is same-site, not same-origin.
    await page.evaluate(`location.href = ${JSON.stringify(`${api}/api/v1beta/groups`)}`);
    await page.waitForURL(`${api}/api/v1beta/groups`);

    const otherPage = await page.evaluate('location.origin');
    assert.equal(otherPage, api, 'the navigation arrived');
    // Every request from the other port carried the session cookie (SameSite=Strict let it
    // through: same site), and every one was refused.
    assert.deepEqual(seen(`GET ${api}/api/v1beta/groups`).slice(-3), [
      [403, true],
      [401, true],
      [401, true],
    ]);
    assert.deepEqual(seen(`POST ${api}/api/v1beta/groups`).slice(-1), [[403, true]], 'the origin guard: 403');
    assert.deepEqual(seen(`GET ${api}/api/v1beta/version`), [[401, true]]);

    const groups = (await (await fetch(`${api}/api/v1beta/groups`, { headers: serve.auth })).json()) as {
      groups: { name: string }[];
    };
    assert.deepEqual(groups.groups.map((g) => g.name).sort(), ['default', 'from-own-page']);
    const workloads = await fetch(`${api}/api/v1beta/workloads?all=true`, { headers: serve.auth });
    assert.deepEqual(((await workloads.json()) as { workloads: unknown[] }).workloads, []);

    // Logout from the own page ends the session.
    await page.goto(`${api}/`);
    const afterLogout = await page.evaluate(async (token: string) => {
      const csrf = { 'x-skep-csrf': token };
      const out = await fetch('/auth/logout', { method: 'POST', headers: csrf });
      const again = await fetch('/api/v1beta/groups', { headers: csrf });
      return [out.status, again.status];
    }, String(token));
    assert.deepEqual(afterLogout, [204, 401]);
    await serve.stop();
  },
);
