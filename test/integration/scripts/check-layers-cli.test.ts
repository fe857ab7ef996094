// `node scripts/check-layers.mjs` as `npm run lint` runs it: a violation makes it exit 1 and
// print the violation (the rules themselves: test/unit/build/check-layers.test.ts).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { test } from 'node:test';

test('the command exits 1 and prints each violation, and 0 on a clean tree', (t) => {
  const root = mkdtempSync(join(tmpdir(), 'skep-layers-cli-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  mkdirSync(join(root, 'src', 'dataplane', 'proxy'), { recursive: true });
  mkdirSync(join(root, 'src', 'control', 'api'), { recursive: true });
  writeFileSync(join(root, 'src', 'dataplane', 'proxy', 'index.ts'), "export { relay } from './relay.js';\n");
  writeFileSync(join(root, 'src', 'dataplane', 'proxy', 'relay.ts'), 'export const relay = 1;\n');
  const api = join(root, 'src', 'control', 'api', 'index.ts');
  const check = () =>
    spawnSync(process.execPath, [resolve('scripts/check-layers.mjs'), '--root', root], { encoding: 'utf8' });

  writeFileSync(
    api,
    "import { relay } from '../../dataplane/proxy/relay.js';\nexport const route = relay;\n",
  );
  const bad = check();
  assert.equal(bad.status, 1);
  assert.equal(
    bad.stderr,
    "src/control/api/index.ts:1: enters src/dataplane/proxy through 'relay.js', not its index.ts\ncheck-layers: 1 violation(s)\n",
  );

  writeFileSync(
    api,
    "import { relay } from '../../dataplane/proxy/index.js';\nexport const route = relay;\n",
  );
  const good = check();
  assert.equal(good.stderr, '');
  assert.equal(good.stdout, 'check-layers: ok\n');
  assert.equal(good.status, 0);
});
