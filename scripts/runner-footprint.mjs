#!/usr/bin/env node
// What a workload runner loads before it does anything: builds dist/runner.mjs in memory
// (the options of scripts/bundle-config.mjs) and follows its static imports. One runner runs
// per workload, so this is a fixed cost per workload. Prints JSON; with --check, exits 1
// when a library that only some workloads need (schemas, YAML, JWT, CEL, pino, the container
// client) or a policy stage's run-time module (ON_DEMAND_SOURCES) is loaded up front. Such
// code must be imported on demand, and a domain's index must not re-export it as a value (the
// bundle then loads it eagerly: esbuild keeps every module a loaded one re-exports). `--entry
// <file>` measures another entry point built the same way (the CLI, say).
import { build } from 'esbuild';
import { runnerBuild } from './bundle-config.mjs';

export const ON_DEMAND_ONLY = [
  'typebox',
  'ajv',
  'ajv-formats',
  'yaml',
  'jose',
  '@marcbachmann/cel-js',
  'oauth4webapi',
  'pino',
  'dockerode',
  'ioredis',
  'undici',
  '@aws-sdk/client-sts',
  // OpenTelemetry: only workloads with an OTLP endpoint (src/dataplane/middleware/telemetry/otlp.ts).
  '@opentelemetry/api',
  '@opentelemetry/core',
  '@opentelemetry/sdk-metrics',
  '@opentelemetry/otlp-exporter-base',
];

/**
 * Skep's own modules that only workloads with a policy need: the pipeline stages import them
 * on demand from each domain's `runtime.ts` (see the stage files).
 */
export const ON_DEMAND_SOURCES = [
  'src/dataplane/middleware/audit/auditor.ts',
  'src/dataplane/middleware/audit/writer.ts',
  'src/dataplane/middleware/authz/cedar.ts',
  'src/dataplane/middleware/authz/http-pdp.ts',
  'src/dataplane/pipeline/stages/authorization-stage.ts',
  'src/dataplane/middleware/ratelimit/limiter.ts',
  'src/dataplane/middleware/ratelimit/redis-store.ts',
  'src/dataplane/middleware/telemetry/metrics.ts',
  'src/dataplane/middleware/telemetry/prometheus.ts',
  'src/dataplane/middleware/webhooks/client.ts',
  'src/dataplane/middleware/webhooks/mutating.ts',
  'src/dataplane/middleware/webhooks/validating.ts',
];

const at = process.argv.indexOf('--entry');
const entryPoint = at > 0 ? process.argv[at + 1] : 'src/dataplane/runner/entry.ts';
const result = await build({
  ...runnerBuild,
  entryPoints: { entry: entryPoint },
  write: false,
  metafile: true,
  logLevel: 'error',
});
const outputs = result.metafile.outputs;
const entry = Object.keys(outputs).find((name) => outputs[name].entryPoint === entryPoint);
const loaded = new Set();
const visit = (name) => {
  if (loaded.has(name)) return;
  loaded.add(name);
  for (const i of outputs[name].imports)
    if (i.kind === 'import-statement' && i.path in outputs) visit(i.path);
};
visit(entry);

const packageOf = (path) => /node_modules\/((@[^/]+\/)?[^/]+)/.exec(path)?.[1];
const bytes = new Map();
const inputs = new Set();
const externals = new Set();
let total = 0;
for (const name of loaded) {
  total += outputs[name].bytes;
  for (const [input, info] of Object.entries(outputs[name].inputs)) {
    if (info.bytesInOutput > 0) inputs.add(input);
    const key =
      packageOf(input) ??
      input.replace(
        /^src\/(dataplane\/middleware\/[^/]+|dataplane\/[^/]+|control\/[^/]+|[^/]+)\/.*$/,
        'src/$1',
      );
    bytes.set(key, (bytes.get(key) ?? 0) + info.bytesInOutput);
  }
  for (const i of outputs[name].imports)
    if (i.external && !i.path.startsWith('node:'))
      externals.add(packageOf(`node_modules/${i.path}`) ?? i.path);
}
const offenders = [
  ...ON_DEMAND_ONLY.filter((p) => bytes.has(p) || externals.has(p)),
  ...ON_DEMAND_SOURCES.filter((file) => inputs.has(file)),
];
process.stdout.write(
  `${JSON.stringify(
    {
      entry: entryPoint,
      files: loaded.size,
      bytes: total,
      external_packages: [...externals].sort(),
      bytes_by_source: Object.fromEntries([...bytes].sort((a, b) => b[1] - a[1])),
      loaded_up_front_but_on_demand_only: offenders,
    },
    null,
    2,
  )}\n`,
);
if (process.argv.includes('--check') && offenders.length > 0) process.exitCode = 1;
