/**
 * Every page of the web UI at a phone's width (390 × 844) in Chromium against a real
 * `skep serve`, with a running workload so that tables have rows: no page scrolls sideways (the
 * Servers list has its own check in ui-polish.test.ts).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { chromiumAvailable } from '../helpers/browser.js';
import { ECHO_SERVER, startUiSession } from '../helpers/ui.js';

test(
  '390 px: the detail, catalog, playground, secrets, clients, groups, skills and registry pages fit',
  { timeout: 240_000 },
  async (t) => {
    if (!chromiumAvailable(t)) return;
    const ui = await startUiSession(t);
    const { page, api } = ui;
    const created = await ui.call('POST', '/api/v1beta/workloads', {
      name: 'phone-echo-with-a-rather-long-name',
      image: `cmd://${process.execPath}`,
      cmd_arguments: [ECHO_SERVER],
    });
    assert.equal(created.status, 201, await created.clone().text());
    assert.equal(
      (await ui.call('POST', '/api/v1beta/groups', { name: 'a group with a long name' })).status,
      201,
    );
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(`${api}/servers`);
    await page
      .locator('tr[data-server="phone-echo-with-a-rather-long-name"] .badge', { hasText: 'running' })
      .waitFor({ timeout: 60_000 });

    const pages: [string, string][] = [
      ['/servers/phone-echo-with-a-rather-long-name', 'phone-echo-with-a-rather-long-name'],
      ['/catalog', 'Catalog'],
      ['/playground/phone-echo-with-a-rather-long-name', 'echo'],
      ['/secrets', 'Secrets'],
      ['/clients', 'Clients'],
      ['/groups', 'a group with a long name'],
      ['/skills', 'Skills'],
      ['/registry-source', 'Registry'],
    ];
    const wide: string[] = [];
    for (const [path, text] of pages) {
      await page.goto(`${api}${path}`);
      // The playground shows its tools as buttons; the other pages a visible text.
      const ready = path.startsWith('/playground/')
        ? page.getByRole('button', { name: text, exact: true })
        : page.getByText(text).first();
      await ready.waitFor({ timeout: 30_000 });
      await page.waitForLoadState('networkidle');
      const width = Number(await page.evaluate('document.documentElement.scrollWidth'));
      if (width > 390) {
        // What reaches past the screen's right edge (evaluated in the page).
        const culprits = await page.evaluate<string[]>(
          `[...document.querySelectorAll('body *')]
          .filter((el) => el.getBoundingClientRect().right > 391)
          .slice(0, 5)
          .map((el) => el.tagName.toLowerCase() + '.' + [...el.classList].join('.'))`,
        );
        wide.push(`${path}: ${width}px (${culprits.join(', ')})`);
      }
      await ui.screenshot(`phone${path.replace(/\//g, '-')}`);
    }
    assert.deepEqual(wide, [], 'pages wider than the 390 px screen');
  },
);
