import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import {
  AUTHZ_DEFAULTS,
  claimProvider,
  loadAuthzConfigFile,
  parseAuthzConfig,
} from '../../../src/dataplane/middleware/authz/index.js';
import { isSkepError } from '../../../src/shared/index.js';

const PERMIT = 'permit(principal, action, resource);';

function cedar(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { version: '1.0', type: 'cedarv1', cedar: { policies: [PERMIT], ...extra } };
}

/** Asserts a 400 invalid_config whose message matches every pattern. */
function refused(fn: () => unknown, ...patterns: RegExp[]): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(isSkepError(err), String(err));
    assert.equal(err.code, 'invalid_config');
    for (const p of patterns) assert.match(err.message, p);
    return true;
  });
}

function tempDir(t: { after(fn: () => void): void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'skep-authz-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

test('a cedarv1 config gets its defaults (THVGroup, empty lists)', () => {
  const c = parseAuthzConfig(cedar(), 'authz_config');
  assert.equal(c.type, 'cedarv1');
  if (c.type !== 'cedarv1') return;
  assert.equal(c.cedar.group_entity_type, AUTHZ_DEFAULTS.groupEntityType);
  assert.deepEqual(c.cedar.multi_valued_claims, []);
  assert.equal(c.cedar.entities_json, '');
  assert.deepEqual(c.entities, []);
  assert.ok(Object.isFrozen(c));
});

test('a Cedar syntax error names the field, the policy id policy<N> and Cedar’s message', () => {
  refused(
    () =>
      parseAuthzConfig(
        cedar({ policies: [PERMIT, 'permit(principal, action, resource) when { resource.x > 1 ;'] }),
        'authz_config',
      ),
    /authz_config\.cedar\.policies\[1\]/,
    /policy1/,
    /unexpected token/,
  );
});

test('a template (slot) is not a policy; two policies in one string are refused', () => {
  refused(
    () =>
      parseAuthzConfig(
        cedar({ policies: ['permit(principal == ?principal, action, resource);'] }),
        'authz_config',
      ),
    /policy0/,
    /template/,
  );
  refused(
    () => parseAuthzConfig(cedar({ policies: [`${PERMIT} ${PERMIT}`] }), 'authz_config'),
    /policies\[0\] \(policy0\)/,
  );
});

test('shape errors name the field', () => {
  refused(() => parseAuthzConfig('x', 'authz_config'), /^authz_config must be an object/);
  refused(
    () => parseAuthzConfig({ type: 'cedarv1', cedar: { policies: [PERMIT] } }),
    /authz_config\.version/,
  );
  refused(
    () => parseAuthzConfig({ version: '1', type: 'opa' }, 'authz_config'),
    /authz_config\.type/,
    /"opa"/,
  );
  refused(() => parseAuthzConfig(cedar({ policies: [] }), 'authz_config'), /cedar\.policies: at least one/);
  refused(
    () => parseAuthzConfig(cedar({ policies: 'permit' }), 'authz_config'),
    /cedar\.policies must be an array/,
  );
  refused(
    () => parseAuthzConfig({ version: '1', type: 'cedarv1' }, 'authz_config'),
    /authz_config\.cedar must be/,
  );
  refused(
    () => parseAuthzConfig(cedar({ group_entity_type: 'Org::Group' }), 'authz_config'),
    /cedar\.group_entity_type/,
    /'::'/,
  );
  refused(() => parseAuthzConfig(cedar({ multi_valued_claims: [1] }), 'authz_config'), /multi_valued_claims/);
});

test('no silent fields: unknown keys are refused and named, at every level', () => {
  refused(
    () => parseAuthzConfig({ ...cedar(), extra: 1 }, 'authz_config'),
    /authz_config: unknown key 'extra'/,
  );
  refused(
    () => parseAuthzConfig(cedar({ polices: [] }), 'authz_config'),
    /authz_config\.cedar: unknown key 'polices'/,
  );
  refused(() => parseAuthzConfig({ ...cedar(), pdp: {} }, 'authz_config'), /unknown key 'pdp'/);
  refused(
    () =>
      parseAuthzConfig(
        {
          version: '1',
          type: 'httpv1',
          pdp: { http: { url: 'http://pdp', tls: true }, claim_mapping: 'mpe' },
        },
        'authz_config',
      ),
    /authz_config\.pdp\.http: unknown key 'tls'/,
  );
});

test('entities_json accepts {type,id} and {"__entity":…} uids, refuses a bare string', () => {
  const entities = JSON.stringify([
    {
      uid: { type: 'Tool', id: 'weather' },
      attrs: { owner: 'ops' },
      parents: [{ __entity: { type: 'MCP', id: 'x' } }],
    },
    { uid: { __entity: { type: 'Role', id: 'admin' } }, attrs: {}, parents: [] },
  ]);
  const c = parseAuthzConfig(cedar({ entities_json: entities }), 'authz_config');
  assert.equal(c.type, 'cedarv1');
  if (c.type !== 'cedarv1') return;
  assert.deepEqual(c.entities[0]?.uid, { type: 'Tool', id: 'weather' });
  assert.deepEqual(c.entities[0]?.parents, [{ type: 'MCP', id: 'x' }]);
  assert.deepEqual(c.entities[1]?.uid, { type: 'Role', id: 'admin' });

  refused(
    () =>
      parseAuthzConfig(
        cedar({ entities_json: '[{"uid":"Tool::weather","attrs":{},"parents":[]}]' }),
        'authz_config',
      ),
    /authz_config\.cedar\.entities_json\[0\]\.uid must be an entity reference/,
  );
  refused(
    () => parseAuthzConfig(cedar({ entities_json: '{' }), 'authz_config'),
    /entities_json is not valid JSON/,
  );
  refused(
    () => parseAuthzConfig(cedar({ entities_json: '{}' }), 'authz_config'),
    /entities_json must hold a JSON array/,
  );
  refused(
    () =>
      parseAuthzConfig(
        cedar({
          entities_json:
            '[{"uid":{"type":"T","id":"a"},"attrs":{"d":{"__extn":{"fn":"decimal","arg":"1.23456"}}}}]',
        }),
        'authz_config',
      ),
    /entities_json/,
    /too many digits/,
  );
  refused(
    () =>
      parseAuthzConfig(
        cedar({ entities_json: '[{"uid":{"type":"T","id":"a"}},{"uid":{"type":"T","id":"a"}}]' }),
        'authz_config',
      ),
    /defined twice/,
  );
});

test('httpv1 needs a URL and a claim mapping; timeout defaults to 30 s', () => {
  const c = parseAuthzConfig(
    {
      version: '1.0',
      type: 'httpv1',
      pdp: { http: { url: 'https://pdp.example/' }, claim_mapping: 'standard' },
    },
    'authz_config',
  );
  assert.equal(c.type, 'httpv1');
  if (c.type !== 'httpv1') return;
  assert.equal(c.pdp.http.timeout, 30);
  assert.equal(c.pdp.http.insecure_skip_verify, false);
  assert.deepEqual(c.pdp.context, { include_args: false, include_operation: false });

  const base = { version: '1', type: 'httpv1' };
  refused(
    () => parseAuthzConfig({ ...base, pdp: { http: {}, claim_mapping: 'mpe' } }, 'authz_config'),
    /pdp\.http\.url/,
  );
  refused(
    () =>
      parseAuthzConfig({ ...base, pdp: { http: { url: 'ftp://x' }, claim_mapping: 'mpe' } }, 'authz_config'),
    /http or https/,
  );
  refused(
    () => parseAuthzConfig({ ...base, pdp: { http: { url: 'http://x' } } }, 'authz_config'),
    /claim_mapping is required/,
  );
  refused(
    () =>
      parseAuthzConfig(
        { ...base, pdp: { http: { url: 'http://x', timeout: -1 }, claim_mapping: 'mpe' } },
        'authz_config',
      ),
    /pdp\.http\.timeout/,
  );
});

test('the file is JSON or YAML by extension; `..` and other extensions are refused', (t) => {
  const dir = tempDir(t);
  const json = join(dir, 'authz.json');
  writeFileSync(json, JSON.stringify(cedar()));
  assert.equal(loadAuthzConfigFile(json).config.type, 'cedarv1');
  const noExt = join(dir, 'authz');
  writeFileSync(noExt, JSON.stringify(cedar()));
  assert.deepEqual(loadAuthzConfigFile(noExt).raw, cedar());
  const yaml = join(dir, 'authz.yml');
  writeFileSync(
    yaml,
    `version: "1.0"\ntype: cedarv1\ncedar:\n  policies:\n    - 'permit(principal, action, resource);'\n`,
  );
  assert.deepEqual(loadAuthzConfigFile(yaml).raw, cedar());

  const txt = join(dir, 'authz.txt');
  writeFileSync(txt, '{}');
  refused(() => loadAuthzConfigFile(txt), /authz_config/, /\.json, \.yaml or \.yml/);
  mkdirSync(join(dir, 'sub'));
  refused(() => loadAuthzConfigFile(`${dir}/sub/../authz.json`), /must not contain '\.\.'/);
  refused(() => loadAuthzConfigFile(join(dir, 'missing.json')), /cannot read/, /no such file/);
  refused(() => loadAuthzConfigFile(join(dir, 'sub'), 'authz_config_path'), /authz_config_path: cannot read/);
  const broken = join(dir, 'broken.yaml');
  writeFileSync(broken, 'a: [');
  refused(() => loadAuthzConfigFile(broken), /not valid YAML/);
});

test('primary_upstream_provider needs the embedded authorization server and one of its upstreams', () => {
  const withProvider = parseAuthzConfig(cedar({ primary_upstream_provider: 'okta' }), 'authz_config');
  refused(
    () => claimProvider(withProvider, {}),
    /primary_upstream_provider needs the embedded authorization server/,
  );
  const embedded = {
    upstreams: [
      { name: 'github', type: 'oauth2' as const },
      { name: 'okta', type: 'oidc' as const },
    ],
  };
  assert.equal(claimProvider(withProvider, { embedded_auth_server_config: embedded }), 'okta');
  refused(
    () =>
      claimProvider(parseAuthzConfig(cedar({ primary_upstream_provider: 'azure' }), 'authz_config'), {
        embedded_auth_server_config: embedded,
      }),
    /"azure" is not an upstream/,
  );
  // As the reference does: with the embedded server, the first upstream's claims by default.
  assert.equal(
    claimProvider(parseAuthzConfig(cedar(), 'authz_config'), { embedded_auth_server_config: embedded }),
    'github',
  );
  assert.equal(claimProvider(parseAuthzConfig(cedar(), 'authz_config'), {}), '');
});
