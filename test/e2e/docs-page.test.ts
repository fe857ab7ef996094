/**
 * The API docs page (`/api/doc`) in a real browser: headless Chromium (Debian's package,
 * driven by playwright-core) against a real `skep serve`, after a browser login. The page
 * must render every operation of the OpenAPI document under its Content-Security-Policy,
 * load nothing but the server's own URLs, and log no errors.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { chromiumAvailable, launchChromium } from '../helpers/browser.js';
import { startServe } from '../helpers/cli.js';
import { tempHome } from '../helpers/home.js';

test(
  'the docs page renders every API operation in Chromium, offline and without errors',
  { timeout: 120_000 },
  async (t) => {
    if (!chromiumAvailable(t)) return;
    const home = tempHome(t);
    const serve = await startServe(t, home.env, home.config.paths.discoveryFile);
    const doc = (await (await fetch(`${serve.url}/api/openapi.json`, { headers: serve.auth })).json()) as {
      info: { title: string; version: string };
      paths: Record<string, Record<string, { tags?: string[] }>>;
    };
    const operations = Object.values(doc.paths).flatMap((item) => Object.values(item));
    const tags = new Set(operations.map((op) => op.tags?.[0] ?? 'other'));

    const browser = await launchChromium(t);
    // The page and the document it reads need a login (issue 16, F1), as a user gets it from
    // `skep ui`: a one-time link that sets the session cookie. It lands on `/` (404 until the
    // web UI exists), in a tab of its own so that 404 is not this page's console error.
    const context = await browser.newContext();
    const link = await fetch(`${serve.url}/api/v1beta/auth/login-link`, {
      method: 'POST',
      headers: serve.auth,
    });
    const loginTab = await context.newPage();
    await loginTab.goto(((await link.json()) as { url: string }).url);
    await loginTab.close();
    const page = await context.newPage();
    const requested: string[] = [];
    const problems: string[] = [];
    page.on('request', (request) => requested.push(request.url()));
    page.on('console', (message) => {
      if (message.type() === 'error' || message.type() === 'warning') problems.push(message.text());
    });
    page.on('pageerror', (err) => problems.push(err.message));

    const response = await page.goto(`${serve.url}/api/doc`);
    assert.equal(response?.status(), 200);
    await page.waitForSelector('#doc details');

    assert.equal(await page.title(), `${doc.info.title} ${doc.info.version}`);
    assert.equal(await page.locator('#doc details').count(), operations.length, 'one entry per operation');
    assert.equal(await page.locator('#doc nav a').count(), tags.size, 'one link per tag');

    // Open the workload creation entry: its request body schema and responses show.
    const create = page.locator('details', {
      has: page.locator('summary', { hasText: /POST\s+\/api\/v1beta\/workloads\s/ }),
    });
    await create.first().locator('summary').click();
    const opened = await create.first().innerText();
    assert.match(opened, /Request body/);
    assert.match(opened, /"name"/);
    assert.match(opened, /409/);

    assert.deepEqual(problems, [], 'no console errors, CSP violations or page errors');
    const foreign = requested.filter((url) => !url.startsWith(`${serve.url}/`));
    assert.deepEqual(foreign, [], 'the page loads nothing from elsewhere');
    assert.ok(requested.includes(`${serve.url}/api/openapi.json`));
  },
);
