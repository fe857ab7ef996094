/**
 * Blind SSRF through the skills API, in a real browser: a page served from another loopback port embeds
 * `<img src="http://127.0.0.1:<api>/api/v1beta/skills/content?ref=127.0.0.1:<listener>/x/y:1">`
 * (a cross-site GET carries no Origin). The listener must receive no connection: the API
 * refuses the unauthenticated request, and the OCI client itself refuses a loopback registry
 * nobody listed — shown by a second, authorized call. A server started with the listener's
 * host in SKEP_SKILLS_PRIVATE_HOSTS does reach it, so the listener would have seen a leak.
 */
import assert from 'node:assert/strict';
import { createServer as createHttpServer } from 'node:http';
import { type AddressInfo, createServer } from 'node:net';
import { test, type TestContext } from 'node:test';
import { chromiumAvailable, launchChromium } from '../helpers/browser.js';
import { startServe } from '../helpers/cli.js';
import { tempHome } from '../helpers/home.js';

async function countingListener(t: TestContext): Promise<{ port: number; connections(): number }> {
  let count = 0;
  const server = createServer((socket) => {
    count++;
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { port: (server.address() as AddressInfo).port, connections: () => count };
}

async function pageServer(t: TestContext, html: string): Promise<string> {
  const server = createHttpServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(html);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
}

test(
  'a cross-site <img> to /skills/content makes Skep open no connection to a loopback "registry"',
  { timeout: 180_000 },
  async (t) => {
    if (!chromiumAvailable(t)) return;
    const home = tempHome(t);
    delete home.env['SKEP_SKILLS_PRIVATE_HOSTS'];
    const serve = await startServe(t, home.env, home.config.paths.discoveryFile);
    const listener = await countingListener(t);
    const ref = `127.0.0.1:${listener.port}/x/y:1`;
    const target = `${serve.url}/api/v1beta/skills/content?ref=${encodeURIComponent(ref)}`;
    const page = await pageServer(
      t,
      `<!doctype html><title>attacker</title>
       <img src="${target}" onload="document.title='loaded'" onerror="document.title='failed'">`,
    );

    const browser = await launchChromium(t);
    const tab = await browser.newPage();
    const sent: string[] = [];
    tab.on('request', (request) => {
      if (request.url().startsWith(`${serve.url}/api/`)) sent.push(request.url());
    });
    await tab.goto(page);
    await tab.waitForFunction("document.title !== 'attacker'", undefined, { timeout: 30_000 });
    assert.equal(await tab.title(), 'failed', 'the image request did not succeed');
    assert.deepEqual(sent, [target], 'the browser did send the cross-site request');
    assert.equal(listener.connections(), 0, 'the browser-triggered request reached no registry');

    // Authorized, the request reaches the skills service, whose OCI client refuses loopback.
    const direct = await fetch(target, { headers: serve.auth });
    const body = (await direct.json()) as { code: string; message: string };
    assert.equal(direct.status, 403, JSON.stringify(body));
    assert.equal(body.code, 'forbidden');
    assert.match(body.message, /127\.0\.0\.1 is a loopback address; list it in SKEP_SKILLS_PRIVATE_HOSTS/);
    assert.equal(listener.connections(), 0, 'the OCI client opened no connection either');

    // The user's opt-in: with the host listed, the same call does reach the listener.
    const listedHome = tempHome(t);
    listedHome.env['SKEP_SKILLS_PRIVATE_HOSTS'] = `127.0.0.1:${listener.port}`;
    const listed = await startServe(t, listedHome.env, listedHome.config.paths.discoveryFile);
    const reached = await fetch(`${listed.url}/api/v1beta/skills/content?ref=${encodeURIComponent(ref)}`, {
      headers: listed.auth,
    });
    await reached.arrayBuffer();
    assert.equal(reached.status, 502, 'the listener drops the connection: bad gateway');
    assert.ok(listener.connections() > 0, 'a listed registry is contacted');
  },
);
