/**
 * No silent fields, through the real surfaces: the management API's create
 * and update and the CLI's `skep run --from-config` refuse a field this build would store and
 * ignore with 400 `unsupported_field` naming it, and nothing is written (no record, no runner,
 * the stored configuration unchanged). Studio's create body, which carries network isolation,
 * a permission profile and the Docker-gateway flag at their defaults, is accepted and serves.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { isSkepError } from '../../../src/shared/index.js';
import { cliEntry } from '../../../src/workloads/index.js';
import { everythingBody, runnerPidOf, waitForStatus, workloadApp, workloadEndpoint } from './helpers.js';

const run = promisify(execFile);

interface ErrorBody {
  code: string;
  message: string;
}

test(
  'create, update and --from-config refuse unsupported fields (400 unsupported_field) before anything is written',
  { timeout: 300_000 },
  async (t) => {
    const { app, ctx, home } = await workloadApp(t);
    const inject = (method: 'GET' | 'POST', url: string, payload?: object) =>
      app.inject({ method, url, ...(payload === undefined ? {} : { payload }) });
    const stored = () => ctx.workloads.rows.list().map((r) => r.name);

    // ---- create
    for (const [field, extra] of [
      ['allow_docker_gateway', { allow_docker_gateway: true }],
      ['runtime_config', { runtime_config: { builder_image: 'node:22' } }],
      // A container mount on a server that runs as a local process.
      ['volumes', { volumes: [`${home.dir}:/data`] }],
    ] as const) {
      const res = await inject('POST', '/api/v1beta/workloads', {
        ...everythingBody(`bad-${field}`),
        ...extra,
      });
      assert.equal(res.statusCode, 400, res.body);
      const body = res.json<ErrorBody>();
      assert.equal(body.code, 'unsupported_field');
      assert.ok(body.message.startsWith(`${field} is not supported`), body.message);
    }
    // A field the create request does not know — a run-configuration field it does not take
    // (`token_exchange_config`, as the reference's API) or a typo — is refused, not dropped.
    for (const field of ['token_exchange_config', 'enviroment_vars']) {
      const res = await inject('POST', '/api/v1beta/workloads', {
        ...everythingBody(`unknown-${field}`),
        [field]: { token_url: 'https://idp.example/token' },
      });
      assert.equal(res.statusCode, 400, res.body);
      assert.deepEqual(res.json<ErrorBody>(), {
        code: 'bad_request',
        message: `body.${field}: is not a known field`,
      });
    }
    assert.deepEqual(stored(), [], 'a refused create stores nothing');
    const listed = await inject('GET', '/api/v1beta/workloads?all=true');
    assert.deepEqual(listed.json<{ workloads: unknown[] }>().workloads, []);

    // ---- Studio's body (network access "host", host access off) is accepted and serves.
    const created = await inject('POST', '/api/v1beta/workloads', {
      ...everythingBody('studio'),
      transport: 'stdio',
      proxy_mode: 'streamable-http',
      env_vars: {},
      secrets: [],
      volumes: [],
      network_isolation: false,
      permission_profile: { network: { mode: 'host' } },
      allow_docker_gateway: false,
    });
    assert.equal(created.statusCode, 201, created.body);
    await waitForStatus(ctx, 'studio', 'running');
    // Studio reads the workload's URL from the list and hands it to the client as it is: that
    // URL carries the access token, so it works with no step of Studio's own.
    const studioUrl = (await inject('GET', '/api/v1beta/workloads'))
      .json<{ workloads: { name: string; url: string }[] }>()
      .workloads.find((w) => w.name === 'studio')?.url;
    assert.equal(studioUrl, workloadEndpoint(ctx, 'studio'));
    const client = new Client({ name: 'skep-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(studioUrl)));
    t.after(() => client.close());
    const echoed = (await client.callTool({ name: 'echo', arguments: { message: 'studio' } })) as {
      content: { text: string }[];
    };
    assert.match(echoed.content[0]?.text ?? '', /studio/);

    // ---- update: refused, the stored configuration unchanged, the workload not restarted.
    const before = ctx.workloads.exportConfig('studio');
    const runner = runnerPidOf(ctx, 'studio');
    for (const [field, request] of [
      ['allow_docker_gateway', { allow_docker_gateway: true }],
      ['runtime_config', { runtime_config: { additional_packages: ['git'] } }],
      ['volumes', { volumes: [`${home.dir}:/data`] }],
    ] as const) {
      const res = await inject('POST', '/api/v1beta/workloads/studio/edit', request);
      assert.equal(res.statusCode, 400, res.body);
      const body = res.json<ErrorBody>();
      assert.equal(body.code, 'unsupported_field');
      assert.ok(body.message.startsWith(`${field} is not supported`), body.message);
    }
    const unknown = await inject('POST', '/api/v1beta/workloads/studio/edit', { audit_config: {} });
    assert.equal(unknown.statusCode, 400, unknown.body);
    assert.equal(unknown.json<ErrorBody>().message, 'body.audit_config: is not a known field');
    assert.deepEqual(ctx.workloads.exportConfig('studio'), before, 'a refused update changes nothing');
    assert.equal(runnerPidOf(ctx, 'studio'), runner, 'a refused update does not restart the workload');
    assert.equal(ctx.workloads.status('studio').status, 'running');

    // ---- import (`skep run --from-config`): the real CLI refuses a field of the file, naming it.
    const exported = (await inject('GET', '/api/v1beta/workloads/studio/export')).json<
      Record<string, unknown>
    >();
    const file = join(home.dir, 'limited.json');
    writeFileSync(file, JSON.stringify({ ...exported, session_ttl: '2h' }));
    const refused = await run(
      process.execPath,
      ['--import', 'tsx', cliEntry(), 'run', '--from-config', file, '--name', 'imported'],
      { env: { ...home.env, SKEP_LOG_LEVEL: 'silent' }, timeout: 120_000 },
    ).then(
      () => undefined,
      (err: unknown) => err as { code: number; stderr: string },
    );
    assert.ok(refused !== undefined, 'skep run --from-config succeeded');
    assert.equal(refused.code, 1);
    assert.match(
      refused.stderr,
      /^error: session_ttl is not supported except for a streamable-HTTP server: .*remove it/m,
    );
    // The same import in process: the error's code is the API's.
    await assert.rejects(
      ctx.workloads.createFromConfig({ ...exported, stateless: true }, { name: 'imported' }),
      (err) =>
        isSkepError(err) &&
        err.code === 'unsupported_field' &&
        err.status === 400 &&
        err.message.startsWith('stateless is not supported yet'),
    );
    // The generic middleware list: a reference type Skep does not have yet is refused the same way.
    await assert.rejects(
      ctx.workloads.createFromConfig(
        { ...exported, middleware_configs: [{ type: 'obo' }] },
        { name: 'imported' },
      ),
      (err) =>
        isSkepError(err) && err.code === 'unsupported_field' && /middleware_configs\[0\]/.test(err.message),
    );
    assert.deepEqual(stored(), ['studio'], 'a refused import stores nothing');
  },
);
