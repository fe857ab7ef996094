// `skep extauth validate` and `skep operator validate|render` as real processes: exit 0 on valid
// files, 1 with field paths on invalid ones; documents of other API groups are skipped.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { OTHER_GROUPS_YAML } from '../../unit/operator/fixtures.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const skep = (...args: string[]) =>
  spawnSync(process.execPath, ['--import', 'tsx', join(root, 'src/control/cli/main.ts'), ...args], {
    cwd: root,
    encoding: 'utf8',
    timeout: 60_000,
    env: { ...process.env, SKEP_HOME: mkdtempSync(join(tmpdir(), 'skep-cli-')) },
  });

describe('skep extauth validate', { timeout: 120_000 }, () => {
  it('accepts the example manifests in deploy/examples (exit 0)', () => {
    const r = skep('extauth', 'validate', '-f', 'deploy/examples/mcpexternalauthconfigs.yaml');
    assert.equal(r.status, 0, r.stderr + r.stdout);
    assert.equal(r.stdout, 'github-token-exchange: valid\naws-mcp: valid\nembedded-login: valid\n');
  });

  it('rules: reports field paths and exits 1 (awsSts at-least-one, claim xor matcher, forbidden param)', (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'skep-extauth-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, 'bad.yaml');
    writeFileSync(
      file,
      `apiVersion: skep.dev/v1beta1
kind: MCPExternalAuthConfig
metadata: { name: bad-sts }
spec:
  type: awsSts
  awsSts: { region: us-east-1 }
---
apiVersion: skep.dev/v1beta1
kind: MCPExternalAuthConfig
metadata: { name: bad-eas }
spec:
  type: embeddedAuthServer
  embeddedAuthServer:
    issuer: https://a.example.com/
    upstreamProviders:
      - name: gh
        type: oauth2
        oauth2Config: { authorizationEndpoint: "https://g/a", tokenEndpoint: "https://g/t", clientId: x, additionalAuthorizationParams: { scope: all } }
`,
    );
    const r = skep('extauth', 'validate', '-f', file);
    assert.equal(r.status, 1);
    assert.match(
      r.stdout,
      /bad-sts: spec\.awsSts: at least one of fallbackRoleArn or roleMappings must be configured/,
    );
    assert.match(r.stdout, /bad-eas: spec\.embeddedAuthServer\.issuer: /);
    assert.match(
      r.stdout,
      /bad-eas: spec\.embeddedAuthServer\.upstreamProviders\[0\]\.oauth2Config\.additionalAuthorizationParams\.scope/,
    );
    const json = skep('extauth', 'validate', '-f', file, '--json');
    assert.equal(json.status, 1);
    const body = JSON.parse(json.stdout);
    assert.equal(body.valid, false);
    assert.equal(body.documents.length, 2);
  });

  it('a missing file is a clear error (exit 1)', () => {
    const r = skep('extauth', 'validate', '-f', '/nonexistent/x.yaml');
    assert.equal(r.status, 1);
    assert.match(r.stderr, /cannot read \/nonexistent\/x\.yaml/);
  });
});

describe('skep operator validate and render', { timeout: 120_000 }, () => {
  it('list documents of other API groups as skipped and exit 0', (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'skep-operator-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, 'mixed.yaml');
    writeFileSync(file, OTHER_GROUPS_YAML);
    const skipped = [
      'Namespace/toolhive: skipped (not a skep.dev resource)',
      'ServiceAccount/redis: skipped (not a skep.dev resource)',
      'Service/redis: skipped (not a skep.dev resource)',
      'StatefulSet/redis: skipped (not a skep.dev resource)',
      'RedisFailover/sessions: skipped (not a skep.dev resource)',
    ];
    const v = skep('operator', 'validate', '-f', file);
    assert.equal(v.status, 0, v.stderr + v.stdout);
    assert.deepEqual(v.stdout.trimEnd().split('\n'), [
      ...skipped,
      'Secret/redis-auth: skipped (not a skep.dev resource)',
      'MCPServer/web: valid',
    ]);
    const r = skep('operator', 'render', '-f', file, '--runner-image', 'skep:test');
    assert.equal(r.status, 0, r.stderr + r.stdout);
    assert.deepEqual(r.stderr.trimEnd().split('\n'), skipped);
    const kinds = [...r.stdout.matchAll(/^kind: (\w+)$/gm)].map((m) => m[1]);
    assert.deepEqual(kinds, ['ConfigMap', 'ServiceAccount', 'Deployment', 'Service']);
  });

  it("validates and renders the reference's examples of the shared configuration kinds", () => {
    const file = 'test/fixtures/operator-examples/mcp-servers/mcpserver_fetch_tools_filter.yaml';
    const v = skep('operator', 'validate', '-f', file);
    assert.equal(v.status, 0, v.stderr + v.stdout);
    assert.equal(v.stdout, 'MCPToolConfig/fetch-tools: valid\nMCPServer/fetch: valid\n');
    const r = skep('operator', 'render', '--offline', '-f', file);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /"tools_filter": \[/);
    assert.match(r.stdout, /skep\.dev\/tool-config-hash: /);
    const registry = skep(
      'operator',
      'render',
      '-f',
      'test/fixtures/operator-examples/mcp-registries/mcpregistry-configyaml-git-auth.yaml',
    );
    // A git source with a password file (mounted from a Secret) is served now.
    assert.equal(registry.status, 0, registry.stderr);
    assert.match(registry.stdout, /^kind: Deployment$/m);
    assert.match(registry.stdout, /mountPath: \/secrets\/git-credentials/);
  });
});
