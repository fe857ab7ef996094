/**
 * Opening a URL in the user's browser without putting the URL on a command line. A login
 * URL carries a credential (a one-time login ticket, an OAuth `state` and PKCE challenge),
 * and every account on the machine can read every process's arguments (`/proc/<pid>/cmdline`),
 * so the URL goes into a page in a folder only the user can read (0600 in a 0700 folder) that
 * forwards the browser to it (a meta refresh and a link, as Jupyter's `open_browser` does),
 * and the OS opener (`xdg-open`, `open`, `explorer`) gets only that page's path. A page is
 * removed after `REDIRECT_TTL_MS` by the process that wrote it while it runs, else by the next
 * open; what it holds is dead by then (login links live 60 s, an OAuth `state` one login).
 *
 * Only http(s) URLs are opened: an opener hands anything else to whatever the desktop
 * associates with it (`file:` runs a program, CVE-2025-6514). `authorizationEndpointRefusal`
 * is the stricter rule for an OAuth authorization endpoint that a remote party chose.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  closeSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  rmSync,
  statSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { SkepError } from './errors.js';
import { isLoopbackUrl } from './origin-guard.js';

/** A program to open URLs with instead of the platform's (`xdg-open`, `open`, `explorer`). */
const BROWSER_ENV = 'SKEP_BROWSER';
/** How long a redirect page stays on disk. */
export const REDIRECT_TTL_MS = 60_000;
const PAGE_NAME = /^open-[0-9a-f]{32}\.html$/;

export interface OpenUrlOptions {
  /** Folder for the redirect pages (created 0700): `open/` in Skep's state folder. */
  dir: string;
  env?: NodeJS.ProcessEnv;
  platform?: NodeJS.Platform;
  /** How long a page is kept, ms (default `REDIRECT_TTL_MS`). */
  ttlMs?: number;
}

export interface OpenResult {
  /** True when an opener program started. */
  opened: boolean;
  /** The redirect page given to the opener (when it started). */
  file?: string;
  /** Why nothing was opened (no display, the opener failed to start). */
  reason?: string;
  /** Nothing was opened because there is no display to open it on (not an error). */
  headless?: boolean;
}

function parse(value: string): URL | undefined {
  try {
    return new URL(value);
  } catch {
    return undefined;
  }
}

/** Why `value` may not be handed to a browser opener, or undefined when it is an http(s) URL. */
function browserUrlRefusal(value: string): string | undefined {
  const url = parse(value);
  if (url === undefined) return 'it is not an absolute URL';
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    return `its scheme is ${url.protocol} (only http and https URLs are opened)`;
  if (url.username !== '' || url.password !== '') return 'it carries credentials before the host';
  return undefined;
}

/**
 * Why an OAuth authorization endpoint is unusable, or undefined. RFC 6749 §3.1 requires TLS
 * for the authorization endpoint, as MCP 2025-06-18 "Communication Security" does for every
 * authorization server endpoint; plain http is accepted on loopback only, for development (as
 * the reference does). `allowHttp` is the user's explicit opt-in for a provider they configured
 * (the embedded server's `insecure_allow_http`).
 */
export function authorizationEndpointRefusal(value: string, allowHttp = false): string | undefined {
  const url = parse(value);
  if (url === undefined) return `"${value}" is not an absolute URL`;
  if (url.protocol === 'https:') return undefined;
  if (url.protocol === 'http:' && (allowHttp || isLoopbackUrl(url))) return undefined;
  return url.protocol === 'http:'
    ? `${url.origin} is plain http on a host that is not loopback (https is required)`
    : `its scheme is ${url.protocol} (https is required)`;
}

/** The opener program for this platform, or why there is none (a Linux box without a display). */
function openerFor(env: NodeJS.ProcessEnv, platform: NodeJS.Platform): string | { none: string } {
  const configured = env[BROWSER_ENV];
  if (configured !== undefined && configured !== '') return configured;
  if (platform === 'darwin') return 'open';
  if (platform === 'win32') return 'explorer';
  if (env['DISPLAY'] || env['WAYLAND_DISPLAY']) return 'xdg-open';
  return { none: 'no display (DISPLAY and WAYLAND_DISPLAY are unset)' };
}

/** Creates the folder 0700, or checks that an existing one is the user's own and closes it to others. */
function privateDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const stat = lstatSync(dir);
  if (!stat.isDirectory())
    throw new SkepError('forbidden', `${dir} is not a directory; not writing a login page there`);
  const uid = process.getuid?.();
  if (uid !== undefined && stat.uid !== uid)
    throw new SkepError('forbidden', `${dir} belongs to another user; not writing a login page there`);
  if ((stat.mode & 0o077) !== 0) chmodSync(dir, 0o700);
}

function sweep(dir: string, ttlMs: number, now: number): void {
  for (const name of readdirSync(dir)) {
    if (!PAGE_NAME.test(name)) continue;
    const file = join(dir, name);
    try {
      if (now - statSync(file).mtimeMs >= ttlMs) rmSync(file, { force: true });
    } catch {
      // removed meanwhile
    }
  }
}

const escapeHtml = (text: string): string => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** The page that forwards to `url` (HTML 5 "refresh" pragma; the link for a browser that ignores it). */
function redirectPage(url: string): string {
  const href = escapeHtml(url);
  return [
    '<!doctype html><html lang="en"><head><meta charset="utf-8">',
    '<meta name="referrer" content="no-referrer">',
    `<meta http-equiv="refresh" content="0;url=${href}">`,
    '<title>Opening Skep…</title></head>',
    `<body><p>Opening… If nothing happens, <a href="${href}">continue here</a>.</p></body></html>`,
  ].join('');
}

/** Writes the redirect page (0600, a new name: O_EXCL never follows a planted link) and returns its path. */
function writePage(dir: string, url: string): string {
  const file = join(dir, `open-${randomBytes(16).toString('hex')}.html`);
  const fd = openSync(file, 'wx', 0o600);
  try {
    writeSync(fd, redirectPage(url));
  } finally {
    closeSync(fd);
  }
  return file;
}

/**
 * Opens an http(s) URL in the user's browser through a redirect page (see the module
 * comment). A URL of another scheme is a 400 and nothing is written or started. Resolves
 * when the opener has started (or could not): `opened: false` with the reason then.
 */
export async function openInBrowser(url: string, options: OpenUrlOptions): Promise<OpenResult> {
  const refusal = browserUrlRefusal(url);
  if (refusal !== undefined)
    throw new SkepError('bad_request', `not opening ${JSON.stringify(url)} in a browser: ${refusal}`);
  const opener = openerFor(options.env ?? process.env, options.platform ?? process.platform);
  if (typeof opener !== 'string') return { opened: false, reason: opener.none, headless: true };
  const ttlMs = options.ttlMs ?? REDIRECT_TTL_MS;
  privateDir(options.dir);
  sweep(options.dir, ttlMs, Date.now());
  // The parser's serialization: quotes and angle brackets in the query come out percent-encoded.
  const file = writePage(options.dir, new URL(url).href);
  setTimeout(() => rmSync(file, { force: true }), ttlMs).unref();
  const target = (options.platform ?? process.platform) === 'win32' ? file : pathToFileURL(file).href;
  const child = spawn(opener, [target], { detached: true, stdio: 'ignore' });
  const started = await new Promise<string | undefined>((resolve) => {
    child.once('spawn', () => resolve(undefined));
    child.once('error', (err) => resolve(`${opener}: ${err.message}`));
  });
  child.unref();
  if (started === undefined) return { opened: true, file };
  rmSync(file, { force: true });
  return { opened: false, reason: started };
}
