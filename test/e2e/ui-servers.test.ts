/**
 * The web UI's Servers pages in Chromium against a real `skep serve`: the page is
 * served only to a logged-in browser (others get how to log in), with a strict CSP and
 * hashed, long-cached assets; a real workload (the echo fixture) shows up Running with its
 * URL and tools, is stopped, started and deleted from the page, and its detail page shows
 * the configuration, the export and the live log tail.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { chromiumAvailable } from '../helpers/browser.js';
import { ECHO_SERVER, startUiSession } from '../helpers/ui.js';

test(
  'Servers: login hint without a session; list, stop, start, detail, export, edit and delete a real workload',
  { timeout: 240_000 },
  async (t) => {
    if (!chromiumAvailable(t)) return;
    const ui = await startUiSession(t);
    const { page, api } = ui;

    // Without a session (no cookie): the page says how to log in, for / and for deep links.
    for (const path of ['/', '/servers/echo', '/catalog']) {
      const res = await fetch(`${api}${path}`, { headers: { accept: 'text/html' } });
      assert.equal(res.status, 401, path);
      const html = await res.text();
      assert.match(html, /skep ui/, `${path}: the hint names skep ui`);
      assert.doesNotMatch(html, /<script/, `${path}: no script without a session`);
    }
    // An API client asking for JSON gets the API's 404, not HTML.
    const json = await fetch(`${api}/servers`, {
      headers: Object.assign({ accept: 'application/json' }, ui.serve.auth),
    });
    assert.equal(json.status, 404);
    assert.equal(((await json.json()) as { code: string }).code, 'not_found');

    // The login link landed on the UI: served with its CSP and no-cache; assets hashed and immutable.
    assert.equal(new URL(page.url()).pathname, '/');
    await page.getByRole('heading', { name: 'Servers' }).waitFor();
    const doc = await page.goto(`${api}/servers`);
    assert.ok(doc);
    assert.equal(doc.status(), 200);
    const csp = doc.headers()['content-security-policy'] ?? '';
    assert.match(csp, /script-src 'self';/);
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
    assert.equal(doc.headers()['cache-control'], 'no-cache');
    const script = /src="(\/assets\/app-[A-Z0-9]+\.js)"/.exec(await doc.text())?.[1];
    assert.ok(script, 'the page names a hashed script');
    const asset = await fetch(`${api}${script}`);
    assert.equal(asset.status, 200);
    assert.equal(asset.headers.get('cache-control'), 'public, max-age=31536000, immutable');
    assert.match(asset.headers.get('content-type') ?? '', /^text\/javascript/);
    assert.equal((await fetch(`${api}/assets/..%2Fpackage.json`)).status, 400, 'asset names are checked');

    // Empty state, then a real workload appears by polling and reaches Running.
    await page.getByText('No servers yet').waitFor();
    const created = await ui.call('POST', '/api/v1beta/workloads', {
      name: 'echo',
      image: `cmd://${process.execPath}`,
      cmd_arguments: [ECHO_SERVER],
    });
    assert.equal(created.status, 201, await created.clone().text());
    const row = page.locator('tr[data-server="echo"]');
    await row.locator('.badge', { hasText: 'running' }).waitFor({ timeout: 60_000 });
    const url = await row.locator('td.url code').textContent();
    assert.match(url ?? '', /^http:\/\/127\.0\.0\.1:\d+\//);
    assert.doesNotMatch(url ?? '', /skep_token/, 'the page shows the URL without the access token');
    await row.getByRole('button', { name: 'Copy the URL of echo' }).waitFor();
    await ui.screenshot('servers');

    // Stop and start from the page (keyboard: focus the button, press Enter).
    await row.getByRole('button', { name: 'Stop' }).focus();
    await page.keyboard.press('Enter');
    await row.locator('.badge', { hasText: 'stopped' }).waitFor({ timeout: 30_000 });
    await row.getByRole('button', { name: 'Start' }).click();
    await row.locator('.badge', { hasText: 'running' }).waitFor({ timeout: 60_000 });

    // Detail page by deep link: configuration, export (secrets as references), log tail.
    await page.goto(`${api}/servers/echo`);
    await page.getByRole('heading', { name: 'echo', exact: true }).waitFor();
    await page.locator('.config dd', { hasText: `cmd://${process.execPath}` }).waitFor();
    // What the guardrails stage does: a new workload's default, shown, never silent.
    const guardrails = page
      .locator('.config div')
      .filter({ has: page.getByText('Guardrails', { exact: true }) });
    assert.equal(await guardrails.locator('dd').textContent(), 'ownSecrets:redact credentials:redact');
    await page.getByRole('button', { name: 'Export' }).click();
    const exported = JSON.parse((await page.locator('pre.code').first().textContent()) ?? '{}') as {
      name?: string;
    };
    assert.equal(exported.name, 'echo');
    await page.getByRole('tab', { name: 'Proxy' }).click();
    // The runner's JSON lines read as text: time, level, message, fields.
    const proxyPane = page.locator('pre.log').filter({ hasText: /proxy listening/ });
    await proxyPane.waitFor();
    const proxyText = (await proxyPane.textContent()) ?? '';
    assert.match(proxyText, /^\d{2}:\d{2}:\d{2} INFO {2}.*proxy listening/m);
    assert.doesNotMatch(proxyText, /"level":/);
    await ui.screenshot('server-detail');

    // Edit: a new environment variable; the server restarts with it and the page shows it.
    await page.getByRole('button', { name: 'Edit' }).click();
    const edit = page.getByRole('form', { name: 'Edit the server' });
    await edit.getByRole('textbox', { name: /Environment/ }).fill('GREETING=hi');
    await edit.getByRole('button', { name: 'Save' }).click();
    await page.getByRole('status').filter({ hasText: 'Saved' }).waitFor();
    await page.locator('.config dd', { hasText: 'GREETING' }).waitFor();
    const edited = (await (await ui.call('GET', '/api/v1beta/workloads/echo')).json()) as {
      env_vars: Record<string, string>;
    };
    assert.deepEqual(edited.env_vars, { GREETING: 'hi' });
    // A malformed line is refused in the page, naming what to write.
    await page.getByRole('button', { name: 'Edit' }).click();
    await edit.getByRole('textbox', { name: /Environment/ }).fill('no equals sign');
    await edit.getByRole('button', { name: 'Save' }).click();
    await edit.getByRole('alert').filter({ hasText: 'NAME=value' }).waitFor();
    await edit.getByRole('button', { name: 'Cancel' }).click();

    // Delete from the detail page: confirmed, then back on the list, which is empty again.
    page.once('dialog', (dialog) => void dialog.accept());
    await page.getByRole('button', { name: 'Delete echo' }).click();
    await page.waitForURL(`${api}/servers`);
    await page.getByText('No servers yet').waitFor({ timeout: 30_000 });
    const left = (await (await ui.call('GET', '/api/v1beta/workloads?all=true')).json()) as {
      workloads: unknown[];
    };
    assert.deepEqual(left.workloads, []);

    assert.deepEqual(ui.problems, [], 'no console errors or failed requests');
    assert.deepEqual(ui.offLoopback, [], 'no request left loopback');
  },
);
