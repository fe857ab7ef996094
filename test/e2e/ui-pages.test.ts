/**
 * The other pages of the web UI in Chromium against a real `skep serve`, with a
 * temporary HOME (client configurations are looked up and written there, never in the real
 * one): Secrets (set up the provider, add a secret, listed without its value, update, delete,
 * a refusal shown), Clients (register and unregister Cursor in a group), Groups, Skills
 * (validate a directory, install a local build by reference and from the catalog, uninstall),
 * Registry source; keyboard, themes and logout; no console error and no request off loopback;
 * a screenshot of each main page (light theme, 1280×800; docs/screenshots/ under
 * SKEP_UPDATE_SCREENSHOTS=1).
 */
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { chromiumAvailable } from '../helpers/browser.js';
import { ECHO_SERVER, startUiSession } from '../helpers/ui.js';
import { waitFor } from '../helpers/wait.js';

const SECRET_VALUE = 'do-not-show-me-0xC0FFEE';

test(
  'Secrets, Clients, Groups, Skills and Registry source pages; keyboard; themes',
  { timeout: 300_000 },
  async (t) => {
    if (!chromiumAvailable(t)) return;
    const ui = await startUiSession(t, {
      beforeServe: (home) => mkdirSync(join(home, 'user', '.cursor'), { recursive: true }),
    });
    const { page, api } = ui;
    const nav = (name: string) =>
      page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name, exact: true });

    // Keyboard: the first Tab reaches the skip link, which moves focus to the content.
    await page.getByRole('heading', { name: 'Servers' }).waitFor();
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate('document.activeElement?.textContent'), 'Skip to content');

    // Secrets: no provider yet → set one up, add a secret; its value is never in the page.
    await nav('Secrets').click();
    await page.getByText('No secrets provider yet').waitFor();
    const provider = page.getByRole('form', { name: 'Secrets provider' });
    await provider.locator('input[type=password]').fill('ui-pages-password-1234');
    await provider.getByRole('button', { name: 'Set up' }).click();
    const add = page.getByRole('form', { name: 'Add a secret' });
    await add.getByRole('textbox', { name: /Name/ }).fill('github-token');
    await add.locator('input[type=password]').fill(SECRET_VALUE);
    await add.getByRole('button', { name: 'Add' }).click();
    const row = page.locator('tr[data-secret="github-token"]');
    await row.waitFor();
    assert.equal(await row.locator('td').nth(1).textContent(), 'hidden');
    assert.equal(await add.locator('input[type=password]').inputValue(), '', 'the value field is emptied');
    assert.ok(!(await page.content()).includes(SECRET_VALUE), 'the value is nowhere in the page');
    await ui.screenshot('secrets');
    // Update, then delete.
    await row.getByRole('button', { name: 'Update' }).click();
    const update = page.getByRole('form', { name: 'Update github-token' });
    await update.locator('input[type=password]').fill('another-value');
    await update.getByRole('button', { name: 'Update' }).click();
    await page.getByRole('status').filter({ hasText: 'Updated github-token' }).waitFor();
    page.once('dialog', (dialog) => void dialog.accept());
    await row.getByRole('button', { name: 'Delete github-token' }).click();
    await page.getByText('No secrets', { exact: true }).waitFor();
    // A name that exists already: the API's refusal (409) is shown, with its code.
    for (let i = 0; i < 2; i++) {
      await add.getByRole('textbox', { name: /Name/ }).fill('twice');
      await add.locator('input[type=password]').fill('x');
      await add.getByRole('button', { name: 'Add' }).click();
      if (i === 0) await page.locator('tr[data-secret="twice"]').waitFor();
    }
    const refused = page.getByRole('alert').filter({ hasText: 'The secret was not changed' });
    await refused.waitFor();
    assert.match((await refused.textContent()) ?? '', /twice/);

    // Groups: create one.
    await nav('Groups').click();
    const create = page.getByRole('form', { name: 'Create a group' });
    await create.getByRole('textbox', { name: /Name/ }).fill('research');
    await create.getByRole('button', { name: 'Create' }).click();
    await page.locator('tr[data-group="research"]').waitFor();
    await ui.screenshot('groups');

    // Clients: register Cursor in "research" (its config in the temporary HOME gets Skep's entry), then unregister.
    await nav('Clients').click();
    await page.getByRole('combobox', { name: 'Group' }).selectOption('research');
    await page.getByRole('button', { name: 'Register cursor in research' }).click();
    await page.getByRole('status').filter({ hasText: 'Registered cursor in research' }).waitFor();
    const registrations = (await (await ui.call('GET', '/api/v1beta/clients')).json()) as Array<{
      name: string;
      groups: string[];
    }>;
    assert.deepEqual(registrations.find((r) => r.name === 'cursor')?.groups, ['research']);
    // The table refreshes after the status line; wait for the row to show the group.
    const groupsCell = page.locator('tr[data-client="cursor"] td').nth(2);
    await groupsCell.filter({ hasText: 'research' }).waitFor({ timeout: 10_000 });
    assert.equal(await groupsCell.textContent(), 'research');
    // Installed: the server looks in the temporary HOME, where the test made ~/.cursor.
    assert.equal(await page.locator('tr[data-client="cursor"] td').nth(1).textContent(), 'yes');
    await ui.screenshot('clients');
    await page.getByRole('button', { name: 'Unregister cursor from research' }).click();
    await page.getByRole('status').filter({ hasText: 'Unregistered cursor from research' }).waitFor();
    assert.deepEqual(
      ((await (await ui.call('GET', '/api/v1beta/clients')).json()) as Array<{ name: string }>).filter(
        (r) => r.name === 'cursor',
      ),
      [],
    );

    // Groups: a group that holds a server is deleted only with it; the question names it and
    // Cancel changes nothing (the server is not moved to default).
    const member = await ui.call('POST', '/api/v1beta/workloads', {
      name: 'member',
      image: `cmd://${process.execPath}`,
      cmd_arguments: [ECHO_SERVER],
      group: 'research',
    });
    assert.equal(member.status, 201, await member.clone().text());
    await nav('Groups').click();
    const researchRow = page.locator('tr[data-group="research"]');
    await researchRow.getByText('member').waitFor();
    const question = new Promise<string>((resolve) =>
      page.once('dialog', (dialog) => {
        resolve(dialog.message());
        void dialog.dismiss();
      }),
    );
    await researchRow.getByRole('button', { name: 'Delete the group research' }).click();
    assert.equal(
      await question,
      'The group research holds a server: member.\nDelete the group and that server? Cancel changes nothing.',
    );
    const memberAfterCancel = (await (await ui.call('GET', '/api/v1beta/workloads/member')).json()) as {
      group: string;
    };
    assert.equal(memberAfterCancel.group, 'research');
    page.once('dialog', (dialog) => void dialog.accept());
    await researchRow.getByRole('button', { name: 'Delete the group research' }).click();
    await page.getByRole('status').filter({ hasText: 'Deleted the group research and member.' }).waitFor();
    assert.equal((await ui.call('GET', '/api/v1beta/workloads/member')).status, 404);
    assert.equal(await researchRow.count(), 0);

    // Skills: validate a directory (good and bad), install a local build, uninstall it.
    const skillDir = join(ui.home, 'skills', 'ui-skill');
    mkdirSync(skillDir, { recursive: true });
    writeFileSync(
      join(skillDir, 'SKILL.md'),
      [
        '---',
        'name: ui-skill',
        'description: A skill for the UI test.',
        'version: 1.0.0',
        '---',
        '# ui-skill',
        '',
      ].join('\n'),
    );
    await nav('Skills').click();
    await page.getByText('No skills installed').waitFor();
    const validate = page.getByRole('form', { name: 'Validate a skill' });
    await validate.getByRole('textbox', { name: /Directory/ }).fill(skillDir);
    await validate.getByRole('button', { name: 'Validate' }).click();
    await validate.getByRole('status').filter({ hasText: 'Valid' }).waitFor();
    await validate.getByRole('textbox', { name: /Directory/ }).fill(join(ui.home, 'skills'));
    await validate.getByRole('button', { name: 'Validate' }).click();
    await validate
      .getByText(/Not valid|That did not work/)
      .first()
      .waitFor();
    const built = await ui.call('POST', '/api/v1beta/skills/build', { path: skillDir, tag: 'ui-skill' });
    assert.equal(built.status, 200, await built.clone().text());
    const install = page.getByRole('form', { name: 'Install a skill' });
    await install.getByRole('textbox', { name: /Reference/ }).fill('ui-skill');
    await install.getByRole('button', { name: 'Install' }).click();
    await page
      .getByRole('cell', { name: /ui-skill/ })
      .first()
      .waitFor();
    await ui.screenshot('skills');
    page.once('dialog', (dialog) => void dialog.accept());
    await page.getByRole('button', { name: 'Uninstall ui-skill' }).click();
    await page.getByText('No skills installed').waitFor();

    // Install from the catalog: a registry (a local file) that lists the local build as a skill.
    const skillRegistry = join(ui.home, 'skills-registry.json');
    writeFileSync(
      skillRegistry,
      JSON.stringify({
        version: '1.0.0',
        meta: { last_updated: '2026-11-01T00:00:00Z' },
        data: {
          servers: [],
          skills: [
            {
              namespace: 'io.example',
              name: 'ui-skill',
              description: 'A skill for the UI test.',
              version: '1.0.0',
              packages: [{ registryType: 'oci', identifier: 'ui-skill' }],
            },
          ],
        },
      }),
    );
    const pointed = await ui.call('PUT', '/api/v1beta/registry/default', { local_path: skillRegistry });
    assert.equal(pointed.status, 200, await pointed.clone().text());
    await nav('Catalog').click();
    await page.getByRole('tab', { name: 'Skills' }).click();
    const card = page.getByRole('list', { name: 'Catalog skills' }).locator('li', { hasText: 'ui-skill' });
    await card.getByRole('button', { name: 'Install' }).click();
    await page.getByRole('status').filter({ hasText: 'Installed ui-skill' }).waitFor();
    await nav('Skills').click();
    await page.getByRole('button', { name: 'Uninstall ui-skill' }).waitFor();
    const back = await ui.call('PUT', '/api/v1beta/registry/default', {});
    assert.equal(back.status, 200, 'back to the built-in catalog');

    // The built-in catalog: servers, and the skills tab.
    await nav('Catalog').click();
    await page.getByRole('list', { name: 'Catalog servers' }).locator('li').first().waitFor();
    await ui.screenshot('catalog');
    await page.getByRole('tab', { name: 'Skills' }).click();
    await page
      .getByRole('list', { name: 'Catalog skills' })
      .locator('li')
      .first()
      .or(page.getByText('The registry has no skills'))
      .waitFor();

    // Registry source: the built-in catalog, and a file source refused with the API's reason.
    await nav('Registry source').click();
    await page.getByText('built-in catalog').first().waitFor();
    await ui.screenshot('registry-source');
    const source = page.getByRole('form', { name: 'Change the registry source' });
    await source.getByRole('combobox', { name: 'Source' }).selectOption('local_path');
    const notRegistry = join(ui.home, 'not-a-registry.json');
    writeFileSync(notRegistry, '{"hello": 1}');
    await source.getByRole('textbox', { name: /Absolute path/ }).fill(notRegistry);
    await source.getByRole('button', { name: 'Save' }).click();
    await page.getByRole('alert').filter({ hasText: 'The source was not changed' }).waitFor();

    // Catalog skills tab and the playground's empty state load too.
    await nav('Playground').click();
    await page.getByText('No server is running').waitFor();

    // Themes: the toggle switches to dark and back; the choice survives a reload.
    const toggle = page.getByRole('button', { name: /^Theme:/ });
    await toggle.click();
    await page.getByRole('button', { name: 'Theme: light' }).waitFor();
    await toggle.click();
    await page.getByRole('button', { name: 'Theme: dark' }).waitFor();
    assert.equal(await page.evaluate('document.documentElement.dataset.theme'), 'dark');
    const darkBg = await page.evaluate('getComputedStyle(document.body).backgroundColor');
    await page.reload();
    await page.getByRole('button', { name: 'Theme: dark' }).waitFor();
    assert.equal(await page.evaluate('document.documentElement.dataset.theme'), 'dark');
    await page.getByRole('button', { name: /^Theme:/ }).click(); // dark → system (light here)
    // The page re-renders after the click: wait for the new state, then for its colours.
    await page.getByRole('button', { name: /^Theme: system/ }).waitFor();
    assert.equal(await page.evaluate('document.documentElement.dataset.theme ?? ""'), '');
    await page.waitForFunction(
      `getComputedStyle(document.body).backgroundColor !== ${JSON.stringify(darkBg)}`,
      undefined,
      { timeout: 5_000 },
    );
    const lightBg = await page.evaluate('getComputedStyle(document.body).backgroundColor');
    assert.notEqual(darkBg, lightBg);
    // Following the system: it turning dark turns the page dark, without a reload.
    await page.emulateMedia({ colorScheme: 'dark' });
    await waitFor(
      'the page to follow the system to dark',
      async () => (await page.evaluate('getComputedStyle(document.body).backgroundColor')) === darkBg,
      5_000,
    );
    await page.emulateMedia({ colorScheme: 'light' });

    // Logging out ends the session: the page says how to log in again.
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.getByText('You are logged out.').waitFor();
    const after = await page.goto(`${api}/secrets`);
    assert.equal(after?.status(), 401);
    await page.getByRole('heading', { name: 'Log in to Skep' }).waitFor();

    assert.deepEqual(
      ui.problems.filter((p) => !/status of (400|401|404|409|502)/.test(p)),
      [],
      'no console errors but the refusals the test provoked',
    );
    assert.deepEqual(ui.offLoopback, [], 'no request left loopback');
  },
);
