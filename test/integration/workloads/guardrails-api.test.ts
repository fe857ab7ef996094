/**
 * `guardrails_config` through the workloads API: a create without it gets the default and the
 * list, the detail and the export say so; `{"enabled": false}` shows `off`; an edit replaces
 * it; a bad value is a 400 naming the field and nothing is stored. Real workloads
 * (server-everything) behind a real runner.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { everythingBody, waitForStatus, workloadApp } from './helpers.js';

const DEFAULT_LINE = 'ownSecrets:redact credentials:redact';

test(
  'workloads API: guardrails_config is settable and every view shows what is on',
  { timeout: 300_000 },
  async (t) => {
    const { app, ctx } = await workloadApp(t);
    const inject = (method: 'GET' | 'POST', url: string, payload?: unknown) =>
      app.inject({ method, url, ...(payload === undefined ? {} : { payload: payload as object }) });
    const listed = async (): Promise<Map<string, string>> => {
      const res = await inject('GET', '/api/v1beta/workloads?all=true');
      assert.equal(res.statusCode, 200, res.body);
      const rows = res.json<{ workloads: Array<{ name: string; guardrails: string }> }>().workloads;
      return new Map(rows.map((w) => [w.name, w.guardrails]));
    };

    const plain = await inject('POST', '/api/v1beta/workloads', everythingBody('plain'));
    assert.equal(plain.statusCode, 201, plain.body);
    const off = await inject('POST', '/api/v1beta/workloads', {
      ...everythingBody('unguarded'),
      guardrails_config: { enabled: false },
    });
    assert.equal(off.statusCode, 201, off.body);
    const audit = await inject('POST', '/api/v1beta/workloads', {
      ...everythingBody('audited'),
      guardrails_config: { personalData: { results: 'audit', arguments: 'block' } },
    });
    assert.equal(audit.statusCode, 201, audit.body);

    await t.test('list: the default, off, and a configuration of its own', async () => {
      const rows = await listed();
      assert.equal(rows.get('plain'), DEFAULT_LINE);
      assert.equal(rows.get('unguarded'), 'off');
      // Detectors it leaves out keep their defaults, as the stage applies them.
      assert.equal(rows.get('audited'), `${DEFAULT_LINE} personalData:audit/block`);
    });

    await t.test('detail and export agree with the list', async () => {
      const detail = await inject('GET', '/api/v1beta/workloads/plain');
      assert.equal(detail.statusCode, 200, detail.body);
      assert.equal(detail.json<{ guardrails: string }>().guardrails, DEFAULT_LINE);
      const exported = await inject('GET', '/api/v1beta/workloads/unguarded/export');
      assert.deepEqual(exported.json<{ guardrails_config: unknown }>().guardrails_config, { enabled: false });
    });

    await t.test('bad values → 400 naming the field, nothing stored', async () => {
      const before = await listed();
      for (const bad of [
        { ownSecrets: { results: 'shred' } },
        { credentials: { patterns: ['no_such_pattern'] } },
        { enabeld: false },
        'off',
      ]) {
        const res = await inject('POST', '/api/v1beta/workloads', {
          ...everythingBody('bad-guard'),
          guardrails_config: bad,
        });
        assert.equal(res.statusCode, 400, res.body);
        const body = res.json<{ code: string; message: string }>();
        // A body that does not match the request schema: `bad_request`, as for every field.
        assert.equal(body.code, 'bad_request');
        assert.match(body.message, /^body\.guardrails_config/, JSON.stringify(bad));
        const edit = await inject('POST', '/api/v1beta/workloads/plain/edit', { guardrails_config: bad });
        assert.equal(edit.statusCode, 400, edit.body);
        assert.match(edit.json<{ message: string }>().message, /guardrails_config/);
      }
      // What to send instead is in the message.
      const action = await inject('POST', '/api/v1beta/workloads', {
        ...everythingBody('bad-guard'),
        guardrails_config: { ownSecrets: { results: 'shred' } },
      });
      assert.equal(
        action.json<{ message: string }>().message,
        'body.guardrails_config.ownSecrets.results: must be one of "off", "audit", "redact", "block"',
      );
      assert.deepEqual(await listed(), before);
      assert.equal(ctx.workloads.rows.get('bad-guard'), undefined);
    });

    await t.test('edit replaces it', async () => {
      await waitForStatus(ctx, 'plain', 'running');
      const edit = await inject('POST', '/api/v1beta/workloads/plain/edit', {
        guardrails_config: { enabled: false },
      });
      assert.equal(edit.statusCode, 200, edit.body);
      assert.equal((await listed()).get('plain'), 'off');
      assert.deepEqual(ctx.workloads.rows.get('plain')?.config.guardrails_config, { enabled: false });
    });
  },
);
