/**
 * The workloads API with a real runner behind it: every error path (unknown workload,
 * bad names, bulk with missing names, duplicates, unknown group, busy port, missing secret),
 * and the merge semantics of update. One real workload (server-everything) serves all checks.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { test } from 'node:test';
import { everythingBody, waitFor, waitForStatus, workloadApp } from './helpers.js';

test(
  'workloads API: error paths and merge update against a real workload',
  {
    timeout: 300_000,
  },
  async (t) => {
    const { app, ctx } = await workloadApp(t);
    const inject = (method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, payload?: unknown) =>
      app.inject({ method, url, ...(payload === undefined ? {} : { payload: payload as object }) });

    const created = await inject('POST', '/api/v1beta/workloads', {
      ...everythingBody('alpha'),
      env_vars: { A: '1', B: '2' },
    });
    assert.equal(created.statusCode, 201, created.body);
    const { name, port } = created.json<{ name: string; port: number }>();
    assert.equal(name, 'alpha');
    const { port_range_start, port_range_end } = ctx.config.workloads;
    assert.ok(port >= port_range_start && port <= port_range_end, `port ${port} in the configured range`);
    await waitForStatus(ctx, 'alpha', 'running');

    await t.test('list: running by default, sorted, with the summary fields', async () => {
      const res = await inject('GET', '/api/v1beta/workloads');
      assert.equal(res.statusCode, 200);
      const [item] = res.json<{ workloads: Record<string, unknown>[] }>().workloads;
      assert.equal(item?.['name'], 'alpha');
      assert.equal(item?.['status'], 'running');
      // The working URL carries the workload's access token (it answers only its owner).
      const token = ctx.workloads.rows.get('alpha')?.accessToken as string;
      assert.match(token, /^[0-9a-f]{64}$/);
      assert.equal(item?.['url'], `http://127.0.0.1:${port}/mcp?skep_token=${token}`);
      assert.equal(item?.['endpoint_access'], 'owner');
      assert.equal(item?.['transport_type'], 'stdio');
      for (const field of [
        'package',
        'group',
        'labels',
        'port',
        'proxy_mode',
        'remote',
        'tools',
        'status_context',
        'created_at',
        'started_at',
      ]) {
        assert.ok(item !== undefined && field in item, field);
      }
    });

    await t.test('unknown workload → 404 on every per-name route', async () => {
      for (const [method, url] of [
        ['GET', '/api/v1beta/workloads/nope'],
        ['GET', '/api/v1beta/workloads/nope/export'],
        ['GET', '/api/v1beta/workloads/nope/status'],
        ['GET', '/api/v1beta/workloads/nope/logs'],
        ['GET', '/api/v1beta/workloads/nope/proxy-logs'],
        ['POST', '/api/v1beta/workloads/nope/stop'],
        ['POST', '/api/v1beta/workloads/nope/restart'],
        ['DELETE', '/api/v1beta/workloads/nope'],
      ] as const) {
        const res = await inject(method, url);
        assert.equal(res.statusCode, 404, `${method} ${url}`);
        assert.equal(res.json<{ code: string }>().code, 'workload_not_found');
      }
      const edit = await inject('POST', '/api/v1beta/workloads/nope/edit', { env_vars: {} });
      assert.equal(edit.statusCode, 404);
    });

    await t.test('bad names → 400 invalid_name', async () => {
      for (const bad of ['a;b', 'a..b', '%24(x)', 'a%20b']) {
        const res = await inject('GET', `/api/v1beta/workloads/${bad}`);
        assert.equal(res.statusCode, 400, bad);
        assert.equal(res.json<{ code: string }>().code, 'invalid_name');
      }
      for (const bad of ['bad name', 'x'.repeat(101), '..']) {
        const create = await inject('POST', '/api/v1beta/workloads', everythingBody(bad));
        assert.equal(create.statusCode, 400, bad);
        assert.match(create.json<{ message: string }>().message, /invalid workload name/);
      }
    });

    await t.test(
      'bulk: names and group together, neither, bad name, missing names (nothing changes)',
      async () => {
        for (const op of ['delete', 'stop', 'restart']) {
          const both = await inject('POST', `/api/v1beta/workloads/${op}`, {
            names: ['alpha'],
            group: 'default',
          });
          assert.equal(both.statusCode, 400);
          const neither = await inject('POST', `/api/v1beta/workloads/${op}`, {});
          assert.equal(neither.statusCode, 400);
          const badName = await inject('POST', `/api/v1beta/workloads/${op}`, { names: ['alpha', 'x;y'] });
          assert.equal(badName.statusCode, 400);
          const missing = await inject('POST', `/api/v1beta/workloads/${op}`, {
            names: ['alpha', 'ghost1', 'ghost2'],
          });
          assert.equal(missing.statusCode, 404);
          assert.match(missing.json<{ message: string }>().message, /ghost1, ghost2/);
          const unknownGroup = await inject('POST', `/api/v1beta/workloads/${op}`, { group: 'nogroup' });
          assert.equal(unknownGroup.statusCode, 404);
        }
        assert.equal(
          ctx.workloads.status('alpha').status,
          'running',
          'a rejected bulk request changed nothing',
        );
      },
    );

    await t.test('duplicate name → 409; unknown group → 404; list of unknown group → 404', async () => {
      const dup = await inject('POST', '/api/v1beta/workloads', everythingBody('alpha'));
      assert.equal(dup.statusCode, 409);
      assert.equal(dup.json<{ code: string }>().code, 'workload_exists');
      const group = await inject('POST', '/api/v1beta/workloads', {
        ...everythingBody('beta'),
        group: 'nogroup',
      });
      assert.equal(group.statusCode, 404);
      assert.equal(group.json<{ code: string }>().code, 'group_not_found');
      const list = await inject('GET', '/api/v1beta/workloads?group=nogroup');
      assert.equal(list.statusCode, 404);
      assert.equal(ctx.workloads.rows.get('beta'), undefined, 'nothing was written');
    });

    await t.test(
      'explicit busy proxy port → 400 port_unavailable (another workload, or any listener)',
      async () => {
        const taken = await inject('POST', '/api/v1beta/workloads', {
          ...everythingBody('beta'),
          proxy_port: port,
        });
        assert.equal(taken.statusCode, 400);
        assert.equal(taken.json<{ code: string }>().code, 'port_unavailable');
        const blocker = createServer();
        await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
        t.after(() => blocker.close());
        const busy = (blocker.address() as { port: number }).port;
        const res = await inject('POST', '/api/v1beta/workloads', {
          ...everythingBody('beta'),
          proxy_port: busy,
        });
        assert.equal(res.statusCode, 400);
        assert.match(res.json<{ message: string }>().message, new RegExp(`${busy}`));
      },
    );

    await t.test(
      'a missing secret → 4xx before anything is written; container images are refused clearly',
      async () => {
        const res = await inject('POST', '/api/v1beta/workloads', {
          ...everythingBody('beta'),
          secrets: [{ name: 'nope', target: 'TOKEN' }],
        });
        assert.ok(res.statusCode >= 400 && res.statusCode < 500, res.body);
        assert.equal(ctx.workloads.rows.get('beta'), undefined);
        const image = await inject('POST', '/api/v1beta/workloads', {
          name: 'beta',
          image: 'ghcr.io/org/server:1',
        });
        assert.equal(image.statusCode, 400);
        const registry = await inject('POST', '/api/v1beta/workloads', {
          name: 'beta',
          registry: 'default',
          server: 'fetch',
        });
        assert.ok([400, 404].includes(registry.statusCode), registry.body);
        const none = await inject('POST', '/api/v1beta/workloads', { name: 'beta' });
        assert.equal(none.statusCode, 400);
      },
    );

    await t.test(
      'a cmd:// program that is not installed → 400 executable_not_found, nothing written; edit too',
      async () => {
        for (const image of ['cmd://skep-no-such-program', 'cmd:///nonexistent/skep/server']) {
          const res = await inject('POST', '/api/v1beta/workloads', { name: 'beta', image });
          assert.equal(res.statusCode, 400, res.body);
          const body = res.json<{ code: string; message: string }>();
          assert.equal(body.code, 'executable_not_found');
          assert.match(body.message, /not found/);
          assert.equal(ctx.workloads.rows.get('beta'), undefined, 'nothing was written');
        }
        // The workload's own PATH is where the program is looked for.
        const hidden = await inject('POST', '/api/v1beta/workloads', {
          name: 'beta',
          image: 'cmd://node',
          env_vars: { PATH: '/nonexistent' },
        });
        assert.equal(hidden.statusCode, 400, hidden.body);
        const edit = await inject('POST', '/api/v1beta/workloads/alpha/edit', {
          image: 'cmd://skep-no-such-program',
        });
        assert.equal(edit.statusCode, 400, edit.body);
        assert.equal(ctx.workloads.rows.get('alpha')?.config.image, `cmd://${process.execPath}`);
      },
    );

    await t.test('get and export: detail shape, RunConfig with schema_version, env as given', async () => {
      const detail = (await inject('GET', '/api/v1beta/workloads/alpha')).json<Record<string, unknown>>();
      assert.equal(detail['name'], 'alpha');
      assert.equal(detail['proxy_port'], port);
      assert.deepEqual(detail['env_vars'], { A: '1', B: '2' });
      const exported = (await inject('GET', '/api/v1beta/workloads/alpha/export')).json<
        Record<string, unknown>
      >();
      assert.equal(exported['schema_version'], 'v0.1.0');
      assert.equal(exported['name'], 'alpha');
      assert.equal(exported['port'], port);
      assert.deepEqual(exported['cmd_args'], everythingBody('alpha').cmd_arguments);
    });

    await t.test(
      'architecture "Decisions": update merges — omitted fields keep their values; running workload restarts',
      async () => {
        const before = ctx.workloads.rows.get('alpha');
        const res = await inject('POST', '/api/v1beta/workloads/alpha/edit', {
          env_vars: { C: '3' },
          tools: ['echo'],
        });
        assert.equal(res.statusCode, 200, res.body);
        assert.deepEqual(res.json(), { name: 'alpha', port });
        const after = ctx.workloads.exportConfig('alpha');
        assert.deepEqual(after.env_vars, { C: '3' }, 'a present field replaces');
        assert.deepEqual(after.tools_filter, ['echo']);
        assert.deepEqual(after.cmd_args, before?.config.cmd_args, 'an omitted field keeps its value');
        assert.equal(after.group, 'default');
        assert.notEqual(
          ctx.workloads.rows.get('alpha')?.runnerPid,
          before?.runnerPid,
          'a new runner was started',
        );
        await waitForStatus(ctx, 'alpha', 'running');
        const put = await inject('PUT', '/api/v1beta/workloads/alpha', { proxy_mode: 'sse' });
        assert.equal(put.statusCode, 200);
        assert.deepEqual(ctx.workloads.exportConfig('alpha').env_vars, { C: '3' });
        assert.equal(ctx.workloads.exportConfig('alpha').proxy_mode, 'sse');
        const badGroup = await inject('POST', '/api/v1beta/workloads/alpha/edit', { group: 'nogroup' });
        assert.equal(badGroup.statusCode, 404);
        await waitForStatus(ctx, 'alpha', 'running');
      },
    );

    await t.test(
      'stop (202) → stopped and hidden from the default list; restart → running; logs readable',
      async () => {
        const stop = await inject('POST', '/api/v1beta/workloads/alpha/stop');
        assert.equal(stop.statusCode, 202);
        // As in ToolHive's API, a 202 body is a JSON string (a short message).
        assert.match(String(stop.headers['content-type']), /^application\/json/);
        assert.equal(stop.json(), 'stop of workload alpha started');
        await waitForStatus(ctx, 'alpha', 'stopped');
        const list = (await inject('GET', '/api/v1beta/workloads')).json<{ workloads: unknown[] }>();
        assert.equal(list.workloads.length, 0);
        const all = (await inject('GET', '/api/v1beta/workloads?all=true')).json<{
          workloads: { status: string }[];
        }>();
        assert.equal(all.workloads[0]?.status, 'stopped');
        const restart = await inject('POST', '/api/v1beta/workloads/alpha/restart');
        assert.equal(restart.statusCode, 202);
        assert.equal(restart.json(), 'restart of workload alpha started');
        await waitForStatus(ctx, 'alpha', 'running');
        // ToolHive's bulk stop and bulk restart (by group) answer 202 with a JSON string too.
        const bulkStop = await inject('POST', '/api/v1beta/workloads/stop', { group: 'default' });
        assert.equal(bulkStop.statusCode, 202);
        assert.equal(bulkStop.json(), 'stop of workload alpha started');
        await waitForStatus(ctx, 'alpha', 'stopped');
        const bulkRestart = await inject('POST', '/api/v1beta/workloads/restart', { names: ['alpha'] });
        assert.equal(bulkRestart.statusCode, 202);
        assert.match(String(bulkRestart.headers['content-type']), /^application\/json/);
        assert.equal(bulkRestart.json(), 'restart of workload alpha started');
        await waitForStatus(ctx, 'alpha', 'running');
        const logs = await inject('GET', '/api/v1beta/workloads/alpha/proxy-logs');
        assert.equal(logs.statusCode, 200);
        assert.match(logs.headers['content-type'] as string, /text\/plain/);
        assert.match(logs.body, /proxy listening/);
      },
    );

    await t.test(
      'DELETE group: 409 group_not_empty naming its workloads, nothing moved; with-workloads=true deletes them',
      async () => {
        assert.equal((await inject('POST', '/api/v1beta/groups', { name: 'team' })).statusCode, 201);
        const beta = await inject('POST', '/api/v1beta/workloads', {
          ...everythingBody('beta'),
          group: 'team',
        });
        assert.equal(beta.statusCode, 201, beta.body);
        const refused = await inject('DELETE', '/api/v1beta/groups/team');
        assert.equal(refused.statusCode, 409);
        const body = refused.json<{ code: string; message: string; workloads: string[] }>();
        assert.equal(body.code, 'group_not_empty');
        assert.deepEqual(body.workloads, ['beta']);
        assert.match(body.message, /^group 'team' still holds 1 workload: beta; nothing was changed/);
        assert.equal(ctx.workloads.exportConfig('beta').group, 'team');
        assert.equal(ctx.workloads.exportConfig('alpha').group, 'default');
        const deleted = await inject('DELETE', '/api/v1beta/groups/team?with-workloads=true');
        assert.equal(deleted.statusCode, 204);
        assert.equal(ctx.workloads.rows.get('beta'), undefined);
        assert.equal((await inject('GET', '/api/v1beta/groups/team')).statusCode, 404);
        assert.equal(ctx.workloads.status('alpha').status, 'running');
      },
    );

    await t.test('delete (202) removes the workload and its runner in the background', async () => {
      const pid = ctx.workloads.rows.get('alpha')?.runnerPid;
      const res = await inject('DELETE', '/api/v1beta/workloads/alpha');
      assert.equal(res.statusCode, 202);
      assert.equal(res.json(), 'deletion of workload alpha started');
      await waitFor('alpha to be gone', () =>
        ctx.workloads.rows.get('alpha') === undefined ? true : undefined,
      );
      assert.ok(pid !== undefined);
      await waitFor('the runner to exit', () => {
        try {
          process.kill(pid, 0);
          return undefined;
        } catch {
          return true;
        }
      });
    });
  },
);
