// scripts/check-layers.mjs is the lint rule for src/'s layers: each test plants one kind of
// violation in a scratch tree and sees the checker name it, and a clean tree passes.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, test } from 'node:test';
import { checkLayers } from '../../../scripts/check-layers.mjs';

const scratch: string[] = [];
after(() => {
  for (const dir of scratch) rmSync(dir, { recursive: true, force: true });
});

/** A scratch repository whose src/ holds `files` (path under src/ → contents). */
function tree(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), 'skep-layers-'));
  scratch.push(root);
  for (const [path, text] of Object.entries(files)) {
    const file = join(root, 'src', path);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, text);
  }
  return root;
}

function check(root: string): { status: number; lines: string[] } {
  const { violations } = checkLayers(join(root, 'src'));
  return { status: violations.length === 0 ? 0 : 1, lines: violations };
}

const clean: Record<string, string> = {
  'shared/index.ts': 'export const one = 1;\n',
  'schemas/index.ts':
    "import { Type } from 'typebox';\nimport { one } from '../shared/index.js';\nexport const S = Type.Number({ default: one });\n",
  'dataplane/proxy/index.ts': "export { relay } from './relay.js';\n",
  'dataplane/proxy/relay.ts': "import { S } from '../../schemas/index.js';\nexport const relay = () => S;\n",
  'control/api/index.ts':
    "import { relay } from '../../dataplane/proxy/index.js';\nexport const route = relay;\n",
};

test('a tree that keeps the rules passes', () => {
  const { status, lines } = check(tree(clean));
  assert.deepEqual(lines, []);
  assert.equal(status, 0);
});

test('an import cycle between folders fails, naming both edges', () => {
  const { status, lines } = check(
    tree({
      ...clean,
      'dataplane/proxy/relay.ts':
        "import { route } from '../../control/api/index.js';\nexport const relay = () => route;\n",
    }),
  );
  assert.equal(status, 1);
  const cycle = lines.find((l) =>
    l.startsWith('import cycle between folders: control/api -> dataplane/proxy -> control/api'),
  );
  assert.ok(cycle, lines.join('\n'));
  assert.match(cycle, /dataplane\/proxy -> control\/api \(src\/dataplane\/proxy\/relay\.ts:1\)/);
});

test('type-only and lazy imports make no cycle', () => {
  const { status, lines } = check(
    tree({
      ...clean,
      'dataplane/proxy/relay.ts':
        "import type { route } from '../../control/api/index.js';\nexport const relay = async (): Promise<typeof route> => (await import('../../control/api/index.js')).route;\n",
    }),
  );
  // The lazy import of the control plane is still a boundary crossing, but not a cycle.
  assert.ok(!lines.some((l) => l.startsWith('import cycle')), lines.join('\n'));
  assert.ok(
    lines.some((l) => l.includes('data plane (src/dataplane/proxy) imports control plane (src/control/api)')),
  );
  assert.equal(status, 1);
});

test('the data plane loading the control plane or its packages fails', () => {
  const { status, lines } = check(
    tree({
      ...clean,
      'dataplane/proxy/log.ts': "import pino from 'pino';\nexport const log = pino();\n",
      'dataplane/proxy/lazy.ts': "export const app = () => import('fastify');\n",
    }),
  );
  assert.equal(status, 1);
  assert.ok(
    lines.includes("src/dataplane/proxy/log.ts:1: data plane imports 'pino' (control-plane only)"),
    lines.join('\n'),
  );
  assert.ok(
    lines.includes("src/dataplane/proxy/lazy.ts:1: data plane imports 'fastify' (control-plane only)"),
    lines.join('\n'),
  );
});

test('entering a folder around its index fails', () => {
  const { status, lines } = check(
    tree({
      ...clean,
      'control/api/index.ts':
        "import { relay } from '../../dataplane/proxy/relay.js';\nexport const route = relay;\n",
    }),
  );
  assert.equal(status, 1);
  assert.deepEqual(lines, [
    "src/control/api/index.ts:1: enters src/dataplane/proxy through 'relay.js', not its index.ts",
  ]);
});

test('schemas importing a domain folder or another package fails', () => {
  const { status, lines } = check(
    tree({
      ...clean,
      'schemas/index.ts':
        "import { relay } from '../dataplane/proxy/index.js';\nimport YAML from 'yaml';\nexport const S = [relay, YAML];\n",
    }),
  );
  assert.equal(status, 1);
  assert.ok(
    lines.includes('src/schemas/index.ts:1: src/schemas imports src/dataplane/proxy (only src/shared)'),
    lines.join('\n'),
  );
  assert.ok(
    lines.includes("src/schemas/index.ts:2: src/schemas imports package 'yaml' (only typebox)"),
    lines.join('\n'),
  );
});

test('a folder nobody placed in a plane fails', () => {
  const { status, lines } = check(tree({ ...clean, 'misc/index.ts': 'export const x = 1;\n' }));
  assert.equal(status, 1);
  assert.ok(
    lines.some((l) => l.startsWith('src/misc: unplaced folder')),
    lines.join('\n'),
  );
});

test('folders under control/, dataplane/ and dataplane/middleware/ are units of their plane', () => {
  const { status, lines } = check(
    tree({
      'shared/index.ts': 'export const one = 1;\n',
      'dataplane/middleware/audit/index.ts': "export { log } from './log.js';\n",
      'dataplane/middleware/audit/log.ts':
        "import { one } from '../../../shared/index.js';\nexport const log = one;\n",
      'dataplane/proxy/index.ts':
        "import { log } from '../middleware/audit/log.js';\nexport const relay = log;\n",
      'control/api/index.ts':
        "import { relay } from '../../dataplane/proxy/index.js';\nexport const route = relay;\n",
      'dataplane/runner/index.ts':
        "import { route } from '../../control/api/index.js';\nexport const run = route;\n",
    }),
  );
  assert.equal(status, 1);
  assert.deepEqual(lines, [
    "src/dataplane/proxy/index.ts:1: enters src/dataplane/middleware/audit through 'log.js', not its index.ts",
    'src/dataplane/runner/index.ts:1: data plane (src/dataplane/runner) imports control plane (src/control/api)',
  ]);
});

test('a lazy import may name the one module it loads', () => {
  const { status, lines } = check(
    tree({
      ...clean,
      'control/api/index.ts':
        "export const route = async () => (await import('../../dataplane/proxy/relay.js')).relay;\n",
    }),
  );
  assert.deepEqual(lines, []);
  assert.equal(status, 0);
});
