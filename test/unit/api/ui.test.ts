/**
 * The web UI's playground MCP pass-through (src/control/api/ui.ts) on the real app, through inject:
 * authenticated like the API, and refusals. Needs no built UI (the pages and assets are tested
 * in test/build/api-ui.test.ts, which builds it).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { testApp } from '../../helpers/api.js';

const NO_TOKEN = { authorization: '' };

test('the playground pass-through: authenticated like the API; an unknown workload and a body that is not JSON-RPC are refused', async (t) => {
  const { app } = await testApp(t);
  const message = { jsonrpc: '2.0', id: 1, method: 'tools/list' };
  const url = '/api/v1beta/workloads/ghost/mcp';
  assert.equal(
    (await app.inject({ method: 'POST', url, headers: NO_TOKEN, payload: message })).statusCode,
    401,
  );
  const missing = await app.inject({ method: 'POST', url, payload: message });
  assert.equal(missing.statusCode, 404);
  assert.match(missing.json<{ message: string }>().message, /ghost/);
  const bad = await app.inject({ method: 'POST', url, payload: { hello: 1 } });
  assert.equal(bad.statusCode, 400);
  assert.equal(bad.json<{ code: string }>().code, 'bad_request');
});
