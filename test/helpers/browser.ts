/** Debian's Chromium driven by playwright-core, for the tests that check pages in a real browser. */
import { existsSync } from 'node:fs';
import type { TestContext } from 'node:test';
import { type Browser, chromium } from 'playwright-core';
import { requireService } from './services.js';

const CHROMIUM = process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium';

/** False (with a loud skip, or a failure under CI) when Chromium is not installed. */
export function chromiumAvailable(t: TestContext): boolean {
  return requireService(
    t,
    'Chromium',
    existsSync(CHROMIUM),
    'apt-get install chromium, or set CHROMIUM_PATH',
  );
}

/** A headless Chromium that never reaches the network on its own; closed after the test. */
export async function launchChromium(t: TestContext): Promise<Browser> {
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    // Under a full test run's load a launch can be slow; a stuck one fails the test by name
    // well within its timeout instead of at Playwright's default of 180 s.
    timeout: 60_000,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  t.after(() => browser.close());
  return browser;
}
