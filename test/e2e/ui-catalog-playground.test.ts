/**
 * "Run a server from the catalog through the form and see it reach Running; call a
 * tool in the playground; stop and delete it", in Chromium against a real `skep serve`. The
 * registry source is a local file (as a catalog maintainer would publish it) whose one entry
 * runs the echo fixture; the form asks for its variables, saves the secret one in the secrets
 * provider and references it; the playground talks to the workload through skep serve's
 * same-origin MCP route.
 */
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { chromiumAvailable } from '../helpers/browser.js';
import { ECHO_SERVER, startUiSession } from '../helpers/ui.js';

const ENTRY = 'io.example/echo';

function registry() {
  return {
    version: '1.0.0',
    meta: { last_updated: '2026-11-01T00:00:00Z' },
    data: {
      servers: [
        {
          name: ENTRY,
          title: 'Echo (fixture)',
          description: 'Echoes messages back: the test fixture of the web UI.',
          version: '1.0.0',
          packages: [
            {
              registryType: 'oci',
              identifier: `cmd://${process.execPath}`,
              transport: { type: 'stdio' },
              packageArguments: [{ type: 'positional', value: ECHO_SERVER }],
              environmentVariables: [
                { name: 'ECHO_GREETING', description: 'A greeting the server ignores', default: 'hello' },
                {
                  name: 'ECHO_API_KEY',
                  description: 'A key the server ignores',
                  isSecret: true,
                  isRequired: true,
                },
              ],
            },
          ],
        },
      ],
    },
  };
}

test(
  'Catalog → run form → Running → playground tool call (result and raw JSON-RPC) → stop and delete',
  { timeout: 300_000 },
  async (t) => {
    if (!chromiumAvailable(t)) return;
    const ui = await startUiSession(t);
    const { page, api } = ui;
    const file = join(ui.home, 'registry.json');
    writeFileSync(file, JSON.stringify(registry()));
    const configured = await ui.call('PUT', '/api/v1beta/registry/default', { local_path: file });
    assert.equal(configured.status, 200, await configured.clone().text());
    const setup = await ui.call('POST', '/api/v1beta/secrets', {
      provider_type: 'encrypted',
      password: 'ui-test-password-1234',
    });
    assert.equal(setup.status, 201, await setup.clone().text());

    // Browse and search the catalog.
    await page.goto(`${api}/catalog`);
    await page.getByRole('heading', { name: 'Echo (fixture)' }).waitFor();
    await page.getByRole('searchbox', { name: 'Search servers' }).fill('no-such-thing');
    await page.getByText('Nothing matches').waitFor();
    await page.getByRole('searchbox', { name: 'Search servers' }).fill('echoes');
    await page.getByRole('link', { name: 'Echo (fixture)' }).click();
    await page.waitForURL(`${api}/catalog/${encodeURIComponent(ENTRY)}`);

    // The detail: variables with their needs; the form built from them.
    await page.getByRole('cell', { name: 'ECHO_API_KEY' }).waitFor();
    const form = page.getByRole('form', { name: `Run ${ENTRY}` });
    assert.equal(
      await form.getByRole('textbox', { name: /ECHO_GREETING/ }).inputValue(),
      'hello',
      'the default',
    );
    // A name the API refuses: the form says so live and on Run, in the API's own words.
    const nameRule = "invalid workload name 'echo..ui': contains '..' (path traversal)";
    await form.getByRole('textbox', { name: 'Name' }).fill('echo..ui');
    await form.locator('.hint', { hasText: nameRule }).waitFor();
    await form.getByRole('button', { name: 'Run' }).click();
    await form.getByRole('alert').filter({ hasText: nameRule }).waitFor();
    const apiRefusal = await ui.call('POST', '/api/v1beta/workloads', {
      name: 'echo..ui',
      registry: 'default',
      server: ENTRY,
    });
    assert.equal(apiRefusal.status, 400);
    assert.deepEqual(await apiRefusal.json(), { code: 'invalid_name', message: nameRule });
    // The required secret left empty: the form says what to fix, nothing is created.
    await form.getByRole('textbox', { name: 'Name' }).fill('echo-ui');
    await form.getByRole('button', { name: 'Run' }).click();
    await form.getByRole('alert').filter({ hasText: 'ECHO_API_KEY is required' }).waitFor();
    await form.getByLabel('ECHO_API_KEY: value (saved as a secret, never shown again)').fill('s3cret-value');
    await form.getByRole('textbox', { name: /ECHO_GREETING/ }).fill('bonjour');
    // A folder the server may use: its last argument, and in its sandbox's write list.
    const folder = join(ui.home, 'shared-folder');
    mkdirSync(folder);
    await form.getByRole('textbox', { name: /Folder/ }).fill(folder);
    await ui.screenshot('catalog-run');
    await form.getByRole('button', { name: 'Run' }).click();

    // Progress until it answers.
    const progress = page.getByRole('region', { name: 'Progress' });
    await progress.locator('.badge', { hasText: 'running' }).waitFor({ timeout: 90_000 });
    const detail = (await (await ui.call('GET', '/api/v1beta/workloads/echo-ui')).json()) as {
      env_vars: Record<string, string>;
      secrets: Array<{ name: string; target: string }>;
    };
    assert.equal(detail.env_vars['ECHO_GREETING'], 'bonjour');
    assert.deepEqual(detail.secrets, [{ name: 'echo-ui-echo_api_key', target: 'ECHO_API_KEY' }]);
    const exported = (await (await ui.call('GET', '/api/v1beta/workloads/echo-ui/export')).json()) as {
      cmd_args: string[];
      permission_profile?: { write?: string[] };
    };
    assert.deepEqual(exported.cmd_args, [ECHO_SERVER, folder]);
    assert.deepEqual(exported.permission_profile?.write, [folder]);

    // The playground: tools listed, a form from the input schema, the result and the raw JSON-RPC.
    await progress.getByRole('link', { name: 'Try it in the playground' }).click();
    await page.waitForURL(`${api}/playground/echo-ui`);
    await page.getByRole('button', { name: 'echo' }).click();
    const call = page.getByRole('form', { name: 'Call echo' });
    await call.getByLabel(/message/).fill('hello from the playground');
    await call.getByRole('button', { name: 'Call tool' }).click();
    const result = await call.locator('.result-text').textContent();
    assert.match(result ?? '', /hello from the playground/);
    const raw = await page.locator('.raw-response').first().textContent();
    const parsed = JSON.parse(raw ?? '{}') as {
      jsonrpc?: string;
      result?: { content?: Array<{ text?: string }> };
    };
    assert.equal(parsed.jsonrpc, '2.0');
    assert.match(parsed.result?.content?.[0]?.text ?? '', /hello from the playground/);
    await ui.screenshot('playground');

    // A bad argument (a required field left empty) is refused in the page, naming the field.
    await call.getByLabel(/message/).fill('');
    await call.evaluate((f) => f.setAttribute('novalidate', ''));
    await call.getByRole('button', { name: 'Call tool' }).click();
    await call.getByRole('alert').filter({ hasText: 'message is required' }).waitFor();

    // The pass-through is the API's: without a session or token it is refused.
    const anonymous = await fetch(`${api}/api/v1beta/workloads/echo-ui/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    assert.equal(anonymous.status, 401);

    // Stop and delete from the Servers page.
    await page.getByRole('link', { name: 'Servers' }).click();
    const row = page.locator('tr[data-server="echo-ui"]');
    await row.getByRole('button', { name: 'Stop' }).click();
    await row.locator('.badge', { hasText: 'stopped' }).waitFor({ timeout: 30_000 });
    page.once('dialog', (dialog) => void dialog.accept());
    await row.getByRole('button', { name: 'Delete echo-ui' }).click();
    await page.getByText('No servers yet').waitFor({ timeout: 30_000 });

    assert.deepEqual(ui.problems, [], 'no console errors or failed requests');
    assert.deepEqual(ui.offLoopback, [], 'no request left loopback');
  },
);
