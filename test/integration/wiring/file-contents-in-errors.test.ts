/**
 * Errors never quote the content of a file Skep was pointed at: an API request's
 * `authz_config` (a path, read by the server), an audit configuration file, a permission
 * profile file and an authorizer's `entities_json` may name any file the server can read, and
 * the parsers' own messages repeat the text (V8: `Unexpected token 'r', "root:S3cr..." is not
 * valid JSON`; yaml: the offending line). Each refusal here must say where the text broke and
 * never contain the secret it holds.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { loadAuditConfigFile } from '../../../src/dataplane/middleware/audit/index.js';
import { resolvePermissionProfile } from '../../../src/dataplane/runtime/index.js';
import { isSkepError } from '../../../src/shared/index.js';
import { everythingBody, workloadApp } from '../workloads/helpers.js';

const SECRET = 'S3cr3t-Value-9f2c';

/** Files that are not authorizer configurations, each holding SECRET; the extension picks the parser. */
const FILES: Array<[name: string, content: string, message: RegExp]> = [
  ['shadow', `root:${SECRET}:20211:0:99999:7:::\n`, /is not valid JSON \(syntax error\)/],
  ['token.json', `{"token": "${SECRET}`, /is not valid JSON \(syntax error at line 1, column 29\)/],
  ['bare.json', `{"token": ${SECRET}}`, /is not valid JSON \(syntax error/],
  [
    'keys.yaml',
    `aws: key: ${SECRET}\n`,
    /is not valid YAML \(syntax error \(BLOCK_AS_IMPLICIT_KEY\) at line 1, column 6\)/,
  ],
  ['passwd.yml', `root:x:0:0:${SECRET}:/root:/bin/bash\n`, /is not an authorizer configuration/],
  ['aws.json', `{"aws_secret_access_key": "${SECRET}"}`, /is not an authorizer configuration/],
  ['type.json', `{"version": "1.0", "type": "${SECRET}"}`, /is not an authorizer configuration/],
  [
    'entities.json',
    JSON.stringify({
      version: '1.0',
      type: 'cedarv1',
      cedar: { policies: ['permit(principal, action, resource);'], entities_json: `[{"uid": ${SECRET}` },
    }),
    /entities_json is not valid JSON \(syntax error/,
  ],
];

test('API create: an authz_config file that is not an authorizer configuration is a 400 that quotes none of it', async (t) => {
  const { app, ctx, home } = await workloadApp(t);
  for (const [i, [name, content, message]] of FILES.entries()) {
    const file = join(home.dir, name);
    writeFileSync(file, content);
    const res = await app.inject({
      method: 'POST',
      url: '/api/v1beta/workloads',
      payload: { ...everythingBody(`authz-${i}`), authz_config: file },
    });
    assert.equal(res.statusCode, 400, `${name}: ${res.body}`);
    assert.match(res.json<{ message: string }>().message, message, name);
    assert.ok(!res.body.includes(SECRET), `${name}: the answer quotes the file: ${res.body}`);
    assert.ok(!res.body.includes('root:') && !res.body.includes('aws_secret'), res.body);
  }
  assert.deepEqual(ctx.workloads.rows.names(), [], 'nothing was created');
});

test('an audit configuration file and a permission profile file that are not JSON are refused without quoting them', async (t) => {
  const { home } = await workloadApp(t);
  const file = join(home.dir, 'secret-file');
  for (const content of [`root:${SECRET}:20211::::::\n`, `{"key": "${SECRET}`]) {
    writeFileSync(file, content);
    await assert.rejects(
      loadAuditConfigFile(file),
      (err: unknown) =>
        isSkepError(err) &&
        /is not valid JSON \(syntax error/.test(err.message) &&
        !err.message.includes(SECRET),
    );
    assert.throws(
      () => resolvePermissionProfile(undefined, file),
      (err: unknown) =>
        isSkepError(err) &&
        err.code === 'invalid_config' &&
        /permission profile .* is not valid JSON \(syntax error/.test(err.message) &&
        !err.message.includes(SECRET),
    );
  }
});
