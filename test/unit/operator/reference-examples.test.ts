// The reference's 52 operator examples (test/fixtures/operator-examples: its examples/operator/**
// with the API group renamed to skep.dev and the stale fields named in that folder's README
// corrected): every skep.dev document validates with the shared library (`skep operator
// validate`), every file renders (`skep operator render`) — but any Skep refuses on purpose
// (none today), each with the message that says why — and every rendered object validates against the
// Kubernetes schema of its kind (kubernetes-models 4.5.1, as the Helm chart test does).
//
// The entrypoint of a stdio image without `command` is read from its registry in production; here
// no registry is reachable, so the render gets a reader answering a fixed entrypoint (the real
// registry read is tested against a local OCI registry in test/integration/operator/image-command).
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, it } from 'node:test';
import { Deployment } from 'kubernetes-models/apps/v1/Deployment';
import { StatefulSet } from 'kubernetes-models/apps/v1/StatefulSet';
import { ConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { Service } from 'kubernetes-models/v1/Service';
import { ServiceAccount } from 'kubernetes-models/v1/ServiceAccount';
import { Role } from 'kubernetes-models/rbac.authorization.k8s.io/v1/Role';
import { RoleBinding } from 'kubernetes-models/rbac.authorization.k8s.io/v1/RoleBinding';
import { parseAllDocuments } from 'yaml';
import { renderResources } from '../../../src/control/operator/render.js';
import { foreignResource, validateResource } from '../../../src/control/operator/resource-validate.js';
import { formatProblem } from '../../../src/control/operator/validate.js';

const ROOT = new URL('../../fixtures/operator-examples/', import.meta.url).pathname;

function yamlFiles(dir: string): string[] {
  return readdirSync(dir)
    .flatMap((entry) => {
      const path = join(dir, entry);
      if (statSync(path).isDirectory()) return yamlFiles(path);
      return entry.endsWith('.yaml') ? [path] : [];
    })
    .sort();
}

const docsOf = (file: string): Array<Record<string, unknown>> =>
  parseAllDocuments(readFileSync(join(ROOT, file), 'utf8'))
    .map((d) => d.toJS() as unknown)
    .filter((d): d is Record<string, unknown> => d !== null && typeof d === 'object');

/** Files that use what another example defines (its README says to apply both). */
const NEEDS: Record<string, string[]> = {
  'external-auth/mcpserver_with_external_auth.yaml': ['external-auth/mcpexternalauthconfig_basic.yaml'],
};

/** What Skep refuses on purpose, per file: the start of the problem it reports. */
const REFUSED: Record<string, string> = {};

type Model = { validate(): void };
const MODELS: Record<string, new (data: never) => Model> = {
  ConfigMap,
  Deployment,
  Role,
  RoleBinding,
  Service,
  ServiceAccount,
  StatefulSet,
};

const readImageCommand = async (image: string) => ({
  pinned: `${image.split(':')[0]}@sha256:${'0'.repeat(64)}`,
  digest: `sha256:${'0'.repeat(64)}`,
  entrypoint: ['/usr/local/bin/server'],
  cmd: [],
});

describe("the reference's operator examples", () => {
  const files = yamlFiles(ROOT).map((f) => relative(ROOT, f));

  it('are the 52 files of examples/operator', () => {
    assert.equal(files.length, 52);
  });

  it('every skep.dev document validates', () => {
    const problems: string[] = [];
    let checked = 0;
    for (const file of files) {
      for (const doc of docsOf(file)) {
        if (foreignResource(doc) !== undefined || doc['kind'] === 'Secret' || doc['kind'] === 'ConfigMap')
          continue;
        checked++;
        const name = String((doc['metadata'] as Record<string, unknown>)['name']);
        for (const p of validateResource(doc).problems)
          problems.push(`${file} ${String(doc['kind'])}/${name}: ${formatProblem(p)}`);
      }
    }
    assert.deepEqual(problems, []);
    assert.ok(checked >= 80, `${checked} documents`);
  });

  it('every file renders (but the refusals named here), into objects valid for Kubernetes', async () => {
    const rendered: string[] = [];
    const refused: Record<string, string> = {};
    const kinds = new Set<string>();
    for (const file of files) {
      const docs = [...(NEEDS[file] ?? []).flatMap(docsOf), ...docsOf(file)];
      const result = await renderResources(docs, { readImageCommand });
      if (result.problems.length > 0) {
        refused[file] = result.problems.map((p) => `${p.resource}: ${p.problem}`).join('\n');
        continue;
      }
      rendered.push(file);
      for (const obj of result.objects) {
        const Model = MODELS[obj.kind];
        assert.ok(Model !== undefined, `${file}: no schema for ${obj.kind}`);
        kinds.add(obj.kind);
        assert.doesNotThrow(
          () => new Model(structuredClone(obj) as never).validate(),
          `${file}: ${obj.kind}/${obj.metadata.name}`,
        );
      }
    }
    assert.deepEqual(
      Object.keys(refused).sort(),
      Object.keys(REFUSED).sort(),
      JSON.stringify(refused, null, 2),
    );
    for (const [file, start] of Object.entries(REFUSED))
      assert.ok(refused[file]?.startsWith(start), `${file}: ${refused[file]}`);
    assert.equal(rendered.length, 52 - Object.keys(REFUSED).length);
    assert.deepEqual([...kinds].sort(), [
      'ConfigMap',
      'Deployment',
      'Role',
      'RoleBinding',
      'Service',
      'ServiceAccount',
      'StatefulSet',
    ]);
  });
});
