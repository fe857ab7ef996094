// Builds the web UI (src/control/ui/, Preact) into dist/ui/: one script and one stylesheet under
// assets/, named by content hash (served with a year-long cache), and index.html naming them
// (served no-cache). The page loads nothing else: no CDN, no fonts, no network at run time,
// and no inline script, so the strict Content-Security-Policy of src/control/api/ui.ts holds.
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { build } from 'esbuild';

/** The esbuild options of the UI bundle (an entry point per page would only add requests). */
export function uiBuildOptions(outdir) {
  return {
    entryPoints: { app: 'src/control/ui/main.tsx' },
    outdir: join(outdir, 'assets'),
    entryNames: '[name]-[hash]',
    bundle: true,
    minify: true,
    format: 'esm',
    platform: 'browser',
    target: ['chrome110', 'firefox110', 'safari16'],
    jsx: 'automatic',
    jsxImportSource: 'preact',
    // Written below, atomically: a running skep serve (or a parallel test) may be reading them.
    write: false,
    sourcemap: false,
    legalComments: 'none',
    logLevel: 'warning',
  };
}

/**
 * Writes a file only when its content changed, through a temporary name and a rename, so a
 * reader (a running server, a test that builds the same UI at the same time) never sees a
 * half-written file.
 */
function writeAtomic(path, content) {
  const bytes = Buffer.from(content);
  if (existsSync(path) && readFileSync(path).equals(bytes)) return;
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, bytes);
  renameSync(tmp, path);
}

/** Builds the UI into `outdir` (default dist/ui); returns the asset file names. */
export async function buildUi(outdir = 'dist/ui') {
  const result = await build(uiBuildOptions(outdir));
  mkdirSync(join(outdir, 'assets'), { recursive: true });
  for (const file of result.outputFiles) writeAtomic(file.path, file.contents);
  const outputs = result.outputFiles.map((file) => basename(file.path));
  const script = outputs.find((name) => name.endsWith('.js'));
  const style = outputs.find((name) => name.endsWith('.css'));
  if (script === undefined || style === undefined)
    throw new Error('the UI build made no script or stylesheet');
  // Assets of earlier builds go; the page only ever names this build's.
  for (const name of readdirSync(join(outdir, 'assets')))
    if (!outputs.includes(name) && !name.endsWith('.tmp'))
      rmSync(join(outdir, 'assets', name), { force: true });
  writeAtomic(
    join(outdir, 'index.html'),
    [
      '<!doctype html>',
      '<html lang="en">',
      '<head>',
      '<meta charset="utf-8">',
      '<meta name="viewport" content="width=device-width, initial-scale=1">',
      '<meta name="color-scheme" content="light dark">',
      '<title>Skep</title>',
      // No favicon request (the browser would ask for /favicon.ico).
      '<link rel="icon" href="data:,">',
      `<link rel="stylesheet" href="/assets/${style}">`,
      `<script type="module" src="/assets/${script}"></script>`,
      '</head>',
      '<body><div id="app"><p class="boot">Loading Skep…</p></div></body>',
      '</html>',
      '',
    ].join('\n'),
  );
  return { script, style };
}
