/**
 * Pages on other loopback origins calling a workload's tools, in a real browser (headless Chromium
 * from Debian, driven by playwright-core). As reported: any page on any loopback port was trusted
 * as an origin by every workload proxy, the proxy parsed `text/plain` bodies (a CORS "simple
 * request", no preflight), so such a page called tools; and a remote upstream's HTML was served on
 * the proxy's origin, where its script could call the workload's own tools.
 *
 * Here a hostile page on another loopback port attacks three proxies with what a page can
 * send: a `no-cors` fetch with `text/plain`, a `text/plain` form POST (the JSON-in-a-form
 * trick) and an ordinary CORS fetch with `application/json`. The proxies: one with the
 * default origin rule, one whose user trusted the hostile origin (`allowedOrigins`; only the
 * JSON-only rule stands between the page and the tools there) and one in front of a remote
 * (HTTP) server. No server may receive a call: the stdio servers' record files stay empty and
 * the HTTP server sees no POST. A control call from Node shows the same body does call the
 * tool. Then the remote server's HTML page: opened directly its script runs (it renames the
 * page and POSTs a tool call to its own origin); opened through the proxy it is sandboxed and
 * does neither.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { chromiumAvailable, launchChromium } from '../../helpers/browser.js';
import { waitFor } from '../../helpers/wait.js';
import { proxyFor, spawnRecorder, startHttpUpstream, statelessWriteFile } from './helpers.js';

/** The remote server's page: if its script runs, it renames itself and calls a tool. */
const REMOTE_PAGE = `<!doctype html><html><head><title>remote</title></head><body>
<script>
  document.title = 'ran';
  fetch('/mcp', { method: 'POST', headers: { 'content-type': 'application/json' }, body: ${JSON.stringify(
    statelessWriteFile('from the remote page'),
  )} });
</script></body></html>`;

/**
 * What the hostile page runs against one proxy URL, as JavaScript source (it runs in the page,
 * which has none of the helpers the TypeScript loader adds to functions). Each step gives up
 * after 5 s, so a proxy that let the call through fails the test instead of stalling it.
 */
function attack(url: string, body: string): string {
  return `(async () => {
    const url = ${JSON.stringify(url)};
    const body = ${JSON.stringify(body)};
    const within = (step, label) =>
      Promise.race([step, new Promise((r) => setTimeout(() => r(label + ' timed out'), 5000))]);
    const results = [];
    // 1. A simple request: no preflight; the page cannot read the answer, but it is sent.
    results.push(await within(
      fetch(url, { method: 'POST', mode: 'no-cors', headers: { 'content-type': 'text/plain' }, body })
        .then(() => 'no-cors sent', (e) => 'no-cors failed: ' + e.message),
      'no-cors'));
    // 2. A form POST whose text/plain body is JSON: <name>=<value>, the '=' inside a string.
    results.push(await within(new Promise((resolve) => {
      const form = document.createElement('form');
      form.method = 'POST';
      form.enctype = 'text/plain';
      form.action = url;
      form.target = 'sink';
      const input = document.createElement('input');
      input.name = body.slice(0, -1) + ',"pad":"';
      input.value = '"}';
      form.append(input);
      document.body.append(form);
      document.querySelector('iframe').addEventListener('load', () => resolve('form sent'), { once: true });
      form.submit();
    }), 'form'));
    // 3. An ordinary CORS request: preflighted, and the proxy grants no CORS.
    results.push(await within(
      fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
        .then((r) => 'cors answered ' + r.status, () => 'cors blocked'),
      'cors'));
    return results;
  })()`;
}

test(
  'F3 in Chromium: a page on another loopback port calls no tool through any proxy; remote HTML is sandboxed',
  { timeout: 120_000 },
  async (t) => {
    if (!chromiumAvailable(t)) return;

    // The hostile page: served by some other program on this machine.
    const hostile = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<!doctype html><title>hostile</title><iframe name="sink"></iframe>');
    });
    await new Promise<void>((resolve) => hostile.listen(0, '127.0.0.1', resolve));
    t.after(() => new Promise<void>((resolve) => hostile.close(() => resolve())));
    const hostileOrigin = `http://127.0.0.1:${(hostile.address() as AddressInfo).port}`;

    const plain = spawnRecorder(t);
    const plainProxy = await proxyFor(t, plain.child);
    const trusting = spawnRecorder(t);
    const trustingProxy = await proxyFor(t, trusting.child, { allowedOrigins: [hostileOrigin] });
    const remote = await startHttpUpstream(t, (req, res) => {
      if (req.method === 'GET') {
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
        res.end(REMOTE_PAGE);
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ jsonrpc: '2.0', id: 1, result: { content: [] } }));
    });
    const remoteProxy = await proxyFor(t, undefined, {
      upstream: { kind: 'http', url: `${remote.url}/mcp`, transport: 'streamable-http' },
    });
    const remotePosts = () => remote.received.filter((r) => r.method === 'POST');
    /** The `text` argument of each tool call the remote server received. */
    const remoteToolCalls = () =>
      remotePosts()
        .map((r) => JSON.parse(r.body) as { method?: string; params?: { arguments?: { text?: string } } })
        .filter((m) => m.method === 'tools/call')
        .map((m) => m.params?.arguments?.text);

    const browser = await launchChromium(t);
    const page = await browser.newPage();
    const statuses: string[] = [];
    page.on('response', (r) => {
      if (r.request().method() === 'POST') statuses.push(`${r.url()} ${r.status()}`);
    });
    await page.goto(hostileOrigin);

    const targets = [
      { name: 'default', proxy: plainProxy, refusedWith: 403 },
      { name: 'hostile origin allowed', proxy: trustingProxy, refusedWith: 415 },
      { name: 'remote', proxy: remoteProxy, refusedWith: 403 },
    ];
    for (const { name, proxy, refusedWith } of targets) {
      const url = `${proxy.url}/mcp`;
      const outcome = await page.evaluate<string[]>(attack(url, statelessWriteFile(`pwned via ${name}`)));
      assert.deepEqual(outcome, ['no-cors sent', 'form sent', 'cors blocked'], name);
      // What the proxy answered the two requests that were sent (seen by the browser's network layer).
      assert.deepEqual(
        statuses.filter((s) => s.startsWith(url)),
        [`${url} ${refusedWith}`, `${url} ${refusedWith}`],
        name,
      );
    }

    // Control: the same body sent as an MCP client sends it calls the tool, through every proxy.
    // It is also the barrier for what the page sent: a call that got through would have reached
    // its server before the control did.
    for (const { name, proxy } of targets) {
      const control = await fetch(`${proxy.url}/mcp`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: statelessWriteFile('control'),
      });
      assert.equal(control.status, 200, name);
      await control.text();
    }
    assert.deepEqual(plain.calls(), ['control'], 'no call reached the server behind the default proxy');
    assert.deepEqual(
      trusting.calls(),
      ['control'],
      'no call reached the server whose proxy trusts the hostile origin',
    );
    assert.deepEqual(remoteToolCalls(), ['control'], 'no call reached the remote server');

    // The remote server's page, opened on its own origin: the script runs (control).
    const direct = await browser.newPage();
    await direct.goto(`${remote.url}/mcp`);
    await direct.waitForFunction("document.title === 'ran'");
    await waitFor('the page’s tool call', () => remoteToolCalls().length > 1);
    assert.deepEqual(
      remoteToolCalls(),
      ['control', 'from the remote page'],
      'the page’s script called a tool on its own origin',
    );

    // The same page through the proxy, on the proxy's origin: sandboxed, the script does not run.
    const proxied = await browser.newPage();
    const blocked: string[] = [];
    proxied.on('console', (m) => blocked.push(m.text()));
    const response = await proxied.goto(`${remoteProxy.url}/mcp`);
    assert.equal(response?.status(), 200);
    const headers = response?.headers() ?? {};
    assert.equal(headers['x-content-type-options'], 'nosniff');
    assert.equal(headers['content-security-policy'], 'sandbox');
    assert.equal(await proxied.locator('title').textContent(), 'remote', 'the page itself was served');
    // The barrier: Chromium reports that it blocked the script, which then never runs.
    await waitFor(
      'Chromium to report the blocked script',
      () => blocked.some((m) => /sandboxed|allow-scripts/.test(m)),
      10_000,
    );
    assert.equal(await proxied.title(), 'remote', 'the script did not run');
    assert.equal(remoteToolCalls().length, 2, 'no tool call from the page on the proxy’s origin');
  },
);
