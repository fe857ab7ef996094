/**
 * The API docs page (`/api/doc`) in a real browser: headless Chromium (Debian's package,
 * driven by playwright-core) against a real `skep serve`, after a browser login as a user
 * gets it from `skep ui`. The page is rendered on the server: with JavaScript disabled it
 * shows every operation and every named schema as field tables, Markdown rendered, the
 * error-code table once. With JavaScript its one inline script (allowed by hash under the
 * Content-Security-Policy) adds a filter box and opens linked operations. It loads nothing
 * but the server's own URL and logs no errors.
 */
import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import { test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { chromiumAvailable, launchChromium } from '../helpers/browser.js';
import { type ServeProcess, startServe } from '../helpers/cli.js';
import { tempHome } from '../helpers/home.js';

interface OpenApi {
  info: { title: string; version: string };
  paths: Record<string, Record<string, { tags?: string[] }>>;
  components: { schemas: Record<string, unknown> };
}

/** The longest any one request to `skep serve` may take, ms. */
const STEP_MS = 30_000;
/** Logs a step of the current test (set by `startDocsServer`). */
let step: (name: string) => void = () => undefined;

/** A logged-in browser tab on the docs page, recording requests and console problems. */
async function openDocs(
  browser: Browser,
  serve: ServeProcess,
  javaScriptEnabled: boolean,
): Promise<{ page: Page; requested: string[]; problems: string[] }> {
  const context = await browser.newContext({ javaScriptEnabled });
  step('browser context open');
  // The one-time login link sets the session cookie, then its page forwards to `/` (a meta
  // refresh, with or without JavaScript) in a tab of its own. The tab is closed only once that
  // forward has landed: closing it while the forward was under way hung Chromium's close.
  const link = await fetch(`${serve.url}/api/v1beta/auth/login-link`, {
    method: 'POST',
    headers: serve.auth,
    signal: AbortSignal.timeout(STEP_MS),
  });
  const loginTab = await context.newPage();
  await loginTab.goto(((await link.json()) as { url: string }).url);
  await loginTab.waitForURL((url) => url.pathname === '/', { timeout: STEP_MS });
  await loginTab.close();
  step('logged in');
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
  step('docs page loaded');
  return { page, requested, problems };
}

async function startDocsServer(
  t: TestContext,
): Promise<{ serve: ServeProcess; doc: OpenApi; operations: { tags?: string[] }[]; browser: Browser }> {
  const home = tempHome(t);
  const started = Date.now();
  // Each step is logged with the time since the start: if the test times out, its
  // diagnostics show the last step reached.
  step = (name) => t.diagnostic(`${Date.now() - started} ms: ${name}`);
  const serve = await startServe(t, home.env, home.config.paths.discoveryFile);
  step('skep serve up');
  const doc = (await (
    await fetch(`${serve.url}/api/openapi.json`, {
      headers: serve.auth,
      signal: AbortSignal.timeout(STEP_MS),
    })
  ).json()) as OpenApi;
  const operations = Object.values(doc.paths).flatMap((item) => Object.values(item));
  const browser = await launchChromium(t);
  step('browser launched');
  return { serve, doc, operations, browser };
}

function assertLoopbackOnly(serve: ServeProcess, requested: string[]): void {
  const foreign = requested.filter((url) => !url.startsWith(`${serve.url}/`));
  assert.deepEqual(foreign, [], 'the page loads nothing from elsewhere');
  assert.deepEqual(requested, [`${serve.url}/api/doc`], 'one request: the page itself (nothing fetched)');
}

test(
  'the docs page shows every operation and named schema with JavaScript disabled',
  { timeout: 120_000 },
  async (t) => {
    if (!chromiumAvailable(t)) return;
    const { serve, doc, operations, browser } = await startDocsServer(t);
    const tags = new Set(operations.map((op) => op.tags?.[0] ?? 'other'));
    const schemaNames = Object.keys(doc.components.schemas);

    const { page, requested, problems } = await openDocs(browser, serve, false);
    assert.equal(await page.title(), `${doc.info.title} ${doc.info.version}`);
    assert.equal(await page.locator('#doc details.op').count(), operations.length, 'one entry per operation');
    assert.equal(await page.locator('nav a').count(), tags.size + 1, 'one link per tag, and the schemas');
    assert.equal(
      await page.locator('#doc section.schema').count(),
      schemaNames.length,
      'one section per schema',
    );
    // The filter box is an enhancement: without a script it stays hidden.
    assert.equal(await page.locator('#filter').isVisible(), false);
    step('entries counted');

    // Named schemas, as field tables, with no generated def-N names anywhere.
    for (const name of ['WorkloadSummary', 'WorkloadDetail', 'RunConfig', 'CreateWorkloadRequest', 'Error'])
      assert.ok(await page.locator(`#schema-${name}`).isVisible(), `schema ${name} is shown`);
    const html = await page.content();
    assert.doesNotMatch(html, /def-\d/);
    step('page content read');
    const summary = page.locator('#schema-WorkloadSummary table.fields');
    assert.match(await summary.innerText(), /\nstatus\tstring\tyes\t\s*starting, running,/);
    // A nested named schema is a link to its own section.
    const detail = page.locator('#schema-WorkloadDetail');
    assert.equal(await detail.locator('a[href="#schema-SecretRef"]').count(), 1);
    assert.match(await summary.innerText(), /\nlabels\tmap of string\tyes/);

    // The error-code table is on the page exactly once (in the Error schema), not per response.
    assert.equal(await page.locator('table:has(th:text-is("code")):has(th:text-is("status"))').count(), 1);
    assert.equal(await page.locator('#schema-Error table:has(th:text-is("code"))').count(), 1);
    assert.equal(html.split('The request is malformed or a field is invalid').length - 1, 1);

    // Markdown in descriptions is HTML: `name` in the create description is a <code> element.
    const create = page.locator('#op-post-api-v1beta-workloads');
    assert.equal(await create.locator('p code', { hasText: /^name$/ }).count(), 1);
    assert.doesNotMatch(await page.locator('#doc').innerText(), /`/, 'no Markdown backticks left as text');

    // An operation opens without a script (native <details>): body and responses as tables.
    await create.locator('summary').click();
    step('operation opened');
    const opened = await create.innerText();
    assert.match(opened, /Request body/);
    assert.match(opened, /Body: CreateWorkloadRequest/);
    assert.match(opened, /409\tError: [^\n]*workload_exists/);
    await create.locator('a[href="#schema-CreateWorkloadRequest"]').click();
    assert.ok(page.url().endsWith('#schema-CreateWorkloadRequest'));
    step('schema link followed');
    assert.match(await page.locator('#schema-CreateWorkloadRequest').innerText(), /\nname\tstring\t\t/);

    assert.deepEqual(problems, [], 'no console errors, CSP violations or page errors');
    assertLoopbackOnly(serve, requested);
  },
);

test(
  'with JavaScript the docs page filters operations and opens linked ones, under its CSP',
  { timeout: 120_000 },
  async (t) => {
    if (!chromiumAvailable(t)) return;
    const { serve, operations, browser } = await startDocsServer(t);

    const { page, requested, problems } = await openDocs(browser, serve, true);
    const filter = page.locator('#filter');
    await filter.waitFor({ state: 'visible' }); // the inline script ran (its hash is allowed)
    await filter.fill('upgrade');
    const visible = page.locator('#doc details.op:visible');
    const shown = await visible.count();
    assert.ok(shown > 0 && shown < operations.length, `${shown} of ${operations.length} operations shown`);
    for (const text of await visible.locator('summary').allInnerTexts())
      assert.match(text.toLowerCase(), /upgrade/);
    await filter.fill('');
    assert.equal(await visible.count(), operations.length);

    // A link to an operation opens it.
    await page.goto(`${serve.url}/api/doc#op-get-api-v1beta-workloads`);
    await page.locator('#op-get-api-v1beta-workloads[open]').waitFor();

    assert.deepEqual(problems, [], 'no console errors, CSP violations or page errors');
    assert.deepEqual(
      requested.filter((url) => !url.startsWith(`${serve.url}/`)),
      [],
      'the page loads nothing from elsewhere',
    );
  },
);
