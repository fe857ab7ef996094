// The render of workload resources (names, owner references, checksums that roll
// pods, secrets only through secretKeyRef) and the shared validator of the new kinds.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { type K8sObject, renderResources, sidecarPort } from '../../../src/control/operator/render.js';
import { foreignResource, validateResource } from '../../../src/control/operator/resource-validate.js';
import { OTHER_GROUPS_YAML } from './fixtures.js';
import { review } from '../../../src/control/operator/webhook.js';
import { runnerV8Flags } from '../../../src/workloads/index.js';

const examples = parseAllDocuments(
  readFileSync(new URL('../../../deploy/examples/workloads.yaml', import.meta.url), 'utf8'),
).map((d) => d.toJS() as Record<string, unknown>);

const find = (objects: K8sObject[], kind: string, name: string) =>
  objects.find((o) => o.kind === kind && o.metadata.name === name);

const podAnnotations = (d: K8sObject | undefined) =>
  (d?.['spec'] as { template: { metadata: { annotations: Record<string, string> } } }).template.metadata
    .annotations;

describe('operator render', () => {
  it('creates the reference names for MCPServer, MCPRemoteProxy and VirtualMCPServer', async () => {
    const { objects, problems, urls } = await renderResources(examples, { runnerImage: 'skep:test' });
    assert.deepEqual(problems, []);
    const names = objects.map((o) => `${o.kind}/${o.metadata.name}`).sort();
    assert.deepEqual(names, [
      'ConfigMap/fetch-runconfig',
      'ConfigMap/github-runconfig',
      'ConfigMap/team-vmcp-config',
      'Deployment/fetch',
      'Deployment/github',
      'Deployment/team',
      'Service/mcp-fetch-proxy',
      'Service/mcp-github-remote-proxy',
      'Service/vmcp-team',
      'ServiceAccount/fetch-proxy-runner',
      'ServiceAccount/github-remote-proxy-runner',
      'ServiceAccount/team-vmcp',
    ]);
    assert.equal(
      urls.get('MCPServer/default/fetch'),
      'http://mcp-fetch-proxy.default.svc.cluster.local:8080/mcp',
    );
    // The vMCP pod runs the runner; its run configuration lists the group's members as static
    // backends and their outgoing auth as inline strategies (secrets by env var name only).
    const vmcp = find(objects, 'ConfigMap', 'team-vmcp-config')!;
    const rc = JSON.parse((vmcp['data'] as Record<string, string>)['runconfig.json']!) as {
      host: string;
      port: number;
      vmcp: Record<string, unknown>;
    };
    assert.equal(rc.port, 4483);
    assert.deepEqual(rc.vmcp['backends'], [
      {
        name: 'fetch',
        url: 'http://mcp-fetch-proxy.default.svc.cluster.local:8080/mcp',
        transport: 'streamable-http',
      },
      {
        name: 'github',
        url: 'http://mcp-github-remote-proxy.default.svc.cluster.local:8080/mcp',
        transport: 'streamable-http',
      },
    ]);
    assert.deepEqual(rc.vmcp['outgoingAuth'], {
      source: 'inline',
      backends: {
        github: {
          type: 'header_injection',
          headerInjection: {
            headerName: 'Authorization',
            headerValueEnv: 'SKEP_HEADER_INJECTION_VALUE_GITHUB_HEADER',
          },
        },
      },
    });
    const team = find(objects, 'Deployment', 'team')!;
    assert.match(
      JSON.stringify(team),
      /"name":"SKEP_HEADER_INJECTION_VALUE_GITHUB_HEADER","valueFrom":\{"secretKeyRef":\{"name":"github-token","key":"token"\}\}/,
    );
    assert.match(
      JSON.stringify(team),
      /"args":\["operator","pod-runner","--config","\/etc\/vmcp-config\/runconfig.json"\]/,
    );
  });

  it('VirtualMCPServer: auth resolution, members left out with a warning, operator-owned keys refused', async () => {
    const docs = structuredClone(examples);
    docs.push(
      {
        apiVersion: 'skep.dev/v1beta1',
        kind: 'MCPExternalAuthConfig',
        metadata: { name: 'bearer' },
        spec: {
          type: 'bearerToken',
          bearerToken: { tokenSecretRef: { name: 'github-token', key: 'token' } },
        },
      },
      {
        apiVersion: 'skep.dev/v1beta1',
        kind: 'MCPServerEntry',
        metadata: { name: 'docs' },
        spec: {
          remoteUrl: 'https://docs.example/mcp',
          transport: 'streamable-http',
          groupRef: { name: 'tools' },
          externalAuthConfigRef: { name: 'bearer' },
        },
      },
      {
        apiVersion: 'skep.dev/v1beta1',
        kind: 'MCPServerEntry',
        metadata: { name: 'wiki' },
        spec: {
          remoteUrl: 'https://wiki.example/mcp',
          transport: 'streamable-http',
          groupRef: { name: 'tools' },
        },
      },
    );
    const team = docs.find((d) => d['kind'] === 'VirtualMCPServer')!;
    Object.assign(team['spec'] as Record<string, unknown>, {
      incomingAuth: { type: 'oidc', oidcConfig: { issuer: 'https://idp.example', audience: 'team' } },
      outgoingAuth: { source: 'discovered', default: { type: 'unauthenticated' } },
    });
    const { objects, problems, warnings } = await renderResources(docs);
    assert.deepEqual(problems, []);
    // docs' bearerToken cannot be a vMCP strategy: it is left out (never called with the
    // default identity) and said; wiki is an entry, reached directly.
    assert.equal(warnings.length, 1);
    assert.match(warnings[0]!.problem, /MCPServerEntry default\/docs left out: .*bearerToken/);
    const rc = JSON.parse(
      (find(objects, 'ConfigMap', 'team-vmcp-config')!['data'] as Record<string, string>)['runconfig.json']!,
    ) as {
      oidc_config: Record<string, unknown>;
      vmcp: { backends: Array<Record<string, unknown>>; outgoingAuth: Record<string, unknown> };
    };
    assert.deepEqual(
      rc.vmcp.backends.map((b) => `${String(b['name'])}:${String(b['type'] ?? '')}`),
      ['fetch:', 'github:', 'wiki:entry'],
    );
    assert.deepEqual(rc.vmcp.outgoingAuth['default'], { type: 'unauthenticated' });
    assert.deepEqual(rc.oidc_config, { issuer: 'https://idp.example', audience: 'team' });

    // Keys the operator sets, and fields with no effect, are refused by name: nothing renders.
    Object.assign(team['spec'] as Record<string, unknown>, {
      config: { backends: [], outgoingAuth: { source: 'inline' } },
      passthroughHeaders: ['X-Tenant'],
    });
    const refused = await renderResources(docs);
    assert.equal(
      refused.objects.some((o) => o.metadata.name === 'team'),
      false,
    );
    const messages = refused.problems.map((p) => p.problem).join('\n');
    assert.match(messages, /spec\.config\.backends: set by the operator/);
    assert.match(messages, /spec\.config\.outgoingAuth: set by the operator/);
    assert.match(messages, /spec\.passthroughHeaders/);
    // A config the runner would refuse is refused here, not in a crash-looping pod.
    (team['spec'] as Record<string, unknown>)['config'] = { operational: { logLevel: 'debug' } };
    delete (team['spec'] as Record<string, unknown>)['passthroughHeaders'];
    const bad = await renderResources(docs);
    assert.match(bad.problems.map((p) => p.problem).join('\n'), /spec\.config: vmcp\.operational\.logLevel/);
  });

  it('a changed member auth config rolls the VirtualMCPServer pod', async () => {
    const before = await renderResources(examples);
    const changed = structuredClone(examples);
    const extauth = changed.find((d) => d['kind'] === 'MCPExternalAuthConfig')!;
    (extauth['spec'] as { headerInjection: { headerName: string } }).headerInjection.headerName = 'X-Token';
    const after = await renderResources(changed);
    const a = podAnnotations(find(before.objects, 'Deployment', 'team'));
    const b = podAnnotations(find(after.objects, 'Deployment', 'team'));
    assert.notEqual(a['skep.dev/runconfig-checksum'], b['skep.dev/runconfig-checksum']);
    assert.notEqual(a['skep.dev/external-auth-config-hash'], b['skep.dev/external-auth-config-hash']);
  });

  it('never writes a secret value into a ConfigMap; secrets reach pods through secretKeyRef', async () => {
    const { objects } = await renderResources(examples, { runnerImage: 'skep:test' });
    for (const cm of objects.filter((o) => o.kind === 'ConfigMap'))
      assert.ok(!JSON.stringify(cm).includes('replace-me'), `${cm.metadata.name} holds the secret`);
    const env = JSON.stringify(find(objects, 'Deployment', 'github'));
    assert.match(
      env,
      /"name":"SKEP_HEADER_AUTHORIZATION","valueFrom":\{"secretKeyRef":\{"name":"github-token","key":"token"\}\}/,
    );
    const rc = JSON.parse(
      (find(objects, 'ConfigMap', 'github-runconfig')!['data'] as Record<string, string>)['runconfig.json']!,
    ) as Record<string, unknown>;
    assert.deepEqual(rc['header_forward'], {
      add_headers_from_secret: { Authorization: 'SKEP_HEADER_AUTHORIZATION' },
    });
    assert.equal(rc['remote_url'], 'https://api.githubcopilot.com/mcp/');
  });

  it('a changed MCPExternalAuthConfig or run configuration changes the pod template (rollout)', async () => {
    const before = await renderResources(examples);
    const changed = structuredClone(examples);
    const extauth = changed.find((d) => d['kind'] === 'MCPExternalAuthConfig')!;
    (extauth['spec'] as { headerInjection: { headerName: string } }).headerInjection.headerName = 'X-Token';
    const after = await renderResources(changed);
    const a = podAnnotations(find(before.objects, 'Deployment', 'github'));
    const b = podAnnotations(find(after.objects, 'Deployment', 'github'));
    assert.notEqual(a['skep.dev/external-auth-config-hash'], b['skep.dev/external-auth-config-hash']);
    assert.notEqual(a['skep.dev/runconfig-checksum'], b['skep.dev/runconfig-checksum']);
    // The unrelated MCPServer does not roll.
    assert.deepEqual(
      podAnnotations(find(before.objects, 'Deployment', 'fetch')),
      podAnnotations(find(after.objects, 'Deployment', 'fetch')),
    );
  });

  it('owner references appear when the resource has a uid (the controller path)', async () => {
    const withUid = structuredClone(examples);
    const server = withUid.find((d) => d['kind'] === 'MCPServer')!;
    (server['metadata'] as Record<string, unknown>)['uid'] = 'uid-1';
    const { objects } = await renderResources(withUid);
    assert.deepEqual(find(objects, 'Deployment', 'fetch')!.metadata.ownerReferences, [
      {
        apiVersion: 'skep.dev/v1beta1',
        kind: 'MCPServer',
        name: 'fetch',
        uid: 'uid-1',
        controller: true,
        blockOwnerDeletion: true,
      },
    ]);
    assert.equal(find(objects, 'Deployment', 'github')!.metadata.ownerReferences, undefined);
  });

  it('a stdio server runs the copied runner in its own image; an HTTP server gets a runner sidecar', async () => {
    const docs = [
      {
        apiVersion: 'skep.dev/v1beta1',
        kind: 'MCPServer',
        metadata: { name: 'web' },
        spec: {
          image: 'web:1',
          transport: 'streamable-http',
          mcpPort: 9000,
          backendReplicas: 3,
          sessionStorage: { provider: 'redis', address: 'redis:6379', passwordRef: { name: 'r', key: 'p' } },
        },
      },
      ...examples,
    ];
    const { objects, problems } = await renderResources(docs, { runnerImage: 'skep:test' });
    assert.deepEqual(problems, []);
    const web = find(objects, 'Deployment', 'web')!;
    const spec = web['spec'] as {
      replicas: number;
      template: { spec: { containers: Array<{ name: string; image: string }> } };
    };
    assert.equal(spec.replicas, 3);
    assert.deepEqual(
      spec.template.spec.containers.map((c) => `${c.name}=${c.image}`),
      ['mcp=web:1', 'skep-runner=skep:test'],
    );
    const rc = JSON.parse(
      (find(objects, 'ConfigMap', 'web-runconfig')!['data'] as Record<string, string>)['runconfig.json']!,
    ) as Record<string, unknown>;
    assert.equal(rc['remote_url'], 'http://127.0.0.1:9000/mcp');
    assert.deepEqual(rc['scaling_config'], { session_redis: { address: 'redis:6379' } });
    assert.match(
      JSON.stringify(web),
      /"name":"SKEP_SESSION_REDIS_PASSWORD","valueFrom":\{"secretKeyRef":\{"name":"r","key":"p"\}\}/,
    );
    const fetch = find(objects, 'Deployment', 'fetch')!;
    const fspec = fetch['spec'] as {
      template: {
        spec: {
          initContainers: Array<{ image: string }>;
          containers: Array<{ name: string; image: string; command: string[] }>;
        };
      };
    };
    assert.equal(fspec.template.spec.initContainers[0]!.image, 'skep:test');
    assert.equal(fspec.template.spec.containers[0]!.image, 'ghcr.io/example/mcp-fetch:1.0');
    assert.equal(fspec.template.spec.containers[0]!.command[0], '/skep/lib/ld.so');
  });

  it('every runner in a pod starts with the V8 flags of a runner of its kind that skep serve spawns', async () => {
    const docs = [
      {
        apiVersion: 'skep.dev/v1beta1',
        kind: 'MCPServer',
        metadata: { name: 'web' },
        spec: { image: 'web:1', transport: 'streamable-http', mcpPort: 9000 },
      },
      ...examples,
    ];
    const { objects, problems } = await renderResources(docs, { runnerImage: 'skep:test' });
    assert.deepEqual(problems, []);
    const runners: string[] = [];
    for (const d of objects.filter((o) => o.kind === 'Deployment')) {
      const containers = (d['spec'] as { template: { spec: { containers: Array<Record<string, unknown>> } } })
        .template.spec.containers;
      for (const c of containers) {
        const line = [
          ...((c['command'] as string[] | undefined) ?? []),
          ...((c['args'] as string[] | undefined) ?? []),
        ];
        if (!line.includes('pod-runner')) continue;
        runners.push(`${d.metadata.name}/${String(c['name'])}`);
        // The flags go to node itself: after its path, before the script.
        const script = line.findIndex((a) => a.endsWith('/dist/skep.mjs'));
        assert.ok(script > 0, `${d.metadata.name}: ${line.join(' ')}`);
        const node = line.findIndex((a) => a === 'node' || a.endsWith('/bin/node'));
        // A virtual MCP's runner has the flags of its kind, as `skep serve` spawns it.
        const kind = c['name'] === 'vmcp' ? 'vmcp' : 'server';
        assert.deepEqual(
          line.slice(node + 1, script),
          [...runnerV8Flags(kind)],
          `${d.metadata.name}: ${line.join(' ')}`,
        );
      }
    }
    // The stdio server (copied runner), the HTTP server's sidecar, the remote proxy, the vMCP.
    assert.deepEqual(runners.sort(), ['fetch/mcp', 'github/skep-runner', 'team/vmcp', 'web/skep-runner']);
  });

  it('mcpPort equal to proxyPort: the Service keeps proxyPort and targets the sidecar on a port of its own', async () => {
    const web = (name: string, spec: Record<string, unknown>) => ({
      apiVersion: 'skep.dev/v1beta1',
      kind: 'MCPServer',
      metadata: { name },
      spec: { image: 'web:1', transport: 'streamable-http', ...spec },
    });
    const docs = [
      web('same', { mcpPort: 8080, proxyPort: 8080 }),
      // 8081 is the server's port declared in the pod template, 8082 the next free one.
      web('declared', {
        mcpPort: 9000,
        proxyPort: 9000,
        podTemplateSpec: { spec: { containers: [{ name: 'mcp', ports: [{ containerPort: 8081 }] }] } },
      }),
      web('apart', { mcpPort: 9000, proxyPort: 8080 }),
    ];
    for (const d of docs) assert.deepEqual(validateResource(d).problems, [], d.metadata.name);
    const { objects, problems, urls } = await renderResources(docs, { runnerImage: 'skep:test' });
    assert.deepEqual(problems, []);
    type Port = { name: string; containerPort: number };
    const pod = (name: string) =>
      (
        find(objects, 'Deployment', name)!['spec'] as {
          template: { spec: { containers: Array<{ name: string; ports: Port[] }> } };
        }
      ).template.spec.containers;
    const ports = (name: string) =>
      Object.fromEntries(pod(name).map((c) => [c.name, c.ports.map((p) => `${p.name}:${p.containerPort}`)]));
    const rcPort = (name: string) =>
      (
        JSON.parse(
          (find(objects, 'ConfigMap', `${name}-runconfig`)!['data'] as Record<string, string>)[
            'runconfig.json'
          ]!,
        ) as { port: number; remote_url: string }
      ).port;
    const svc = (name: string) =>
      (find(objects, 'Service', `mcp-${name}-proxy`)!['spec'] as { ports: unknown[] }).ports;
    assert.deepEqual(ports('same'), { mcp: ['mcp:8080'], 'skep-runner': ['http:8081'] });
    assert.equal(rcPort('same'), 8081);
    assert.deepEqual(svc('same'), [{ name: 'http', port: 8080, targetPort: 'http', protocol: 'TCP' }]);
    assert.equal(
      urls.get('MCPServer/default/same'),
      'http://mcp-same-proxy.default.svc.cluster.local:8080/mcp',
    );
    assert.deepEqual(ports('declared')['skep-runner'], ['http:8082']);
    assert.equal(rcPort('declared'), 8082);
    assert.deepEqual(svc('declared'), [{ name: 'http', port: 9000, targetPort: 'http', protocol: 'TCP' }]);
    // No clash: the sidecar listens on proxyPort, as before.
    assert.deepEqual(ports('apart'), { mcp: ['mcp:9000'], 'skep-runner': ['http:8080'] });
    assert.equal(rcPort('apart'), 8080);
    assert.equal(sidecarPort(8081, 8081, undefined), 8082);
  });

  it('documents of other API groups in the same file are listed as skipped, never fail the render', async () => {
    const docs = parseAllDocuments(OTHER_GROUPS_YAML).map((d) => d.toJS() as unknown);
    const { objects, problems, skipped } = await renderResources(docs, { runnerImage: 'skep:test' });
    assert.deepEqual(problems, []);
    assert.deepEqual(skipped, [
      { resource: 'Namespace/toolhive', reason: 'not a skep.dev resource' },
      { resource: 'ServiceAccount/redis', reason: 'not a skep.dev resource' },
      { resource: 'Service/redis', reason: 'not a skep.dev resource' },
      { resource: 'StatefulSet/redis', reason: 'not a skep.dev resource' },
      { resource: 'RedisFailover/sessions', reason: 'not a skep.dev resource' },
    ]);
    // The skep.dev resource renders, and the Secret is still read as a referenced object.
    const web = find(objects, 'Deployment', 'web')!;
    assert.equal(web.metadata.namespace, 'toolhive');
    assert.match(JSON.stringify(web), /"secretKeyRef":\{"name":"redis-auth","key":"password"\}/);
    assert.equal(find(objects, 'Namespace', 'toolhive'), undefined);
    assert.equal(find(objects, 'StatefulSet', 'redis'), undefined);
    for (const d of docs) {
      const foreign = foreignResource(d);
      const kind = (d as { kind: string }).kind;
      assert.equal(foreign === undefined, kind === 'MCPServer', kind);
    }
  });

  it('a missing reference renders nothing for that resource and names the field', async () => {
    const docs = examples.filter((d) => d['kind'] !== 'MCPExternalAuthConfig');
    const { objects, problems } = await renderResources(docs);
    assert.equal(find(objects, 'Deployment', 'github'), undefined);
    assert.deepEqual(problems, [
      {
        resource: 'MCPRemoteProxy/default/github',
        problem: 'spec.externalAuthConfigRef: MCPExternalAuthConfig default/github-header does not exist',
      },
    ]);
  });
});

describe('validation of the workload kinds', () => {
  const server = (spec: Record<string, unknown>, name = 'srv') => ({
    apiVersion: 'skep.dev/v1beta1',
    kind: 'MCPServer',
    metadata: { name },
    spec,
  });
  const messages = (v: unknown) => validateResource(v).problems.map((p) => `${p.path}: ${p.message}`);

  it('applies defaults and accepts the examples', () => {
    for (const d of examples.filter((x) => String(x['apiVersion']).startsWith('skep.dev/')))
      assert.deepEqual(messages(d), [], String((d['metadata'] as { name: string }).name));
    const r = validateResource(server({ image: 'x', command: ['x'] }));
    assert.equal((r.resource!['spec'] as { proxyPort: number }).proxyPort, 8080);
  });

  it('reports structure, CEL and code rules with field paths', () => {
    assert.deepEqual(messages(server({ image: 'x', transport: 'stdio', replicas: 2, bogus: 1 })), [
      'spec.bogus: is not a known field',
      'spec.replicas: a stdio server is one process: replicas must be at most 1',
      'spec.replicas: more than one replica needs sessionStorage provider redis (sessions must be shared)',
    ]);
    assert.deepEqual(messages(server({ image: 'x', command: ['x'] }, 'Bad_Name')), [
      'metadata.name: must be lowercase letters, digits and hyphens (a DNS label)',
    ]);
    assert.deepEqual(
      messages({
        apiVersion: 'skep.dev/v1beta1',
        kind: 'MCPRemoteProxy',
        metadata: { name: 'r' },
        spec: { remoteUrl: 'http://10.0.0.1/mcp' },
      }),
      [
        'spec.remoteUrl: host 10.0.0.1 is a private, loopback or link-local address; set allowPrivateEndpoint: true to allow it',
      ],
    );
    assert.deepEqual(
      messages({
        apiVersion: 'skep.dev/v1beta1',
        kind: 'VirtualMCPServer',
        metadata: { name: 'v' },
        spec: { groupRef: { name: 'g' }, incomingAuth: { type: 'oidc' } },
      }),
      ['spec.incomingAuth.oidcConfigRef: spec.incomingAuth.oidcConfigRef is required when type is oidc'],
    );
    assert.deepEqual(messages({ apiVersion: 'skep.dev/v1beta1', kind: 'Nope', metadata: { name: 'n' } }), [
      'kind: must be one of MCPExternalAuthConfig, MCPServer, MCPRemoteProxy, MCPServerEntry, VirtualMCPServer, MCPGroup, MCPToolConfig, MCPOIDCConfig, MCPAuthzConfig, MCPTelemetryConfig, MCPWebhookConfig, MCPRegistry, EmbeddingServer, VirtualMCPCompositeToolDefinition (got "Nope")',
    ]);
  });

  it('the admission webhook decides the workload kinds with the same library', async () => {
    const bad = server({ image: 'x', transport: 'stdio', mcpPort: 9000 });
    const denied = await review({ uid: 'u1', operation: 'CREATE', namespace: 'ns', object: bad });
    assert.equal(denied.allowed, false);
    assert.equal(
      denied.status?.message,
      'MCPServer ns/srv is invalid: spec.mcpPort: mcpPort applies to streamable-http and sse servers only',
    );
    // A stdio server without command is valid: its image's entrypoint is read when it renders.
    const noCommand = server({ image: 'x', transport: 'stdio' });
    assert.equal(
      (await review({ uid: 'u3', operation: 'CREATE', namespace: 'ns', object: noCommand })).allowed,
      true,
    );
    const ok = await review({
      uid: 'u2',
      operation: 'CREATE',
      namespace: 'ns',
      object: server({ image: 'x', command: ['x'] }),
    });
    assert.equal(ok.allowed, true);
  });
});
