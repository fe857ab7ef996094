/**
 * A caller (an API request, or a registry entry turned into one) picks the package of an
 * `npx://` or `uvx://` image; `npx://--call=<command>` would have npx run the command. Such a
 * spec is refused at create with a 400 that names the field, before anything is written or
 * started (the marker file the command would create never appears).
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { workloadApp } from './helpers.js';

test('a package spec that is an npx or uvx option is refused at create with 400 naming image; nothing is stored', async (t) => {
  const { app, ctx, home } = await workloadApp(t);
  const marker = join(home.dir, 'pwned');
  const images = [
    `npx://--call=touch ${marker}`,
    `npx://-c=touch ${marker}`,
    `uvx://--from=evil-package`,
    `npx://@scope/pkg --call=touch ${marker}`,
  ];
  for (const [i, image] of images.entries()) {
    const res = await app.inject({
      method: 'POST',
      url: '/api/v1beta/workloads',
      payload: { name: `inject-${i}`, image, transport: 'stdio' },
    });
    assert.equal(res.statusCode, 400, res.body);
    const body = res.json<{ code: string; message: string }>();
    assert.equal(body.code, 'invalid_reference');
    assert.match(body.message, /^image: the package in '.*' (starts with '-'|contains white space)/);
    assert.ok(!res.body.includes(' at '), `no stack trace: ${res.body}`);
    const found = await app.inject({ method: 'GET', url: `/api/v1beta/workloads/inject-${i}` });
    assert.equal(found.statusCode, 404, `inject-${i} must not be stored`);
  }
  // A server starts only from a stored workload: with nothing stored, nothing was started, and
  // the refusal came before any npx could run (so no wait is needed before the marker check).
  assert.deepEqual(ctx.workloads.rows.names(), []);
  assert.equal(existsSync(marker), false, 'npx never ran the command');
});
