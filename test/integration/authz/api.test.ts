/**
 * The workloads API with `authz_config` as the reference takes it on create and update: a
 * string, the path to a JSON or YAML authorizer file, read and validated when the request
 * arrives and stored inline in the run configuration. A real runner (its own process) then
 * enforces what was stored, reached by the official MCP SDK client.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { tempHome } from '../../helpers/home.js';
import { everythingBody, waitForStatus, workloadApp, workloadEndpoint } from '../workloads/helpers.js';

async function connect(t: TestContext, url: string): Promise<Client> {
  const client = new Client({ name: 'authz-api-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  t.after(() => client.close());
  return client;
}

test(
  'API create/update: authz_config is a path to a JSON or YAML file, validated and stored inline; an invalid policy is a 400 naming it, nothing written',
  { timeout: 300_000 },
  async (t) => {
    const { app, ctx } = await workloadApp(t);
    const dir = tempHome(t, 'skep-authz-files-').dir;
    const inject = (method: 'GET' | 'POST', url: string, payload?: unknown) =>
      app.inject({ method, url, ...(payload === undefined ? {} : { payload: payload as object }) });

    const yamlFile = join(dir, 'only-echo.yaml');
    writeFileSync(
      yamlFile,
      [
        'version: "1.0"',
        'type: cedarv1',
        'cedar:',
        '  policies:',
        '    - permit(principal, action == Action::"call_tool", resource == Tool::"echo");',
        '',
      ].join('\n'),
    );
    const broken = join(dir, 'broken.json');
    writeFileSync(
      broken,
      JSON.stringify({
        version: '1.0',
        type: 'cedarv1',
        cedar: {
          policies: ['permit(principal, action, resource);', 'forbid(principal, action, resource) when {'],
        },
      }),
    );

    await t.test(
      'an invalid policy → 400 naming the field, policy1 and Cedar’s error; nothing written',
      async () => {
        const res = await inject('POST', '/api/v1beta/workloads', {
          ...everythingBody('broken'),
          authz_config: broken,
        });
        assert.equal(res.statusCode, 400, res.body);
        const body = res.json<{ code: string; message: string }>();
        assert.equal(body.code, 'invalid_config');
        assert.match(body.message, /authz_config\.cedar\.policies\[1\] \(policy1\)/);
        assert.match(body.message, /unexpected end of input/);
        assert.equal(ctx.workloads.rows.get('broken'), undefined, 'nothing was written');
        const missing = await inject('POST', '/api/v1beta/workloads', {
          ...everythingBody('broken'),
          authz_config: join(dir, 'none.yaml'),
        });
        assert.equal(missing.statusCode, 400);
        assert.match(missing.json<{ message: string }>().message, /authz_config: cannot read .*no such file/);
        assert.equal(ctx.workloads.rows.get('broken'), undefined);
      },
    );

    const created = await inject('POST', '/api/v1beta/workloads', {
      ...everythingBody('guarded'),
      authz_config: yamlFile,
    });
    assert.equal(created.statusCode, 201, created.body);

    await t.test(
      'stored inline (the file content) with the path beside it; the detail shows the path',
      async () => {
        const exported = (await inject('GET', '/api/v1beta/workloads/guarded/export')).json<
          Record<string, unknown>
        >();
        assert.deepEqual(exported['authz_config'], {
          version: '1.0',
          type: 'cedarv1',
          cedar: {
            policies: ['permit(principal, action == Action::"call_tool", resource == Tool::"echo");'],
          },
        });
        assert.equal(exported['authz_config_path'], yamlFile);
        const detail = (await inject('GET', '/api/v1beta/workloads/guarded')).json<Record<string, unknown>>();
        assert.equal(detail['authz_config'], yamlFile);
      },
    );

    await t.test('the runner enforces it', async (st) => {
      await waitForStatus(ctx, 'guarded', 'running');
      const client = await connect(st, workloadEndpoint(ctx, 'guarded'));
      const ok = (await client.callTool({ name: 'echo', arguments: { message: 'x' } })) as {
        content: { text: string }[];
      };
      assert.equal(ok.content[0]?.text, 'Echo: x');
      await assert.rejects(client.callTool({ name: 'get-env', arguments: {} }), /403.*"Unauthorized"/);
    });

    await t.test('update with an invalid file → 400, the stored policy is unchanged', async () => {
      const res = await inject('POST', '/api/v1beta/workloads/guarded/edit', { authz_config: broken });
      assert.equal(res.statusCode, 400, res.body);
      assert.match(res.json<{ message: string }>().message, /policy1/);
      assert.equal(ctx.workloads.exportConfig('guarded').authz_config_path, yamlFile);
    });

    await t.test('update with "" removes both fields', async () => {
      const res = await inject('POST', '/api/v1beta/workloads/guarded/edit', { authz_config: '' });
      assert.equal(res.statusCode, 200, res.body);
      const after = ctx.workloads.exportConfig('guarded');
      assert.equal(after.authz_config, undefined);
      assert.equal(after.authz_config_path, undefined);
      await waitForStatus(ctx, 'guarded', 'running');
    });
  },
);
