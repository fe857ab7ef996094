// The MCPRegistry configYAML as Skep's registry server reads it (the reference registry server's
// config format), the union of several sources, and what the operator renders for each.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parse as parseYaml } from 'yaml';
import { parseRegistryServerConfig } from '../../../src/control/operator/registry-config.js';
import { entryOf } from '../../../src/control/operator/registry-kubernetes.js';
import { unionDocuments } from '../../../src/control/operator/registry-sync.js';
import { renderResources } from '../../../src/control/operator/render.js';

const parse = (yaml: string) => parseRegistryServerConfig(parseYaml(yaml));

describe('MCPRegistry configYAML', () => {
  it('several registries, each with the sources it names, in order', () => {
    const { config, problems } = parse(`
sources:
  - {name: a, file: {path: /data/a.json}}
  - {name: g, git: {repository: "https://git.example.com/r.git", tag: v1, path: reg.json, auth: {username: git, passwordFile: /s/token}}, syncPolicy: {interval: 15m}}
  - {name: k, kubernetes: {namespaces: [team-a, team-b]}}
registries:
  - {name: all, sources: [g, a, k]}
  - {name: files, sources: [a]}
auth: {mode: anonymous}
`);
    assert.deepEqual(problems, []);
    assert.deepEqual(
      config?.registries.map((r) => [r.name, r.sources.map((s) => s.name)]),
      [
        ['all', ['g', 'a', 'k']],
        ['files', ['a']],
      ],
    );
    const git = config?.registries[0]?.sources[0];
    assert.deepEqual(git, {
      name: 'g',
      kind: 'git',
      repository: 'https://git.example.com/r.git',
      ref: { tag: 'v1' },
      path: 'reg.json',
      auth: { username: 'git', passwordFile: '/s/token' },
      ttlMs: 15 * 60_000,
    });
  });

  it('refuses what it cannot serve, naming the setting', () => {
    const { config, problems } = parse(`
sources:
  - {name: g, git: {repository: "git@github.com:o/r.git", branch: main, tag: v1}}
  - {name: m, managed: {}}
  - {name: k, kubernetes: {}, filter: {names: {include: ["a*"]}}}
registries:
  - {name: default, sources: [g, m, k, missing]}
  - {name: "bad/name", sources: [g]}
auth: {mode: oauth, oauth: {providers: [{name: p, issuerUrl: "https://idp.example.com"}]}}
`);
    assert.equal(config, undefined);
    for (const start of [
      'sources[0].git.repository: Skep fetches git over http(s) only',
      'sources[0].git: set one of branch, tag and commit',
      "sources[1].managed: Skep's registry server is read-only",
      'sources[2].filter: a kubernetes source serves the objects that opt in',
      'registries[0].sources: no source is named missing',
      'registries[1].name: required',
      'auth.oauth.providers[0].audience: required',
    ])
      assert.ok(
        problems.some((p) => p.startsWith(start)),
        `${start}\n${problems.join('\n')}`,
      );
  });

  it('file sources: path, url (https, or http to loopback; timeout) or data (JSON), exactly one', () => {
    const good = parse(`
sources:
  - {name: p, file: {path: /a.json}}
  - {name: u, file: {url: "https://registry.example.com/registry.json", timeout: 10s}}
  - {name: l, file: {url: "http://localhost:8080/registry.json"}}
  - {name: d, file: {data: '{"version":"1.0.0","data":{"servers":[]}}'}}
registries: [{name: default, sources: [p, u, l, d]}]
auth: {mode: anonymous}
`);
    assert.deepEqual(good.problems, []);
    const sources = good.config?.registries[0]?.sources.map((x) => ({ ...x, filter: undefined }));
    assert.deepEqual(
      sources?.map((x) => x.kind),
      ['file', 'url', 'url', 'data'],
    );
    assert.deepEqual(
      good.config?.registries[0]?.sources.filter((x) => x.kind === 'url').map((x) => x.timeoutMs),
      [10_000, 30_000],
    );
    const bad = parse(`
sources:
  - {name: h, file: {url: "http://registry.example.com/r.json"}}
  - {name: two, file: {path: /a.json, url: "https://x.example.com/r.json"}}
  - {name: j, file: {data: "not json"}}
  - {name: t, file: {path: /a.json, timeout: 5s}}
  - {name: bt, file: {url: "https://x.example.com/r.json", timeout: soon}}
registries: [{name: default, sources: [h, two, j, t, bt]}]
auth: {mode: anonymous}
`);
    assert.equal(bad.config, undefined);
    for (const start of [
      'sources[0].file.url: must be https (http only to localhost)',
      'sources[1].file: needs exactly one of path, url and data (got 2)',
      'sources[2].file.data: not JSON',
      'sources[3].file.timeout: applies to file.url only',
      'sources[4].file.timeout: must be a duration',
    ])
      assert.ok(
        bad.problems.some((p) => p.startsWith(start)),
        `${start}\n${bad.problems.join('\n')}`,
      );
  });

  it('oauth: the reference defaults (realm, scopes); client credentials without introspectionUrl are listed as unused', () => {
    const { config, problems, ignored } = parse(`
sources: [{name: a, file: {path: /a.json}}]
registries: [{name: default, sources: [a]}]
auth:
  mode: oauth
  oauth:
    providers:
      - {name: kc, issuerUrl: "https://kc.example.com/realms/mcp", audience: mcp-registry, clientId: c, clientSecretFile: /s/secret}
`);
    assert.deepEqual(problems, []);
    assert.deepEqual(config?.auth, {
      mode: 'oauth',
      realm: 'mcp-registry',
      scopesSupported: ['mcp-registry:read', 'mcp-registry:write'],
      providers: [
        {
          name: 'kc',
          issuerUrl: 'https://kc.example.com/realms/mcp',
          audience: 'mcp-registry',
          clientId: 'c',
          clientSecretFile: '/s/secret',
        },
      ],
      publicPaths: [],
    });
    assert.equal(ignored.filter((i) => i.includes('not used without introspectionUrl')).length, 2);
  });

  it('union: the first source named wins a clash, and the clash is reported', () => {
    const clashes: string[] = [];
    const doc = (desc: string, ...names: string[]) => ({
      data: { servers: names.map((name) => ({ name, description: desc, version: '1' })) },
    });
    const union = unionDocuments(
      [
        { source: 'first', doc: doc('1st', 'io.x/a', 'io.x/b') },
        { source: 'second', doc: doc('2nd', 'io.x/b', 'io.x/c') },
      ],
      (list, key, kept, dropped) => clashes.push(`${list} ${key} ${kept} ${dropped}`),
    );
    const servers = (union['data'] as { servers: Array<{ name: string; description: string }> }).servers;
    assert.deepEqual(
      servers.map((s) => `${s.name}:${s.description}`),
      ['io.x/a:1st', 'io.x/b:1st', 'io.x/c:2nd'],
    );
    assert.deepEqual(clashes, ['servers io.x/b first second']);
  });

  it('kubernetes entries: only objects with registry-export "true", a description and a URL', () => {
    const obj = (annotations: Record<string, string>) => ({
      metadata: { name: 'My_Server', namespace: 'Team-A', annotations },
      spec: { image: 'ghcr.io/x/y:v2.0.1' },
    });
    const full = {
      'skep.dev/registry-export': 'true',
      'skep.dev/registry-description': 'd',
      'skep.dev/registry-url': 'http://u/mcp',
    };
    assert.equal(entryOf('MCPServer', obj({ ...full, 'skep.dev/registry-export': 'yes' })), undefined);
    assert.equal(entryOf('MCPServer', obj({ ...full, 'skep.dev/registry-url': '' })), undefined);
    const entry = entryOf('MCPServer', obj(full));
    assert.equal(entry?.['name'], 'com.toolhive.k8s.team-a/my_server');
    assert.equal(entry?.['version'], '2.0.1');
  });

  it('render: a kubernetes source gets a Role listing the workloads and a mounted token; others none', async () => {
    const cr = (configYAML: string) => ({
      apiVersion: 'skep.dev/v1beta1',
      kind: 'MCPRegistry',
      metadata: { name: 'reg', namespace: 'team-a' },
      spec: { configYAML },
    });
    const k8s = await renderResources(
      [
        cr(
          'sources: [{name: k, kubernetes: {namespaces: [team-a, team-b]}}]\nregistries: [{name: default, sources: [k]}]\nauth: {mode: anonymous}\n',
        ),
      ],
      {},
    );
    assert.deepEqual(k8s.problems, []);
    const role = k8s.objects.find((o) => o.kind === 'Role') as unknown as {
      rules: Array<{ resources: string[]; verbs: string[] }>;
    };
    assert.deepEqual(role.rules[0]?.resources, ['mcpservers', 'virtualmcpservers', 'mcpremoteproxies']);
    assert.ok(k8s.objects.some((o) => o.kind === 'RoleBinding'));
    const sa = k8s.objects.find((o) => o.kind === 'ServiceAccount') as unknown as Record<string, unknown>;
    assert.equal(sa['automountServiceAccountToken'], true);
    assert.ok(
      k8s.warnings.some((w) =>
        w.problem.includes('kubernetes source namespace team-b: grant ServiceAccount team-a/reg-api'),
      ),
      k8s.warnings.map((w) => w.problem).join('\n'),
    );
    const file = await renderResources(
      [
        cr(
          'sources: [{name: a, file: {path: /a.json}}]\nregistries: [{name: default, sources: [a]}]\nauth: {mode: anonymous}\n',
        ),
      ],
      {},
    );
    assert.equal(
      file.objects.some((o) => o.kind === 'Role'),
      false,
    );
  });
});
