/**
 * The web UI in a real headless Chromium against a real `skep serve` (from the sources, with
 * the UI built into dist/ui/ by scripts/bundle-ui.mjs): a temporary SKEP_HOME and HOME (so
 * client registrations write into a throw-away home), a browser logged in through a one-time
 * login link, and a record of what the page did wrong: console errors, uncaught exceptions,
 * failed requests, and any request that left loopback.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { BrowserContext, Page } from 'playwright-core';
import { loadConfig } from '../../src/config/index.js';
import { buildUi } from '../../scripts/bundle-ui.mjs';
import { launchChromium } from './browser.js';
import { type ServeProcess, startServe } from './cli.js';

/**
 * Where screenshots go: docs/screenshots/ (the README shows them) when SKEP_UPDATE_SCREENSHOTS=1,
 * else the test's temporary directory — every run takes them, but only an update rewrites the
 * committed images (ports and timestamps differ on every run).
 */
const DOC_SCREENSHOTS = fileURLToPath(new URL('../../docs/screenshots/', import.meta.url));
const UPDATE_SCREENSHOTS = process.env['SKEP_UPDATE_SCREENSHOTS'] === '1';
const DIST_UI = fileURLToPath(new URL('../../dist/ui/', import.meta.url));
export const ECHO_SERVER = fileURLToPath(new URL('../../bench/fixtures/echo-server.mjs', import.meta.url));

let built: Promise<unknown> | undefined;
/** Builds the UI once per test process (the server reads dist/ui/ when it starts). */
export function ensureUiBuilt(): Promise<unknown> {
  built ??= buildUi(DIST_UI);
  return built;
}

export interface UiSession {
  serve: ServeProcess;
  api: string;
  home: string;
  userHome: string;
  context: BrowserContext;
  page: Page;
  /** Console errors, page errors and failed requests, as text. */
  problems: string[];
  /** Every request URL whose host is not loopback. */
  offLoopback: string[];
  /** A fetch to the API with the bearer token. */
  call(method: string, path: string, body?: unknown): Promise<Response>;
  /** Writes <name>.png (full page) into docs/screenshots/ under SKEP_UPDATE_SCREENSHOTS=1, else a temporary directory. */
  screenshot(name: string): Promise<void>;
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);

/** Starts skep serve and a logged-in Chromium page (light theme, 1280×800). */
export async function startUiSession(
  t: TestContext,
  options: { env?: NodeJS.ProcessEnv; beforeServe?: (home: string) => void } = {},
): Promise<UiSession> {
  await ensureUiBuilt();
  const home = mkdtempSync(join(tmpdir(), 'skep-ui-'));
  const userHome = join(home, 'user');
  mkdirSync(userHome);
  t.after(() => rmSync(home, { recursive: true, force: true }));
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    SKEP_HOME: join(home, 'skep'),
    HOME: userHome,
    XDG_CONFIG_HOME: '',
    APPDATA: '',
    CODEX_HOME: '',
    ...options.env,
  };
  options.beforeServe?.(home);
  const config = loadConfig(env);
  const serve = await startServe(t, env, config.paths.discoveryFile);
  t.after(() => serve.stop());
  const api = serve.url;

  const browser = await launchChromium(t);
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, colorScheme: 'light' });
  const page = await context.newPage();
  const problems: string[] = [];
  const offLoopback: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(`console: ${message.text()}`);
  });
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  page.on('requestfailed', (request) => {
    // A navigation (page.goto) aborts the page's polls in flight: not a failure of the page.
    const reason = request.failure()?.errorText ?? '';
    if (reason !== 'net::ERR_ABORTED')
      problems.push(`request failed: ${request.method()} ${request.url()} (${reason})`);
  });
  context.on('request', (request) => {
    const url = new URL(request.url());
    if ((url.protocol === 'http:' || url.protocol === 'https:') && !LOOPBACK.has(url.hostname))
      offLoopback.push(request.url());
  });

  const call = (method: string, path: string, body?: unknown) =>
    fetch(`${api}${path}`, {
      method,
      headers: Object.assign(
        {},
        serve.auth,
        body === undefined ? {} : { 'content-type': 'application/json' },
      ),
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  const minted = await call('POST', '/api/v1beta/auth/login-link');
  const { url } = (await minted.json()) as { url: string };
  await page.goto(url);
  // The login page forwards to the UI with the CSRF token, which the UI keeps; wait for that
  // before the test navigates elsewhere.
  await page.waitForURL(`${api}/`);
  await page.waitForFunction("localStorage.getItem('skep-csrf') !== null");

  return {
    serve,
    api,
    home,
    userHome,
    context,
    page,
    problems,
    offLoopback,
    call,
    screenshot: async (name: string) => {
      const dir = UPDATE_SCREENSHOTS ? DOC_SCREENSHOTS : join(home, 'screenshots');
      mkdirSync(dir, { recursive: true });
      await page.screenshot({ path: join(dir, `${name}.png`), fullPage: true });
    },
  };
}
