// esbuild options for the two bundles, shared by scripts/bundle.mjs (which writes them) and
// scripts/runner-footprint.mjs (which checks what a workload runner loads).
//
// Loading one file instead of thousands of small ES modules (TypeBox alone is ~700) is what
// keeps `skep serve` and every workload runner quick to start. Packages that need their own
// files at run time (native addons, static assets, optional native deps) stay external and
// load from node_modules.

import { directImportsPlugin } from './direct-imports.mjs';

export const external = [
  'better-sqlite3',
  'dockerode',
  'docker-modem',
  'ssh2',
  'cpu-features',
  '@kubernetes/client-node',
  'oidc-provider',
  'ioredis',
  '@aws-sdk/*',
  '@smithy/*',
  'pino',
  'thread-stream',
  'pino-*',
  // Load their .wasm files from their own directories (QuickJS: vMCP code mode, loaded on demand).
  '@cedar-policy/*',
  'quickjs-emscripten',
  'quickjs-emscripten-core',
  '@jitl/*',
  // Loaded lazily (src/shared/lazy.ts) only by code paths that need them.
  'undici',
];

const common = {
  outdir: 'dist',
  outExtension: { '.js': '.mjs' },
  // Modules imported on demand (the operator and its Kubernetes client, the auth stages,
  // the container runtime) go to their own chunks, loaded only when used.
  splitting: true,
  chunkNames: 'chunks/[name]-[hash]',
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'esm',
  sourcemap: 'linked',
  external,
  // jsonc-parser's default entry is a UMD build that requires its parts dynamically.
  alias: { 'jsonc-parser': './node_modules/jsonc-parser/lib/esm/main.js' },
  logLevel: 'warning',
  // CommonJS dependencies inside an ES module bundle need `require` and `__dirname`.
  banner: {
    js: [
      "import { createRequire as __skepCreateRequire } from 'node:module';",
      "import { fileURLToPath as __skepFileURLToPath } from 'node:url';",
      'const require = __skepCreateRequire(import.meta.url);',
      'const __filename = __skepFileURLToPath(import.meta.url);',
      "const __dirname = __skepFileURLToPath(new URL('.', import.meta.url));",
    ].join('\n'),
  },
};

/**
 * The CLI and `skep serve`: dist/skep.mjs. Each command's implementation is a chunk loaded when
 * the command runs; imports of a folder's index are pointed at the defining files so that a
 * chunk brings only what its command uses (scripts/direct-imports.mjs).
 */
export const cliBuild = {
  ...common,
  entryPoints: { skep: 'src/control/cli/main.ts' },
  plugins: [directImportsPlugin],
};

/**
 * The per-workload runner: dist/runner.mjs, built on its own. One runs per workload, so it
 * must load only what it uses; built together with the CLI it would share the CLI's chunks,
 * and a chunk brings everything in it.
 */
export const runnerBuild = { ...common, entryPoints: { runner: 'src/dataplane/runner/entry.ts' } };
