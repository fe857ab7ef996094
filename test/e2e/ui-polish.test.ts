/**
 * The web UI's finish in Chromium against a real `skep serve`: a log pane opens at its newest
 * line and follows new ones until the reader scrolls up; the Servers page fits a 390 px phone
 * screen without sideways scrolling; URLs stay on one line (whole in their tooltip); a stopped
 * workload's URL is not offered for copying; a spent login link gets a page that says what to
 * do in a browser and the JSON error otherwise.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { Locator } from 'playwright-core';
import { chromiumAvailable } from '../helpers/browser.js';
import { startUiSession } from '../helpers/ui.js';

const CHATTY_SERVER = fileURLToPath(new URL('../fixtures/mcp/chatty-server.mjs', import.meta.url));

/** The log pane's scroll position: how far its end is below what it shows, and whether it overflows. */
function paneScroll(
  pane: Locator,
): Promise<{ below: number; overflows: boolean; top: number; last: number }> {
  return pane.evaluate((el) => {
    const numbers = [...(el.textContent ?? '').matchAll(/chatty log line (\d+)/g)].map((m) => Number(m[1]));
    return {
      below: el.scrollHeight - el.scrollTop - el.clientHeight,
      overflows: el.scrollHeight > el.clientHeight,
      top: el.scrollTop,
      last: numbers.length === 0 ? 0 : Math.max(...numbers),
    };
  });
}

/**
 * Waits until the pane shows the log line after `last` (the server adds one every 200 ms; the
 * page polls every 2 s, fewer lines than the tail of 200 it reads).
 */
async function waitForLineAfter(pane: Locator, last: number): Promise<void> {
  await pane.filter({ hasText: new RegExp(`chatty log line ${last + 1}\\b`) }).waitFor({ timeout: 30_000 });
}

/** The URL element is laid out as a single line (no break inside the address). */
async function urlOnOneLine(url: Locator): Promise<boolean> {
  return url.evaluate((el) => {
    const lineHeight = parseFloat(el.ownerDocument.defaultView?.getComputedStyle(el).lineHeight ?? '');
    return el.getClientRects().length === 1 && el.getBoundingClientRect().height < lineHeight * 1.5;
  });
}

test(
  'log panes open at the newest line and follow it; 390 px without sideways scroll; one-line URLs; no Copy for a stopped server',
  { timeout: 240_000 },
  async (t) => {
    if (!chromiumAvailable(t)) return;
    const ui = await startUiSession(t);
    const { page, api } = ui;
    const created = await ui.call('POST', '/api/v1beta/workloads', {
      name: 'chatty',
      image: `cmd://${process.execPath}`,
      cmd_arguments: [CHATTY_SERVER],
    });
    assert.equal(created.status, 201, await created.clone().text());

    // The list at desktop width: the URL on one line, its whole text in the tooltip, with Copy.
    await page.goto(`${api}/servers`);
    const row = page.locator('tr[data-server="chatty"]');
    await row.locator('.badge', { hasText: 'running' }).waitFor({ timeout: 60_000 });
    const rowUrl = row.locator('td.url code');
    const shown = (await rowUrl.textContent()) ?? '';
    assert.match(shown, /^http:\/\/127\.0\.0\.1:\d+\//);
    assert.equal(await rowUrl.getAttribute('title'), shown, 'the tooltip holds the whole URL');
    assert.ok(await urlOnOneLine(rowUrl), 'the URL is not broken across lines');
    await row.getByRole('button', { name: 'Copy the URL of chatty' }).waitFor();

    // The detail page: the server log opens at its newest line (more than the pane can show).
    await page.goto(`${api}/servers/chatty`);
    const pane = page.locator('pre.log');
    await pane.filter({ hasText: /chatty log line \d+/ }).waitFor({ timeout: 30_000 });
    const opened = await paneScroll(pane);
    assert.ok(opened.overflows, 'the log is longer than the pane (else scrolling proves nothing)');
    assert.ok(opened.below <= 1, `the pane opens at its end (${opened.below}px below)`);
    // It follows: the next poll brings newer lines, and the pane is at its end again.
    await waitForLineAfter(pane, opened.last);
    const followed = await paneScroll(pane);
    assert.ok(followed.last > opened.last);
    assert.ok(followed.below <= 1, `the pane follows new lines (${followed.below}px below)`);
    // Scrolled up by the reader, it stays there while new lines arrive.
    await pane.evaluate((el) => {
      el.scrollTop = 0;
    });
    await waitForLineAfter(pane, followed.last);
    const reading = await paneScroll(pane);
    assert.equal(reading.top, 0, 'the pane does not pull a reader who scrolled up');
    // Back at the end, it follows again.
    await pane.evaluate((el) => {
      el.scrollTop = el.scrollHeight;
    });
    await waitForLineAfter(pane, reading.last);
    assert.ok((await paneScroll(pane)).below <= 1, 'back at the end, the pane follows again');

    // A phone: 390 px wide, the list has no horizontal scroll and the URL still one line.
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(`${api}/servers`);
    await row.locator('.badge', { hasText: 'running' }).waitFor();
    const width = Number(await page.evaluate('document.documentElement.scrollWidth'));
    assert.ok(width <= 390, `the page is ${width}px wide at a 390px viewport`);
    assert.ok(await urlOnOneLine(rowUrl), 'the URL is not broken across lines at 390 px');
    await ui.screenshot('servers-phone');
    await page.setViewportSize({ width: 1280, height: 800 });

    // Stopped: the URL answers nothing, so it is shown without a Copy button, in the list and the detail.
    assert.equal((await ui.call('POST', '/api/v1beta/workloads/chatty/stop')).status, 202);
    await row.locator('.badge', { hasText: 'stopped' }).waitFor({ timeout: 30_000 });
    await row.locator('td.url code').waitFor();
    assert.equal(await row.getByRole('button', { name: /^Copy/ }).count(), 0, 'no Copy for a stopped server');
    await page.goto(`${api}/servers/chatty`);
    await page.locator('.badge', { hasText: 'stopped' }).first().waitFor();
    await page.locator('p.url code').waitFor();
    assert.equal(await page.getByRole('button', { name: 'Copy the URL' }).count(), 0);

    assert.deepEqual(ui.problems, [], 'no console errors or failed requests');
    assert.deepEqual(ui.offLoopback, [], 'no request left loopback');
  },
);

test('a used or expired login link: a page that says to run skep ui for a browser, the JSON error for an API client', async (t) => {
  if (!chromiumAvailable(t)) return;
  const ui = await startUiSession(t);
  const { api } = ui;
  const minted = await ui.call('POST', '/api/v1beta/auth/login-link');
  const { url } = (await minted.json()) as { url: string };
  const html = { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' };
  assert.equal((await fetch(url, { headers: html })).status, 200, 'the first use logs in');

  // Used: a browser gets a page (no script) that says what happened and what to do.
  const spent = await fetch(url, { headers: html });
  assert.equal(spent.status, 401);
  assert.match(spent.headers.get('content-type') ?? '', /^text\/html/);
  const csp = spent.headers.get('content-security-policy') ?? '';
  assert.match(csp, /default-src 'none'/);
  assert.doesNotMatch(csp, /unsafe-inline/);
  const text = await spent.text();
  assert.match(text, /already been used, has expired/);
  assert.match(text, /run <code>skep ui<\/code>/);
  assert.doesNotMatch(text, /<script|style=/);

  // An API client (JSON, or no Accept) gets the API's error object, as before.
  for (const headers of [{ accept: 'application/json' }, {}]) {
    const res = await fetch(url, { headers });
    assert.equal(res.status, 401);
    assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
    const body = (await res.json()) as { code: string; message: string };
    assert.equal(body.code, 'unauthorized');
    assert.match(body.message, /run `skep ui` for a new one/);
  }
  // A mistyped ticket reads the same.
  const unknown = await fetch(`${api}/auth/login?ticket=not-a-ticket`, { headers: html });
  assert.equal(unknown.status, 401);
  assert.match(await unknown.text(), /skep ui/);

  // In Chromium: the page renders its heading and advice.
  const page = await ui.context.newPage();
  const response = await page.goto(url);
  assert.equal(response?.status(), 401);
  await page.getByRole('heading', { name: 'This login link no longer works' }).waitFor();
  await page.getByText('For a new link, run skep ui').waitFor();
});
