/**
 * Two choices the web UI gives a user, in Chromium against a real `skep serve`: the secrets
 * setup's "remember the password on this machine" (checked by default, as the API; unchecked,
 * the request says `save_password: false` and the password is written nowhere; checked, it is
 * saved in a 0600 file where no keyring is usable) and a server's "resume it when skep serve
 * starts" (the Run form's toggle creates the workload with `autostart: false`; the Edit form
 * turns it back on without restarting the server).
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import type { Page, Request } from 'playwright-core';
import { chromiumAvailable } from '../helpers/browser.js';
import { ECHO_SERVER, startUiSession } from '../helpers/ui.js';

const ENTRY = 'io.example/echo';
const PASSWORD = 'remember-me-not-1234';

/** Every file named `name` under `dir`. */
function filesNamed(dir: string, name: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((path) => path.split('/').pop() === name)
    .map((path) => join(dir, path));
}

/** The next request of `method` to `path` the page sends. */
function nextRequest(page: Page, method: string, path: string): Promise<Request> {
  return page.waitForRequest((r) => r.method() === method && new URL(r.url()).pathname === path);
}

test(
  'UI choices: the secrets password is remembered only when asked; a server run without autostart, turned on by edit',
  { timeout: 300_000 },
  async (t) => {
    if (!chromiumAvailable(t)) return;
    // No keyring (no session bus) and no password in the environment: a saved password goes to the file.
    const ui = await startUiSession(t, { env: { DBUS_SESSION_BUS_ADDRESS: '', SKEP_SECRETS_PASSWORD: '' } });
    const { page, api } = ui;

    // Secrets setup, the box unchecked: the request says so and the password is written nowhere.
    await page.goto(`${api}/secrets`);
    const setup = page.getByRole('form', { name: 'Secrets provider' });
    await setup.locator('input[type=password]').fill(PASSWORD);
    const remember = setup.getByRole('checkbox', { name: 'Remember the password on this machine' });
    assert.equal(await remember.isChecked(), true, 'checked by default, as the API');
    assert.match(
      (await setup.locator('.hint', { hasText: 'OS keyring' }).textContent()) ?? '',
      /SKEP_SECRETS_PASSWORD/,
    );
    await remember.uncheck();
    const unsaved = nextRequest(page, 'POST', '/api/v1beta/secrets');
    await setup.getByRole('button', { name: 'Set up' }).click();
    assert.deepEqual((await unsaved).postDataJSON(), {
      provider_type: 'encrypted',
      password: PASSWORD,
      save_password: false,
    });
    await setup.getByRole('status').filter({ hasText: 'the password was not saved anywhere' }).waitFor();
    assert.deepEqual(filesNamed(ui.home, 'secrets-password'), [], 'no password file');
    // skep serve itself cannot open the store now, and the page says why.
    await page.getByRole('alert').filter({ hasText: 'Could not list the secrets' }).waitFor();

    // Again with the box checked: saved, in the 0600 file the message names; the store opens.
    await setup.locator('input[type=password]').fill(PASSWORD);
    await remember.check();
    const saved = nextRequest(page, 'POST', '/api/v1beta/secrets');
    await setup.getByRole('button', { name: 'Reconfigure' }).click();
    assert.equal((await saved).postDataJSON().save_password, true);
    const notice = setup.getByRole('status').filter({ hasText: 'the password was saved to' });
    await notice.waitFor();
    const [file] = filesNamed(ui.home, 'secrets-password');
    assert.ok(file !== undefined, 'a password file');
    assert.ok(((await notice.textContent()) ?? '').includes(file), 'the message names the file');
    assert.equal(statSync(file).mode & 0o777, 0o600);
    assert.equal(readFileSync(file, 'utf8').trim(), PASSWORD);
    await page.getByText('No secrets', { exact: true }).waitFor();

    // Run from the catalog with "resume it when skep serve starts" unchecked.
    const registry = join(ui.home, 'registry.json');
    writeFileSync(
      registry,
      JSON.stringify({
        version: '1.0.0',
        meta: { last_updated: '2026-11-01T00:00:00Z' },
        data: {
          servers: [
            {
              name: ENTRY,
              title: 'Echo (fixture)',
              description: 'Echoes messages back.',
              version: '1.0.0',
              packages: [
                {
                  registryType: 'oci',
                  identifier: `cmd://${process.execPath}`,
                  transport: { type: 'stdio' },
                  packageArguments: [{ type: 'positional', value: ECHO_SERVER }],
                },
              ],
            },
          ],
        },
      }),
    );
    const configured = await ui.call('PUT', '/api/v1beta/registry/default', { local_path: registry });
    assert.equal(configured.status, 200, await configured.clone().text());
    await page.goto(`${api}/catalog/${encodeURIComponent(ENTRY)}`);
    const form = page.getByRole('form', { name: `Run ${ENTRY}` });
    const resume = form.getByRole('checkbox', { name: 'Resume it when skep serve starts' });
    assert.equal(await resume.isChecked(), true, 'on by default');
    await resume.uncheck();
    const create = nextRequest(page, 'POST', '/api/v1beta/workloads');
    await form.getByRole('button', { name: 'Run' }).click();
    assert.equal((await create).postDataJSON().autostart, false);
    const progress = page.getByRole('region', { name: 'Progress' });
    await progress.locator('.badge', { hasText: 'running' }).waitFor({ timeout: 90_000 });
    const read = async () =>
      (await (await ui.call('GET', '/api/v1beta/workloads?all=true')).json()) as {
        workloads: Array<{ name: string; autostart: boolean; started_at: string }>;
      };
    const before = (await read()).workloads.find((w) => w.name === 'echo');
    assert.equal(before?.autostart, false);

    // The detail says so; the Edit form turns it on, sending only that: nothing restarts.
    await page.goto(`${api}/servers/echo`);
    const when = page
      .locator('.config div')
      .filter({ has: page.getByText('When skep serve starts', { exact: true }) });
    assert.equal(await when.locator('dd').textContent(), 'stays stopped until started');
    await page.getByRole('button', { name: 'Edit' }).click();
    const edit = page.getByRole('form', { name: 'Edit the server' });
    const editResume = edit.getByRole('checkbox', { name: 'Resume it when skep serve starts' });
    assert.equal(await editResume.isChecked(), false, 'the form shows the stored choice');
    await editResume.check();
    const put = nextRequest(page, 'PUT', '/api/v1beta/workloads/echo');
    await edit.getByRole('button', { name: 'Save' }).click();
    assert.deepEqual((await put).postDataJSON(), { autostart: true });
    await page.getByRole('status').filter({ hasText: 'Nothing was restarted' }).waitFor();
    await when.locator('dd', { hasText: 'resumed if it was running' }).waitFor();
    const after = (await read()).workloads.find((w) => w.name === 'echo');
    assert.equal(after?.autostart, true);
    assert.equal(after?.started_at, before?.started_at, 'the server was not restarted');

    assert.deepEqual(
      // 404: no provider before the setup; 400: the store locked on purpose.
      ui.problems.filter((p) => !/status of (400|404)/.test(p)),
      [],
      'no console errors but the two answers the test provoked',
    );
    assert.deepEqual(ui.offLoopback, [], 'no request left loopback');
  },
);
