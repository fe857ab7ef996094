/**
 * The web UI: gzipped size of what the first page loads (HTML, script,
 * stylesheet; target ≤ 150 KB) and time to a usable Servers page in Chromium on loopback
 * (navigation start → the workload table rendered from the API; target ≤ 500 ms median over
 * ≥ 10 loads), cold (a fresh browser context: empty cache) and warm (the same context again:
 * the hashed assets come from the cache). `skep serve` runs from the sources with the UI
 * built into dist/ui/, one echo workload running so the table has a row. Prints one JSON object.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { chromium } from 'playwright-core';
import { buildUi } from '../scripts/bundle-ui.mjs';
import { loadConfig } from '../src/config/index.js';

const LOADS = Number(process.env['BENCH_RUNS'] ?? 12);
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DIST_UI = join(ROOT, 'dist', 'ui');
const ECHO = join(ROOT, 'bench', 'fixtures', 'echo-server.mjs');
const CHROMIUM = process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium';

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return Math.round((s[Math.floor((s.length - 1) / 2)] ?? 0) * 10) / 10;
};
const p90 = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return Math.round((s[Math.min(s.length - 1, Math.ceil(0.9 * s.length) - 1)] ?? 0) * 10) / 10;
};

async function startServe(
  env: NodeJS.ProcessEnv,
  discoveryFile: string,
): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', join(ROOT, 'src/control/cli/main.ts'), 'serve', '--port', '0'],
    {
      env,
      stdio: 'ignore',
    },
  );
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`skep serve exited with ${child.exitCode}`);
    try {
      const info = JSON.parse(readFileSync(discoveryFile, 'utf8')) as { url: string; pid: number };
      if (info.pid === child.pid) return { child, url: info.url };
    } catch {
      // not written yet
    }
    await sleep(50);
  }
  child.kill('SIGKILL');
  throw new Error('skep serve did not start within 60 s');
}

const { script, style } = await buildUi(DIST_UI);
const html = readFileSync(join(DIST_UI, 'index.html'));
const js = readFileSync(join(DIST_UI, 'assets', script));
const css = readFileSync(join(DIST_UI, 'assets', style));
const gz = (b: Buffer) => gzipSync(b, { level: 6 }).length;
const firstPage = gz(html) + gz(js) + gz(css);

const home = mkdtempSync(join(tmpdir(), 'skep-bench-ui-'));
const env: NodeJS.ProcessEnv = { ...process.env, SKEP_HOME: home, SKEP_LOG_LEVEL: 'silent' };
const config = loadConfig(env);
const serve = await startServe(env, config.paths.discoveryFile);
const token = readFileSync(config.paths.apiTokenFile, 'utf8').trim();
const auth = { authorization: `Bearer ${token}` };
const browser = await chromium.launch({
  executablePath: CHROMIUM,
  args: [
    '--no-sandbox',
    '--disable-gpu',
    '--no-first-run',
    '--disable-background-networking',
    '--disable-component-update',
  ],
});
try {
  const created = await fetch(`${serve.url}/api/v1beta/workloads`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'echo', image: `cmd://${process.execPath}`, cmd_arguments: [ECHO] }),
  });
  if (created.status !== 201)
    throw new Error(`creating the workload: ${created.status} ${await created.text()}`);

  // One login; its session cookie and the CSRF token the UI keeps (localStorage) are given to
  // every fresh context.
  const login = await browser.newContext();
  const loginPage = await login.newPage();
  const link = (await (
    await fetch(`${serve.url}/api/v1beta/auth/login-link`, { method: 'POST', headers: auth })
  ).json()) as {
    url: string;
  };
  await loginPage.goto(link.url);
  await loginPage.waitForURL(`${serve.url}/`);
  await loginPage.waitForFunction("localStorage.getItem('skep-csrf') !== null");
  // Wait until the workload runs, so every load renders the same table.
  await loginPage.goto(`${serve.url}/servers`);
  await loginPage
    .locator('tr[data-server="echo"] .badge', { hasText: 'running' })
    .waitFor({ timeout: 60_000 });
  const storageState = await login.storageState();
  await login.close();

  /** Milliseconds from navigation start to the table row, measured in the page. */
  const load = async (page: import('playwright-core').Page): Promise<number> => {
    await page.goto(`${serve.url}/servers`, { waitUntil: 'commit' });
    const handle = await page.waitForFunction(
      // A function, not a string: the page's CSP forbids eval. (Typed by hand: no DOM lib here.)
      () =>
        (globalThis as unknown as { document: { querySelector(s: string): unknown } }).document.querySelector(
          'tr[data-server="echo"]',
        ) === null
          ? false
          : performance.now(),
      undefined,
      { polling: 'raf', timeout: 30_000 },
    );
    return (await handle.jsonValue()) as number;
  };
  const cold: number[] = [];
  const warm: number[] = [];
  for (let i = 0; i < LOADS; i++) {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, storageState });
    const page = await context.newPage();
    cold.push(await load(page));
    warm.push(await load(page));
    await context.close();
  }
  process.stdout.write(
    `${JSON.stringify({
      bundle: {
        html_gzip_bytes: gz(html),
        script_gzip_bytes: gz(js),
        style_gzip_bytes: gz(css),
        script_raw_bytes: js.length,
        first_page_gzip_bytes: firstPage,
        target_gzip_bytes: 150 * 1024,
        within_target: firstPage <= 150 * 1024,
      },
      servers_page: {
        loads: LOADS,
        cold_median_ms: median(cold),
        cold_p90_ms: p90(cold),
        warm_median_ms: median(warm),
        warm_p90_ms: p90(warm),
        target_median_ms: 500,
        within_target: median(cold) <= 500,
        note: 'navigation start → workload row rendered, in the page (performance.now); skep serve from the sources via tsx; a shared 2-core machine',
      },
    })}\n`,
  );
} finally {
  await browser.close();
  await fetch(`${serve.url}/api/v1beta/workloads/echo`, { method: 'DELETE', headers: auth }).catch(
    () => undefined,
  );
  // The runner is its own process: wait until it is gone before stopping the server.
  for (let i = 0; i < 300; i++) {
    const list = await fetch(`${serve.url}/api/v1beta/workloads?all=true`, { headers: auth })
      .then((r) => r.json() as Promise<{ workloads: unknown[] }>)
      .catch(() => ({ workloads: [] }));
    if (list.workloads.length === 0) break;
    await sleep(100);
  }
  serve.child.kill('SIGTERM');
  await once(serve.child, 'exit');
  rmSync(home, { recursive: true, force: true });
}
