// MCPTelemetryConfig `sensitiveHeaders` from the operator's render to the collector: the
// rendered Deployment gives the runner one env var per header from its Secret, the rendered
// ConfigMap holds only a reference to it, and the runner's telemetry stage — built from that run
// configuration with the lookup the pod runner uses (its own environment) — sends the Secret's
// value on every OTLP export. The pod's environment is made as the kubelet makes it (each
// `secretKeyRef` read from the Secret); the collector is the tests' loopback OTLP receiver.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type K8sObject, renderResources } from '../../../src/control/operator/render.js';
import { buildPipeline } from '../../../src/dataplane/pipeline/index.js';
import { silentLogger } from '../../../src/shared/index.js';
import { parseRunConfig } from '../../../src/workloads/index.js';
import { OtlpReceiver } from '../../helpers/otlp.js';
import { proxyFor, startHttpUpstream } from '../proxy/helpers.js';

type Obj = Record<string, unknown>;
const NS = 'team-a';
const TOKEN = 'Bearer collector-token-7f3a';

/** The runner container's environment as the kubelet fills it (values, and secretKeyRef from `secrets`). */
function podEnvironment(objects: K8sObject[], secrets: Obj[]): Record<string, string> {
  const d = objects.find((o) => o.kind === 'Deployment')!;
  const containers = (d['spec'] as { template: { spec: { containers: Obj[] } } }).template.spec.containers;
  const runner = containers.find((c) => c['name'] === 'skep-runner')!;
  const env: Record<string, string> = {};
  for (const e of runner['env'] as Array<{ name: string; value?: string; valueFrom?: Obj }>) {
    const ref = (e.valueFrom?.['secretKeyRef'] ?? undefined) as { name: string; key: string } | undefined;
    if (ref === undefined) {
      if (e.value !== undefined) env[e.name] = e.value;
      continue;
    }
    const secret = secrets.find((s) => (s['metadata'] as Obj)['name'] === ref.name);
    const data = (secret?.['data'] ?? {}) as Record<string, string>;
    assert.ok(data[ref.key] !== undefined, `Secret ${ref.name} has key ${ref.key}`);
    env[e.name] = Buffer.from(data[ref.key]!, 'base64').toString('utf8');
  }
  return env;
}

test('sensitiveHeaders: the Secret value reaches the collector on every export, never the ConfigMap', async (t) => {
  const receiver = await OtlpReceiver.start();
  t.after(() => receiver.close());
  const upstream = await startHttpUpstream(t, (req, res) => {
    const body = JSON.parse(req.body) as { id: unknown };
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ jsonrpc: '2.0', id: body.id, result: { content: [] } }));
  });
  const secret = {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'otel-creds', namespace: NS },
    data: { token: Buffer.from(TOKEN).toString('base64') },
  };
  const { objects, problems } = await renderResources(
    [
      secret,
      {
        apiVersion: 'skep.dev/v1beta1',
        kind: 'MCPTelemetryConfig',
        metadata: { name: 'otel', namespace: NS },
        spec: {
          openTelemetry: {
            enabled: true,
            endpoint: receiver.endpoint,
            insecure: true,
            headers: { 'x-team': 'tools' },
            sensitiveHeaders: [{ name: 'Authorization', secretKeyRef: { name: 'otel-creds', key: 'token' } }],
            tracing: { enabled: true, samplingRate: '1' },
          },
        },
      },
      {
        apiVersion: 'skep.dev/v1beta1',
        kind: 'MCPServer',
        metadata: { name: 'observed', namespace: NS },
        spec: {
          image: 'ghcr.io/example/server:1',
          transport: 'streamable-http',
          proxyPort: 8080,
          mcpPort: 8080,
          telemetryConfigRef: { name: 'otel' },
        },
      },
    ],
    { namespace: NS, offline: true },
  );
  assert.deepEqual(problems, []);
  const cm = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === 'observed-runconfig')!;
  const text = (cm['data'] as Record<string, string>)['runconfig.json']!;
  assert.ok(!text.includes('collector-token'), 'the ConfigMap holds no secret value');

  // The runner: the rendered run configuration, secrets looked up in the pod's environment.
  const env = podEnvironment(objects, [secret]);
  const config = parseRunConfig(JSON.parse(text));
  const chain = await buildPipeline(config, {
    logger: silentLogger,
    secretLookup: async (name) => env[name],
  });
  let closed = false;
  t.after(() => (closed ? undefined : chain.close()));
  assert.deepEqual(chain.names, ['telemetry']);
  const proxy = await proxyFor(t, undefined, {
    middlewares: chain.middlewares,
    serverName: 'observed',
    transport: 'streamable-http',
    upstream: { kind: 'http', url: `${upstream.url}/mcp`, transport: 'streamable-http' },
  });
  const res = await fetch(`${proxy.url}/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'search' } }),
  });
  assert.equal(res.status, 200);
  // Closing the pipeline flushes the queued spans: the export has been attempted when it returns.
  await chain.close();
  closed = true;
  assert.ok(receiver.exports.length > 0, 'spans were exported');
  for (const e of receiver.exports) {
    assert.equal(e.headers['authorization'], TOKEN);
    assert.equal(e.headers['x-team'], 'tools');
  }
});

test('sensitiveHeaders: a reference whose variable the pod lacks stops the telemetry stage, naming the header', async () => {
  const config = parseRunConfig({
    name: 'observed',
    image: '',
    transport: 'streamable-http',
    remote_url: 'http://127.0.0.1:9/mcp',
    telemetry_config: {
      endpoint: '127.0.0.1:4318',
      insecure: true,
      headers: {
        Authorization: 'SKEP_OTEL_HEADER_AUTHORIZATION,target=telemetry_config.headers.Authorization',
      },
    },
  });
  await assert.rejects(
    buildPipeline(config, { logger: silentLogger, secretLookup: async () => undefined }),
    /telemetry_config\.headers\.Authorization: secret "SKEP_OTEL_HEADER_AUTHORIZATION" not found/,
  );
});
