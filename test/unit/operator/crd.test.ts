// The generated CRD YAML: fresh, structural, and its CEL rules enforce ToolHive's cross-field
// rules. The rules are read from the YAML file on disk and evaluated with a real CEL library
// (@marcbachmann/cel-js), so what the cluster would enforce is exercised, not only the
// TypeScript validator.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { Environment, parse as parseCel } from '@marcbachmann/cel-js';
import { parse as parseYaml } from 'yaml';
import { collectCelRules, evaluateCelRules, toCelValue } from '../../../src/control/operator/cel-rules.js';
import { CRD_FILE, renderCrdYaml } from '../../../src/control/operator/crd-yaml.js';
import { validateExtAuthConfig } from '../../../src/control/operator/validate.js';
import {
  awsSts,
  embedded,
  oauth2Provider,
  oidcProvider,
  ROLE_ARN,
  redisStorage,
  ref,
  resource,
  tokenExchange,
} from './fixtures.js';

type Node = Record<string, unknown>;
const text = readFileSync(new URL(`../../../${CRD_FILE}`, import.meta.url), 'utf8');
const crd = parseYaml(text) as Node;
const version = ((crd['spec'] as Node)['versions'] as Node[])[0]!;
const openApi = (version['schema'] as Node)['openAPIV3Schema'] as Node;

/** What the API server would report for this object from the YAML rules alone. */
const yamlViolations = (obj: unknown) => evaluateCelRules(openApi, JSON.parse(JSON.stringify(obj)));

describe('generated CRD (deploy/crds)', () => {
  it('is up to date with the TypeBox schema (node --import tsx scripts/gen-crd.ts)', () => {
    assert.equal(text, renderCrdYaml());
  });

  it('identity: skep.dev/v1beta1, namespaced, short names extauth and mcpextauth, status subresource', () => {
    const spec = crd['spec'] as Node;
    assert.equal(crd['apiVersion'], 'apiextensions.k8s.io/v1');
    assert.equal(spec['group'], 'skep.dev');
    assert.equal(spec['scope'], 'Namespaced');
    assert.deepEqual((spec['names'] as Node)['shortNames'], ['extauth', 'mcpextauth']);
    assert.equal((spec['names'] as Node)['kind'], 'MCPExternalAuthConfig');
    assert.equal(version['name'], 'v1beta1');
    assert.deepEqual(version['subresources'], { status: {} });
    const columns = (version['additionalPrinterColumns'] as Node[]).map((c) => c['name']);
    assert.deepEqual(columns, ['Type', 'Valid', 'Hash', 'Age']);
  });

  it('is a structural schema: type on every node, no $id/anyOf/const, no additionalProperties beside properties', () => {
    const bad: string[] = [];
    const visit = (node: Node, at: string) => {
      if (typeof node['type'] !== 'string') bad.push(`${at}: no type`);
      for (const k of ['$id', 'anyOf', 'oneOf', 'allOf', 'const', 'patternProperties', '$ref'])
        if (k in node) bad.push(`${at}: ${k}`);
      if ('properties' in node && 'additionalProperties' in node)
        bad.push(`${at}: properties + additionalProperties`);
      if (node['x-kubernetes-list-type'] === 'map') {
        const item = node['items'] as Node;
        for (const key of node['x-kubernetes-list-map-keys'] as string[]) {
          if (!((item['required'] as string[] | undefined) ?? []).includes(key))
            bad.push(`${at}: map key ${key} not required`);
        }
      }
      for (const [k, v] of Object.entries((node['properties'] as Record<string, Node>) ?? {}))
        visit(v, `${at}.${k}`);
      if (typeof node['additionalProperties'] === 'object')
        visit(node['additionalProperties'] as Node, `${at}.*`);
      if (node['items'] !== undefined) visit(node['items'] as Node, `${at}[]`);
    };
    visit(openApi, '');
    assert.deepEqual(bad, []);
  });

  it('limits and defaults are in the YAML (sessionDuration 900..43200 default 3600, redis timeouts, name 1..63)', () => {
    const spec = (openApi['properties'] as Record<string, Node>)['spec']!;
    const props = (n: Node) => n['properties'] as Record<string, Node>;
    const sd = props(props(spec)['awsSts']!)['sessionDuration']!;
    assert.deepEqual(
      [sd['minimum'], sd['maximum'], sd['default'], sd['format']],
      [900, 43200, 3600, 'int32'],
    );
    const redis = props(props(props(props(spec)['embeddedAuthServer']!)['storage']!)['redis']!);
    assert.deepEqual(
      [redis['dialTimeout']!['default'], redis['readTimeout']!['default'], redis['writeTimeout']!['default']],
      ['5s', '3s', '3s'],
    );
    const name = props(props(props(spec)['embeddedAuthServer']!)['upstreamProviders']!['items'] as Node)[
      'name'
    ]!;
    assert.deepEqual([name['minLength'], name['maxLength']], [1, 63]);
  });

  it('every CEL rule in the YAML compiles with a declared self', () => {
    const rules = collectCelRules(openApi);
    assert.ok(rules.length >= 14, `found ${rules.length} rules`);
    const env = new Environment({ unlistedVariablesAreDyn: true });
    for (const r of rules) {
      assert.doesNotThrow(() => parseCel(r.rule), r.rule);
      const checked = env.check(r.rule) as { valid: boolean; type?: string };
      assert.ok(checked.valid, `${r.at}: ${r.rule}`);
      assert.ok(typeof r.message === 'string' && r.message.length > 0);
    }
  });
});

interface CelCase {
  rule: string;
  spec: unknown;
  /** Path + message fragments the YAML rules must report; empty = the rules pass. */
  expect: string[];
}

const celCases: CelCase[] = [
  { rule: 'type ↔ block: tokenExchange present', spec: tokenExchange(), expect: [] },
  {
    rule: 'type ↔ block: tokenExchange missing',
    spec: { type: 'tokenExchange' },
    expect: ['spec.tokenExchange'],
  },
  {
    rule: 'type ↔ block: unauthenticated with a block',
    spec: { type: 'unauthenticated', headerInjection: { headerName: 'a', valueSecretRef: ref('s') } },
    expect: ['spec.headerInjection'],
  },
  {
    rule: 'type ↔ block: awsSts type with an embeddedAuthServer block and no awsSts block',
    spec: { type: 'awsSts', embeddedAuthServer: embedded().embeddedAuthServer },
    expect: ['spec.awsSts', 'spec.embeddedAuthServer'],
  },
  {
    rule: 'awsSts: fallbackRoleArn satisfies at-least-one',
    spec: awsSts({ fallbackRoleArn: ROLE_ARN }),
    expect: [],
  },
  {
    rule: 'awsSts: neither fallbackRoleArn nor roleMappings',
    spec: awsSts({ roleMappings: [] }),
    expect: ['spec.awsSts: at least one'],
  },
  {
    rule: 'roleMappings: claim xor matcher',
    spec: awsSts({
      roleMappings: [
        { roleArn: ROLE_ARN, claim: 'a' },
        { roleArn: ROLE_ARN, claim: 'a', matcher: 'true' },
      ],
    }),
    expect: ['spec.awsSts.roleMappings[1]: exactly one of claim or matcher'],
  },
  { rule: 'redis: addr only', spec: redisStorage({ addr: 'r:6379', clusterMode: true }), expect: [] },
  {
    rule: 'redis: addr and sentinelConfig',
    spec: redisStorage({ addr: 'r:6379', sentinelConfig: { masterName: 'm', sentinelAddrs: ['s:1'] } }),
    expect: ['spec.embeddedAuthServer.storage.redis: exactly one of addr or sentinelConfig'],
  },
  {
    rule: 'redis: clusterMode without addr',
    spec: redisStorage({
      clusterMode: true,
      sentinelConfig: { masterName: 'm', sentinelService: { name: 's' } },
    }),
    expect: ['spec.embeddedAuthServer.storage.redis.clusterMode: clusterMode requires addr'],
  },
  {
    rule: 'sentinel: sentinelAddrs xor sentinelService',
    spec: redisStorage({ sentinelConfig: { masterName: 'm' } }),
    expect: [
      'spec.embeddedAuthServer.storage.redis.sentinelConfig: exactly one of sentinelAddrs or sentinelService',
    ],
  },
  {
    rule: 'storage: redis type without block',
    spec: embedded({ storage: { type: 'redis' } }),
    expect: ['spec.embeddedAuthServer.storage.redis'],
  },
  {
    rule: 'upstream: oidc type with oauth2Config',
    spec: embedded({
      upstreamProviders: [{ name: 'a', type: 'oidc', oauth2Config: oauth2Provider().oauth2Config }],
    }),
    expect: ['upstreamProviders[0].oauth2Config', 'upstreamProviders[0].oidcConfig'],
  },
  {
    rule: 'oauth2: clientId and dcrConfig',
    spec: embedded({
      upstreamProviders: [oauth2Provider('gh', { dcrConfig: { discoveryUrl: 'https://a.example.com' } })],
    }),
    expect: ['upstreamProviders[0].oauth2Config.clientId: exactly one of clientId or dcrConfig'],
  },
  {
    rule: 'oauth2: empty clientId with dcrConfig is fine',
    spec: embedded({
      upstreamProviders: [
        oauth2Provider('gh', { clientId: '', dcrConfig: { discoveryUrl: 'https://a.example.com' } }),
      ],
    }),
    expect: [],
  },
  {
    rule: 'dcrConfig: neither discoveryUrl nor registrationEndpoint',
    spec: embedded({
      upstreamProviders: [oauth2Provider('gh', { clientId: '', dcrConfig: { softwareId: 'x' } })],
    }),
    expect: ['oauth2Config.dcrConfig: exactly one of discoveryUrl or registrationEndpoint'],
  },
  {
    rule: 'embedded with oidc upstream passes all rules',
    spec: embedded({ upstreamProviders: [oidcProvider()] }),
    expect: [],
  },
];

describe('CEL rules read from the generated CRD YAML, evaluated with cel-js', () => {
  for (const c of celCases) {
    it(`${c.rule}`, () => {
      const found = yamlViolations(resource(c.spec)).map((v) => `${v.path}: ${v.message}`);
      if (c.expect.length === 0) assert.deepEqual(found, []);
      for (const fragment of c.expect) {
        assert.ok(
          found.some((f) => f.includes(fragment)),
          `expected ${fragment} in ${JSON.stringify(found)}`,
        );
      }
      // The YAML rules and the validation library agree on this object.
      const library = validateExtAuthConfig(resource(c.spec)).problems;
      assert.equal(library.length === 0, found.length === 0, JSON.stringify(library));
    });
  }

  it('integers reach CEL as int (bigint), as in Kubernetes', () => {
    assert.equal(typeof toCelValue(3600), 'bigint');
    assert.equal(parseCel('self.n >= 900')({ self: toCelValue({ n: 3600 }) }), true);
  });
});
