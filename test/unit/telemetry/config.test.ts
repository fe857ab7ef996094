/**
 * `telemetry_config` validation (ToolHive's shape) and where Skep does better:
 * endpoint-only turns tracing and metrics on, an invalid `samplingRate` is a 400 naming it,
 * a scheme that contradicts `insecure` is refused, settings with nowhere to go are refused
 * at create (through the API, before anything is stored).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { checkPipeline } from '../../../src/workloads/pipeline-check.js';
import { isSkepError, SKEP_VERSION } from '../../../src/shared/index.js';
import {
  DEFAULT_SAMPLING_RATE,
  parseEndpoint,
  parseSamplingRate,
  parseTelemetryConfig,
} from '../../../src/dataplane/middleware/telemetry/index.js';
import { parseRunConfig } from '../../../src/workloads/index.js';
import { testApp } from '../../helpers/api.js';

const defaults = { workload: 'fetch', version: '9.9.9' };
const parse = (raw: unknown) => parseTelemetryConfig(raw, defaults);

function refused(raw: unknown, field: RegExp): void {
  assert.throws(
    () => parse(raw),
    (err: unknown) => isSkepError(err) && err.code === 'invalid_config' && field.test(err.message),
    JSON.stringify(raw),
  );
}

test('better than the reference: endpoint alone turns tracing and OTLP metrics on (defaults filled in)', () => {
  const s = parse({ endpoint: 'otel-collector:4318' });
  assert.ok(s);
  assert.equal(s.endpoint, 'https://otel-collector:4318');
  assert.equal(s.tracing, true);
  assert.equal(s.otlpMetrics, true);
  assert.equal(s.prometheus, false);
  assert.equal(s.samplingRate, DEFAULT_SAMPLING_RATE);
  assert.equal(s.serviceName, 'thv-fetch', 'the reference CLI/API default');
  assert.equal(s.serviceVersion, '9.9.9');
  assert.equal(s.legacyAttributes, false, 'absent in JSON = false, as in the reference');
  assert.ok(Object.isFrozen(s));
  // Explicit false switches one off; both off with an endpoint is refused (as the reference does).
  assert.equal(parse({ endpoint: 'c:4318', metricsEnabled: false })?.otlpMetrics, false);
  assert.equal(parse({ endpoint: 'c:4318', metricsEnabled: false })?.tracing, true);
  refused(
    { endpoint: 'c:4318', tracingEnabled: false, metricsEnabled: false },
    /telemetry_config\.endpoint .*both false/,
  );
});

test('no endpoint and no Prometheus path is no telemetry; Prometheus alone exports nothing over OTLP', () => {
  assert.equal(parse(undefined), undefined);
  assert.equal(parse({}), undefined);
  assert.equal(parse({ endpoint: '', tracingEnabled: true, samplingRate: '0.05' }), undefined);
  const p = parse({ enablePrometheusMetricsPath: true, tracingEnabled: true });
  assert.equal(p?.prometheus, true);
  assert.equal(p?.tracing, false, 'no endpoint: nowhere to send spans');
  assert.equal(p?.otlpMetrics, false);
  refused({ enablePrometheusMetricsPath: true, headers: { 'x-k': 'v' } }, /telemetry_config\.headers .*no/);
});

test('better than the reference: an invalid samplingRate is a 400 naming it, not a silent 0', () => {
  for (const bad of ['abc', '1.5', '-0.1', 'NaN', 'Infinity', '0x1', '1e3', ' 2', true, 2, -1, {}])
    assert.throws(
      () => parseSamplingRate(bad),
      (err: unknown) =>
        isSkepError(err) && err.status === 400 && /^telemetry_config\.samplingRate /.test(err.message),
      String(bad),
    );
  assert.equal(parseSamplingRate('0'), 0);
  assert.equal(parseSamplingRate('1'), 1);
  assert.equal(parseSamplingRate('1.0'), 1);
  assert.equal(parseSamplingRate('.25'), 0.25);
  assert.equal(parseSamplingRate('5e-2'), 0.05);
  assert.equal(parseSamplingRate(0.5), 0.5);
  assert.equal(parseSamplingRate(''), DEFAULT_SAMPLING_RATE);
  assert.equal(parseSamplingRate(undefined), DEFAULT_SAMPLING_RATE);
  refused({ endpoint: 'c:4318', samplingRate: 'often' }, /samplingRate/);
});

test('endpoint: host:port and base path; TLS unless insecure; a scheme must agree with insecure', () => {
  assert.equal(parseEndpoint('collector:4318', false), 'https://collector:4318');
  assert.equal(parseEndpoint('collector:4318', true), 'http://collector:4318');
  assert.equal(parseEndpoint('collector:4318/otlp/', false), 'https://collector:4318/otlp');
  assert.equal(parseEndpoint('https://api.honeycomb.io', false), 'https://api.honeycomb.io');
  assert.equal(parseEndpoint('HTTP://127.0.0.1:4318', true), 'http://127.0.0.1:4318');
  assert.equal(parseEndpoint('[::1]:4318', true), 'http://[::1]:4318');
  refused({ endpoint: 'http://collector:4318' }, /endpoint says http:\/\/ .*insecure: true/);
  refused(
    { endpoint: 'https://collector:4318', insecure: true },
    /endpoint says https:\/\/ but insecure is true/,
  );
  refused({ endpoint: 'user:pw@collector:4318' }, /endpoint must not carry credentials/);
  refused({ endpoint: 'collector:4318?x=1' }, /endpoint must be host:port/);
  refused({ endpoint: 'collector:99999' }, /endpoint must be host:port/);
});

test('keys: unknown and newer-reference keys at non-defaults are refused; types checked', () => {
  refused({ endpoint: 'c:4318', sampling: '0.1' }, /unknown key\(s\) sampling/);
  refused({ endpoint: 'c:4318', prometheusPort: 9464 }, /prometheusPort is not supported: .*proxy port/);
  assert.ok(parse({ endpoint: 'c:4318', prometheusPort: 0, metricsOnTransportPort: true }));
  refused({ enablePrometheusMetricsPath: true, metricsOnTransportPort: false }, /metricsOnTransportPort/);
  refused({ endpoint: 'c:4318', insecure: 'yes' }, /telemetry_config\.insecure must be true or false/);
  refused({ endpoint: 'c:4318', headers: { 'bad header': 'v' } }, /headers has an invalid header name/);
  refused({ endpoint: 'c:4318', headers: { 'x-k': 'a\r\nb' } }, /headers\.x-k must not contain line breaks/);
  refused({ endpoint: 'c:4318', headers: { 'x-k': 5 } }, /headers\.x-k must be a string/);
  refused({ endpoint: 'c:4318', environmentVariables: ['OK', 'NOT-OK'] }, /invalid variable name 'NOT-OK'/);
  refused({ endpoint: 'c:4318', customAttributes: ['a'] }, /customAttributes must be an object/);
  const s = parse({
    endpoint: 'c:4318',
    serviceName: 'github-proxy',
    serviceVersion: '2.0',
    customAttributes: { 'deployment.environment': 'prod' },
    environmentVariables: ['REGION'],
    headers: { 'x-honeycomb-team': 'k' },
    useLegacyAttributes: true,
  });
  assert.equal(s?.serviceName, 'github-proxy');
  assert.equal(s?.serviceVersion, '2.0');
  assert.deepEqual(s?.customAttributes, { 'deployment.environment': 'prod' });
  assert.deepEqual(s?.environmentVariables, ['REGION']);
  assert.deepEqual(s?.headers, { 'x-honeycomb-team': 'k' });
  assert.equal(s?.legacyAttributes, true);
});

test('caCertPath: read once, must be a PEM certificate, needs TLS and an endpoint', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'skep-telemetry-ca-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const pem = join(dir, 'ca.pem');
  writeFileSync(pem, '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n');
  const notPem = join(dir, 'ca.txt');
  writeFileSync(notPem, 'hello');
  assert.match(parse({ endpoint: 'c:4318', caCertPath: pem })?.ca ?? '', /BEGIN CERTIFICATE/);
  refused(
    { endpoint: 'c:4318', caCertPath: join(dir, 'missing.pem') },
    /caCertPath cannot be read \(ENOENT\)/,
  );
  refused({ endpoint: 'c:4318', caCertPath: notPem }, /caCertPath is not a PEM certificate/);
  refused(
    { endpoint: 'c:4318', insecure: true, caCertPath: pem },
    /caCertPath is for TLS, and insecure is true/,
  );
  refused({ enablePrometheusMetricsPath: true, caCertPath: pem }, /caCertPath needs an endpoint/);
});

test('create/update check (checkPipeline): the typed field and a middleware_configs entry are checked alike', async () => {
  const base = { name: 'w', image: 'cmd:///bin/true' };
  await assert.rejects(
    checkPipeline(parseRunConfig({ ...base, telemetry_config: { endpoint: 'c:4318', samplingRate: '2' } })),
    (err: unknown) => isSkepError(err) && err.code === 'invalid_config' && /samplingRate/.test(err.message),
  );
  await assert.rejects(
    checkPipeline(
      parseRunConfig({
        ...base,
        middleware_configs: [
          { type: 'telemetry', parameters: { config: { endpoint: 'http://c:4318' }, server_name: 'w' } },
        ],
      }),
    ),
    (err: unknown) => isSkepError(err) && /insecure/.test(err.message),
  );
  await assert.rejects(
    checkPipeline(
      parseRunConfig({
        ...base,
        middleware_configs: [{ type: 'telemetry', parameters: { config: {}, transport: 'carrier-pigeon' } }],
      }),
    ),
    /telemetry parameters\.transport must be one of stdio, sse, streamable-http/,
  );
  // Valid: no error (the reference's parameters, as an operator writes them).
  await checkPipeline(
    parseRunConfig({
      ...base,
      middleware_configs: [
        {
          type: 'telemetry',
          parameters: {
            config: { endpoint: 'c:4318', samplingRate: '0.05', tracingEnabled: true, metricsEnabled: true },
            server_name: 'w',
            transport: 'stdio',
          },
        },
      ],
    }),
  );
});

test('import (skep run --from-config): an invalid samplingRate is a 400 naming the field; settings with nowhere to go are refused; nothing is stored', async (t) => {
  // The API's create body has no telemetry_config (as the reference's); run configurations carry it.
  const { ctx } = await testApp(t);
  // sandbox: off — which sandbox would hold the server is not what this checks, and probing
  // for bubblewrap would start a process.
  const base = { name: 'observed', image: 'cmd:///bin/true', transport: 'stdio' as const, sandbox: 'off' };
  await assert.rejects(
    ctx.workloads.createFromConfig({
      ...base,
      telemetry_config: { endpoint: 'otel:4318', samplingRate: 'sometimes' },
    }),
    (err: unknown) =>
      isSkepError(err) &&
      err.status === 400 &&
      /telemetry_config\.samplingRate must be a number between 0 and 1/.test(err.message),
  );
  await assert.rejects(
    ctx.workloads.createFromConfig({ ...base, telemetry_config: { customAttributes: { a: 'b' } } }),
    (err: unknown) =>
      isSkepError(err) &&
      err.code === 'unsupported_field' &&
      /^telemetry_config is not supported without endpoint/.test(err.message),
  );
  assert.deepEqual(ctx.workloads.rows.list(), []);
});

test('the service version defaults to the running Skep version (reference #2296: the running one, not a stored one)', () => {
  assert.equal(
    parseTelemetryConfig({ endpoint: 'c:4318' }, { workload: 'w', version: SKEP_VERSION })?.serviceVersion,
    SKEP_VERSION,
  );
});
